package catalog

import "maps"

// lentAdjacency is a version's adjacency with what it was built from, for
// the next version's graph to update.
type lentAdjacency struct {
	cat *Catalog
	adj map[string]map[string]int
}

// adjacency builds the neighbours by declared keys: from the previous
// version's when that was built and the migration changed few tables,
// else from every table.
func (g *Graph) adjacency() map[string]map[string]int {
	g.adjOnce.Do(func() {
		if g.lent == nil || !g.update(g.lent) {
			g.adj = map[string]map[string]int{}
			for _, t := range g.cat.tables {
				g.link(g.cat, t, 1, nil)
			}
		}
		g.lent = nil
		g.built.Store(&lentAdjacency{cat: g.cat, adj: g.adj})
	})
	return g.adj
}

// link counts t's keys, by delta, between its root and the roots of the
// tables they reference in cat. An inner map not in own is the previous
// version's, shared: it is copied before it changes.
func (g *Graph) link(cat *Catalog, t *Table, delta int, own map[string]bool) {
	if len(t.ForeignKeys) == 0 {
		return
	}
	key := cat.PartitionRoot(t).QualName().Key()
	count := func(a, b string) {
		if a == b {
			return
		}
		m := g.adj[a]
		switch {
		case m == nil:
			m = map[string]int{}
			g.adj[a] = m
		case own != nil && !own[a]:
			m = maps.Clone(m)
			g.adj[a] = m
		}
		if own != nil {
			own[a] = true
		}
		if m[b] += delta; m[b] == 0 {
			delete(m, b)
		}
		if len(m) == 0 {
			delete(g.adj, a)
		}
	}
	for _, fk := range t.ForeignKeys {
		ref := fk.RefTable.Key()
		if rt := cat.Table(fk.RefTable); rt != nil {
			ref = cat.PartitionRoot(rt).QualName().Key()
		}
		count(key, ref)
		count(ref, key)
	}
}

// update builds the adjacency from prev's by taking out the keys of the
// tables the migration dropped or changed (g.changes) and counting in
// their new versions' and the new tables'. That is exact only when every
// other table's keys join the same roots as before, which successor saw
// to. It reports false, leaving the adjacency unbuilt, where the graph
// was built from nothing.
func (g *Graph) update(prev *lentAdjacency) bool {
	if g.changes == nil {
		return false
	}
	g.adj = maps.Clone(prev.adj)
	own := map[string]bool{}
	for _, t := range g.changes.gone {
		g.link(prev.cat, t, -1, own)
	}
	for _, t := range g.changes.came {
		g.link(g.cat, t, 1, own)
	}
	return true
}
