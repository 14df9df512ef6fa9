package catalog

import (
	"maps"
	"slices"
)

// Changes are the tables of prev that now does not hold (dropped, or
// changed and so copied: a catalog never changes a table it holds) and
// the tables of now that prev does not hold, in no order. Between two
// versions of a database it is what the migrations between them did to
// its tables, for whatever is built from a version to update the
// previous version's.
func Changes(prev, now *Catalog) (gone, came []*Table) {
	for q, t := range prev.tables {
		if now.tables[q] != t {
			gone = append(gone, t)
		}
	}
	for q, t := range now.tables {
		if prev.tables[q] != t {
			came = append(came, t)
		}
	}
	return gone, came
}

// maxGraphChanges is the most tables changed, going and coming, past
// which a version's graph is built from nothing: updating many costs as
// much.
const maxGraphChanges = 256

// changes are the tables that changed between two versions.
type changes struct {
	gone, came []*Table
}

// Changed are the tables that changed (Changes) since the version whose
// graph g was built from by Next, for what else is updated version by
// version to update by the same tables. ok is false where g was built
// from nothing: a partition changed, more than 256 tables did, or there
// was no version before.
func (g *Graph) Changed() (gone, came []*Table, ok bool) {
	if g.changes == nil {
		return nil, nil, false
	}
	return g.changes.gone, g.changes.came, true
}

// successor is the graph of cat, a later version of g's catalog: g's with
// the keys of the tables that changed taken out and put back, or built
// from nothing where a partition changed or many tables did. While no
// partition changes, every partition has the same root under the same
// name (renaming or dropping a root changes its partitions too), so the
// partitions, their keys and every other table's joins stand.
func (g *Graph) successor(cat *Catalog) *Graph {
	gone, came := Changes(g.cat, cat)
	partition := func(t *Table) bool { return t.PartitionOf != nil }
	if len(gone)+len(came) > maxGraphChanges || slices.ContainsFunc(gone, partition) || slices.ContainsFunc(came, partition) {
		return NewGraph(cat)
	}
	return &Graph{cat: cat, incoming: g.nextIncoming(gone, came), partitions: g.partitions, partitionKeys: g.partitionKeys,
		changes: &changes{gone: gone, came: came}}
}

// nextIncoming are g's incoming keys with the keys of the tables that
// went taken out and those of the tables that came put in, in catalog
// order.
func (g *Graph) nextIncoming(gone, came []*Table) map[QualName][]Incoming {
	dropped := map[*Table]bool{}
	lists := map[QualName][]Incoming{} // of the tables those keys reference
	for _, t := range gone {
		dropped[t] = true
		for _, fk := range t.ForeignKeys {
			lists[fk.RefTable] = nil
		}
	}
	for _, t := range came {
		for _, fk := range t.ForeignKeys {
			lists[fk.RefTable] = nil
		}
	}
	for ref := range lists {
		for _, in := range g.incoming[ref] {
			if !dropped[in.From] {
				lists[ref] = append(lists[ref], in)
			}
		}
	}
	for _, t := range came {
		for i, fk := range t.ForeignKeys {
			lists[fk.RefTable] = append(lists[fk.RefTable], Incoming{From: t, Index: i, Key: fk})
		}
	}
	incoming := maps.Clone(g.incoming)
	for ref, list := range lists {
		if len(list) == 0 {
			delete(incoming, ref)
			continue
		}
		// In catalog order, as NewGraph lists them.
		slices.SortFunc(list, func(a, b Incoming) int {
			if c := compareQual(a.From.QualName(), b.From.QualName()); c != 0 {
				return c
			}
			return a.Index - b.Index
		})
		incoming[ref] = list
	}
	return incoming
}
