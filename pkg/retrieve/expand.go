package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// expand adds bridge tables: a table not yet chosen that is linked by
// foreign keys to two chosen tables that are not linked to each other (the
// junction of a many-to-many, the middle of a chain). A question joining
// the two needs it even when it names neither. Each bridge goes right
// after the later of the two tables it joins.
func (r *Retriever) expand(cat *catalog.Catalog, items []Item, limit int, schemas []string) []Item {
	g := r.graphs.get(cat)
	pos := map[string]int{}
	for i, it := range items {
		if it.Kind == chunk.KindTable {
			pos[it.Name] = i
		}
	}
	type bridge struct {
		key    string
		a, b   string
		after  int
		reason string
	}
	// A bridge is a neighbour of a chosen table: look only there, not
	// through the whole graph.
	cands := map[string]bool{}
	for key := range pos {
		for n := range g.Neighbours(key) {
			if _, chosen := pos[n]; !chosen {
				cands[n] = true
			}
		}
	}
	var found []bridge
	for key := range cands {
		nbrs := g.Neighbours(key)
		if t := g.tables[key]; t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		best := bridge{after: 1 << 30}
		for a := range nbrs {
			ia, ok := pos[a]
			if !ok {
				continue
			}
			for b := range nbrs {
				ib, ok := pos[b]
				if !ok || a >= b || g.Neighbours(a)[b] {
					continue
				}
				if after := max(ia, ib); after < best.after {
					best = bridge{key: key, a: a, b: b, after: after}
				}
			}
		}
		if best.key != "" {
			best.reason = "joins " + best.a + " and " + best.b
			found = append(found, best)
		}
	}
	// Bridges between the best-ranked tables first; names break ties.
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && (found[j].after < found[j-1].after || (found[j].after == found[j-1].after && found[j].key < found[j-1].key)); j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	if len(found) > limit {
		found = found[:limit]
	}
	// Insert from the back so earlier positions stay valid.
	for i := len(found) - 1; i >= 0; i-- {
		b := found[i]
		t := g.tables[b.key]
		chunks := g.chunks.Table(t)
		it := Item{Bridge: b.reason, Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: b.key,
			Title: t.Name, Schema: t.Schema, Chunks: chunks}}
		for _, c := range chunks {
			it.Columns = append(it.Columns, c.Columns...)
			it.Text += c.Text
		}
		at := b.after + 1
		items = append(items[:at], append([]Item{it}, items[at:]...)...)
	}
	return items
}

// expand takes the first k candidates and adds the tables that join two
// of them (expand.go).
func (p *run) expand() {
	p.items = make([]Item, 0, min(p.k, len(p.cands)))
	for _, c := range p.cands[:min(p.k, len(p.cands))] {
		p.items = append(p.items, Item{Candidate: c})
	}
	if p.cfg.Expand.Enabled && p.cat != nil && (len(p.req.Kinds) == 0 || slices.Contains(p.req.Kinds, chunk.KindTable)) {
		p.items = p.r.expand(p.cat, p.items, p.cfg.Expand.MaxBridges, p.req.Schemas)
	}
}
