package retrieve

import "sync"

// kept remembers values that follow from their key alone (a chunk's
// hash, a table in one catalog version), up to max of them; past that it
// starts over, which costs one computation per key again. Safe for
// concurrent use; the values are shared and must not be written.
type kept[V any] struct {
	mu  sync.Mutex
	m   map[string]V
	max int
}

// get returns the value kept for key, or computes, keeps and returns it.
// compute runs outside the lock: two callers may both compute a missing
// value, and the later one is kept.
func (k *kept[V]) get(key string, compute func() V) V {
	k.mu.Lock()
	v, ok := k.m[key]
	k.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= k.max {
		k.m = map[string]V{}
	}
	k.m[key] = v
	return v
}

// len is how many values are kept.
func (k *kept[V]) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.m)
}
