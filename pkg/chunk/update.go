package chunk

import (
	"maps"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// update memoizes next's catalog from prev's by what changed between the
// two: the tables the migration added, changed or dropped, and those
// whose incoming keys come from them. Every other table is the same
// object with the same neighbours, and keeps its chunks without a look:
// going over ten thousand tables for a one-table migration was most of
// a worker's chunking. The graph decides by the same tables (Graph.Next,
// Graph.Changed). It reports false where that does not hold: an enum
// changed, which any table may show, or the graph was built from nothing
// (a partition changed, which moves hints between tables, or many tables
// did); next then holds the graph if it was built.
func (k *Chunker) update(prev, next *memo) bool {
	c := next.cat
	if prev.graph == nil || prev.enums != next.enums {
		return false
	}
	g := prev.graph.Next(c)
	next.graph = g
	gone, came, ok := g.Changed()
	if !ok {
		return false
	}
	next.tables = maps.Clone(prev.tables)
	redo := map[*catalog.Table]bool{}
	// The tables a changed table's keys reference, in either version,
	// show its hints.
	referenced := func(t *catalog.Table) {
		for _, fk := range t.ForeignKeys {
			if r := c.Table(fk.RefTable); r != nil {
				redo[r] = true
			}
		}
	}
	for _, t := range gone {
		delete(next.tables, t)
		referenced(t)
	}
	for _, t := range came {
		next.tables[t] = tableMemo{hints: hintsOf(t)}
		redo[t] = true
		referenced(t)
	}
	for t := range redo {
		if t.PartitionOf == nil {
			k.render(prev, next, g, t)
		}
	}
	k.updates.Add(1)
	return true
}
