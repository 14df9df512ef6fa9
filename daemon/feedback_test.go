package daemon_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
)

// downStream is a Publisher whose stream never takes anything.
type downStream struct{}

func (downStream) Publish(context.Context, *events.Event) (client.Published, error) {
	return client.Published{}, nats.ErrNoResponders
}

// TestFeedbackStoresOnlyWhatPasses: feedback the guard passes becomes one
// example, idempotently; refused SQL, a stream that does not take it and
// a daemon without a publisher each say so and store nothing.
func TestFeedbackStoresOnlyWhatPasses(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
	r.publishShop()

	ask, err := r.cli.Ask(ctx, &events.AskRequest{Database: "shop", Question: "how many orders?"})
	if err != nil || ask.AskID == "" {
		t.Fatalf("an ask reply carries its id: %+v %v", ask, err)
	}
	req := &events.FeedbackRequest{Database: "shop", Question: "Orders per customer", SQL: "SELECT customer_id, count(*)\nFROM orders GROUP BY 1",
		AskID: ask.AskID, Corrected: true}
	first, err := r.cli.Feedback(ctx, req)
	if err != nil || first.Example != events.FeedbackExampleID(req.Question, req.SQL) || first.Version != 6 || first.Duplicate ||
		strings.Join(first.Tables, ",") != "public.orders" || first.Seq == 0 {
		t.Fatalf("feedback: %+v %v", first, err)
	}
	again, err := r.cli.Feedback(ctx, req)
	if err != nil || !again.Duplicate || again.Example != first.Example || again.Seq != first.Seq {
		t.Errorf("the same feedback again: %+v %v", again, err)
	}
	stored, err := r.cli.Examples(ctx, "shop")
	if err != nil || len(stored) != 1 {
		t.Fatalf("examples: %+v %v", stored, err)
	}
	if ex := stored[0]; ex.ID != first.Example || ex.Origin != events.OriginFeedback || ex.AskID != ask.AskID || !ex.Corrected ||
		ex.CatalogVersion != 6 || ex.SQL != "SELECT customer_id, count(*)\nFROM orders GROUP BY 1" || ex.Seq != first.Seq {
		t.Errorf("the stored example: %+v", ex)
	}

	refused := []struct {
		sql, schema, code, message string
	}{
		{"UPDATE orders SET status = 'x'", "", events.CodeUnsafeSQL, "field sql: UPDATE is not a read-only query"},
		{"SELECT * FROM refunds", "", events.CodeUnknownTable, "relation refunds is not in database shop (catalog version 6)"},
		{"SELECT o.total FROM orders o", "", events.CodeUnknownColumn, "o.total"},
		{"SELECT pg_sleep(10)", "", events.CodeUnsafeSQL, "pg_sleep"},
		{"SELECT now()", "", events.CodeBadRequest, "reads no table or view of database shop"},
	}
	for _, tc := range refused {
		_, err := r.cli.Feedback(ctx, &events.FeedbackRequest{Database: "shop", Question: "q", SQL: tc.sql, Schema: tc.schema})
		var we *events.Error
		if !errors.As(err, &we) || we.Code != tc.code || !strings.Contains(we.Message, tc.message) || !strings.Contains(we.Message, "nothing was stored") {
			t.Errorf("%s: %v, want %s with %q", tc.sql, err, tc.code, tc.message)
		}
	}
	if stored, _ := r.cli.Examples(ctx, "shop"); len(stored) != 1 {
		t.Errorf("refused feedback was stored: %+v", stored)
	}
	if _, err := r.cli.Feedback(ctx, &events.FeedbackRequest{Database: "nope", Question: "q", SQL: "SELECT 1 FROM t"}); !errors.Is(err, &events.Error{Code: events.CodeUnknownDatabase}) {
		t.Errorf("unknown database: %v", err)
	}
}

func TestFeedbackWithoutAStream(t *testing.T) {
	for name, opts := range map[string][]daemon.Option{"no publisher": nil, "stream down": {daemon.WithFeedback(downStream{})}} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.daemon(daemon.DefaultConfig, nil, opts...)
			r.publishShop()
			_, err := r.cli.Feedback(context.Background(), &events.FeedbackRequest{Database: "shop", Question: "q", SQL: "SELECT count(*) FROM orders"})
			var we *events.Error
			if !errors.As(err, &we) || we.Code != events.CodeStreamUnavailable || !strings.Contains(we.Message, "nothing was stored") {
				t.Errorf("got %v", err)
			}
		})
	}
}
