package memsearch

import "sync"

// Current keeps one database's snapshot up to date with a store's
// generation counter, for the stores that search in memory and keep the
// chunks elsewhere (a SQLite file, Redis): one caller at a time catches
// up, and the others that need what it reads wait for it.
type Current struct {
	mu   sync.Mutex // guards gen and snap
	gen  int64      // the generation snap reflects; -1 before the first load
	snap *Snapshot
	load sync.Mutex // held by the caller catching up
}

// NewCurrent returns a Current with nothing loaded.
func NewCurrent() *Current { return &Current{gen: -1} }

// Snapshot returns the snapshot and its generation (nil and -1 before the
// first load).
func (c *Current) Snapshot() (*Snapshot, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap, c.gen
}

// CatchUp reads what changed since generation since into base (since is
// -1 and base nil for a whole load; it may decide on a whole load itself)
// and returns the new snapshot with the generation it reflects.
type CatchUp func(base *Snapshot, since int64) (*Snapshot, int64, error)

// Get returns the snapshot brought up to gen. When another caller is
// already catching up it waits for it, and catches up itself if that
// did not reach gen: a search that starts after a write returned must
// find it, though another search began catching up a moment before the
// write. When catching up fails it returns the snapshot as it was if
// there is one: the last good snapshot beats an error. It reports
// whether it caught up.
func (c *Current) Get(gen int64, catchUp CatchUp) (snap *Snapshot, caughtUp bool, err error) {
	snap, have := c.Snapshot()
	if snap != nil && have >= gen {
		return snap, false, nil
	}
	c.load.Lock()
	defer c.load.Unlock()
	if snap, have = c.Snapshot(); snap != nil && have >= gen {
		return snap, false, nil // caught up by the one this caller waited for
	}
	next, nextGen, err := catchUp(snap, have)
	if err != nil {
		if snap != nil {
			return snap, false, nil
		}
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil || nextGen > c.gen {
		c.snap, c.gen = next, nextGen
	}
	return c.snap, true, nil
}

// Advance applies a write of this process, which raised the generation to
// gen: when the snapshot was at gen-1 (or the write was the database's
// first) it moves on without a read; otherwise the next Get catches up.
func (c *Current) Advance(dim int, gen int64, upserts []Doc, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case gen == 1 && c.snap == nil:
		c.snap, c.gen = New(dim).With(upserts, removed), gen
	case c.snap != nil && c.gen == gen-1:
		c.snap, c.gen = c.snap.With(upserts, removed), gen
	}
}
