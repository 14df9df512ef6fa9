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
		rq += "\n" + p.currentSQL(p.voters[0].Chunk)
	}
	for i := range p.cands[:window] {
		p.cands[i].Analysed = p.r.analysed.get(&p.cands[i])
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

// currentSQL is an example's SQL with the relations and columns renamed
// since written by their current names, as prompts show it: the names it
// lends the rescoring must be the ones the candidates now have.
func (p *run) currentSQL(c chunk.Chunk) string {
	sql := chunk.ExampleSQL(c)
	if p.cat == nil {
		return sql
	}
	qs := p.r.reads.queries(c)
	if len(qs) == 0 {
		return sql
	}
	fit := qs[0].Fit(p.r.graphs.get(p.cat).names, c.Schema)
	if len(fit.Followed) == 0 && len(fit.Columns) == 0 {
		return sql
	}
	return qs[0].Rewrite(sql, fit.Followed, fit.Columns)
}
