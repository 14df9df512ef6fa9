package retrieve

import (
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// Config switches and tunes the stages, a group per stage. The zero value
// is not useful; start from DefaultConfig.
type Config struct {
	Analyse   AnalyseConfig
	Gather    GatherConfig
	Fuse      FuseConfig
	Route     RouteConfig
	Propagate PropagateConfig
	Rescore   RescoreConfig
	// Reranker runs after rescoring; nil means none.
	Reranker rerank.Reranker
	Expand   ExpandConfig
	// TokenBudget bounds the context's size in estimated tokens; 0 means
	// no bound.
	TokenBudget int
}

// AnalyseConfig turns a question's words into BM25 terms.
type AnalyseConfig struct {
	// PrefixMin adds to the BM25 query every identifier term of the
	// database that abbreviates a question word by truncation (incorp for
	// incorporated, regist for registration): at least PrefixMin letters
	// and at least two shorter than the word. 0: off.
	PrefixMin int
	// Corrections adds, for a question word of 4+ letters that no
	// identifier of the database uses, the one identifier term a single
	// edit away, if exactly one is (carr → car, weigh → weight).
	Corrections bool
	// Extensions adds, for a question word of 4+ letters that no
	// identifier uses, the identifier terms that extend it by one to
	// three letters, when one or two do: a word's derivation the
	// stemmer does not fold ("rented" → rental, "produced" → product,
	// "Asia" → asian).
	Extensions bool
	// Compounds adds, for a question word, the run-together identifier
	// terms it is the head of (category → productcategory) where the
	// schema also uses both parts as words (product, category).
	Compounds bool
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
	// ProperNames adds, for a run of capitalised words that no
	// identifier uses ("Michael Bay", "Harrison Ford"), the attributes
	// that hold names: a name column, a table of people.
	ProperNames bool
}

// GatherConfig chooses the ranked lists and their lengths.
type GatherConfig struct {
	BM25, KNN  bool
	Candidates int           // how many hits each of BM25 and KNN contributes
	Weights    index.Weights // BM25 field weights
	// ExampleCandidates is how many of the worked examples most like the
	// question (by BM25) vote for the tables their SQL reads (examples.go).
	ExampleCandidates int
	// ExampleTrust, when positive, scales a table's place in the
	// examples' list by its coverage, the share of the question's own
	// terms that the best example voting for it holds (in its question
	// or among the names its SQL reads), raised to this power; 0: every
	// vote counts in full. Without it an example that shares one word
	// with the question votes as strongly as a near duplicate, and a
	// log that covers some schemas drags the questions about the others
	// to them (docs/retrieval.md, stage 4).
	ExampleTrust float64
	// DocCandidates is how many doc sections vote for the tables they
	// name (docs.go): the first of a BM25 list of tables and docs, each by
	// its rank there. A request for every kind reads the sections from
	// its own BM25 list; one for some kinds or schemas searches again.
	DocCandidates int
}

// FuseConfig weighs the lists in Reciprocal Rank Fusion: a list of
// weight w adds w / (RRFK + rank) to each object it ranks.
type FuseConfig struct {
	RRFK                  float64
	BM25Weight, KNNWeight float64
	// HintWeight is the BM25 list of a request's hints' (0: hints unused).
	HintWeight float64
	// IdentifierWeight is the list of tables that own an identifier the
	// question or hints spell out (ident.go); it counts in schema routing
	// too (0: off).
	IdentifierWeight float64
	// ExampleWeight is the list of tables that the SQL of the examples
	// most like the question reads; it counts in schema routing too (0:
	// off). A database without examples costs one BM25 search that finds
	// none (nothing, in memory).
	ExampleWeight float64
	// DocWeight scales what the doc sections most like the question lend
	// the tables they name; it counts in schema routing too (0: off).
	DocWeight float64
}

// RouteConfig ranks the schemas a question may be about. A question is
// about one database; in a pooled index that is one schema, so its
// tables rise together. With a single schema it changes nothing.
type RouteConfig struct {
	// Enabled treats schemas as a third ranked list: schemas are ranked
	// by the summed fused scores of their best Depth candidates, and
	// every table or view gets Weight/(K + its schema's rank) added to
	// its fused score.
	Enabled bool
	Weight  float64
	K       float64
	Depth   int
	// ByVocab ranks schemas by their own vocabulary (names and columns,
	// IDF over schemas) instead of by their tables' evidence.
	ByVocab bool
	// Expansion adds the tables of the best-ranked schema that no
	// retriever found, after the candidates that have evidence of their
	// own, up to this many (0: off).
	Expansion int
	// Head keeps the routed order for the first Head candidates only;
	// after them it interleaves the routed order with the order without
	// the routing bonus. Routing bets on one schema; the head is where
	// that bet pays, and the tail hedges it with the other schemas' best
	// matches. 0: the routed order throughout.
	Head int
	// Likelihood > 0 fuses the evidence ranking of schemas (their best
	// table) with their ranking as documents by query likelihood, at this
	// weight: the evidence follows one strong table, the likelihood
	// rewards a schema that covers more of the question. Mu is the
	// Dirichlet smoothing of the likelihood, in term counts.
	Likelihood float64
	Mu         float64
	// Features lets a second judge of the first schema overrule the fused
	// ranking: a linear score of what says which database a question is
	// about (routeFeatures). Its best schema goes first when it outscores
	// the fused first by routeMargin; the others keep their fused ranks,
	// and the hedged tail follows the fused ranking.
	Features bool
	// AmbiguousShare is the judge's share below which a result says the
	// question fits several schemas (Result.Ambiguous and a warning
	// naming them); 0: never. The shares are about calibrated; how the
	// default was chosen is in docs/retrieval.md, "Which schema".
	AmbiguousShare float64
}

// PropagateConfig lifts the join partners of strong matches: a
// question's tables are joined, so the partners of a strong match are
// likely needed too.
type PropagateConfig struct {
	// Enabled raises the foreign-key neighbours of the best Seeds fused
	// tables to at least Weight times the seed's score; neighbours no
	// retriever found join the candidates.
	Enabled bool
	Weight  float64
	Seeds   int
	// Own adds this share of a lifted neighbour's own fused score to its
	// floor, so that among the neighbours of one seed those with evidence
	// of their own come first (without it they tied, and their names
	// decided).
	Own float64
	// InferJoins follows the joins a schema's names imply where no
	// foreign key declares them too (a column named as another table's
	// one-column key: inferJoins), at inferredLend of a declared key's
	// lend, so that a lookup table joins the question when the table
	// that references it does; results list those joins. Bridges still
	// need declared keys: they add a table without evidence of its own,
	// and a guessed join is too weak for that.
	InferJoins bool
}

// RescoreConfig rescores the best Window fused candidates by table-name,
// column and text hits; the rest keep their fused order behind them.
type RescoreConfig struct {
	Enabled bool
	Weights rerank.Weights
	Window  int
	// ExampleCoverage is the least share of the question's terms the
	// best voting example must hold for its SQL to count as the
	// question's words here: one that shares a word or two is no answer
	// to this question.
	ExampleCoverage float64
}

// ExpandConfig adds up to MaxBridges tables that join two of the first
// Depth candidates.
type ExpandConfig struct {
	Enabled    bool
	MaxBridges int
	Depth      int
	// Targets: within the first Targets candidates, a table whose name
	// holds a question word (or one the name extends by up to three
	// letters) that names a table it joins (game_publisher for "published
	// by Acme") gets publisher right after it (0: off).
	Targets int
	// Gaps: up to Gaps tables that cover question terms none of the
	// first GapDepth candidates has in its names or columns, each placed
	// right after the one of them it joins (0: off).
	Gaps, GapDepth int
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
	Analyse: AnalyseConfig{PrefixMin: 4, Corrections: true, Extensions: true, Compounds: true, CommonHeads: 0.1, DropDates: true, ValueClasses: true, ProperNames: true},
	Gather:  GatherConfig{BM25: true, KNN: true, Candidates: 50, Weights: index.DefaultWeights, ExampleCandidates: 5, ExampleTrust: 2, DocCandidates: 3},
	Fuse:    FuseConfig{RRFK: 60, BM25Weight: 1, KNNWeight: LocalKNNWeight, HintWeight: 0.25, IdentifierWeight: 2, ExampleWeight: 4, DocWeight: 1},
	Route: RouteConfig{Enabled: true, Weight: 0.02, K: 1, Depth: 1, Head: 5, Likelihood: 1.75, Mu: 50, Features: true,
		AmbiguousShare: 0.6},
	Propagate: PropagateConfig{Enabled: true, Weight: 0.9, Seeds: 5, Own: 0.1, InferJoins: true},
	Rescore:   RescoreConfig{Enabled: true, Weights: rerank.DefaultWeights, Window: 5, ExampleCoverage: 0.5},
	Expand:    ExpandConfig{Enabled: true, MaxBridges: 3, Depth: 20, Targets: 5, Gaps: 2, GapDepth: 5},
}
