package catalog

import "slices"

// syncPartitions gives every partition its parent's primary key, unique
// keys, foreign keys and indexes (inheritIndexes), as PostgreSQL does
// when a partition is created or attached and when the parent gains a
// key: it builds the partition's own index (named <partition>_pkey,
// <partition>_<columns>_key) and clones foreign keys under the parent's
// constraint name. The copies are derived
// state, marked Inherited and made anew after every script, so a key
// dropped from the parent drops them; a partition detached keeps them as
// its own (ownKeys). It reports whether any table is a partition.
func (c *Catalog) syncPartitions() bool {
	var parts, shared []*Table
	for q, t := range c.tables {
		if !hasInherited(t) && t.PartitionOf == nil {
			continue
		}
		if c.isFrozen(t) {
			shared = append(shared, t)
			t = c.thaw(q)
		}
		if t.PrimaryKey != nil && t.PrimaryKey.Inherited {
			t.PrimaryKey = nil
		}
		t.Unique = slices.DeleteFunc(t.Unique, func(k Key) bool { return k.Inherited })
		t.ForeignKeys = slices.DeleteFunc(t.ForeignKeys, func(f ForeignKey) bool { return f.Inherited })
		t.Indexes = slices.DeleteFunc(t.Indexes, func(ix Index) bool { return ix.Inherited })
		if t.PartitionOf != nil {
			parts = append(parts, t)
		}
	}
	// Sorted, so that names chosen against each other come out the same
	// on every replay.
	slices.SortFunc(parts, func(x, y *Table) int { return compareQual(x.QualName(), y.QualName()) })
	done := map[*Table]bool{}
	var derive func(t *Table, depth int)
	derive = func(t *Table, depth int) {
		if done[t] || depth > len(parts) {
			return
		}
		done[t] = true
		p := c.tables[*t.PartitionOf]
		if p == nil {
			return
		}
		if p.PartitionOf != nil {
			derive(p, depth+1) // a sub-partition follows its parent's copies
		}
		if pk := p.PrimaryKey; pk != nil && len(pk.Columns) > 0 && t.PrimaryKey == nil {
			t.PrimaryKey = &Key{Name: chooseConstraintName(t, "", "pkey"), Columns: slices.Clone(pk.Columns), Inherited: true}
		}
		for _, k := range p.Unique {
			if len(k.Columns) == 0 || t.hasKeyOn(k.Columns) {
				continue
			}
			t.Unique = append(t.Unique, Key{Name: chooseConstraintName(t, columnsAddition(k.Columns), "key"),
				Columns: slices.Clone(k.Columns), Inherited: true})
		}
		for _, fk := range p.ForeignKeys {
			if t.hasConstraint(fk.Name) || t.hasForeignKey(fk) {
				continue
			}
			cp := fk
			cp.Columns, cp.RefColumns, cp.Inherited = slices.Clone(fk.Columns), slices.Clone(fk.RefColumns), true
			t.ForeignKeys = append(t.ForeignKeys, cp)
		}
		c.inheritIndexes(t, p)
	}
	for _, t := range parts {
		derive(t, 0)
	}
	// A shared table whose copies came out as they were stays shared.
	for _, t := range shared {
		if q := t.QualName(); c.tables[q].equal(t) {
			c.tables[q] = t
		}
	}
	return len(parts) > 0
}

// PartitionRoot returns the table t is a partition of, through every
// level of partitioning, or t itself: the table queries name and
// indexes chunk, whose rows the partitions hold.
func (c *Catalog) PartitionRoot(t *Table) *Table {
	for n := 0; t.PartitionOf != nil && n < len(c.tables); n++ {
		p := c.tables[*t.PartitionOf]
		if p == nil {
			break
		}
		t = p
	}
	return t
}

// ownKeys makes t's inherited keys its own, as a detached partition's
// are.
func (t *Table) ownKeys() {
	if t.PrimaryKey != nil {
		t.PrimaryKey.Inherited = false
	}
	for i := range t.Unique {
		t.Unique[i].Inherited = false
	}
	for i := range t.ForeignKeys {
		t.ForeignKeys[i].Inherited = false
	}
	for i := range t.Indexes {
		t.Indexes[i].Inherited = false
	}
}

func hasInherited(t *Table) bool {
	if t.PrimaryKey != nil && t.PrimaryKey.Inherited {
		return true
	}
	return slices.ContainsFunc(t.Unique, func(k Key) bool { return k.Inherited }) ||
		slices.ContainsFunc(t.ForeignKeys, func(f ForeignKey) bool { return f.Inherited }) ||
		slices.ContainsFunc(t.Indexes, func(ix Index) bool { return ix.Inherited })
}

func (t *Table) hasKeyOn(cols []string) bool {
	if t.PrimaryKey != nil && slices.Equal(t.PrimaryKey.Columns, cols) {
		return true
	}
	return slices.ContainsFunc(t.Unique, func(k Key) bool { return slices.Equal(k.Columns, cols) })
}

func (t *Table) hasForeignKey(fk ForeignKey) bool {
	return slices.ContainsFunc(t.ForeignKeys, func(f ForeignKey) bool {
		return slices.Equal(f.Columns, fk.Columns) && f.RefTable == fk.RefTable && slices.Equal(f.RefColumns, fk.RefColumns)
	})
}
