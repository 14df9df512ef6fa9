package workers

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/streams"
)

// TestLaneTakes: a worker consumer leaves an event to a lane only on a
// fresh read of an unsealed lane that delivers it. Each other case would
// lose events when the lane retires.
func TestLaneTakes(t *testing.T) {
	now := time.Now()
	open := laneView{lane: streams.Lane{Name: "l", Start: 100}, ok: true, read: now.Add(-500 * time.Millisecond)}
	sealed := open
	sealed.lane.Sealed = true
	for _, c := range []struct {
		name string
		v    laneView
		seq  uint64
		want bool
	}{
		{"an open lane, from its start", open, 100, true},
		{"an open lane, later", open, 5000, true},
		{"before its start", open, 99, false},
		{"no lane", laneView{read: now}, 100, false},
		{"sealed", sealed, 100, false},
		{"read too long ago", laneView{lane: open.lane, ok: true, read: now.Add(-1100 * time.Millisecond)}, 100, false},
	} {
		if got := c.v.takes(c.seq, now, time.Second); got != c.want {
			t.Errorf("%s: takes = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRetirementSteps walks one lane through its retirement as a worker
// sees it, tick by tick: quiet for long enough, sealed; the seal waited
// out, a horizon; everything up to the horizon applied, deleted.
func TestRetirementSteps(t *testing.T) {
	const quiet, seal = 10 * time.Second, 5 * time.Second
	t0 := time.Now()
	info := func(pending uint64, ackPending int, delivered uint64) *jetstream.ConsumerInfo {
		return &jetstream.ConsumerInfo{NumPending: pending, NumAckPending: ackPending, Delivered: jetstream.SequenceInfo{Stream: delivered}}
	}
	open := streams.Lane{Name: "l"}
	sealed := streams.Lane{Name: "l", Sealed: true}
	horizon := streams.Lane{Name: "l", Sealed: true, Horizon: 500}
	ls := newLanes()
	for i, c := range []struct {
		ci   *jetstream.ConsumerInfo
		l    streams.Lane
		at   time.Duration
		want step
	}{
		{info(3, 0, 10), open, 0, stepNone},                  // busy
		{info(0, 0, 13), open, time.Second, stepNone},        // quiet from now
		{info(0, 1, 13), open, 5 * time.Second, stepNone},    // busy again: quiet starts over
		{info(0, 0, 14), open, 6 * time.Second, stepNone},    // quiet from now
		{info(0, 0, 14), open, 15 * time.Second, stepNone},   // not yet 10 s
		{info(0, 0, 14), open, 16 * time.Second, stepSeal},   // quiet 10 s
		{info(0, 0, 14), sealed, 17 * time.Second, stepNone}, // sealed by another worker: seen now
		{info(2, 0, 14), sealed, 21 * time.Second, stepNone}, // 4 s after seen
		{info(2, 0, 14), sealed, 22 * time.Second, stepHorizon},
		{info(5, 0, 499), horizon, 23 * time.Second, stepNone}, // short of the horizon
		{info(5, 2, 520), horizon, 24 * time.Second, stepNone}, // past it, with events in hand
		{info(5, 0, 520), horizon, 25 * time.Second, stepClose},
		{info(0, 0, 320), horizon, 25 * time.Second, stepClose}, // nothing more of its database
	} {
		if got := ls.due(c.ci, c.l, t0.Add(c.at), quiet, seal); got != c.want {
			t.Errorf("tick %d (%v): step %d, want %d", i, c.at, got, c.want)
		}
	}
}
