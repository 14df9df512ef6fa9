package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// docVotes lends the tables and views that the doc sections most like the
// question name a share of the sections' own standing: the identifiers
// they write out (`payments.amount`, order_totals) and the relations
// their SQL blocks read. A team's docs say where a concept lives ("a
// refund is a payment with a negative amount"), which a question about
// refunds needs and no table's name says.
//
// hits is a BM25 list of tables, views and docs together, so that a
// section's rank says how it stands against the tables: the section at
// rank m (of the first DocCandidates sections) has 1/(k+m) to give, as a
// table at that rank has in the fusion, split evenly among the names it
// writes and each name's share evenly among the tables that own it. A
// section that outranks every table and names one speaks for it like
// BM25's first table; a glossary naming thirty, or a section that
// matched a word or two below the tables, says little. (Ranked as a list
// of their own, the first voted table took 1/(k+1) however weak the
// section, and a pool with thousands of unrelated doc sections lost
// complete recall: docs/retrieval.md.) Tables no retriever found
// join the candidates through get.
//
// Unlike an example's SQL, a section's names do not join the rescoring's
// query: a section matched on a word or two ("orders", "placed") would
// then decide the head's order for a question about something else.
func (r *Retriever) docVotes(cat *catalog.Catalog, hits []index.Hit, schemas []string, get func(chunk.Chunk) *object) {
	g := r.graphs.get(cat)
	votes := map[string]float64{}
	by := map[string]string{} // table → the best section naming it
	sections := 0
	for m, h := range hits {
		if h.Chunk.Kind != chunk.KindDoc {
			continue
		}
		if sections++; sections > r.cfg.Gather.DocCandidates {
			break
		}
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
		share := 1 / (r.cfg.Fuse.RRFK + float64(m+1)) / float64(len(refs))
		for _, ref := range refs {
			for _, key := range ref.tables {
				votes[key] += share / float64(len(ref.tables))
				if by[key] == "" {
					by[key] = docLabel(h.Chunk)
				}
			}
		}
	}
	g.rankList(byVotes(votes, by), schemas, get, func(o *object, l listed) (*int, *string) {
		o.docVote += votes[l.key] // should two keys render as one object, both lend to it, as both rank it
		return &o.ex.DocRank, &o.ex.Doc
	})
}

// docLabel names a doc section as a reader finds it: the doc's id and
// the section's heading path.
func docLabel(c chunk.Chunk) string {
	if c.Title == "" {
		return c.Name
	}
	return c.Name + " (" + c.Title + ")"
}
