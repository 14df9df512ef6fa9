// Package pace lets background work give way to foreground requests in
// one process. In the embedded default a worker indexing a burst of
// migrations and a daemon answering searches share the same cores, and
// Go's scheduler splits the CPU between them evenly: searches lost half
// their throughput while migrations landed. Like PostgreSQL's cost-based
// vacuum delay, background work here rests after each step, for as long
// as the step took times a ratio, but only while foreground requests are
// in flight, so a quiet process indexes at full speed.
package pace

import (
	"context"
	"sync/atomic"
	"time"
)

// MaxRest bounds one rest, so that a long step under load does not hold
// back freshness for long.
const MaxRest = 100 * time.Millisecond

// Gate is shared by a process's foreground requests and its background
// work. A nil Gate never rests.
type Gate struct {
	ratio float64
	busy  atomic.Int64
}

// New returns a gate whose background steps rest ratio times their own
// duration while requests are in flight; nil when ratio is not positive.
func New(ratio float64) *Gate {
	if ratio <= 0 {
		return nil
	}
	return &Gate{ratio: ratio}
}

// Begin marks a foreground request in flight until the returned func is
// called.
func (g *Gate) Begin() (end func()) {
	if g == nil {
		return func() {}
	}
	g.busy.Add(1)
	return func() { g.busy.Add(-1) }
}

// Rest is called by background work after a step that took spent: while
// requests are in flight it waits spent×ratio (at most MaxRest, and no
// longer than ctx), and returns how long it waited.
func (g *Gate) Rest(ctx context.Context, spent time.Duration) time.Duration {
	if g == nil || spent <= 0 || g.busy.Load() == 0 {
		return 0
	}
	d := min(time.Duration(float64(spent)*g.ratio), MaxRest)
	// The clock starts before the timer, so a full rest never reads as
	// a hair under d.
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return time.Since(start)
}
