package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
)

// Named targets. A junction often takes the question's word for the
// table it leads to: "games published by 10TACLE Studios" finds
// game_publisher, whose name holds "publisher", while the publisher's
// name, which the query filters on, is in publisher, which then has no
// word of its own left to rank by. With the database named, 38 of the
// 111 tables the BIRD sample's many-table questions missed at 5 were
// such a table (docs/retrieval.md). So a word is attributed to the
// table it names, not only to the junction that contains it.

// namedTargets moves up, right after a table among the first depth
// items, each table it joins whose name is made of words of its own
// name, one of them a question word or one it extends (game_publisher →
// publisher for "published"), unless that table is among the first depth already. A
// table not ranked at all is added. It reads only the ranking and the
// question, never k, so a longer list still starts with a shorter one.
// schemas, when set, bounds the tables it may add.
func (r *Retriever) namedTargets(cat *catalog.Catalog, items []Item, depth int, terms []Term, schemas []string) []Item {
	if depth <= 0 {
		return items
	}
	asked := map[string]bool{}
	for _, t := range terms {
		if t.Why == FromQuestion {
			asked[t.Term] = true
		}
	}
	if len(asked) == 0 {
		return items
	}
	g := r.graphs.get(cat)
	for i := 0; i < min(depth, len(items)); i++ {
		target := g.namedTarget(items, i, depth, asked, schemas)
		if target == "" {
			continue
		}
		items = moveUp(g, items, target, tablePosition(items, target), i+1, "")
		items[i+1].Placed = "the question names it in " + items[i].Name
		i++ // the target is placed: it leads to nothing more
	}
	return items
}

// namedTarget is the table the table at items[i] leads to by a question
// word (see namedTargets), the first by name when several do; "" when
// none does.
func (g *graph) namedTarget(items []Item, i, depth int, asked map[string]bool, schemas []string) string {
	from := items[i]
	if from.Kind != chunk.KindTable || g.tables[from.Name] == nil {
		return ""
	}
	own := g.nameTerms(from.Name)
	if len(own) < 2 {
		return ""
	}
	best := ""
	for x := range g.joined(from.Name, true) {
		t := g.tables[x]
		if t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		words := g.nameTerms(x)
		if len(words) >= len(own) ||
			!slices.ContainsFunc(words, func(w string) bool { return askedAs(asked, w) }) ||
			slices.ContainsFunc(words, func(w string) bool { return !slices.Contains(own, w) }) {
			continue
		}
		if at := tablePosition(items, x); at >= 0 && at < depth {
			continue
		}
		if best == "" || x < best {
			best = x
		}
	}
	return best
}

// tablePosition is the position of the table named key in items, or -1.
func tablePosition(items []Item, key string) int {
	return slices.IndexFunc(items, func(it Item) bool { return it.Kind == chunk.KindTable && it.Name == key })
}

// askedAs reports whether the question asks for w: as it is, or by a
// word that w extends by a few letters (publish → publisher).
func askedAs(asked map[string]bool, w string) bool {
	if asked[w] {
		return true
	}
	for n := max(4, len(w)-3); n < len(w); n++ {
		if asked[w[:n]] {
			return true
		}
	}
	return false
}
