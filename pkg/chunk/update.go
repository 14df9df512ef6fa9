package chunk

import (
	"maps"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// maxUpdate is the most tables a migration may change for the Chunker to
// update the last catalog's chunks rather than go over every table.
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
	g := catalog.NewGraph(c)
	for t := range redo {
		if t.PartitionOf == nil {
			k.render(prev, next, g, t)
		}
	}
	k.updates.Add(1)
	return true
}

// changed lists the tables of prev that now does not hold (dropped, or
// changed and so copied), and those of now that prev did not. ok is false
// where one of them is a partition, or there are more than maxUpdate.
func changed(prev, now *catalog.Catalog) (gone, came []*catalog.Table, ok bool) {
	kept := 0
	for _, t := range now.Tables() {
		p := prev.Table(t.QualName())
		if p == t {
			kept++
			continue
		}
		if t.PartitionOf != nil || len(came) == maxUpdate {
			return nil, nil, false
		}
		came = append(came, t)
		if p != nil {
			gone = append(gone, p)
		}
	}
	if before := prev.Tables(); kept+len(gone) < len(before) {
		// Dropped or renamed: their names are gone.
		for _, t := range before {
			if now.Table(t.QualName()) == nil {
				gone = append(gone, t)
			}
		}
	}
	for _, t := range gone {
		if t.PartitionOf != nil || len(gone) > maxUpdate {
			return nil, nil, false
		}
	}
	return gone, came, true
}
