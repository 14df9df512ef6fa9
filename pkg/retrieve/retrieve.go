// Package retrieve is the retrieval pipeline the daemon and the benchmark
// share: BM25 and KNN candidates, Reciprocal Rank Fusion, schema-aware
// rescoring, an optional reranker, foreign-key bridges and a token budget.
// Every stage records what it did to each candidate, so a result can
// explain itself.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/text"
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

// Config switches and tunes the stages. The zero value is not useful; start
// from DefaultConfig.
type Config struct {
	Candidates int     // how many hits each of BM25 and KNN contributes
	RRFK       float64 // the k of Reciprocal Rank Fusion
	// BM25Weight and KNNWeight scale each list's share of the fused score
	// (weighted RRF): w / (k + rank).
	BM25Weight, KNNWeight float64
	Weights               index.Weights // BM25 field weights
	BM25                  bool
	KNN                   bool
	// SchemaRerank rescores the best SchemaWindow fused candidates by
	// table-name, column and text hits; the rest keep their fused order
	// behind them.
	SchemaRerank  bool
	SchemaWeights rerank.Weights
	SchemaWindow  int
	// Reranker runs after schema rescoring; nil means none.
	Reranker rerank.Reranker
	// SchemaRouting treats schemas as a third ranked list: schemas are
	// ranked by the summed fused scores of their best RoutingDepth
	// candidates, and every table or view gets RoutingWeight/(RoutingK +
	// its schema's rank) added to its fused score. A question is about one
	// database; in a pooled index that is one schema, so its tables rise
	// together. With a single schema it changes nothing.
	SchemaRouting bool
	RoutingWeight float64
	RoutingK      float64
	RoutingDepth  int
	// RoutingByVocab ranks schemas by their own vocabulary (names and
	// columns, IDF over schemas) instead of by their tables' evidence.
	RoutingByVocab bool
	// SchemaExpansion adds the tables of the best-ranked schema that no
	// retriever found, after the candidates that have evidence of their
	// own, up to this many (0: off).
	SchemaExpansion int
	// Propagation raises the foreign-key neighbours of the best
	// PropagationSeeds fused tables to at least PropagationWeight times
	// the seed's score; neighbours no retriever found join the candidates.
	// A question's tables are joined, so the partners of a strong match
	// are likely needed too.
	Propagation       bool
	PropagationWeight float64
	PropagationSeeds  int
	// PropagationOwn adds this share of a lifted neighbour's own fused
	// score to its floor, so that among the neighbours of one seed those
	// with evidence of their own come first (without it they tied, and
	// their names decided).
	PropagationOwn float64
	// FKExpansion adds tables that join two chosen tables.
	FKExpansion bool
	MaxBridges  int
	// TokenBudget bounds the context's size in estimated tokens; 0 means
	// no bound.
	TokenBudget int
	// PrefixMin adds to the BM25 query every identifier term of the
	// database that abbreviates a question word by truncation (incorp for
	// incorporated, regist for registration): at least PrefixMin letters and at
	// least two shorter than the word. 0: off.
	PrefixMin int
	// Corrections adds, for a question word of 4+ letters that no
	// identifier of the database uses, the one identifier term a single
	// edit away, if exactly one is (carr → car, weigh → weight).
	Corrections bool
	// RoutingHead keeps the routed order for the first RoutingHead
	// candidates only; after them it interleaves the routed order with
	// the order without the routing bonus. Routing bets on one schema;
	// the head is where that bet pays, and the tail hedges it with the
	// other schemas' best matches. 0: the routed order throughout.
	RoutingHead int
	// Compounds adds, for a question word, the run-together identifier
	// terms it is the head of (category → productcategory) where the
	// schema also uses both parts as words (product, category).
	Compounds bool
	// RoutingLikelihood > 0 fuses the evidence ranking of schemas (their
	// best table) with their ranking as documents by query likelihood, at
	// this weight: the evidence follows one strong table, the likelihood
	// rewards a schema that covers more of the question. RoutingMu is the
	// Dirichlet smoothing of the likelihood, in term counts.
	RoutingLikelihood float64
	RoutingMu         float64
	// RoutingFeatures lets a second judge of the first schema overrule
	// the fused ranking: a linear score of what says which database a
	// question is about (routeFeatures). Its best schema goes first when
	// it outscores the fused first by routeMargin; the others keep their
	// fused ranks, and the hedged tail follows the fused ranking.
	RoutingFeatures bool
	// InferJoins lets propagation follow the joins a schema's names
	// imply where no foreign key declares them (a column named as
	// another table's one-column key: inferJoins), at inferredLend of a
	// declared key's lend, so that a lookup table joins the question
	// when the table that references it does. Bridges still need
	// declared keys: they add a table without evidence of its own, and
	// a guessed join is too weak for that (it cost CR@5).
	InferJoins bool
	// CommonHeads leaves out of the BM25 query the compound of two
	// adjacent words ("full name": fullname) when the second, the
	// phrase's head, is in at least this share of the database's tables
	// and views (and in minCommonHead or more): the compound of a
	// modifier and a generic head is rare, but the concept is not, and
	// with both words searched too it counted three times. 0: off.
	CommonHeads float64
	// DropDates leaves the dates and times a question or hint writes in
	// digits (2017/3/27, 3:43:54) out of its terms: values, whose
	// numbers only met identifiers that end in digits.
	DropDates bool
	// ValueClasses adds, for a question word that is a value of a
	// well-known class (a weekday, a month, a gender, a country or its
	// people, a continent, a US state), the attribute that holds such
	// values (day, month, gender and sex, country, continent, state),
	// where the database's identifiers use it: "female cast" is about a
	// gender column though no identifier says female.
	ValueClasses bool
	// HintWeight is the fused weight of the BM25 list of a request's
	// hints, against BM25Weight for the question's (0: hints unused).
	HintWeight float64
	// IdentifierWeight is the fused weight of the list of tables that
	// own an identifier the question or hints spell out (ident.go); it
	// counts in schema routing too (0: off).
	IdentifierWeight float64
	// ExampleWeight is the fused weight of the list of tables that the
	// SQL of the database's worked examples most like the question reads
	// (examples.go; the best ExampleCandidates examples by BM25 vote); it
	// counts in schema routing too (0: off). A database without examples
	// costs one BM25 search that finds none (nothing, in memory).
	ExampleWeight     float64
	ExampleCandidates int
	// DocWeight scales what the doc sections most like the question lend
	// the tables they name (docs.go; the first DocCandidates sections of
	// a BM25 list of tables and docs, each by its rank there); it counts
	// in schema routing too (0: off). A request for every kind reads the
	// sections from its own BM25 list; one for some kinds or schemas
	// searches again.
	DocWeight     float64
	DocCandidates int
	// AmbiguousShare is the routing judge's share below which a result
	// says the question fits several schemas (Result.Ambiguous and a
	// warning naming them); 0: never. The shares are about calibrated:
	// on BIRD's sample the likeliest schema is the question's for 0.43
	// of the questions where it has 0.4–0.5 of the odds and for 0.95 of
	// those where it has more than 0.9. At 0.5 two schemas alike but
	// for their names (0.53 and 0.47) passed as settled; at 0.6 a third
	// of BIRD's questions and a sixth of SpiderUnion's are flagged, and
	// for fewer than half of those was the likeliest right
	// (docs/retrieval.md, "Which schema").
	AmbiguousShare float64
}

// KNN weights in fusion: the local embedder's vectors are much weaker than
// field-weighted BM25 on schema text (docs/retrieval.md), so they get a
// small voice; a neural embedder's get an equal one.
const (
	LocalKNNWeight  = 0.15
	NeuralKNNWeight = 1.0
)

// DefaultConfig is the pipeline the daemon runs, tuned on the retrieval
// benchmark (docs/retrieval.md). The schema rescoring reorders only the
// top few, where its term counting sharpens the order instead of
// overriding BM25's finer scores.
var DefaultConfig = Config{
	Candidates: 50, RRFK: 60, BM25Weight: 1, KNNWeight: LocalKNNWeight, Weights: index.DefaultWeights, BM25: true, KNN: true,
	SchemaRouting: true, RoutingWeight: 0.02, RoutingK: 1, RoutingDepth: 1,
	Propagation: true, PropagationWeight: 0.9, PropagationSeeds: 5, PropagationOwn: 0.1,
	SchemaRerank: true, SchemaWeights: rerank.DefaultWeights, SchemaWindow: 5, FKExpansion: true, MaxBridges: 3,
	PrefixMin: 4, Corrections: true, Compounds: true, ValueClasses: true, DropDates: true, CommonHeads: 0.1, RoutingHead: 5, RoutingLikelihood: 1.75, RoutingMu: 50, RoutingFeatures: true, InferJoins: true,
	HintWeight: 0.25, IdentifierWeight: 2, ExampleWeight: 2, ExampleCandidates: 5, DocWeight: 1, DocCandidates: 3,
	AmbiguousShare: 0.6,
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
	// Bridge, when set, says why the item was added by foreign-key
	// expansion ("joins public.a and public.b").
	Bridge string
}

// Result is a retrieval's outcome.
type Result struct {
	Items     []Item
	Truncated bool // the token budget cut items
	// Warnings say what degraded without failing (a reranker that
	// failed, leaving the fused order).
	Warnings []string
	Explain  []Explain
	// Terms are the BM25 query's terms, each with where it came from.
	Terms []Term
	// Joins are the joins the names imply between two tables of Items
	// where no foreign key declares them (Config.InferJoins). Declared
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
type SchemaShare = events.SchemaShare

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

// Explain is one candidate's path through the pipeline: the wire type,
// so clients decode what the daemon explains into the same shape.
type Explain = events.ExplainItem

// Retriever runs the pipeline. It is safe for concurrent use.
type Retriever struct {
	search   Searcher
	embedder embed.Embedder
	catalogs Catalogs
	cfg      Config
	graphs   *graphCache
	reads    readsCache
}

// Option sets what a retriever needs besides its Config.
type Option func(*Retriever)

// WithLogger logs what retrieval passes over instead of failing a
// request for it (an indexed example whose SQL does not parse).
func WithLogger(log *zap.Logger) Option {
	return func(r *Retriever) { r.reads.log = log }
}

// New builds a retriever. catalogs may be nil (no FK expansion); embedder
// may be nil only when cfg.KNN is off.
func New(search Searcher, embedder embed.Embedder, catalogs Catalogs, cfg Config, opts ...Option) (*Retriever, error) {
	switch {
	case search == nil:
		return nil, errors.New("retriever: a searcher is required")
	case cfg.KNN && embedder == nil:
		return nil, errors.New("retriever: KNN needs an embedder")
	case !cfg.BM25 && !cfg.KNN:
		return nil, errors.New("retriever: enable BM25, KNN or both")
	case cfg.Candidates <= 0:
		return nil, fmt.Errorf("retriever: candidates must be positive, got %d", cfg.Candidates)
	case cfg.RRFK <= 0:
		return nil, fmt.Errorf("retriever: RRF k must be positive, got %v", cfg.RRFK)
	case cfg.AmbiguousShare < 0 || cfg.AmbiguousShare > 1:
		return nil, fmt.Errorf("retriever: the ambiguous share is a share of the odds, from 0 (never flag) to 1, got %v", cfg.AmbiguousShare)
	case cfg.ExampleWeight < 0 || cfg.DocWeight < 0:
		return nil, fmt.Errorf("retriever: example and doc weights must be zero or more, got %v and %v", cfg.ExampleWeight, cfg.DocWeight)
	}
	r := &Retriever{search: search, embedder: embedder, catalogs: catalogs, cfg: cfg, graphs: newGraphCache()}
	r.reads.log = zap.NewNop()
	for _, opt := range opts {
		opt(r)
	}
	return r, nil
}

// Warm builds what retrieval derives from cat (the foreign-key graph, the
// schema vocabulary) ahead of the first request that needs it; the daemon
// calls it as each new catalog arrives.
func (r *Retriever) Warm(cat *catalog.Catalog) {
	if cat != nil {
		r.graphs.get(cat)
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
	p := r.newRun(ctx, req, speculate)
	p.analyse()
	if err := p.gather(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	p.identify()
	p.route()
	p.fuse()
	p.propagate()
	p.hedge()
	p.candidates()
	p.res.Timings.Fuse = time.Since(t0)
	t0 = time.Now()
	p.rescore()
	p.rerank()
	p.res.Timings.Rerank = time.Since(t0)
	t0 = time.Now()
	p.expand()
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

// evidence is an object's share of the fusion from the lists that judge
// it: BM25, KNN, the identifiers written out, the examples' tables and
// the docs'.
// Routing ranks schemas by it; fusion adds the hints' list, which is the
// caller's word.
func (r *Retriever) evidence(o *object) float64 {
	var s float64
	if rank := o.ex.BM25Rank; rank > 0 {
		s += r.cfg.BM25Weight / (r.cfg.RRFK + float64(rank))
	}
	if rank := o.ex.KNNRank; rank > 0 {
		s += r.cfg.KNNWeight / (r.cfg.RRFK + float64(rank))
	}
	if rank := o.ex.IdentifierRank; rank > 0 {
		s += r.cfg.IdentifierWeight / (r.cfg.RRFK + float64(rank))
	}
	if rank := o.ex.ExampleRank; rank > 0 {
		s += r.cfg.ExampleWeight / (r.cfg.RRFK + float64(rank))
	}
	s += r.cfg.DocWeight * o.docVote
	return s
}

// admitsRelations says whether a request for these kinds (none: all)
// wants tables or views.
func admitsRelations(kinds []string) bool {
	return len(kinds) == 0 || slices.Contains(kinds, chunk.KindTable) || slices.Contains(kinds, chunk.KindView)
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

// EstimateTokens approximates a text's token count for budgeting (about
// four bytes a token for English and SQL).
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// budget keeps items in order while their chunks fit in limit tokens
// (none: no limit) and says how many tokens the kept ones take; the
// first item is always kept.
func budget(items []Item, limit int) ([]Item, int) {
	if limit <= 0 {
		return items, 0
	}
	used := 0
	for i, it := range items {
		n := EstimateTokens(it.Text)
		if i > 0 && used+n > limit {
			return items[:i], used
		}
		used += n
	}
	return items, used
}

// budgetJoins keeps joins in order while their lines fit in limit tokens.
func budgetJoins(joins []InferredJoin, limit int) []InferredJoin {
	used := 0
	for i, j := range joins {
		// A line of the prompt's section, "a.b = c.d", and its newline.
		n := EstimateTokens(j.String()) + 1
		if used+n > limit {
			return joins[:i]
		}
		used += n
	}
	return joins
}

// Term is one BM25 query term and where it came from: Why is question
// (an analysed word of the question), compound (a run-together
// identifier the word ends), correction (the identifier term one edit
// from a word no identifier uses) or prefix (an identifier term that
// abbreviates the word); From is the question word. It is the wire type,
// so an explained reply carries the terms as they are.
type Term = events.QueryTerm

// Term origins.
const (
	FromQuestion   = "question"
	FromCompound   = "compound"
	FromCorrection = "correction"
	FromPrefix     = "prefix"
	FromValue      = "value"
)

// queryTerms are the BM25 terms of a question's analysed words: the
// words, the run-together identifiers they end (Compounds), the
// corrections of words the database's identifiers do not use
// (Corrections), and the identifier terms that abbreviate one of them
// (PrefixMin). cat may be nil: then only the words.
func (r *Retriever) queryTerms(words []string, cat *catalog.Catalog) []Term {
	out := make([]Term, 0, len(words))
	seen := make(map[string]bool, len(words))
	add := func(t, why, from string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, Term{Term: t, Why: why, From: from})
		}
	}
	for _, w := range words {
		add(w, FromQuestion, "")
	}
	if cat == nil || (r.cfg.PrefixMin <= 0 && !r.cfg.Corrections && !r.cfg.Compounds) {
		return out
	}
	v := r.graphs.get(cat).vocab
	if r.cfg.Compounds {
		for _, w := range words {
			for _, c := range v.heads[w] {
				add(c, FromCompound, w)
			}
		}
	}
	if r.cfg.Corrections {
		for _, w := range words {
			if c := v.correction(w); c != "" {
				add(c, FromCorrection, w)
			}
		}
	}
	if r.cfg.PrefixMin > 0 {
		for _, w := range words {
			for n := r.cfg.PrefixMin; n <= len(w)-2; n++ {
				if v.df[w[:n]] > 0 {
					add(w[:n], FromPrefix, w)
				}
			}
		}
	}
	return out
}

// valueTerms adds to terms the attributes that hold the values s names
// (text.ValueClasses), those the database's identifiers use.
func (r *Retriever) valueTerms(s string, terms []Term, cat *catalog.Catalog) []Term {
	if !r.cfg.ValueClasses || cat == nil {
		return terms
	}
	classes, from := text.ValueClasses(s)
	if len(classes) == 0 {
		return terms
	}
	v := r.graphs.get(cat).vocab
	for i, c := range classes {
		if v.df[c] > 0 && !slices.ContainsFunc(terms, func(t Term) bool { return t.Term == c }) {
			terms = append(terms, Term{Term: c, Why: FromValue, From: from[i]})
		}
	}
	return terms
}

// minCommonHead is the fewest tables a head word must be in for
// CommonHeads to leave its phrases out: in a database of a few tables,
// a word two of them use is not generic.
const minCommonHead = 3

// commonPhrases are the compounds of adjacent query words that
// CommonHeads leaves out.
func (r *Retriever) commonPhrases(terms []string, cat *catalog.Catalog) []string {
	if r.cfg.CommonHeads <= 0 || cat == nil {
		return nil
	}
	v := r.graphs.get(cat).vocab
	floor := max(float64(minCommonHead), r.cfg.CommonHeads*float64(v.objects))
	words := index.QueryWords(terms)
	var out []string
	for i := 1; i < len(words); i++ {
		if float64(v.objDF[words[i]]) >= floor {
			out = append(out, words[i-1]+words[i])
		}
	}
	return out
}

// termStrings are the terms alone.
func termStrings(terms []Term) []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.Term
	}
	return out
}

// routingBonus is what routing adds to the fused score of a table or
// view whose schema it ranks at rank (0: not routed, nothing).
func (r *Retriever) routingBonus(rank int) float64 {
	if rank == 0 {
		return 0
	}
	return r.cfg.RoutingWeight / (r.cfg.RoutingK + float64(rank))
}

// hedge keeps the first h objects of the routed order and then takes,
// in turn, the next of tail (the same objects in the order the tail
// follows) and the next by score without routing, each once.
func hedge(routed []*object, h int, tail []*object) []*object {
	unrouted := slices.Clone(routed)
	sort.SliceStable(unrouted, func(i, j int) bool { return unrouted[i].base > unrouted[j].base })
	taken := make(map[*object]bool, len(routed))
	out := make([]*object, 0, len(routed))
	for _, o := range routed[:h] {
		taken[o] = true
		out = append(out, o)
	}
	next := func(list []*object, i *int) {
		for *i < len(list) && taken[list[*i]] {
			*i++
		}
		if *i < len(list) {
			taken[list[*i]] = true
			out = append(out, list[*i])
		}
	}
	ti, ui := 0, 0
	for len(out) < len(routed) {
		next(tail, &ti)
		next(unrouted, &ui)
	}
	return out
}
