package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// complete connects the ranking's strongest tables through the join
// graph. Walking the first depth candidates in rank order, when the
// table at a position has a neighbour that also joins a table ranked
// above it, and the two do not join each other, that neighbour (the
// junction of a many-to-many, the middle of a chain) goes right after
// it: a question joining the two needs it even when it names neither.
// A neighbour ranked lower is moved up; one not ranked at all is added.
// Up to limit bridges, the earliest first. Nothing here depends on how
// many results were asked for, so a longer list starts with a shorter
// one (cut).
func (r *Retriever) complete(cat *catalog.Catalog, items []Item, depth, limit int, schemas []string) []Item {
	g := r.graphs.get(cat)
	pos := make(map[string]int, len(items))
	for i, it := range items {
		if it.Kind == chunk.KindTable {
			pos[it.Name] = i
		}
	}
	bridges := 0
	for i := 0; i < min(depth+bridges, len(items)) && bridges < limit; i++ {
		if items[i].Kind != chunk.KindTable {
			continue
		}
		// Every bridge the table at i needs goes right after it, the one
		// joining the best-ranked partner first.
		for placed := i; bridges < limit; placed++ {
			b, partner := bridgeAt(g, items, pos, i, placed, schemas)
			if b == "" {
				break
			}
			at, ranked := pos[b]
			if !ranked {
				at = -1
			}
			items = moveUp(g, items, b, at, placed+1, "joins "+partner+" and "+items[i].Name)
			for j := placed + 1; j < len(items); j++ {
				if items[j].Kind == chunk.KindTable {
					pos[items[j].Name] = j
				}
			}
			bridges++
		}
	}
	return items
}

// bridgeAt finds a table not yet placed (at or above placed) that joins
// the table at position i to one ranked above it that it does not join
// itself: among those, the one joining the best-ranked partner, then the
// best-ranked bridge (an unranked one last), then the first name.
func bridgeAt(g *graph, items []Item, pos map[string]int, i, placed int, schemas []string) (bridge, partner string) {
	key := items[i].Name
	own := g.Neighbours(key)
	bestPartner, bestAt := len(items), len(items)+1
	for b := range own {
		at, ranked := pos[b]
		if ranked && at <= placed {
			continue // placed already
		}
		if t := g.tables[b]; t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		if !ranked {
			at = len(items)
		}
		for a := range g.Neighbours(b) {
			pa, ok := pos[a]
			if !ok || pa >= i || a == key || own[a] > 0 {
				continue
			}
			if pa < bestPartner || (pa == bestPartner && (at < bestAt || (at == bestAt && b < bridge))) {
				bridge, partner, bestPartner, bestAt = b, a, pa, at
			}
		}
	}
	return bridge, partner
}

// moveUp places the table key at position to: moved up from at, below
// to, when a list ranked it, or rendered and added when none did (at <
// 0). why labels it (Item.Bridge); "" counts it among the k.
func moveUp(g *graph, items []Item, key string, at, to int, why string) []Item {
	it := Item{Bridge: why}
	if at >= 0 {
		it.Candidate = items[at].Candidate
		items = slices.Delete(items, at, at+1)
	} else {
		it.Candidate = bridgeCandidate(g, key)
	}
	return slices.Insert(items, to, it)
}

// bridgeCandidate renders a table no list ranked, as the index would.
func bridgeCandidate(g *graph, key string) rerank.Candidate {
	t := g.tables[key]
	c := rerank.Candidate{Kind: chunk.KindTable, Name: key, Title: t.Name, Schema: t.Schema, Chunks: g.tableChunks(t)}
	for _, ch := range c.Chunks {
		c.Columns = append(c.Columns, ch.Columns...)
		c.Text += ch.Text
	}
	return c
}

// cut keeps the first k results that are not bridges and the bridges
// among them: a bridge joins two of the k, and a caller asking for k
// tables that join gets the k and what joins them.
func cut(items []Item, k int) []Item {
	ranked := 0
	for i, it := range items {
		if it.Bridge == "" {
			if ranked == k {
				return items[:i]
			}
			ranked++
		}
	}
	return items
}

// expand completes the ranking with the tables its strongest ones lead
// to by name, by what they leave uncovered and by joins, then keeps the
// first k (namedTargets, fillGaps, complete, cut).
func (p *run) expand() {
	items := make([]Item, len(p.cands))
	for i, c := range p.cands {
		items[i] = Item{Candidate: c}
	}
	if p.cfg.Expand.Enabled && p.cat != nil && (len(p.req.Kinds) == 0 || slices.Contains(p.req.Kinds, chunk.KindTable)) {
		// A hint that names a table is as good a word for it as the
		// question's.
		asked := append(slices.Clip(p.res.Terms), p.hintTerms...)
		items = p.r.namedTargets(p.cat, items, p.cfg.Expand.Targets, asked, p.req.Schemas)
		items = p.r.fillGaps(p.cat, items, p.cfg.Expand.GapDepth, p.cfg.Expand.Gaps, slices.Concat(asked, p.gapTerms), p.req.Schemas)
		items = p.r.complete(p.cat, items, p.cfg.Expand.Depth, p.cfg.Expand.MaxBridges, p.req.Schemas)
	}
	p.items = cut(items, p.k)
}
