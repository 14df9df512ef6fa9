// Package retrieve is the retrieval pipeline the daemon and the benchmark
// share: BM25 and KNN candidates, Reciprocal Rank Fusion, schema-aware
// rescoring, an optional reranker, foreign-key bridges and a token budget.
// Every stage records what it did to each candidate, so a result can
// explain itself.
package retrieve

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
	"go.uber.org/zap"
)

// Searcher is the part of an index.Store retrieval needs: the search
// half, which is also what a store pins for one request.
type Searcher = index.Searcher

// Catalogs gives the current catalog of a database, or nil when unknown;
// foreign-key expansion needs it.
type Catalogs interface {
	Catalog(db string) *catalog.Catalog
}

// Request is one retrieval.
type Request struct {
	Database string
	Question string
	K        int // results wanted (10 when ≤ 0)
	Kinds    []string
	Schemas  []string // only tables and views of these schemas
	Tags     map[string]string
	// Hints is what the caller knows beside the question: a definition
	// ("eligible free rate = free meals / enrolment"), the columns it
	// means. It is searched as a second, weaker BM25 query (HintWeight),
	// so that it can add evidence without taking over the question.
	Hints string
}

// Item is one retrieved object with all its chunks.
type Item struct {
	rerank.Candidate
	// Bridge, when set, says why join completion placed the item where
	// it is ("joins public.a and public.b"): added, or moved up from
	// further down. A bridge is one beyond the k results asked for.
	Bridge string
	// Placed, when set, says why join completion placed the item where
	// it is among the k results: a table the question names inside
	// another's name (named targets), or one that covers what the first
	// results do not (coverage gaps).
	Placed string
}

// Result is a retrieval's outcome.
type Result struct {
	Items     []Item
	Truncated bool // the token budget cut items
	// Stale counts the worked examples left out because their SQL does
	// not fit the catalog (it does not parse, or reads a relation or
	// column the catalog no longer has): they reach no prompt.
	Stale int
	// Warnings say what degraded without failing (a reranker that
	// failed, leaving the fused order).
	Warnings []string
	Explain  []Explain
	// Terms are the BM25 query's terms, each with where it came from.
	Terms []Term
	// Joins are the joins the names imply between two tables of Items
	// where no foreign key declares them (Config.Propagate.InferJoins). Declared
	// keys are in the tables' DDL; these are not, and a model writing
	// SQL over a schema without keys would otherwise guess them.
	Joins []InferredJoin
	// Schemas are the schemas the question may be about, with the
	// routing judge's share of the odds for each, likeliest first: the
	// first, and then those with a share of at least minShare, at most
	// maxShares. Set when the question's candidates span more than one
	// schema and the routing features are on.
	Schemas []SchemaShare
	// Ambiguous: the first schema's share is below AmbiguousShare, and a
	// warning names the likeliest.
	Ambiguous bool
	Timings   Timings
}

// SchemaShare is one schema's share of the routing judge's odds.
type SchemaShare struct {
	Schema string
	Share  float64
}

// A reply lists the schemas worth a caller's look: the odds are a
// softmax over every schema with a candidate, most of them near zero.
const (
	minShare  = 0.05
	maxShares = 5
)

// Timings per stage.
type Timings struct {
	Embed, BM25, KNN, Fuse, Rerank, Expand, Total time.Duration
}

// Retriever runs the pipeline. It is safe for concurrent use.
type Retriever struct {
	search   Searcher
	embedder embed.Embedder
	catalogs Catalogs
	cfg      Config
	graphs   *graphCache
	reads    readsCache
	analysed *analysedCache
}

// Option sets what a retriever needs besides its Config.
type Option func(*Retriever)

// WithLogger logs what retrieval passes over instead of failing a
// request for it (an indexed example whose SQL does not parse).
func WithLogger(log *zap.Logger) Option {
	return func(r *Retriever) { r.reads.log = log }
}

// New builds a retriever. catalogs may be nil (no FK expansion); embedder
// may be nil only when cfg.Gather.KNN is off.
func New(search Searcher, embedder embed.Embedder, catalogs Catalogs, cfg Config, opts ...Option) (*Retriever, error) {
	switch {
	case search == nil:
		return nil, errors.New("retriever: a searcher is required")
	case cfg.Gather.KNN && embedder == nil:
		return nil, errors.New("retriever: KNN needs an embedder")
	case !cfg.Gather.BM25 && !cfg.Gather.KNN:
		return nil, errors.New("retriever: enable BM25, KNN or both")
	case cfg.Gather.Candidates <= 0:
		return nil, fmt.Errorf("retriever: candidates must be positive, got %d", cfg.Gather.Candidates)
	case cfg.Fuse.RRFK <= 0:
		return nil, fmt.Errorf("retriever: RRF k must be positive, got %v", cfg.Fuse.RRFK)
	case cfg.Route.AmbiguousShare < 0 || cfg.Route.AmbiguousShare > 1:
		return nil, fmt.Errorf("retriever: the ambiguous share is a share of the odds, from 0 (never flag) to 1, got %v", cfg.Route.AmbiguousShare)
	case cfg.Fuse.ExampleWeight < 0 || cfg.Fuse.DocWeight < 0:
		return nil, fmt.Errorf("retriever: example and doc weights must be zero or more, got %v and %v", cfg.Fuse.ExampleWeight, cfg.Fuse.DocWeight)
	}
	r := &Retriever{search: search, embedder: embedder, catalogs: catalogs, cfg: cfg, graphs: newGraphCache(), analysed: newAnalysedCache()}
	r.reads.log, r.reads.kept.Max = zap.NewNop(), readsCacheMax
	for _, opt := range opts {
		opt(r)
	}
	return r, nil
}

// Warm builds what retrieval derives from cat (the foreign-key graph and
// the joins propagation follows, the schema vocabulary) ahead of the
// first request that needs it; the daemon calls it as each new catalog
// arrives.
func (r *Retriever) Warm(cat *catalog.Catalog) {
	if cat != nil {
		r.graphs.get(cat).Warm(r.cfg.Propagate.InferJoins)
	}
}

// Retrieve runs the pipeline for one question.
func (r *Retriever) Retrieve(ctx context.Context, req Request) (*Result, error) {
	return r.retrieve(ctx, req, true)
}

// retrieve runs the pipeline, on a speculative view of the index when
// speculate and the store offers one (index.SpeculativePinner): the
// store's check that its view is current then overlaps the work, and
// when the view was not, the pipeline runs again on a confirmed one.
func (r *Retriever) retrieve(ctx context.Context, req Request, speculate bool) (*Result, error) {
	start := time.Now()
	ctx, span := otel.Tracer(traceScope).Start(ctx, "retrieve", trace.WithAttributes(attribute.String("schemaq.database", req.Database)))
	defer span.End()
	p := r.newRun(ctx, req, speculate)
	p.analyse()
	end := p.stage("gather")
	err := p.gather()
	end()
	if err != nil {
		span.SetStatus(codes.Error, "search failed")
		return nil, err
	}
	t0 := time.Now()
	end = p.stage("fuse")
	p.identify()
	p.route()
	p.fuse()
	p.freshenExamples()
	p.propagate()
	p.hedge()
	p.candidates()
	end()
	p.res.Timings.Fuse = time.Since(t0)
	t0 = time.Now()
	end = p.stage("rerank")
	p.rescore()
	p.rerank()
	end()
	p.res.Timings.Rerank = time.Since(t0)
	t0 = time.Now()
	end = p.stage("expand")
	p.expand()
	end()
	p.res.Timings.Expand = time.Since(t0)
	p.budget()
	p.explain()
	switch current, err := p.confirmed(); {
	case err != nil:
		return nil, err
	case !current:
		return r.retrieve(ctx, req, false)
	}
	p.res.Timings.Total = time.Since(start)
	return p.res, nil
}

// traceScope names retrieval's spans: one per request, and one per stage.
const traceScope = "github.com/schemaq/schemaq/pkg/retrieve"
