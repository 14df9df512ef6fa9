package retrieve

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/text"
)

// run is one request's way through the pipeline: what the stages read
// and what each leaves for the next. Retriever.retrieve calls the stages
// in order; each is a method named for it.
type run struct {
	r         *Retriever
	cfg       *Config
	ctx       context.Context
	req       Request
	speculate bool
	res       *Result
	k         int
	filter    index.Filter
	// One catalog for the whole request: query expansion, routing,
	// propagation and bridges all read the same version.
	cat *catalog.Catalog

	// One view of the index for the whole request where the store can
	// pin one: the searches read the same state, and the store checks
	// for writes once (pinned).
	pin     sync.Once
	view    Searcher
	viewErr error

	// Every object a list named, in the order first named: the order
	// ties fall back on.
	objs map[string]*object
	all  []*object

	// analyse
	question, hints  string
	words, hintWords []string
	hintTerms        []Term // nil: no hints searched

	// gather
	text, hint, example, doc <-chan textResult
	docsVote                 bool
	knnHits                  []index.Hit
	knnErr                   error
	docHits                  []index.Hit
	voters                   []chunk.Chunk // the examples whose tables were voted for, best first

	// from fuse on
	cands  []rerank.Candidate
	byName map[string]*object
	items  []Item
}

func (r *Retriever) newRun(ctx context.Context, req Request, speculate bool) *run {
	p := &run{r: r, cfg: &r.cfg, ctx: ctx, req: req, speculate: speculate, res: &Result{}, k: req.K,
		filter: index.Filter{Database: req.Database, Kinds: req.Kinds, Schemas: req.Schemas, Tags: req.Tags},
		objs:   map[string]*object{}}
	if p.k <= 0 {
		p.k = 10
	}
	if r.catalogs != nil {
		p.cat = r.catalogs.Catalog(req.Database)
	}
	return p
}

// object gathers the chunks of one table/view/doc/example and its stage
// records while the pipeline runs.
type object struct {
	key        string
	cand       rerank.Candidate
	ex         Explain
	seen       map[string]bool
	rrf        float64
	bestAt     int
	schemaRank int // rank of the object's schema by routing; 0 when not routed
	// tailRank is its schema's rank in the fused ranking, which the
	// hedged tail follows; it differs from schemaRank only when the
	// features put another schema first.
	tailRank int
	base     float64 // fused score without the routing bonus
	docVote  float64 // what the doc sections that name it lend it (docs.go)
}

// get is the object of a chunk's table, view, doc or example, added to
// the run's objects when new.
func (p *run) get(c chunk.Chunk) *object {
	key := c.Kind + "\x00" + c.Name
	o := p.objs[key]
	if o == nil {
		o = &object{key: key, seen: map[string]bool{}, cand: rerank.Candidate{Kind: c.Kind, Name: c.Name,
			Title: c.Title, Schema: c.Schema}, ex: Explain{Kind: c.Kind, Name: c.Name}}
		p.objs[key] = o
		p.all = append(p.all, o)
	}
	if !o.seen[c.ID] {
		o.seen[c.ID] = true
		o.cand.Chunks = append(o.cand.Chunks, c)
	}
	return o
}

// objects is the run's objects so far, for helpers that add to them.
func (p *run) objects() []*object { return p.all }

// searcher pins the request's view on first use: while the question is
// being embedded. Pinning before analysing the question, in a goroutine
// of its own, cost the embedded store more than it saved a shared one.
func (p *run) searcher() (Searcher, error) {
	p.pin.Do(func() {
		switch s := p.r.search.(type) {
		case index.SpeculativePinner:
			if p.speculate {
				p.view, p.viewErr = s.PinSpeculative(p.ctx, p.req.Database)
			} else {
				p.view, p.viewErr = s.Pin(p.ctx, p.req.Database)
			}
		case index.Pinner:
			p.view, p.viewErr = s.Pin(p.ctx, p.req.Database)
		default:
			p.view = p.r.search
		}
	})
	return p.view, p.viewErr
}

// confirmed reports whether the view the run read was current; a
// speculative view that was not means running again on a confirmed one.
func (p *run) confirmed() (bool, error) {
	c, ok := p.view.(index.Confirmer)
	if !ok {
		return true, nil
	}
	return c.Confirm(p.ctx)
}

// analyse turns the question and hints into BM25 terms.
func (p *run) analyse() {
	p.question, p.hints = p.req.Question, p.req.Hints
	if p.cfg.DropDates {
		p.question, p.hints = text.StripDates(p.question), text.StripDates(p.hints)
	}
	p.words = text.QueryTerms(p.question)
	p.res.Terms = p.r.valueTerms(p.question, p.r.queryTerms(p.words, p.cat), p.cat)
	if strings.TrimSpace(p.req.Hints) != "" && p.cfg.BM25 && p.cfg.HintWeight > 0 {
		p.hintWords = text.QueryTerms(p.hints)
		p.hintTerms = p.r.valueTerms(p.hints, p.r.queryTerms(p.hintWords, p.cat), p.cat)
	}
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
	go func() {
		t0 := time.Now()
		search, err := p.searcher()
		if err != nil {
			done <- textResult{nil, err, time.Since(t0)}
			return
		}
		ts := termStrings(terms)
		hits, err := search.SearchText(p.ctx, index.TextQuery{Filter: f, Terms: ts, NoCompounds: p.r.commonPhrases(ts, p.cat),
			Weights: p.cfg.Weights, Limit: limit})
		done <- textResult{hits, err, time.Since(t0)}
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
	if cfg.BM25 {
		p.text = p.searchText(p.filter, cfg.Candidates, p.res.Terms)
	}
	// The examples' own list: tables the SQL of similar examples reads.
	// The schema an example carries is where its SQL ran, not a filter
	// on it: a request's schemas filter the tables it votes for instead.
	// The tables come from the catalog, with no tags to check, so the
	// list stays out of requests filtered by tag.
	if cfg.BM25 && cfg.ExampleWeight > 0 && cfg.ExampleCandidates > 0 && p.cat != nil && len(req.Tags) == 0 && admitsRelations(req.Kinds) {
		p.example = p.searchText(index.Filter{Database: req.Database, Kinds: []string{chunk.KindExample}}, cfg.ExampleCandidates, p.res.Terms)
	}
	// The docs' votes: tables the sections most like the question name
	// (docs.go), under the same conditions as the examples' list. A
	// section's standing is its rank among the tables, so the sections
	// come from the question's own BM25 list when that holds docs, and
	// from a search of tables, views and docs together when the request
	// asks for some kinds or schemas only.
	p.docsVote = cfg.BM25 && cfg.DocWeight > 0 && cfg.DocCandidates > 0 && p.cat != nil && len(req.Tags) == 0 && admitsRelations(req.Kinds)
	if p.docsVote && (len(req.Kinds) > 0 || len(req.Schemas) > 0) {
		p.doc = p.searchText(index.Filter{Database: req.Database, Kinds: []string{chunk.KindTable, chunk.KindView, chunk.KindDoc}}, cfg.Candidates, p.res.Terms)
	}
	if p.hintTerms != nil {
		p.hint = p.searchText(p.filter, cfg.Candidates, p.hintTerms)
	}
}

// searchVector embeds the question and runs KNN; a failure is reported
// once the BM25 searches are in (collect).
func (p *run) searchVector() {
	if !p.cfg.KNN {
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
		p.knnHits, err = search.SearchVector(p.ctx, index.VectorQuery{Filter: p.filter, Vector: vecs[0], Limit: p.cfg.Candidates})
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
		p.voters = p.r.exampleVotes(p.cat, hits, p.req.Schemas, p.get)
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

// identify adds the list of tables whose identifiers the question or
// hints write out (ident.go). The index checks a tag filter on what it
// stores; tables named from the catalog carry no tags to check, so with
// a filter this list stays out.
func (p *run) identify() {
	req := p.req
	if p.cfg.IdentifierWeight > 0 && p.cat != nil && len(req.Tags) == 0 && (len(req.Kinds) == 0 || slices.Contains(req.Kinds, chunk.KindTable)) {
		p.r.identify(p.cat, req.Question+"\n"+req.Hints, req.Schemas, p.get)
	}
}

// route ranks the schemas the question may be about (route.go).
func (p *run) route() {
	if !p.cfg.SchemaRouting && p.cfg.SchemaExpansion <= 0 {
		return
	}
	// Hints route too: a definition naming a column says which database
	// the question is about.
	words := p.words
	if p.hintTerms != nil {
		words = append(slices.Clone(p.words), p.hintWords...)
	}
	p.r.schemasOf(p.res, p.r.route(p.cat, words, p.res.Terms, p.objects, p.get))
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
			o.rrf += p.cfg.HintWeight / (p.cfg.RRFK + float64(rank))
		}
		o.base = o.rrf
		if p.cfg.SchemaRouting {
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

// propagate lifts the join partners of the best tables (route.go).
func (p *run) propagate() {
	if p.cfg.Propagation && p.cat != nil {
		p.r.propagate(p.cat, p.req.Schemas, p.objects, p.get)
		p.sortFused()
	}
}

// hedge keeps the routed order for the head only. The tail follows the
// routed order, or the fused ranking's when the routing features put
// another schema first: their bet is on the head.
func (p *run) hedge() {
	h := p.cfg.RoutingHead
	if h <= 0 || !p.cfg.SchemaRouting || len(p.all) <= h {
		return
	}
	tail := p.all
	if slices.ContainsFunc(p.all, func(o *object) bool { return o.tailRank != o.schemaRank }) {
		score := func(o *object) float64 {
			return o.rrf - p.r.routingBonus(o.schemaRank) + p.r.routingBonus(o.tailRank)
		}
		tail = slices.Clone(p.all)
		sort.SliceStable(tail, func(i, j int) bool { return score(tail[i]) > score(tail[j]) })
	}
	p.all = hedge(p.all, h, tail)
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

// rescore reorders the best fused candidates by the names and columns
// the question hits (rerank.Schema).
func (p *run) rescore() {
	if !p.cfg.SchemaRerank {
		return
	}
	window := min(max(p.cfg.SchemaWindow, 1), len(p.cands))
	// The rescoring counts hits of the question's words in the
	// candidates; the hints' words are evidence of the same kind.
	rq := p.question
	if p.hintTerms != nil {
		rq += "\n" + p.hints
	}
	// So is the SQL of the example most like the question that fits the
	// catalog: the names it reads are the team's own answer to a
	// question like this one.
	if len(p.voters) > 0 {
		rq += "\n" + chunk.ExampleSQL(p.voters[0])
	}
	rerank.Schema(p.cfg.SchemaWeights, rq, p.cands[:window])
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

// expand takes the first k candidates and adds the tables that join two
// of them (expand.go).
func (p *run) expand() {
	p.items = make([]Item, 0, min(p.k, len(p.cands)))
	for _, c := range p.cands[:min(p.k, len(p.cands))] {
		p.items = append(p.items, Item{Candidate: c})
	}
	if p.cfg.FKExpansion && p.cat != nil && (len(p.req.Kinds) == 0 || slices.Contains(p.req.Kinds, chunk.KindTable)) {
		p.items = p.r.expand(p.cat, p.items, p.cfg.MaxBridges, p.req.Schemas)
	}
}

// budget keeps what fits the token budget, with the joins the names
// imply among the items kept.
func (p *run) budget() {
	res := p.res
	found := len(p.items)
	items, used := budget(p.items, p.cfg.TokenBudget)
	res.Items = items
	if p.cfg.InferJoins && p.cat != nil {
		res.Joins = p.r.graphs.get(p.cat).joinsAmong(items)
	}
	if p.cfg.TokenBudget <= 0 {
		return
	}
	// The prompt shows the joins after the schema, so they spend the same
	// budget; the tables they join come first.
	joins := len(res.Joins)
	res.Joins = budgetJoins(res.Joins, p.cfg.TokenBudget-used)
	if len(items) < found || len(res.Joins) < joins {
		res.Truncated = true
		w := fmt.Sprintf("the token budget of %d kept %d of %d results", p.cfg.TokenBudget, len(items), found)
		if len(res.Joins) < joins {
			w += fmt.Sprintf(" and %d of %d inferred joins", len(res.Joins), joins)
		}
		res.Warnings = append(res.Warnings, w)
	}
}

// explain records every candidate's way through the stages, and the
// bridges expansion added, with the ranks they ended at.
func (p *run) explain() {
	final := map[string]int{}
	for i, it := range p.res.Items {
		final[it.Kind+"\x00"+it.Name] = i + 1
	}
	for _, o := range p.all {
		o.ex.FinalRank = final[o.key]
		p.res.Explain = append(p.res.Explain, o.ex)
	}
	for i, it := range p.res.Items {
		if it.Bridge != "" {
			p.res.Explain = append(p.res.Explain, Explain{Kind: it.Kind, Name: it.Name, FinalRank: i + 1, Bridge: it.Bridge})
		}
	}
}
