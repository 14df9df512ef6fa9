package catalogkv

import (
	"sync"
	"time"
)

// heldJSONBytes bounds the table JSON kept between writes (the
// encoders') and between reads (the decoders'), each; the databases used
// longest ago go first.
const heldJSONBytes = 64 << 20

// perDatabase keeps one T per database, used one call at a time, and
// bounds what they hold together (Held, in bytes): past limit
// (heldJSONBytes when 0) the databases used longest ago are dropped, to
// start again empty on their next use. Its zero value is ready.
type perDatabase[T any, PT holder[T]] struct {
	limit int

	mu    sync.Mutex
	dbs   map[string]*heldBy[T]
	total int // bytes the dbs' Ts hold
}

// holder is a *T that says how many bytes it holds.
type holder[T any] interface {
	*T
	Held() int
}

// heldBy is one database's T.
type heldBy[T any] struct {
	mu      sync.Mutex // one use at a time
	v       T
	held    int       // under perDatabase.mu
	usedAt  time.Time // under perDatabase.mu
	dropped bool      // under perDatabase.mu: a use in flight must not count
}

// use calls fn with db's T, then counts what it holds and drops the
// databases used longest ago while the total is past the limit.
func (p *perDatabase[T, PT]) use(db string, fn func(*T) error) error {
	h := p.get(db)
	h.mu.Lock()
	defer h.mu.Unlock()
	err := fn(&h.v)
	p.mu.Lock()
	defer p.mu.Unlock()
	if h.dropped {
		return err
	}
	n := PT(&h.v).Held()
	p.total += n - h.held
	h.held = n
	limit := p.limit
	if limit == 0 {
		limit = heldJSONBytes
	}
	for p.total > limit && len(p.dbs) > 0 {
		p.dropOldest()
	}
	return err
}

func (p *perDatabase[T, PT]) get(db string) *heldBy[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dbs == nil {
		p.dbs = map[string]*heldBy[T]{}
	}
	h := p.dbs[db]
	if h == nil {
		h = &heldBy[T]{}
		p.dbs[db] = h
	}
	h.usedAt = time.Now()
	return h
}

// dropOldest forgets the database used longest ago. p.mu held.
func (p *perDatabase[T, PT]) dropOldest() {
	var oldest string
	for db, h := range p.dbs {
		if oldest == "" || h.usedAt.Before(p.dbs[oldest].usedAt) {
			oldest = db
		}
	}
	h := p.dbs[oldest]
	p.total -= h.held
	h.held, h.dropped = 0, true
	delete(p.dbs, oldest)
}
