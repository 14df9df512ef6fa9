package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestFeedbackIsBounded: a caller that hands back pairs as fast as it can
// is stopped at its rate, and a database that holds its most feedback
// examples takes no more until some are deleted; each refusal says why,
// and nothing refused is stored.
func TestFeedbackIsBounded(t *testing.T) {
	ctx := context.Background()
	give := func(r *rig, i int) error {
		_, err := r.cli.Feedback(ctx, &events.FeedbackRequest{Database: "shop", Question: fmt.Sprintf("orders number %d", i),
			SQL: fmt.Sprintf("SELECT id FROM orders LIMIT %d", i+1)})
		return err
	}
	t.Run("rate per caller", func(t *testing.T) {
		r := newRig(t)
		cfg := daemon.DefaultConfig
		cfg.Feedback = daemon.FeedbackLimits{PerCaller: 3}
		r.daemon(cfg, nil, daemon.WithFeedback(r.cli))
		r.publishShop()
		for i := range 3 {
			if err := give(r, i); err != nil {
				t.Fatalf("feedback %d: %v", i, err)
			}
		}
		err := give(r, 3)
		if !errors.Is(err, &events.Error{Code: events.CodeRateLimited}) {
			t.Fatalf("the fourth in a minute: %v, want rate_limited", err)
		}
	})
	t.Run("examples a database keeps", func(t *testing.T) {
		r := newRig(t)
		cfg := daemon.DefaultConfig
		cfg.Feedback = daemon.FeedbackLimits{MaxExamples: 2}
		r.daemon(cfg, nil, daemon.WithFeedback(r.cli))
		r.publishShop()
		for i := range 2 {
			if err := give(r, i); err != nil {
				t.Fatalf("feedback %d: %v", i, err)
			}
		}
		testenv.Eventually(t, 10*time.Second, "two feedback examples indexed", func() bool {
			n, _ := r.store.Count(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}, Tags: map[string]string{chunk.TagOrigin: events.OriginFeedback}})
			return n == 2
		})
		err := give(r, 2)
		if !errors.Is(err, &events.Error{Code: events.CodeRateLimited}) {
			t.Fatalf("the third: %v, want it refused at the bound", err)
		}
		exs, err := r.cli.Examples(ctx, "shop")
		if err != nil || len(exs) != 2 {
			t.Fatalf("stored %d examples (%v), want 2", len(exs), err)
		}
	})
	t.Run("events the stream keeps of a database", func(t *testing.T) {
		r := newRig(t)
		r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
		r.publishShop()
		scfg := streams.DefaultConfig
		scfg.MaxEventsPerDatabase = 10 // above the schema events of shop
		if _, err := streams.Ensure(ctx, r.js, scfg); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := give(r, i); err != nil {
				t.Fatalf("feedback %d: %v", i, err)
			}
		}
		err := give(r, 10)
		if !errors.Is(err, &events.Error{Code: events.CodeRateLimited}) || !strings.Contains(err.Error(), `database "shop" holds the most examples events`) {
			t.Fatalf("the eleventh examples event: %v, want it refused at the stream's bound", err)
		}
	})
}
