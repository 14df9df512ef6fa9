package workers

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// WithLaneTimes shortens the lanes' clocks for tests (lanes.go).
func WithLaneTimes(fresh, seal, tick, close time.Duration) Option {
	return func(w *Worker) { w.laneTimes = laneTimes{fresh: fresh, seal: seal, tick: tick, close: close} }
}

// Handle applies msg as its database's queue would, in whatever order a
// test calls it, and returns the outcome.
func (w *Worker) Handle(ctx context.Context, msg jetstream.Msg) string {
	meta, err := msg.Metadata()
	if err != nil {
		return err.Error()
	}
	return w.handle(ctx, w.newItem(msg, meta)).act.String()
}

// Compact deletes the superseded events queued so far, as Run's
// compactor does, and counts them by outcome.
func (w *Worker) Compact(ctx context.Context) map[string]int {
	out := map[string]int{}
	if w.compact == nil {
		return out
	}
	w.compact.drain(ctx, w.compact.next(), func(outcome string) { out[outcome]++ })
	return out
}
