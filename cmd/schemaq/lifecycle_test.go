package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestGroup(t *testing.T) {
	boom := errors.New("boom")
	setup := errors.New("setup failed")
	// blocking is a component that runs until the group stops, counting
	// how many are still running.
	blocking := func(running *atomic.Int32) func(context.Context) error {
		running.Add(1)
		return func(ctx context.Context) error {
			defer running.Add(-1)
			<-ctx.Done()
			return ctx.Err()
		}
	}
	tests := []struct {
		name string
		// start starts components and returns the error start-up ended
		// with; cancel ends the parent context.
		start func(g *group, running *atomic.Int32, cancel context.CancelFunc) error
		want  error
	}{
		{"a component's error stops the others and is returned", func(g *group, running *atomic.Int32, _ context.CancelFunc) error {
			g.Go(blocking(running))
			g.Go(blocking(running))
			g.Go(func(context.Context) error { return boom })
			g.Wait()
			return nil
		}, boom},
		{"the end of the parent stops every component", func(g *group, running *atomic.Int32, cancel context.CancelFunc) error {
			g.Go(blocking(running))
			g.Go(blocking(running))
			cancel()
			g.Wait()
			return nil
		}, context.Canceled},
		{"a failed start stops what was started", func(g *group, running *atomic.Int32, _ context.CancelFunc) error {
			g.Go(blocking(running))
			g.Background(func(ctx context.Context) { running.Add(1); defer running.Add(-1); <-ctx.Done() })
			return setup
		}, setup},
		{"a helper's end does not stop the group", func(g *group, running *atomic.Int32, _ context.CancelFunc) error {
			g.Background(func(context.Context) {})
			g.Go(blocking(running))
			select {
			case <-g.Context().Done():
				return errors.New("the group stopped when a helper ended")
			case <-time.After(50 * time.Millisecond):
			}
			g.Go(func(context.Context) error { return boom })
			g.Wait()
			return nil
		}, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var running atomic.Int32
			g := newGroup(ctx)
			err := g.Stop(tt.start(g, &running, cancel))
			if !errors.Is(err, tt.want) {
				t.Errorf("Stop = %v, want %v", err, tt.want)
			}
			if n := running.Load(); n != 0 {
				t.Errorf("%d components still running after Stop", n)
			}
		})
	}
}

// A role that fails after its workers started stops them, drains its
// connection and releases its data directory before it returns, as it
// does on a clean shutdown.
func TestRoleFailingToStartStopsWhatItStarted(t *testing.T) {
	ns := testenv.NATS(t)
	dir := filepath.Join(t.TempDir(), "data")
	vars := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL()}
	// The daemon refuses this setting; the workers are running by then.
	args := []string{"serve", "--data-dir", dir, "--replica-id", "a", "--max-concurrent", "0", "--log-format", "json"}
	out, err := runVars(context.Background(), args, vars)
	if err == nil || !strings.Contains(err.Error(), "max concurrent") {
		t.Fatalf("serve --max-concurrent 0: %v\n%s", err, out)
	}
	testenv.Eventually(t, 5*time.Second, "the failed role's connection is closed", func() bool { return ns.NumClients() == 0 })
	// The data directory is free: a second start gets as far as the same
	// refusal instead of finding it locked.
	if _, err := runVars(context.Background(), args, vars); err == nil || !strings.Contains(err.Error(), "max concurrent") {
		t.Fatalf("second start: %v", err)
	}
}
