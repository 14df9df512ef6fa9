package workers

import (
	"context"
	"sync"
)

// heldBytes counts the bytes of the events a worker holds (as delivered;
// decoded, each is held about twice) against MaxHeldBytes, so that
// producers cannot fill its memory. A consumer's MaxAckPending counts
// events, and an event may be 1 MiB: 700 of them, waiting for a
// predecessor, held 1.4 GB in a worker with a limit of 512 MiB. Past
// a share of the limit, the consumers' handlers wait for bytes to be
// released rather than take more (backpressure, see arrive).
type heldBytes struct {
	limit int64 // 0: no limit
	mu    sync.Mutex
	n     int64
	freed chan struct{} // closed, and replaced, whenever bytes are released
}

func newHeldBytes(limit int64) *heldBytes {
	return &heldBytes{limit: limit, freed: make(chan struct{})}
}

func (b *heldBytes) add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += n
	if n < 0 {
		close(b.freed)
		b.freed = make(chan struct{})
	}
}

func (b *heldBytes) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// below reports whether the bytes held are below the limit divided by
// part (or there is no limit).
func (b *heldBytes) below(part int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit <= 0 || b.n < b.limit/part
}

// wait blocks while the bytes held are at least the limit divided by
// part, until ctx ends (false). Nothing held always lets an event in,
// so one larger than the limit still applies.
func (b *heldBytes) wait(ctx context.Context, part int64) bool {
	for {
		b.mu.Lock()
		n, freed := b.n, b.freed
		b.mu.Unlock()
		if b.limit <= 0 || n == 0 || n < b.limit/part {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-freed:
		}
	}
}
