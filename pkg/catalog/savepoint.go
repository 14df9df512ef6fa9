package catalog

import pg "github.com/pganalyze/pg_query_go/v5"

// savepoint is the catalog as an exception block (or an interpreted DO
// block) found it, for undoing what the block changed when it fails.
//
// The copy is taken lazily, when a statement under the block first
// reaches the catalog: a block that only computes, queries or raises
// (the common loop body `BEGIN PERFORM …; EXCEPTION WHEN others THEN
// NULL; END`) costs nothing to enter and nothing to undo. Blocks entered
// with nothing applied between them share one copy. A copy is charged
// to the step budget by the objects it copies, so a loop that changes
// the catalog inside an exception block on every turn stops as drift in
// bounded time instead of growing quadratically.
type savepoint struct {
	cat     *Catalog // nil while nothing changed since the block began
	pending int
	path    []string
}

func (a *applier) savepoint() *savepoint {
	sp := &savepoint{pending: len(a.pending), path: a.searchPath}
	a.savepoints = append(a.savepoints, sp)
	return sp
}

// beforeChange takes the copy the open blocks are waiting for, and
// charges interpreted DDL to the object budget. Every statement that may
// change the catalog passes here first.
func (a *applier) beforeChange(n *pg.Node) error {
	if a.calls != nil {
		objects := 1
		if cs := n.GetCreateStmt(); cs != nil {
			objects += len(cs.TableElts)
		}
		if err := a.calls.budget.create(objects); err != nil {
			return err
		}
	}
	top := len(a.savepoints) - 1
	if top < 0 || a.savepoints[top].cat != nil {
		return nil
	}
	if a.calls != nil {
		c := a.cat
		cost := 1 + len(c.tables) + len(c.views) + len(c.enums) + len(c.functions) + len(c.routines)
		if err := a.calls.budget.step(cost); err != nil {
			return err
		}
	}
	saved := a.cat.Clone()
	for i := top; i >= 0 && a.savepoints[i].cat == nil; i-- {
		a.savepoints[i].cat = saved
	}
	return nil
}

// rollback undoes what changed since sp began, and closes it.
func (a *applier) rollback(sp *savepoint) {
	if sp.cat != nil {
		a.cat = sp.cat
		a.forgetKinship()
		// Enclosing blocks that began with this same catalog are back
		// where they began; the copy is the working catalog now, so they
		// wait for a new one.
		for _, o := range a.savepoints {
			if o != sp && o.cat == sp.cat {
				o.cat = nil
			}
		}
	}
	a.pending, a.searchPath = a.pending[:sp.pending], sp.path
	a.release(sp)
}

// release closes sp, keeping what the block changed, and any block
// opened inside it that a panic left open.
func (a *applier) release(sp *savepoint) {
	for i := len(a.savepoints) - 1; i >= 0; i-- {
		if a.savepoints[i] == sp {
			a.savepoints = a.savepoints[:i]
			return
		}
	}
}
