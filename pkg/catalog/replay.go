package catalog

import (
	"context"
	"fmt"
)

// checkpointEvery is how many migrations a Replay applies in place
// between copies of its catalog. A copy costs a walk of every table; so
// does redoing this many migrations when one fails and the replay goes
// back to the copy.
const checkpointEvery = 64

// A Replay applies a history's migrations one after another, as Apply
// and Record would, without copying the whole catalog for each one: it
// changes one working catalog in place, and keeps a copy every
// checkpointEvery migrations to go back to when one fails. Applying ten
// thousand migrations one Apply at a time copied ten thousand growing
// catalogs, a minute and a half of a replay.
//
// A Replay is not safe for concurrent use.
type Replay struct {
	opts []ApplyOption
	// cur is the working catalog; base is the last checkpoint, never
	// changed, and since the migrations that lead from base to cur.
	cur, base *Catalog
	since     []step
}

// step is a migration a Replay applied in place since its checkpoint.
type step struct {
	script  *script
	applied Applied
}

// NewReplay starts a replay from c, which it does not change, applying
// each migration with opts.
func NewReplay(c *Catalog, opts ...ApplyOption) *Replay {
	r := &Replay{opts: opts}
	r.Reset(c)
	return r
}

// Reset makes c the replay's catalog, as a snapshot does; the replay does
// not change c.
func (r *Replay) Reset(c *Catalog) {
	r.base, r.cur, r.since = c, c.Clone(), nil
}

// Catalog returns the catalog the replay has reached. It is the replay's
// own: the next Apply changes it.
func (r *Replay) Catalog() *Catalog { return r.cur }

// Apply applies one migration and records it as a, as Apply and Record
// would. When the migration does not apply, the catalog is as it was
// before it, and the error is Apply's. When ctx ends while it applies,
// it is not applied either: what a routine recorded as stopped then is
// the cut's, not the migration's.
func (r *Replay) Apply(ctx context.Context, source, sql string, a Applied) error {
	s, err := prepare(source, sql, r.opts)
	if err != nil {
		return err
	}
	if len(r.since) >= checkpointEvery {
		// The working catalog becomes the checkpoint, never changed
		// again, and work goes on in its clone: a clone's source must
		// stay as it is (Clone).
		r.base, r.cur, r.since = r.cur, r.cur.Clone(), nil
	}
	drifted := len(r.cur.drift)
	spent := newBudget(ctx, s.opts.limits)
	next, err := r.cur.applyInPlace(s, nil, spent)
	spent.close()
	if err == nil && ctx.Err() == nil && !stopsAfter(next.drift, drifted) {
		r.cur = next.record(a)
		r.since = append(r.since, step{script: s, applied: a})
		return nil
	}
	// The working catalog is half changed, or a budget stopped a routine
	// (time is one, so a redo might stop elsewhere): go back to the
	// checkpoint and take the migration as Apply does, on a copy. Its
	// result is the next checkpoint.
	if err := r.rewind(); err != nil {
		return err
	}
	next, err = r.cur.applyCopy(ctx, s)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s was cut while it applied: %w", source, err)
	}
	r.base = next.record(a)
	r.cur, r.since = r.base.Clone(), nil
	return nil
}

// stopsAfter reports whether drift records a budget stop past its first n
// entries.
func stopsAfter(drift []Drift, n int) bool {
	for _, d := range drift[min(n, len(drift)):] {
		if d.Stopped {
			return true
		}
	}
	return false
}

// rewind rebuilds the working catalog from the checkpoint.
func (r *Replay) rewind() error {
	cur := r.base.Clone()
	for i, st := range r.since {
		spent := newBudget(context.Background(), st.script.opts.limits)
		next, err := cur.applyInPlace(st.script, nil, spent)
		spent.close()
		if err != nil {
			// It applied in place before, from the same catalog.
			return fmt.Errorf("replay: redo migration %d since the checkpoint (%s): %w", i+1, st.script.source, err)
		}
		cur = next.record(st.applied)
	}
	r.cur = cur
	return nil
}

// record is Record for a catalog nothing else shares a history array
// with beyond its length.
func (c *Catalog) record(a Applied) *Catalog {
	c.history = append(c.history, a)
	c.Version = a.Seq
	c.stampDrift(a)
	c.stampChanges(a.Seq, a.Source)
	return c
}
