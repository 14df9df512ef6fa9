package workers

import (
	"context"
	"sync"
	"time"
)

// Priority has projections go before applies. A projection is what makes
// applied migrations searchable; an apply only adds to what waits to be
// projected. When many databases ingest at once the two compete for the
// CPU and for the index store's one writer, and a database whose history
// was complete waited behind the applies of the others, many times longer
// than alone (docs/events.md has the figures). With a Priority an apply
// does not start while a projection is under way.
//
// Workers of one process share one (WithPriority), as they share the
// CPU; a worker without one has its own.
type Priority struct {
	mu         sync.Mutex
	projecting int
	clear      chan struct{} // closed while projecting is zero
}

// maxApplyHold bounds how long an apply waits for projections: they
// cannot starve applies, even with projections of many databases
// overlapping without a break.
const maxApplyHold = 250 * time.Millisecond

// NewPriority returns a Priority for the workers of one process.
func NewPriority() *Priority {
	c := make(chan struct{})
	close(c)
	return &Priority{clear: c}
}

// project marks a projection as under way until done is called.
func (p *Priority) project() (done func()) {
	p.mu.Lock()
	if p.projecting == 0 {
		p.clear = make(chan struct{})
	}
	p.projecting++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.projecting--; p.projecting == 0 {
				close(p.clear)
			}
		})
	}
}

// awaitApply waits until no projection is under way, at most
// maxApplyHold, and returns how long it waited.
func (p *Priority) awaitApply(ctx context.Context) time.Duration {
	p.mu.Lock()
	clear := p.clear
	p.mu.Unlock()
	select {
	case <-clear:
		return 0
	default:
	}
	start := time.Now()
	t := time.NewTimer(maxApplyHold)
	defer t.Stop()
	select {
	case <-clear:
	case <-t.C:
	case <-ctx.Done():
	}
	return time.Since(start)
}
