package kept

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// TestMapKeepsWithinItsBound: a key is computed once while it is kept,
// the map never holds more than Max, and concurrent callers agree.
func TestMapKeepsWithinItsBound(t *testing.T) {
	var computed atomic.Int64
	k := &Map[int]{Max: 100}
	square := func(i int) func() int {
		return func() int { computed.Add(1); return i * i }
	}
	for i := range 50 {
		if got := k.Get(strconv.Itoa(i), square(i)); got != i*i {
			t.Fatalf("%d: got %d", i, got)
		}
	}
	for i := range 50 {
		k.Get(strconv.Itoa(i), square(i))
	}
	if n := computed.Load(); n != 50 {
		t.Errorf("computed %d times for 50 keys asked twice", n)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				key := (i*7 + g) % 300
				if got := k.Get(strconv.Itoa(key), square(key)); got != key*key {
					t.Errorf("%d: got %d", key, got)
				}
			}
		}()
	}
	wg.Wait()
	if n := k.Len(); n > 100 {
		t.Errorf("%d kept, bound 100", n)
	}
}
