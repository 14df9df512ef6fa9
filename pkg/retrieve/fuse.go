package retrieve

import (
	"slices"
	"sort"
	"strings"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// evidence is an object's share of the fusion from the lists that judge
// it: BM25, KNN, the identifiers written out, the examples' tables and
// the docs'.
// Routing ranks schemas by it; fusion adds the hints' list, which is the
// caller's word.
func (r *Retriever) evidence(o *object) float64 {
	var s float64
	if rank := o.ex.BM25Rank; rank > 0 {
		s += r.cfg.Fuse.BM25Weight / (r.cfg.Fuse.RRFK + float64(rank))
	}
	if rank := o.ex.KNNRank; rank > 0 {
		s += r.cfg.Fuse.KNNWeight / (r.cfg.Fuse.RRFK + float64(rank))
	}
	if rank := o.ex.IdentifierRank; rank > 0 {
		s += r.cfg.Fuse.IdentifierWeight / (r.cfg.Fuse.RRFK + float64(rank))
	}
	if rank := o.ex.ExampleRank; rank > 0 {
		s += r.cfg.Fuse.ExampleWeight * o.exampleTrust / (r.cfg.Fuse.RRFK + float64(rank))
	}
	s += r.cfg.Fuse.DocWeight * o.docVote
	return s
}

// finish merges an object's chunks into its candidate: parts in order,
// their columns and text joined.
func (o *object) finish() {
	slices.SortFunc(o.cand.Chunks, func(a, b chunk.Chunk) int { return a.Part - b.Part })
	var cols []string
	var body strings.Builder
	for _, c := range o.cand.Chunks {
		cols = append(cols, c.Columns...)
		body.WriteString(c.Text)
	}
	o.cand.Columns, o.cand.Text = cols, body.String()
}

// fuse scores every object by Reciprocal Rank Fusion of the lists, plus
// the routing bonus of its schema, and sorts them.
func (p *run) fuse() {
	for _, o := range p.all {
		o.bestAt = 1 << 30
		for _, rank := range []int{o.ex.BM25Rank, o.ex.KNNRank, o.ex.IdentifierRank, o.ex.ExampleRank, o.ex.DocRank} {
			if rank > 0 {
				o.bestAt = min(o.bestAt, rank)
			}
		}
		o.rrf += p.r.evidence(o)
		if rank := o.ex.HintRank; rank > 0 {
			o.rrf += p.cfg.Fuse.HintWeight / (p.cfg.Fuse.RRFK + float64(rank))
		}
		o.base = o.rrf
		if p.cfg.Route.Enabled {
			o.rrf += p.r.routingBonus(o.schemaRank)
		}
		o.finish()
	}
	p.sortFused()
}

// sortFused orders the objects by fused score; ties go to the better
// single rank, then to the name, so the order is deterministic.
func (p *run) sortFused() {
	sort.SliceStable(p.all, func(i, j int) bool {
		a, b := p.all[i], p.all[j]
		if a.rrf != b.rrf {
			return a.rrf > b.rrf
		}
		if a.bestAt != b.bestAt {
			return a.bestAt < b.bestAt
		}
		return a.key < b.key
	})
}

// candidates are the objects in fused order, as the rerankers take them.
func (p *run) candidates() {
	p.cands = make([]rerank.Candidate, len(p.all))
	p.byName = make(map[string]*object, len(p.all))
	for i, o := range p.all {
		o.ex.FusedRank, o.ex.FusedScore = i+1, o.rrf
		o.cand.Score = o.rrf
		p.cands[i] = o.cand
		p.byName[o.key] = o
	}
}
