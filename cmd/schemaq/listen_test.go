package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestServingPortBoundBeforeReady: a process reports ready only once
// its serving port accepts, so a Kubernetes probe never sends clients to
// a refused connection. The port is bound before anything else starts:
// a port another process holds fails the command at once, naming it,
// before NATS is dialled and before any probe can pass. (The serve case
// guards the order startDaemon keeps: the daemon is published to the
// readiness check only after BindHTTP.)
func TestServingPortBoundBeforeReady(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	ns := testenv.NATS(t)
	for _, tc := range []struct {
		name string
		args []string
		nats string
		want string
	}{
		// No NATS listens on port 1: the error must be the port's, so
		// the port was tried first.
		{"mcp", []string{"mcp", "--http", addr}, "nats://127.0.0.1:1", "mcp --http " + addr},
		{"serve", []string{"serve", "--http-addr", addr}, ns.ClientURL(), "http listener " + addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The metrics port is free when chosen, but another package's
			// test process may take it before the command binds it, and
			// answer /readyz for itself: a port that still answers once
			// the command has stopped was another's, and the run is tried
			// again on another port.
			for attempt := 1; ; attempt++ {
				run := runWhileProbing(t, tc.args, tc.nats)
				if !strings.Contains(run.out, tc.want) {
					t.Errorf("%s with its port taken: want an error naming %q, got %s", tc.name, tc.want, run.out)
				}
				if run.ready == 0 {
					return
				}
				if !answers(context.Background(), run.metrics, "/healthz") {
					t.Errorf("%s reported ready %d times while its port %s was another's", tc.name, run.ready, addr)
					return
				}
				if attempt == 3 {
					t.Fatalf("metrics ports kept answering for other processes after %d tries", attempt)
				}
				t.Logf("metrics port %s answers for another process; trying another", run.metrics)
			}
		})
	}
}

// probedRun is a command run to its end while /readyz was polled on its
// metrics port: what it printed and returned, and how often the port
// said ready.
type probedRun struct {
	out, metrics string
	ready        int
}

// runWhileProbing runs args on a fresh metrics port until they stop,
// polling /readyz meanwhile.
func runWhileProbing(t *testing.T, args []string, nats string) probedRun {
	t.Helper()
	run := probedRun{metrics: freePort(t)}
	vars := map[string]string{"SCHEMAQ_NATS_URL": nats, "SCHEMAQ_METRICS_ADDR": run.metrics, "SCHEMAQ_DATA_DIR": t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan string, 1)
	go func() {
		// runVars: the roles log from several goroutines.
		out, err := runVars(ctx, args, vars)
		done <- fmt.Sprint(out, err)
	}()
	for {
		if answers(ctx, run.metrics, "/readyz") {
			run.ready++
		}
		select {
		case run.out = <-done:
			return run
		case <-ctx.Done():
			t.Fatalf("%v with its port taken did not stop", args)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// answers reports whether anything answers path on the metrics port.
// Once the command stopped, an answer to /healthz is another process's.
func answers(ctx context.Context, metrics, path string) bool {
	_, err := runVars(ctx, []string{"healthcheck", "--path", path}, map[string]string{"SCHEMAQ_METRICS_ADDR": metrics})
	return err == nil
}
