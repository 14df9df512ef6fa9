package retrieve

import (
	"iter"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
)

// joinsAmong returns the inferred joins between two tables of items,
// ordered by their tables and columns so that the same items always
// give the same list (the prompt's cacheable prefix holds it).
func (g *graph) joinsAmong(items []Item) []InferredJoin {
	in := map[string]bool{}
	for _, it := range items {
		if it.Kind == chunk.KindTable {
			in[it.Name] = true
		}
	}
	var out []InferredJoin
	for _, it := range items {
		for _, j := range g.Inferred(it.Name) {
			// Each join is listed under both its tables: take it once,
			// under its From.
			if j.FromKey() == it.Name && in[j.ToKey()] {
				out = append(out, j)
			}
		}
	}
	slices.SortFunc(out, catalog.CompareJoins)
	return out
}

// InferredJoin is a join a schema's names imply where no foreign key
// declares it (catalog.Graph).
type InferredJoin = catalog.InferredJoin

// Graph is cat's join graph (catalog.Graph), from the retriever's cache:
// built once per catalog version, while the previous version's serves.
func (r *Retriever) Graph(cat *catalog.Catalog) *catalog.Graph { return r.graphs.get(cat).Graph }

// joined yields the tables key joins: by declared keys either way, and
// by the joins its names imply, either way too or, when referenced, only
// those its own columns make (film_category.category_id leads to
// category, not category to every table with a category_id). A table
// joined more than one way comes more than once. The hub of a big
// schema joins thousands: nothing is copied.
func (g *graph) joined(key string, referenced bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		for x := range g.Neighbours(key) {
			if !yield(x) {
				return
			}
		}
		for _, j := range g.Inferred(key) {
			x := j.ToKey()
			if x == key {
				if referenced {
					continue
				}
				x = j.FromKey()
			}
			if x != key && !yield(x) {
				return
			}
		}
	}
}
