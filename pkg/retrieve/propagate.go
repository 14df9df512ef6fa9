package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
)

// inferredLend scales what a join only the names imply lends, against a
// declared one: a guess lends a little less. At a declared key's full
// lend the lookup tables it reached crowded the head where worked
// examples already voted for the right ones; a little less did not, and
// much less lost the gain on questions alone (docs/retrieval.md has the
// figures).
const inferredLend = 0.9

// propagate lifts the foreign-key neighbours of the best fused tables
// (objects must be in fused order) to at least PropagationWeight times the
// seed's score; with InferJoins, the neighbours by the joins its names
// imply too. New neighbours are added through get and finished here.
func (r *Retriever) propagate(cat *catalog.Catalog, schemas []string, objects func() []*object, get func(chunk.Chunk) *object) {
	g := r.graphs.get(cat)
	type lend struct {
		key   string
		score float64
	}
	var lends []lend
	seeds := 0
	for _, o := range objects() {
		if seeds >= r.cfg.Propagate.Seeds {
			break
		}
		if o.cand.Kind != chunk.KindTable {
			continue
		}
		seeds++
		floor := r.cfg.Propagate.Weight * o.rrf
		for n := range g.Neighbours(o.cand.Name) {
			lends = append(lends, lend{n, floor})
		}
		if r.cfg.Propagate.InferJoins {
			// Two joins between one pair of tables lend the same floor
			// twice; a floor taken twice is taken once.
			for _, j := range g.Inferred(o.cand.Name) {
				n := j.ToKey()
				if n == o.cand.Name {
					n = j.FromKey()
				}
				lends = append(lends, lend{n, floor * inferredLend})
			}
		}
	}
	for _, l := range lends {
		t := g.tables[l.key]
		if t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		var o *object
		for _, c := range g.tableChunks(t) {
			o = get(c)
		}
		if o == nil {
			continue
		}
		if o.bestAt == 0 { // new: finish it like the others
			o.bestAt = 1 << 30
			o.finish()
		}
		// A floor, not a sum: a neighbour of a strong match is at least
		// this relevant, but lends never reorder candidates that have
		// stronger evidence of their own. A small share of its own score
		// on top orders the neighbours of one seed by their evidence
		// (the films, not the film_keywords, for a question about an
		// actor's films).
		if f := l.score + r.cfg.Propagate.Own*o.base; f > o.rrf {
			o.rrf = f
			o.ex.LiftedTo = f
		}
	}
}

// propagate lifts the join partners of the best tables (route.go).
func (p *run) propagate() {
	if p.cfg.Propagate.Enabled && p.cat != nil {
		p.r.propagate(p.cat, p.req.Schemas, p.objects, p.get)
		p.sortFused()
	}
}
