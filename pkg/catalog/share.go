package catalog

import "slices"

// Structural sharing. Apply works on a deep copy, so every table of the
// catalog it returns is a new object even when the migration touched one
// table.
// Readers downstream (chunking, the retriever's vocabulary, encoding)
// keep per-object work keyed by pointer: if unchanged objects are the
// very objects of the catalog before, a one-table migration costs them
// one table. Sharing is safe because a catalog that has been returned is
// never mutated again (Apply clones before it writes).

// ShareWith replaces every table, view, enum and function of c that is
// equal to prev's object of the same name by prev's object, so that what
// did not change between the two is the same pointer in both. A worker
// calls it once per catalog it writes (not per Apply: a run of a hundred
// migrations would compare every table a hundred times), a watcher on
// each catalog it decodes. It costs one comparison per object. Neither
// catalog may be mutated afterwards.
func (c *Catalog) ShareWith(prev *Catalog) {
	if prev == nil || prev == c {
		return
	}
	shareMap(c.tables, prev.tables, (*Table).equal)
	shareMap(c.views, prev.views, (*View).equal)
	shareMap(c.enums, prev.enums, (*Enum).equal)
	shareMap(c.functions, prev.functions, func(a, b *Function) bool { return *a == *b })
	shareMap(c.routines, prev.routines, func(a, b *Routine) bool {
		return a.Schema == b.Schema && a.Name == b.Name && slices.Equal(a.Sources, b.Sources)
	})
	if o := c.order; o != nil {
		// It may hold the objects just replaced; their names stand.
		next := &order{from: o.from, had: o.had}
		if sorted := c.sortedTables(); sorted != nil {
			next.from, next.had = sorted, c.tables
		}
		c.order = next
	}
}

func shareMap[T any](cur, prev map[QualName]*T, equal func(a, b *T) bool) {
	for q, o := range cur {
		if p := prev[q]; p != nil && p != o && equal(o, p) {
			cur[q] = p
		}
	}
}

// equal reports whether t and o describe the same table. It must read
// every field: share_test.go changes each one in turn to hold it to that.
func (t *Table) equal(o *Table) bool {
	return t.Schema == o.Schema && t.Name == o.Name &&
		slices.EqualFunc(t.Columns, o.Columns, (*Column).equal) &&
		ptrEqual(t.PrimaryKey, o.PrimaryKey, (*Key).equal) &&
		slices.EqualFunc(t.Unique, o.Unique, func(a, b Key) bool { return a.equal(&b) }) &&
		slices.EqualFunc(t.ForeignKeys, o.ForeignKeys, func(a, b ForeignKey) bool { return a.equal(&b) }) &&
		slices.EqualFunc(t.Checks, o.Checks, func(a, b Check) bool { return a.equal(&b) }) &&
		slices.EqualFunc(t.Indexes, o.Indexes, Index.equal) &&
		slices.Equal(t.Inherits, o.Inherits) &&
		ptrEqual(t.PartitionOf, o.PartitionOf, func(a, b *QualName) bool { return *a == *b }) &&
		t.PartitionBound == o.PartitionBound && t.PartitionBy == o.PartitionBy && t.Comment == o.Comment &&
		slices.Equal(t.Renamed, o.Renamed) && slices.Equal(t.History, o.History)
}

func (c *Column) equal(o *Column) bool {
	return c.Name == o.Name && c.Type == o.Type &&
		ptrEqual(c.Enum, o.Enum, func(a, b *QualName) bool { return *a == *b }) &&
		c.NotNull == o.NotNull && c.Default == o.Default && c.Generated == o.Generated &&
		c.Identity == o.Identity && c.OwnsSequence == o.OwnsSequence && c.Comment == o.Comment && c.Inferred == o.Inferred &&
		slices.Equal(c.Renamed, o.Renamed)
}

func (ix Index) equal(o Index) bool {
	return ix.Name == o.Name && ix.Method == o.Method && slices.Equal(ix.Keys, o.Keys) && slices.Equal(ix.Include, o.Include) &&
		ix.Unique == o.Unique && ix.Where == o.Where && slices.Equal(ix.Reads, o.Reads) &&
		slices.Equal(ix.Names, o.Names) && ix.Inherited == o.Inherited
}

func (k *Key) equal(o *Key) bool {
	return k.Name == o.Name && slices.Equal(k.Columns, o.Columns) && k.Inherited == o.Inherited
}

func (f *ForeignKey) equal(o *ForeignKey) bool {
	return f.Name == o.Name && slices.Equal(f.Columns, o.Columns) && f.RefTable == o.RefTable &&
		slices.Equal(f.RefColumns, o.RefColumns) && f.OnDelete == o.OnDelete && f.OnUpdate == o.OnUpdate &&
		f.Inherited == o.Inherited
}

func (k *Check) equal(o *Check) bool {
	return k.Name == o.Name && k.Expr == o.Expr && slices.Equal(k.Columns, o.Columns) && k.Exclude == o.Exclude
}

func (v *View) equal(o *View) bool {
	return v.Schema == o.Schema && v.Name == o.Name && v.Materialized == o.Materialized &&
		v.Definition == o.Definition && slices.EqualFunc(v.Columns, o.Columns, (*Column).equal) &&
		slices.Equal(v.Reads, o.Reads) && v.Comment == o.Comment && slices.Equal(v.Renamed, o.Renamed)
}

func (e *Enum) equal(o *Enum) bool {
	return e.Schema == o.Schema && e.Name == o.Name && slices.Equal(e.Labels, o.Labels) && e.Comment == o.Comment
}

func ptrEqual[T any](a, b *T, equal func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equal(a, b)
}
