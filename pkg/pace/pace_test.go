package pace

import (
	"context"
	"testing"
	"time"
)

// The bounds leave room for a loaded machine: a rest is checked to
// happen (at least spent×ratio), to be capped (far below an uncapped
// rest) and to be skipped (exactly zero), not timed to the millisecond.
func TestRestOnlyWhileRequestsAreInFlight(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		gate     *Gate
		inFlight int
		spent    time.Duration
		min, max time.Duration
	}{
		{"quiet", New(2), 0, 10 * time.Millisecond, 0, 0},
		{"busy", New(2), 1, 10 * time.Millisecond, 20 * time.Millisecond, time.Second},
		{"busy, a long step is capped", New(2), 3, 10 * time.Second, MaxRest, 5 * time.Second},
		{"disabled", New(0), 1, 10 * time.Millisecond, 0, 0},
		{"nil", nil, 1, 10 * time.Millisecond, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ends []func()
			for range tc.inFlight {
				ends = append(ends, tc.gate.Begin())
			}
			got := tc.gate.Rest(ctx, tc.spent)
			for _, end := range ends {
				end()
			}
			if got < tc.min || got > tc.max {
				t.Errorf("rested %v, want between %v and %v", got, tc.min, tc.max)
			}
		})
	}
}

func TestRestEndsWithTheContext(t *testing.T) {
	g := New(100)
	defer g.Begin()()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := g.Rest(ctx, time.Second); got >= MaxRest {
		t.Errorf("rested %v with its context ended", got)
	}
}
