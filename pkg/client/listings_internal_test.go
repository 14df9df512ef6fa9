package client

import (
	"fmt"
	"strings"
	"testing"
)

// TestListingsAreBounded: the kept folds stay within their count and
// byte bounds, a fold larger than the byte bound alone is not kept, and
// a subject listed again replaces its old fold in the count.
func TestListingsAreBounded(t *testing.T) {
	var l listings[StoredExample]
	exs := func(n, sqlBytes int) []StoredExample {
		out := make([]StoredExample, n)
		for i := range out {
			out[i].ID = fmt.Sprint(i)
			out[i].SQL = strings.Repeat("x", sqlBytes)
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		sum := 0
		for _, k := range l.kept {
			sum += k.bytes
		}
		if len(l.kept) > maxListings || l.bytes > maxListingBytes || sum != l.bytes {
			t.Fatalf("%s: %d kept, %d bytes counted, %d held", when, len(l.kept), l.bytes, sum)
		}
	}
	st := subjectState{count: 1, last: 1}
	for i := range 2 * maxListings {
		l.put(fmt.Sprintf("s%d", i), st, exs(10, 100))
		check(fmt.Sprintf("subject %d", i))
	}
	if got, ok := l.entry(fmt.Sprintf("s%d", 2*maxListings-1)); !ok || len(got.items) != 10 || got.state != st {
		t.Errorf("the last put is not kept: %+v, %v", got.state, ok)
	}
	// Big folds push out others until they fit.
	for i := range 10 {
		l.put(fmt.Sprintf("big%d", i), st, exs(100, maxListingBytes/400))
		check(fmt.Sprintf("big %d", i))
	}
	// Larger than the bound alone: not kept, and its old fold is gone.
	l.put("big9", st, exs(10, maxListingBytes/5))
	check("too big")
	if _, ok := l.entry("big9"); ok {
		t.Error("a fold over the byte bound is kept")
	}
	// The same subject again replaces its fold.
	for range 3 {
		l.put("again", st, exs(1000, 100))
	}
	check("again")
}
