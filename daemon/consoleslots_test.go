package daemon

import "testing"

// A caller holds at most max console slots; another caller is not held
// up by it, and a slot given back can be taken again.
func TestCallerSlots(t *testing.T) {
	s := newCallerSlots(2)
	for _, step := range []struct {
		op, who string
		want    bool
	}{
		{"acquire", "shop-app", true},
		{"acquire", "shop-app", true},
		{"acquire", "shop-app", false},
		{"acquire", "other-app", true},
		{"release", "shop-app", true},
		{"acquire", "shop-app", true},
		{"acquire", "shop-app", false},
		{"release", "shop-app", true},
		{"release", "shop-app", true},
		{"release", "other-app", true},
	} {
		if step.op == "release" {
			s.release(step.who)
			continue
		}
		if got := s.acquire(step.who); got != step.want {
			t.Fatalf("%s %s: %v, want %v", step.op, step.who, got, step.want)
		}
	}
	if len(s.held) != 0 {
		t.Errorf("slots left held: %v", s.held)
	}
}
