package retrieve

import (
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/rerank"
)

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
