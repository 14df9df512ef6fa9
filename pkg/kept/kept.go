// Package kept remembers values that follow from their key alone (a
// chunk's hash, a table in one catalog version, an example's SQL), up to
// a bound: retrieval keeps what it reads of tables and examples, and the
// daemon what it parsed of examples, so that asking again costs a map
// lookup instead of the work.
package kept

import "sync"

// Map keeps up to Max values; past that it starts over, which costs one
// computation per key again. The zero value with Max set is ready. Safe
// for concurrent use; the values are shared and must not be written.
type Map[V any] struct {
	Max int

	mu sync.Mutex
	m  map[string]V
}

// Get returns the value kept for key, or computes, keeps and returns it.
// compute runs outside the lock: two callers may both compute a missing
// value, and the later one is kept.
func (k *Map[V]) Get(key string, compute func() V) V {
	k.mu.Lock()
	v, ok := k.m[key]
	k.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= k.Max {
		k.m = map[string]V{}
	}
	k.m[key] = v
	return v
}

// Len is how many values are kept.
func (k *Map[V]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
