package daemon

import (
	"testing"
	"time"
)

func TestRateLimiterRefillsPerMinute(t *testing.T) {
	l := newRateLimiter(3)
	t0 := time.Unix(1_000_000, 0)
	steps := []struct {
		key   string
		after time.Duration
		want  bool
	}{
		{"a", 0, true}, {"a", 0, true}, {"a", 0, true}, {"a", 0, false}, // a burst of three
		{"b", 0, true},                 // another caller has its own
		{"a", 19 * time.Second, false}, // not yet a token back
		{"a", 21 * time.Second, true},  // one token a 20 s
		{"a", 21 * time.Second, false}, // and only one
		{"a", 10 * time.Minute, true},  // refilled, to the burst only
		{"a", 10 * time.Minute, true},
		{"a", 10 * time.Minute, true},
		{"a", 10 * time.Minute, false},
	}
	for i, s := range steps {
		if got := l.allow(s.key, t0.Add(s.after)); got != s.want {
			t.Fatalf("step %d (%s at +%v): %v, want %v", i, s.key, s.after, got, s.want)
		}
	}
	if (*rateLimiter)(nil).allow("x", t0) != true || newRateLimiter(0).allow("x", t0) != true {
		t.Error("no limit must allow")
	}
}
