package workers

import (
	"context"
	"testing"
	"time"
)

func TestPriorityHoldsAppliesWhileProjecting(t *testing.T) {
	tests := []struct {
		name       string
		projecting int  // projections under way when the apply asks
		finish     int  // how many of them finish while it waits
		cancel     bool // the apply's context ends while it waits
		wantHeld   bool // awaitApply must not return before they finish
	}{
		{name: "none under way", projecting: 0},
		{name: "one under way", projecting: 1, finish: 1, wantHeld: true},
		{name: "three under way", projecting: 3, finish: 3, wantHeld: true},
		{name: "context ends", projecting: 1, cancel: true, wantHeld: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPriority()
			var dones []func()
			for range tc.projecting {
				dones = append(dones, p.project())
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			returned := make(chan time.Duration, 1)
			go func() { returned <- p.awaitApply(ctx) }()
			if tc.wantHeld {
				select {
				case <-returned:
					t.Fatal("the apply went ahead while a projection was under way")
				case <-time.After(20 * time.Millisecond):
				}
				// All but the last finishing must not release it either.
				for _, done := range dones[:max(tc.finish-1, 0)] {
					done()
					done() // twice: a second call must not count again
				}
				if tc.finish > 1 {
					select {
					case <-returned:
						t.Fatal("the apply went ahead before every projection finished")
					case <-time.After(20 * time.Millisecond):
					}
				}
				if tc.finish > 0 {
					dones[tc.finish-1]()
				}
				if tc.cancel {
					cancel()
				}
			}
			select {
			case d := <-returned:
				if !tc.wantHeld && d != 0 {
					t.Errorf("waited %v with nothing under way", d)
				}
			case <-time.After(maxApplyHold / 2):
				t.Fatal("the apply was still held after the projections finished")
			}
			// Once clear, the next apply goes at once.
			if !tc.cancel {
				if d := p.awaitApply(context.Background()); d != 0 {
					t.Errorf("the next apply waited %v with nothing under way", d)
				}
			}
		})
	}
}

// A projection that never ends (or a stream of them) holds applies for
// at most maxApplyHold each.
func TestPriorityDoesNotStarveApplies(t *testing.T) {
	p := NewPriority()
	defer p.project()()
	d := p.awaitApply(context.Background())
	if d < maxApplyHold {
		t.Errorf("held %v, want maxApplyHold (%v)", d, maxApplyHold)
	}
}
