package chunk

import (
	"maps"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// maxUpdate is the most tables a migration may change, going and coming,
// for the Chunker to update the last catalog's chunks rather than go
// over every table.
const maxUpdate = 256

// update memoizes next's catalog from prev's by what changed between the
// two: the tables the migration added, changed or dropped, and those
// whose incoming keys come from them. Every other table is the same
// object with the same neighbours, and keeps its chunks without a look:
// going over ten thousand tables for a one-table migration was most of
// a worker's chunking. It reports false, having done nothing, where that
// does not hold (a partition changed, which moves hints between tables;
// an enum changed, which any table may show) or many tables changed.
func (k *Chunker) update(prev, next *memo) bool {
	c := next.cat
	if prev.cat == nil || prev.enums != next.enums {
		return false
	}
	gone, came, ok := changed(prev.cat, c)
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
	g := prev.graph.Next(c)
	next.graph = g
	for t := range redo {
		if t.PartitionOf == nil {
			k.render(prev, next, g, t)
		}
	}
	k.updates.Add(1)
	return true
}

// changed are the tables prev's catalog held that now's does not, and
// those now's holds that prev's did not (catalog.Changes). ok is false
// where one of them is a partition, or more than maxUpdate changed.
func changed(prev, now *catalog.Catalog) (gone, came []*catalog.Table, ok bool) {
	gone, came = catalog.Changes(prev, now)
	partition := func(t *catalog.Table) bool { return t.PartitionOf != nil }
	if len(gone)+len(came) > maxUpdate || slices.ContainsFunc(gone, partition) || slices.ContainsFunc(came, partition) {
		return nil, nil, false
	}
	return gone, came, true
}
