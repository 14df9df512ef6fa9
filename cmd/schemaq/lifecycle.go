package main

import (
	"context"
	"sync"
)

// group runs a process's components and stops them together, in the
// manner of prometheus's run.Group: the first component to return, or the
// end of the parent context, stops every other one. Every component of a
// role is started through it, so that every way out of a role (a failure
// while the rest are still being set up included) stops and waits for
// what was already started.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	first error // the first error a component returned
}

func newGroup(ctx context.Context) *group {
	g := &group{}
	g.ctx, g.cancel = context.WithCancel(ctx)
	return g
}

// Go runs a component until the group's context ends. Its return, error
// or not, stops the group: a role whose worker or daemon has ended is not
// serving.
func (g *group) Go(run func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.end(run(g.ctx))
	}()
}

// Background runs a helper whose end does not stop the group (a periodic
// job that may be switched off, and logs its own failures).
func (g *group) Background(run func(context.Context)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		run(g.ctx)
	}()
}

func (g *group) end(err error) {
	g.mu.Lock()
	if g.first == nil {
		g.first = err
	}
	g.mu.Unlock()
	g.cancel()
}

// Context is the group's: it ends when the group stops.
func (g *group) Context() context.Context { return g.ctx }

// Wait blocks until the parent context ends or a component returns.
func (g *group) Wait() { <-g.ctx.Done() }

// Stop stops every component, waits for all of them, and returns err,
// or, when err is nil, the first error a component returned.
func (g *group) Stop(err error) error {
	g.cancel()
	g.wg.Wait()
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.first
}
