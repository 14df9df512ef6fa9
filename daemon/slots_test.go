package daemon

import "testing"

// A caller holds at most max console slots; another caller is not held
// up by it, and a slot given back can be taken again.
func TestKeyedSlots(t *testing.T) {
	s := newKeyedSlots(2)
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

	// Past its max, a key takes a slot only while the daemon is roomy,
	// and every slot it took is counted and given back.
	for i, roomy := range []bool{false, false, true, true, false} {
		want := i < 2 || roomy
		if got := s.acquireOver("shop", roomy); got != want {
			t.Fatalf("slot %d (roomy %v): %v, want %v", i+1, roomy, got, want)
		}
	}
	if s.held["shop"] != 4 {
		t.Errorf("shop holds %d slots, want 4", s.held["shop"])
	}
	for range 4 {
		s.release("shop")
	}
	if len(s.held) != 0 {
		t.Errorf("slots left held: %v", s.held)
	}
}
