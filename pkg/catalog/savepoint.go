package catalog

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v5"
)

// savepoint is what an exception block (or an interpreted DO block)
// needs to undo what it changed when it fails: the objects as it found
// them, each saved just before a statement under it first reaches it.
//
// An undo costs what the block changed, not a copy of the catalog: a
// loop of ten thousand `BEGIN ALTER TABLE … ADD COLUMN …; EXCEPTION
// WHEN duplicate_column THEN NULL; END` saves one table a turn. A block
// that only computes, queries or raises saves nothing. A statement whose
// reach is not known before it runs (a DROP, a RENAME: their cascades
// and repointing touch other objects) saves every object once per block,
// as a copy of the catalog did; that is charged to the step budget by
// the objects saved, so a loop of them stops as drift in bounded time.
type savepoint struct {
	saved   journal
	pending int
	path    []string
	// The names the catalog holds of constraints and types it does not
	// model: a few, so copied whole.
	constraints, types []string
}

func (a *applier) savepoint() *savepoint {
	sp := &savepoint{pending: len(a.pending), path: a.searchPath,
		constraints: slices.Clone(a.cat.otherConstraints), types: slices.Clone(a.cat.otherTypes)}
	a.savepoints = append(a.savepoints, sp)
	return sp
}

// beforeChange copies out the shared tables the statement n may change
// (thawReach), saves what it may change in the open blocks, and charges
// interpreted DDL to the object budget. Every statement that may change
// the catalog passes here first.
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
	r := a.reachOf(n)
	// Before the blocks save it: what they keep must be the copy that
	// the statement changes and a rollback puts back.
	a.thawReach(r)
	if len(a.savepoints) == 0 {
		return nil
	}
	saved := a.keep(r)
	if a.calls != nil && saved > 0 {
		if err := a.calls.budget.step(saved); err != nil {
			return err
		}
	}
	return nil
}

// rollback undoes what changed since sp began, and closes it.
func (a *applier) rollback(sp *savepoint) {
	a.restore(&sp.saved)
	a.pending, a.searchPath = a.pending[:sp.pending], sp.path
	a.cat.otherConstraints, a.cat.otherTypes = sp.constraints, sp.types
	a.release(sp)
}

// release closes sp, keeping what the block changed, and any block
// opened inside it that a panic left open. The blocks around it saved
// what it changed too, so they can still undo it.
func (a *applier) release(sp *savepoint) {
	for i := len(a.savepoints) - 1; i >= 0; i-- {
		if a.savepoints[i] == sp {
			a.savepoints = a.savepoints[:i]
			return
		}
	}
}
