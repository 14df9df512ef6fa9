package catalog

// thaw returns the table named q, first copied out of the tables this
// catalog shares with the one it was cloned from (frozen) when it is
// still one of them: whatever changes a table must hold the copy.
func (c *Catalog) thaw(q QualName) *Table {
	t := c.tables[q]
	if t == nil || !c.isFrozen(t) {
		return t
	}
	n := t.clone()
	c.tables[q] = n
	return n
}

// thawAll copies every shared table, for a statement whose reach is not
// known before it runs.
func (c *Catalog) thawAll() {
	for q, t := range c.tables {
		if c.isFrozen(t) {
			c.tables[q] = t.clone()
		}
	}
}

// isFrozen reports whether t is shared with the catalog this one was
// cloned from. A shared table is never renamed in place, so its own name
// finds it there.
func (c *Catalog) isFrozen(t *Table) bool { return c.frozen[t.QualName()] == t }

// thawReach copies out what a statement may change before it runs (see
// reachOf): it changes the copies, and the catalog cloned from keeps its
// tables as they were.
func (a *applier) thawReach(r reach) {
	if r.all {
		a.cat.thawAll()
		return
	}
	for _, q := range r.tables {
		a.cat.thaw(q)
	}
}

// changing returns the table named q for a change beyond its statement's
// reach (a foreign key that goes with the column or table a drop takes):
// copied out of the shared tables and saved in the open blocks first, as
// beforeChange does for the reach.
func (a *applier) changing(q QualName) *Table {
	t := a.cat.thaw(q)
	a.keep(reach{tables: []QualName{q}})
	return t
}
