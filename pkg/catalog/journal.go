package catalog

import (
	"maps"
	"slices"
)

// journal holds catalog objects as a block found them. Every open block
// saves an object before the first statement under it changes the
// object, so undoing one block needs its own journal only.
type journal struct {
	tables    map[QualName]kept[Table]
	views     map[QualName]kept[View]
	enums     map[QualName]kept[Enum]
	functions map[QualName]kept[Function]
	routines  map[QualName]kept[Routine]
	schemas   map[string]keptSchema
	// touched is how the Apply had changed each saved table before.
	touched map[*Table]keptTouch
	// whole is set once every object was saved: what the journal lacks
	// was made inside the block, and goes with it.
	whole bool
}

// kept is one saved object: live is the object itself, whose contents
// are put back so that pointers to it stay good, and copy what they were.
// A nil live means the name was free.
type kept[T any] struct{ live, copy *T }

type keptSchema struct {
	comment string
	ok      bool
}

type keptTouch struct {
	how touch
	ok  bool
}

// reach is what one statement may change: names per kind of object, or
// everything.
type reach struct {
	tables, views, enums, functions, routines []QualName
	schemas                                   []string
	all                                       bool
}

// keep saves what r names in every open block that has not saved it, and
// returns how many entries it made, the cost to charge.
func (a *applier) keep(r reach) int {
	if r.all {
		return a.keepAll()
	}
	n := 0
	for _, q := range r.tables {
		if len(a.savepoints) > 0 {
			// A rollback puts a table's contents back into the object
			// saved: that must be this catalog's own copy, never a table
			// it shares.
			a.cat.thaw(q)
		}
		n += keepOne(a, q, a.cat.tables, func(j *journal) *map[QualName]kept[Table] { return &j.tables }, (*Table).clone)
	}
	for _, q := range r.views {
		n += keepOne(a, q, a.cat.views, func(j *journal) *map[QualName]kept[View] { return &j.views }, (*View).clone)
	}
	for _, q := range r.enums {
		n += keepOne(a, q, a.cat.enums, func(j *journal) *map[QualName]kept[Enum] { return &j.enums }, cloneEnum)
	}
	for _, q := range r.functions {
		n += keepOne(a, q, a.cat.functions, func(j *journal) *map[QualName]kept[Function] { return &j.functions }, cloneFunction)
	}
	for _, q := range r.routines {
		n += keepOne(a, q, a.cat.routines, func(j *journal) *map[QualName]kept[Routine] { return &j.routines }, sameRoutine)
	}
	for _, s := range r.schemas {
		a.keepSchema(s)
	}
	return n
}

// keepOne saves the object named q of m, copied once, in every open block
// whose journal (picked by field) lacks it, and returns how many it
// saved it in.
func keepOne[T any](a *applier, q QualName, m map[QualName]*T, field func(*journal) *map[QualName]kept[T], clone func(*T) *T) int {
	var k *kept[T]
	entries := 0
	for _, sp := range a.savepoints {
		j := field(&sp.saved)
		if _, ok := (*j)[q]; ok || sp.saved.whole {
			continue
		}
		if k == nil {
			k = &kept[T]{live: m[q]}
			if k.live != nil {
				k.copy = clone(k.live)
			}
		}
		entries++
		if *j == nil {
			*j = map[QualName]kept[T]{}
		}
		(*j)[q] = *k
		if t, ok := any(k.live).(*Table); ok && t != nil {
			sp.saved.keepTouch(a, t)
		}
	}
	return entries
}

func (j *journal) keepTouch(a *applier, t *Table) {
	if _, ok := j.touched[t]; ok {
		return
	}
	if j.touched == nil {
		j.touched = map[*Table]keptTouch{}
	}
	how, ok := a.touched[t]
	j.touched[t] = keptTouch{how, ok}
}

func (a *applier) keepSchema(s string) {
	for _, sp := range a.savepoints {
		if _, ok := sp.saved.schemas[s]; ok || sp.saved.whole {
			continue
		}
		if sp.saved.schemas == nil {
			sp.saved.schemas = map[string]keptSchema{}
		}
		comment, ok := a.cat.schemas[s]
		sp.saved.schemas[s] = keptSchema{comment, ok}
	}
}

// keepAll saves every object in the blocks that have not saved them all.
func (a *applier) keepAll() int {
	if !slices.ContainsFunc(a.savepoints, func(sp *savepoint) bool { return !sp.saved.whole }) {
		return 0
	}
	c := a.cat
	n := a.keep(reach{
		tables: slices.Collect(maps.Keys(c.tables)), views: slices.Collect(maps.Keys(c.views)),
		enums: slices.Collect(maps.Keys(c.enums)), functions: slices.Collect(maps.Keys(c.functions)),
		routines: slices.Collect(maps.Keys(c.routines)), schemas: slices.Collect(maps.Keys(c.schemas)),
	})
	for _, sp := range a.savepoints {
		sp.saved.whole = true
	}
	return n
}

// restore puts back what j saved, and takes away what was made after.
func (a *applier) restore(j *journal) {
	c := a.cat
	restoreAll(c.tables, j.tables, j.whole, (*Table).clone)
	restoreAll(c.views, j.views, j.whole, (*View).clone)
	restoreAll(c.enums, j.enums, j.whole, cloneEnum)
	restoreAll(c.functions, j.functions, j.whole, cloneFunction)
	restoreAll(c.routines, j.routines, j.whole, sameRoutine)
	if j.whole {
		for s := range c.schemas {
			if _, ok := j.schemas[s]; !ok {
				delete(c.schemas, s)
			}
		}
	}
	for s, k := range j.schemas {
		if k.ok {
			c.schemas[s] = k.comment
		} else {
			delete(c.schemas, s)
		}
	}
	for t, k := range j.touched {
		if k.ok {
			a.touched[t] = k.how
		} else {
			delete(a.touched, t)
		}
	}
	// Links the undo brings back are added; the kinship index may keep
	// links that no longer hold.
	for q, k := range j.tables {
		if t := k.live; t != nil {
			if t.PartitionOf != nil {
				a.link(*t.PartitionOf, q)
			}
			for _, p := range t.Inherits {
				a.link(p, q)
			}
		}
	}
}

func restoreAll[T any](m map[QualName]*T, saved map[QualName]kept[T], whole bool, clone func(*T) *T) {
	if whole {
		for q := range m {
			if _, ok := saved[q]; !ok {
				delete(m, q)
			}
		}
	}
	for q, k := range saved {
		if k.live == nil {
			delete(m, q)
			continue
		}
		// Another block may hold the same copy: this one takes its own.
		*k.live = *clone(k.copy)
		m[q] = k.live
	}
}

func cloneEnum(e *Enum) *Enum {
	n := *e
	n.Labels = slices.Clone(e.Labels)
	return &n
}

func cloneFunction(f *Function) *Function {
	n := *f
	return &n
}

// sameRoutine is a routine's copy: a routine is replaced, never changed,
// once recorded.
func sameRoutine(r *Routine) *Routine { return r }
