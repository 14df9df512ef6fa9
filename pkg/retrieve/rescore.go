package retrieve

import (
	"slices"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// rescore reorders the best fused candidates by the names and columns
// the question hits (rerank.Schema).
func (p *run) rescore() {
	if !p.cfg.Rescore.Enabled {
		return
	}
	window := min(max(p.cfg.Rescore.Window, 1), len(p.cands))
	// The rescoring counts hits of the question's words in the
	// candidates; the hints' words are evidence of the same kind.
	rq := p.question
	if p.hintTerms != nil {
		rq += "\n" + p.hints
	}
	// So is the SQL of the example most like the question that fits the
	// catalog: the names it reads are the team's own answer to a
	// question like this one.
	if len(p.voters) > 0 && p.voters[0].coverage >= p.cfg.Rescore.ExampleCoverage {
		rq += "\n" + chunk.ExampleSQL(p.voters[0].Chunk)
	}
	rerank.Schema(p.cfg.Rescore.Weights, rq, p.cands[:window])
	for i, c := range p.cands[:window] {
		o := p.byName[c.Kind+"\x00"+c.Name]
		o.ex.SchemaRank, o.ex.SchemaScore = i+1, c.Score
	}
}

// rerank runs the optional reranker. It may fail: the order so far
// stands, with a warning.
func (p *run) rerank() {
	if p.cfg.Reranker == nil {
		return
	}
	reranked, err := p.cfg.Reranker.Rerank(p.ctx, p.req.Question, slices.Clone(p.cands))
	if err != nil {
		p.res.Warnings = append(p.res.Warnings, "reranker failed, results keep the fused order: "+err.Error())
		return
	}
	p.cands = reranked
	for i, c := range p.cands {
		o := p.byName[c.Kind+"\x00"+c.Name]
		o.ex.RerankRank, o.ex.RerankScore = i+1, c.Score
	}
}
