package retrieve

import (
	"cmp"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// docVotes ranks, as a list of its own, the tables and views that the doc
// sections most like the question name: the identifiers they write out
// (`payments.amount`, order_totals) and the relations their SQL blocks
// read. A team's docs say where a concept lives ("refunds are payments
// with a negative amount"), which is what a question about refunds needs
// and what no table name says.
//
// The section at rank i of the docs' BM25 list has 1/(k+i) to give, split
// evenly among the names it writes, and each name's share evenly among
// the tables that own it: a section that names one table speaks for it
// more than a glossary naming thirty, and `amount`, a column of four
// tables, says less than `payments.amount`. Tables no retriever found
// join the candidates through get.
//
// Unlike an example's SQL, a section's names do not join the rescoring's
// query: a section matched on a word or two ("orders", "placed") would
// then decide the head's order for a question about something else; as
// one list among the others its tables reach the context without taking
// the first places. With BIRD's hints of other questions as docs, adding
// the names to the rescoring changed nothing.
func (r *Retriever) docVotes(cat *catalog.Catalog, hits []index.Hit, schemas []string, get func(chunk.Chunk) *object) {
	g := r.graphs.get(cat)
	votes := map[string]float64{}
	by := map[string]string{} // table → the best section naming it
	for i, h := range hits {
		refs := g.identifierRefs(h.Chunk.Text)
		// A section's SQL names what it reads; a relation the catalog
		// lacks (dropped since the doc was written) names nothing, and
		// the rest of the block still counts: the doc is this
		// database's, unlike an example that may be another's.
		for _, q := range r.reads.queries(h.Chunk) {
			keys, _ := q.Place(g.names, "")
			for _, key := range keys {
				if !slices.ContainsFunc(refs, func(ref identifierRef) bool { return len(ref.tables) == 1 && ref.tables[0] == key }) {
					_, name := g.relation(key)
					refs = append(refs, identifierRef{name: name, tables: []string{key}})
				}
			}
		}
		if len(refs) == 0 {
			continue
		}
		share := 1 / (r.cfg.RRFK + float64(i+1)) / float64(len(refs))
		for _, ref := range refs {
			for _, key := range ref.tables {
				votes[key] += share / float64(len(ref.tables))
				if by[key] == "" {
					by[key] = docLabel(h.Chunk)
				}
			}
		}
	}
	keys := make([]string, 0, len(votes))
	for k := range votes {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(votes[b], votes[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	list := make([]listed, len(keys))
	for i, key := range keys {
		list[i] = listed{key, by[key]}
	}
	g.rankList(list, schemas, get, func(o *object) (*int, *string) { return &o.ex.DocRank, &o.ex.Doc })
}

// docLabel names a doc section as a reader finds it: the doc's id and
// the section's heading path.
func docLabel(c chunk.Chunk) string {
	if c.Title == "" {
		return c.Name
	}
	return c.Name + " (" + c.Title + ")"
}
