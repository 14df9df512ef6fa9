package retrieve

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// admitsRelations says whether a request for these kinds (none: all)
// wants tables or views.
func admitsRelations(kinds []string) bool {
	return len(kinds) == 0 || slices.Contains(kinds, chunk.KindTable) || slices.Contains(kinds, chunk.KindView)
}

// textResult is one BM25 search's outcome.
type textResult struct {
	hits []index.Hit
	err  error
	took time.Duration
}

// searchText runs a BM25 search in a goroutine of its own.
func (p *run) searchText(f index.Filter, limit int, terms []Term) <-chan textResult {
	done := make(chan textResult, 1)
	ctx := p.ctx
	go func() { done <- p.bm25(ctx, f, limit, terms) }()
	return done
}

// bm25 runs one BM25 search, timed.
func (p *run) bm25(ctx context.Context, f index.Filter, limit int, terms []Term) textResult {
	t0 := time.Now()
	search, err := p.searcher()
	if err != nil {
		return textResult{nil, err, time.Since(t0)}
	}
	ts := termStrings(terms)
	hits, err := search.SearchText(ctx, index.TextQuery{Filter: f, Terms: ts, NoCompounds: p.r.commonPhrases(ts, p.cat),
		Weights: p.cfg.Gather.Weights, Limit: limit})
	return textResult{hits, err, time.Since(t0)}
}

// searchDocsVote is the docs' list for a request that names schemas or
// kinds: tables, views and docs of the whole database together, as a
// section's standing is its rank among the tables. That search costs the
// whole database however small the schema named, so it runs only when
// some doc section matches the question at all (a search of docs alone
// reads their postings only); a database without docs pays nothing.
func (p *run) searchDocsVote(limit int) <-chan textResult {
	done := make(chan textResult, 1)
	// The terms as they are now: collect appends the hints' to them
	// while this runs.
	ctx, db, terms := p.ctx, p.req.Database, p.res.Terms
	go func() {
		r := p.bm25(ctx, index.Filter{Database: db, Kinds: []string{chunk.KindDoc}}, 1, terms)
		if r.err != nil || len(r.hits) == 0 {
			done <- r
			return
		}
		all := p.bm25(ctx, index.Filter{Database: db, Kinds: []string{chunk.KindTable, chunk.KindView, chunk.KindDoc}}, limit, terms)
		all.took += r.took
		done <- all
	}()
	return done
}

// gather runs the ranked lists: BM25 of the question and of the hints,
// KNN, the examples' and the docs' votes, and the identifiers written
// out. The BM25 searches run in goroutines of their own while the
// question is embedded and KNN runs here: on two cores that hides the
// shorter of the two.
func (p *run) gather() error {
	p.startSearches()
	p.searchVector()
	return p.collect()
}

func (p *run) startSearches() {
	cfg, req := p.cfg, p.req
	if cfg.Gather.BM25 {
		p.text = p.searchText(p.filter, cfg.Gather.Candidates, p.res.Terms)
	}
	// The examples' own list: tables the SQL of similar examples reads.
	// The schema an example carries is where its SQL ran, not a filter
	// on it: a request's schemas filter the tables it votes for instead.
	// The tables come from the catalog, with no tags to check, so the
	// list stays out of requests filtered by tag.
	if cfg.Gather.BM25 && cfg.Fuse.ExampleWeight > 0 && cfg.Gather.ExampleCandidates > 0 && p.cat != nil && len(req.Tags) == 0 && admitsRelations(req.Kinds) {
		p.example = p.searchText(index.Filter{Database: req.Database, Kinds: []string{chunk.KindExample}}, cfg.Gather.ExampleCandidates, p.res.Terms)
	}
	// The docs' votes: tables the sections most like the question name
	// (docs.go), under the same conditions as the examples' list. A
	// section's standing is its rank among the tables, so the sections
	// come from the question's own BM25 list when that holds docs, and
	// from a search of tables, views and docs together when the request
	// asks for some kinds or schemas only.
	p.docsVote = cfg.Gather.BM25 && cfg.Fuse.DocWeight > 0 && cfg.Gather.DocCandidates > 0 && p.cat != nil && len(req.Tags) == 0 && admitsRelations(req.Kinds)
	if p.docsVote && (len(req.Kinds) > 0 || len(req.Schemas) > 0) {
		p.doc = p.searchDocsVote(cfg.Gather.Candidates)
	}
	if p.hintTerms != nil {
		p.hint = p.searchText(p.filter, cfg.Gather.Candidates, p.hintTerms)
	}
}

// searchVector embeds the question and runs KNN; a failure is reported
// once the BM25 searches are in (collect).
func (p *run) searchVector() {
	if !p.cfg.Gather.KNN {
		return
	}
	t0 := time.Now()
	vecs, err := p.r.embedder.Embed(p.ctx, []string{p.req.Question})
	p.res.Timings.Embed = time.Since(t0)
	if err != nil {
		p.knnErr = fmt.Errorf("embed question: %w", err)
		return
	}
	t0 = time.Now()
	var search Searcher
	if search, err = p.searcher(); err == nil {
		p.knnHits, err = search.SearchVector(p.ctx, index.VectorQuery{Filter: p.filter, Vector: vecs[0], Limit: p.cfg.Gather.Candidates})
	}
	p.res.Timings.KNN = time.Since(t0)
	if err != nil {
		p.knnErr = fmt.Errorf("knn: %w", err)
	}
}

// rankObjects gives each object its rank in a list of chunk hits: the
// rank of its best chunk.
func (p *run) rankObjects(hits []index.Hit, rank func(*object) (*int, *float64)) {
	n := 0
	for _, h := range hits {
		at, score := rank(p.get(h.Chunk))
		if *at == 0 {
			n++
			*at, *score = n, h.Score
		}
	}
}

// wait takes a search's result, timing the BM25 stage by its slowest.
func (p *run) wait(done <-chan textResult, what string) ([]index.Hit, error) {
	tr := <-done
	if tr.err != nil {
		return nil, fmt.Errorf("%s: %w", what, tr.err)
	}
	p.res.Timings.BM25 = max(p.res.Timings.BM25, tr.took)
	return tr.hits, nil
}

// collect ranks the objects in each list. The order matters: objects are
// numbered as first named, BM25 first, so that with equal fused scores
// its order wins.
func (p *run) collect() error {
	if p.text != nil {
		hits, err := p.wait(p.text, "bm25")
		if err != nil {
			return err
		}
		p.rankObjects(hits, func(o *object) (*int, *float64) { return &o.ex.BM25Rank, &o.ex.BM25Score })
		p.docHits = hits
	}
	if p.hint != nil {
		hits, err := p.wait(p.hint, "bm25 of the hints")
		if err != nil {
			return err
		}
		p.rankObjects(hits, func(o *object) (*int, *float64) { return &o.ex.HintRank, &o.ex.HintScore })
		for _, t := range p.hintTerms {
			t.Why = "hint:" + t.Why
			p.res.Terms = append(p.res.Terms, t)
		}
	}
	if p.example != nil {
		hits, err := p.wait(p.example, "bm25 of the examples")
		if err != nil {
			return err
		}
		p.voters = p.r.exampleVotes(p.cat, hits, p.res.Terms, p.req.Schemas, p.get)
	}
	if p.doc != nil {
		hits, err := p.wait(p.doc, "bm25 of the docs")
		if err != nil {
			return err
		}
		p.docHits = hits
	}
	if p.docsVote {
		p.r.docVotes(p.cat, p.docHits, p.req.Schemas, p.get)
	}
	if p.knnErr != nil {
		return p.knnErr
	}
	p.rankObjects(p.knnHits, func(o *object) (*int, *float64) { return &o.ex.KNNRank, &o.ex.KNNScore })
	return nil
}
