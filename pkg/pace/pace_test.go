package pace

import (
	"context"
	"testing"
	"time"
)

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
		{"busy", New(2), 1, 10 * time.Millisecond, 20 * time.Millisecond, MaxRest},
		{"busy, a long step is capped", New(2), 3, time.Second, MaxRest, 2 * MaxRest},
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
			if tc.gate != nil && tc.gate.Rested() != got {
				t.Errorf("Rested() = %v, want %v", tc.gate.Rested(), got)
			}
		})
	}
}

func TestRestEndsWithTheContext(t *testing.T) {
	g := New(100)
	defer g.Begin()()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if got := g.Rest(ctx, time.Second); got >= MaxRest {
		t.Errorf("rested %v after the context ended", got)
	}
}
