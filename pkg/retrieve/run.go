package retrieve

import (
	"go.opentelemetry.io/otel"

	"context"
	"sync"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// run is one request's way through the pipeline: what the stages read
// and what each leaves for the next. Retriever.retrieve calls the stages
// in order; each is a method named for it.
type run struct {
	r   *Retriever
	cfg *Config
	// ctx is the current stage's (stage sets it); base is the request's,
	// for what outlives a stage: the pinned view, searches in flight.
	ctx       context.Context
	base      context.Context
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
	// gapTerms are value terms only the coverage gaps read (valueTerms'
	// loose ones).
	gapTerms []Term

	// gather
	text, hint, example, doc <-chan textResult
	docsVote                 bool
	knnHits                  []index.Hit
	knnErr                   error
	docHits                  []index.Hit
	voters                   []voter // the examples whose tables were voted for, best first

	// from fuse on
	cands  []rerank.Candidate
	byName map[string]*object
	items  []Item
}

func (r *Retriever) newRun(ctx context.Context, req Request, speculate bool) *run {
	p := &run{r: r, cfg: &r.cfg, ctx: ctx, base: ctx, req: req, speculate: speculate, res: &Result{}, k: req.K,
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
	// exampleTrust scales its place in the examples' list: the share of
	// the question's terms the best example voting for it holds
	// (examples.go); 1 when trust is off.
	exampleTrust float64
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
				p.view, p.viewErr = s.PinSpeculative(p.base, p.req.Database)
			} else {
				p.view, p.viewErr = s.Pin(p.base, p.req.Database)
			}
		case index.Pinner:
			p.view, p.viewErr = s.Pin(p.base, p.req.Database)
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
	return c.Confirm(p.base)
}

// stage starts a span for one stage of the run, which the stage's work
// (the searches of gather) runs under, and returns its end. Goroutines a
// stage starts take its context when they start: p.ctx changes after.
func (p *run) stage(name string) func() {
	parent := p.ctx
	ctx, span := otel.Tracer(traceScope).Start(parent, name)
	p.ctx = ctx
	return func() {
		span.End()
		p.ctx = parent
	}
}
