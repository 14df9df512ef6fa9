package events

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Error codes carried by replies. Clients match them with errors.Is
// against an *Error holding the same code.
const (
	CodeBadRequest       = "bad_request"
	CodeUnknownDatabase  = "unknown_database"
	CodeNotFound         = "not_found"
	CodeStoreUnavailable = "store_unavailable"
	CodeGatewayError     = "gateway_error"
	// CodeGatewayAuth: the gateway refused the credentials (401, 403);
	// retrying does not help until the key is fixed.
	CodeGatewayAuth = "gateway_auth"
	CodeTimeout     = "timeout"
	CodeBusy        = "busy"
	// CodeForbidden: the caller's token may not use that database, or
	// may only read it (HTTP tokens file).
	CodeForbidden = "forbidden"
	// CodeRateLimited: the caller, or the database, gave more feedback
	// than its rate allows; retry after the Retry-After seconds.
	CodeRateLimited   = "rate_limited"
	CodeInternal      = "internal"
	CodeUnsafeSQL     = "unsafe_sql"
	CodeInvalidSQL    = "invalid_sql"
	CodeUnknownTable  = "unknown_table"
	CodeUnknownColumn = "unknown_column"
	CodeUnanswerable  = "unanswerable"
	CodeInvalidOutput = "invalid_output"
	// CodeNoDaemon: no daemon answered the request (set by clients).
	CodeNoDaemon = "no_daemon"
	// CodeTooLarge: the reply would not fit in one NATS message
	// (max_payload); ask for fewer results.
	CodeTooLarge = "too_large"
	// CodeStreamUnavailable: the event stream did not take what the
	// request would store (feedback); nothing was stored.
	CodeStreamUnavailable = "stream_unavailable"
)

// Error is the error object of every reply.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfter, in seconds, is when the gateway said to come back (its
	// Retry-After), when that was beyond the request's deadline.
	RetryAfter int `json:"retry_after,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is matches another *Error by code, so errors.Is(err, &events.Error{Code:
// events.CodeTimeout}) works after wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Limits on requests.
const (
	MaxQuestionBytes = 4096
	MaxK             = 100
	// MaxSchemas bounds a request's schemas list, and MaxTags its tags:
	// more would only make one request cost what a hundred do.
	MaxSchemas = 256
	MaxTags    = 32
	// MaxKinds is the number of chunk kinds; a list naming more repeats
	// itself.
	MaxKinds = 4
)

// SearchRequest asks for retrieval only: the ranked context for a question.
type SearchRequest struct {
	Database string `json:"database"`
	Question string `json:"question"`
	// K is how many results to return (default 10, at most MaxK).
	K int `json:"k,omitempty"`
	// Kinds restricts results to chunk kinds (table, view, doc, example).
	Kinds []string `json:"kinds,omitempty"`
	// Schemas restricts tables and views to these schemas (a pooled
	// warehouse where the caller knows which part a question is about).
	Schemas []string `json:"schemas,omitempty"`
	// Tags filter docs by metadata.
	Tags    map[string]string `json:"tags,omitempty"`
	Explain bool              `json:"explain,omitempty"`
	// Hints is what the caller knows beside the question (a definition,
	// the columns it means), at most MaxQuestionBytes: searched as a
	// second, weaker query.
	Hints string `json:"hints,omitempty"`
}

// Validate checks a search request.
func (r *SearchRequest) Validate() error {
	if err := ValidateDatabase(r.Database); err != nil {
		return err
	}
	if err := validateSchemas(r.Schemas); err != nil {
		return err
	}
	if err := validateTags(r.Tags); err != nil {
		return err
	}
	if len(r.Kinds) > MaxKinds {
		return fieldErr("kinds", "%d kinds; there are %d (table, view, doc, example)", len(r.Kinds), MaxKinds)
	}
	for i, k := range r.Kinds {
		switch k {
		case "table", "view", "doc", "example":
		default:
			return fieldErr(fmt.Sprintf("kinds[%d]", i), "%s is not one of table, view, doc, example", Quote(k))
		}
	}
	if err := validateHints(r.Hints); err != nil {
		return err
	}
	return validateQuestion(r.Question, r.K)
}

func validateHints(h string) error {
	if len(h) > MaxQuestionBytes {
		return fieldErr("hints", "longer than %d bytes", MaxQuestionBytes)
	}
	return nil
}

func validateSchemas(schemas []string) error {
	if len(schemas) > MaxSchemas {
		return fieldErr("schemas", "%d schemas; at most %d", len(schemas), MaxSchemas)
	}
	for i, s := range schemas {
		if s == "" || len(s) > 63 {
			return fieldErr(fmt.Sprintf("schemas[%d]", i), "%s is not a schema name (1 to 63 bytes)", Quote(s))
		}
	}
	return nil
}

// validateTags checks a request's tag filter as docs' tags are checked.
func validateTags(tags map[string]string) error {
	if len(tags) > MaxTags {
		return fieldErr("tags", "%d tags; at most %d", len(tags), MaxTags)
	}
	for k, v := range tags {
		if !tagKeyRe.MatchString(k) {
			return fieldErr("tags", "key %s: use 1 to 64 of a-z, 0-9, '_', '.' and '-'", Quote(k))
		}
		if len(v) > maxTagLen {
			return fieldErr("tags."+k, "longer than %d bytes", maxTagLen)
		}
	}
	return nil
}

// visible reports whether s has a character a reader can see: a question
// of NULs, zero-width spaces or other format characters asks nothing.
func visible(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r) && r != utf8.RuneError {
			return true
		}
	}
	return false
}

func validateQuestion(q string, k int) error {
	switch {
	case strings.TrimSpace(q) == "":
		return fieldErr("question", "required")
	case !visible(q):
		return fieldErr("question", "has no visible character (only white space, control or zero-width characters)")
	case len(q) > MaxQuestionBytes:
		return fieldErr("question", "longer than %d bytes", MaxQuestionBytes)
	case k < 0 || k > MaxK:
		return fieldErr("k", "must be between 1 and %d, got %d", MaxK, k)
	}
	return nil
}

// AskRequest asks for SQL that answers a question.
type AskRequest struct {
	Database string            `json:"database"`
	Question string            `json:"question"`
	K        int               `json:"k,omitempty"`
	Schemas  []string          `json:"schemas,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	Explain  bool              `json:"explain,omitempty"`
	// AllowSystemCatalogs lets the SQL read pg_catalog and
	// information_schema, which the guard refuses otherwise.
	AllowSystemCatalogs bool `json:"allow_system_catalogs,omitempty"`
	// Hints, as in SearchRequest; the prompt shows them too.
	Hints string `json:"hints,omitempty"`
}

// Validate checks an ask request.
func (r *AskRequest) Validate() error {
	if err := ValidateDatabase(r.Database); err != nil {
		return err
	}
	if err := validateSchemas(r.Schemas); err != nil {
		return err
	}
	if err := validateTags(r.Tags); err != nil {
		return err
	}
	if err := validateHints(r.Hints); err != nil {
		return err
	}
	return validateQuestion(r.Question, r.K)
}

// TablesRequest lists a database's tables, or describes one.
type TablesRequest struct {
	Database string `json:"database"`
	// Table, when set, selects one table ("schema.table" or "table").
	Table string `json:"table,omitempty"`
	// Limit bounds a listing (0: DefaultTablesLimit, at most
	// MaxTablesLimit); a reply must fit in one NATS message.
	Limit int `json:"limit,omitempty"`
	// After lists the tables whose names sort after this one: the Next
	// of the previous page.
	After string `json:"after,omitempty"`
	// Objects asks for the indexed version of docs and examples by name,
	// as `publish docs --wait` does; the reply's Objects answers. A
	// database with docs and no catalog yet can be asked.
	Objects []IndexedRef `json:"objects,omitempty"`
	// History asks for the catalog's history (its version, the
	// migrations applied and the snapshot it starts from): what `publish
	// migrations` plans against, for a producer that may not read the
	// catalog bucket itself.
	History bool `json:"history,omitempty"`
	// LettersSince asks for the newest dead letter of the database
	// written at or after this time, as `publish --wait` watches for one.
	LettersSince *time.Time `json:"letters_since,omitempty"`
	// Neighbourhood, with Table, asks for the join graph around it: the
	// tables up to this many joins away (1 to MaxNeighbourhood), declared
	// or implied by names, and the joins among them (the reply's Graph).
	Neighbourhood int `json:"neighbourhood,omitempty"`
}

// MaxNeighbourhood bounds TablesRequest.Neighbourhood, and
// MaxGraphTables the tables a TableGraph holds: a neighbourhood three
// joins out can be the whole database, and a reply must fit one message.
const (
	MaxNeighbourhood = 3
	MaxGraphTables   = 150
)

// TableGraph is the join graph around a table.
type TableGraph struct {
	// Tables are nearest first (hops 0 is the table asked about), by name
	// within a distance.
	Tables []GraphTable `json:"tables"`
	Joins  []GraphJoin  `json:"joins"`
	// Truncated says more tables were that near than MaxGraphTables: the
	// nearest are kept.
	Truncated bool `json:"truncated,omitempty"`
}

// GraphTable is one table of a TableGraph.
type GraphTable struct {
	Name    string `json:"name"` // schema.table
	Hops    int    `json:"hops"`
	Columns int    `json:"columns"`
	Comment string `json:"comment,omitempty"`
}

// GraphJoin is a join between two tables of a TableGraph: a foreign key
// (Declared) or one the column names imply.
type GraphJoin struct {
	From        string   `json:"from"` // schema.table
	FromColumns []string `json:"from_columns"`
	To          string   `json:"to"`
	ToColumns   []string `json:"to_columns"`
	Declared    bool     `json:"declared"`
}

// LetterInfo is a dead letter, as a tables reply names it.
type LetterInfo struct {
	Seq    uint64    `json:"seq"` // in the dead-letter stream
	Source string    `json:"source,omitempty"`
	Kind   string    `json:"kind,omitempty"`
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
}

// IndexedRef names a doc (by doc_id) or an example (by its id).
type IndexedRef struct {
	Kind string `json:"kind"` // doc or example
	Name string `json:"name"`
}

// ObjectVersion is the version an object's chunks are indexed at: the
// stream sequence of the event that wrote them, 0 when none is indexed.
type ObjectVersion struct {
	IndexedRef
	Version int64 `json:"version"`
}

// MaxObjectsAsked bounds TablesRequest.Objects.
const MaxObjectsAsked = 256

// maxTableName is the longest schema.table name PostgreSQL allows, with
// room for quotes.
const maxTableName = 2*63 + 5

// Page sizes of a tables listing.
const (
	DefaultTablesLimit = 1000
	MaxTablesLimit     = 5000
)

// Validate checks a tables request.
func (r *TablesRequest) Validate() error {
	if len(r.Table) > maxTableName {
		return fieldErr("table", "longer than %d bytes (schema.table, each at most 63)", maxTableName)
	}
	if len(r.After) > maxTableName {
		return fieldErr("after", "longer than %d bytes (schema.table, each at most 63)", maxTableName)
	}
	if r.Limit < 0 || r.Limit > MaxTablesLimit {
		return fieldErr("limit", "must be between 0 and %d, got %d", MaxTablesLimit, r.Limit)
	}
	if len(r.Objects) > MaxObjectsAsked {
		return fieldErr("objects", "more than %d, got %d", MaxObjectsAsked, len(r.Objects))
	}
	switch {
	case r.Neighbourhood < 0 || r.Neighbourhood > MaxNeighbourhood:
		return fieldErr("neighbourhood", "must be between 0 and %d joins, got %d", MaxNeighbourhood, r.Neighbourhood)
	case r.Neighbourhood > 0 && r.Table == "":
		return fieldErr("neighbourhood", "is the graph around a table: give table too")
	}
	for i, o := range r.Objects {
		if o.Kind != "doc" && o.Kind != "example" {
			return fieldErr(fmt.Sprintf("objects[%d].kind", i), "must be doc or example, got %s", Quote(o.Kind))
		}
		if err := validateID(fmt.Sprintf("objects[%d].name", i), o.Name); err != nil {
			return err
		}
	}
	return ValidateDatabase(r.Database)
}

// Join is a join between two tables of a reply that their column names
// imply and no foreign key declares (orders.customer_id and
// customers.id): the context of a schema without keys, which a prompt
// should show beside the tables' DDL. Declared keys are in the DDL.
type Join struct {
	From       string `json:"from"` // schema.table
	FromColumn string `json:"from_column"`
	To         string `json:"to"` // schema.table, keyed by to_column
	ToColumn   string `json:"to_column"`
}

// String writes the join as a query would: from.column = to.column.
func (j Join) String() string { return j.From + "." + j.FromColumn + " = " + j.To + "." + j.ToColumn }

// ContextItem is one piece of retrieved context.
type ContextItem struct {
	ID    string  `json:"id"`   // chunk id, db:kind:name[:part]
	Kind  string  `json:"kind"` // table, view, doc, example
	Name  string  `json:"name"`
	Score float64 `json:"score"`
	Text  string  `json:"text,omitempty"`
	// Bridge, when set, says why join completion placed the table here
	// ("joins public.orders and public.products"): it joins two results
	// that do not reference each other, and goes right after the later
	// of them, moved up from further down the ranking (with its score
	// there) or added (score 0). Bridges come on top of the k ranked
	// results.
	Bridge string `json:"bridge,omitempty"`
	// Placed, when set, says why join completion placed the table here
	// among the k ranked results: the question names it inside the name
	// of the table before it ("the question names it in
	// video_games.game_publisher"), or it has question words no table
	// before it covers and joins one of them ("has name, which no table
	// before it covers; joins movie_3.film_actor").
	Placed string `json:"placed,omitempty"`
	// Title is what a person reads the item by: a doc section's heading
	// path, an example's question (its Name is an id).
	Title string `json:"title,omitempty"`
}

// Usage is token usage reported by the gateway.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"`
	// LLMCalls are the gateway calls the ask made: 2 after a repair
	// round, failed calls included.
	LLMCalls int `json:"llm_calls,omitempty"`
}

// QueryTerm is one term of the BM25 query and where it came from:
// Why is question, compound, correction or prefix, and From the
// question word a derived term came from.
type QueryTerm struct {
	Term string `json:"term"`
	Why  string `json:"why"`
	From string `json:"from,omitempty"`
}

// ExplainItem is one candidate's path through the retrieval pipeline, as
// explained replies carry it (a list in Explain). Ranks are 1-based; 0
// means the stage did not see or did not rank it.
type ExplainItem struct {
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	BM25Rank  int     `json:"bm25_rank,omitempty"`
	BM25Score float64 `json:"bm25_score,omitempty"`
	KNNRank   int     `json:"knn_rank,omitempty"`
	KNNScore  float64 `json:"knn_score,omitempty"`
	// HintRank is the rank in the BM25 list of the request's hints.
	HintRank  int     `json:"hint_rank,omitempty"`
	HintScore float64 `json:"hint_score,omitempty"`
	// IdentifierRank is the rank in the list of tables that own an
	// identifier the question or hints spell out (movie_release_year,
	// "Order Date", orders.total); Identifier is the one that named it.
	IdentifierRank int    `json:"identifier_rank,omitempty"`
	Identifier     string `json:"identifier,omitempty"`
	// ExampleRank is the rank in the list of tables that the SQL of the
	// worked examples most like the question reads; Example is the id
	// of the best such example.
	ExampleRank int    `json:"example_rank,omitempty"`
	Example     string `json:"example,omitempty"`
	// DocRank is the rank in the list of tables that the doc sections
	// most like the question name; Doc is the best such section (the
	// doc's id and its heading path).
	DocRank     int    `json:"doc_rank,omitempty"`
	Doc         string `json:"doc,omitempty"`
	SchemaRoute int    `json:"schema_route_rank,omitempty"`
	// SchemaEvidence and SchemaLikelihood are the two schema rankings
	// routing fused into SchemaRoute: by the schema's best candidate,
	// and by the question's likelihood under the schema's words.
	SchemaEvidence   int `json:"schema_evidence_rank,omitempty"`
	SchemaLikelihood int `json:"schema_likelihood_rank,omitempty"`
	// SchemaByFeatures is set on the candidates of the schema the
	// routing features put first over the fused ranking's first.
	SchemaByFeatures bool `json:"schema_by_features,omitempty"`
	// LiftedTo is the score propagation raised the candidate to, as the
	// join partner of a strong match by a foreign key or by the join its
	// names imply (0: not lifted).
	LiftedTo    float64 `json:"lifted_to,omitempty"`
	FusedRank   int     `json:"fused_rank,omitempty"`
	FusedScore  float64 `json:"fused_score,omitempty"`
	SchemaRank  int     `json:"schema_rank,omitempty"`
	SchemaScore float64 `json:"schema_score,omitempty"`
	RerankRank  int     `json:"rerank_rank,omitempty"`
	RerankScore float64 `json:"rerank_score,omitempty"`
	FinalRank   int     `json:"final_rank,omitempty"`
	Bridge      string  `json:"bridge,omitempty"`
	// Placed is why join completion placed it among the k (ContextItem).
	Placed string `json:"placed,omitempty"`
}

// Drift is a statement of a database's applied history that the worker
// skipped, or applied by inferring a column, because it names an object
// the catalog does not know (DDL run inside a function, say): where the
// catalog may differ from the real database. A snapshot clears it.
type Drift struct {
	Seq       int64  `json:"seq"`
	Migration string `json:"migration,omitempty"`
	Source    string `json:"source"`
	Statement int    `json:"statement"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Excerpt   string `json:"excerpt,omitempty"`
	Error     string `json:"error"`
	// Inferred names the column the catalog now holds, marked inferred,
	// because the statement altered it; empty when it was skipped.
	Inferred string `json:"inferred,omitempty"`
	// Stopped is set when the statement called a PL/pgSQL routine the
	// catalog ran up to a construct it cannot evaluate, which Error
	// names; the DDL the routine ran before it was applied.
	Stopped bool `json:"stopped,omitempty"`
}

// MaxDriftListed bounds the drift a tables reply lists; DriftTotal counts
// it all.
const MaxDriftListed = 100

// SchemaShare is one schema a question may be about, with the routing
// judge's share of the odds for it (docs/retrieval.md, "Which schema").
type SchemaShare struct {
	Schema string  `json:"schema"`
	Share  float64 `json:"share"`
}

// SearchReply is the reply of the search endpoint.
type SearchReply struct {
	Database string        `json:"database"`
	Results  []ContextItem `json:"results"`
	// Schemas are the schemas the question may be about, likeliest
	// first, when its candidates span several of the database's schemas;
	// Ambiguous says the first has less than the daemon's threshold of
	// the odds (0.6 by default), and a warning names them: a caller that
	// knows should name one in the request's Schemas.
	Schemas   []SchemaShare `json:"schemas,omitempty"`
	Ambiguous bool          `json:"ambiguous,omitempty"`
	// Joins are the joins the names imply between two of the results.
	Joins []Join `json:"joins,omitempty"`
	// Warnings say what may make the results incomplete, such as drift
	// in the database's catalog.
	Warnings []string `json:"warnings,omitempty"`
	Explain  any      `json:"explain,omitempty"`
	// QueryTerms come with Explain: the terms BM25 searched for.
	QueryTerms []QueryTerm        `json:"query_terms,omitempty"`
	Timings    map[string]float64 `json:"timings_ms,omitempty"`
	Error      *Error             `json:"error,omitempty"`
}

// AskReply is the reply of the ask endpoint. SQL is only ever SQL that
// passed the guard: on failure Error is set, SQL is empty, and the
// statement the guard refused is in RejectedSQL, so that a caller piping
// sql into a database can never run it.
type AskReply struct {
	Database string `json:"database"`
	// AskID identifies this ask (the request id): feedback on its SQL
	// cites it (FeedbackRequest.AskID).
	AskID       string `json:"ask_id,omitempty"`
	SQL         string `json:"sql"`
	RejectedSQL string `json:"rejected_sql,omitempty"`
	// RetrievalOnly: the daemon has no model gateway, so SQL is empty and
	// Context is what a model would have been given.
	RetrievalOnly bool          `json:"retrieval_only,omitempty"`
	Explanation   string        `json:"explanation,omitempty"`
	Tables        []string      `json:"tables,omitempty"`
	Context       []ContextItem `json:"context,omitempty"`
	// Schemas and Ambiguous: as in SearchReply.
	Schemas   []SchemaShare `json:"schemas,omitempty"`
	Ambiguous bool          `json:"ambiguous,omitempty"`
	// Joins are the joins the names imply between two tables of Context;
	// the prompt shows them.
	Joins      []Join             `json:"joins,omitempty"`
	Warnings   []string           `json:"warnings,omitempty"`
	Usage      *Usage             `json:"usage,omitempty"`
	Timings    map[string]float64 `json:"timings_ms,omitempty"`
	Explain    any                `json:"explain,omitempty"`
	QueryTerms []QueryTerm        `json:"query_terms,omitempty"`
	Error      *Error             `json:"error,omitempty"`
}

// WireError is the reply's error, so a server can send an error reply
// that still carries the rejected SQL and the context.
func (r *AskReply) WireError() *Error {
	if r == nil {
		return nil
	}
	return r.Error
}

// TableInfo describes one table in a TablesReply.
type TableInfo struct {
	Name    string `json:"name"` // schema.table
	Comment string `json:"comment,omitempty"`
	Columns int    `json:"columns"`
	// View is set on views, which tables lists and describes with the
	// tables.
	View bool `json:"view,omitempty"`
	// Only when one table was asked for:
	DDL          string   `json:"ddl,omitempty"`
	References   []string `json:"references,omitempty"`    // "customer_id → public.customers.id"
	ReferencedBy []string `json:"referenced_by,omitempty"` // "public.orders.customer_id → id"
	Enums        []string `json:"enums,omitempty"`         // "status: pending, paid, shipped"
	// Joins are the joins of the table that its schema's column names
	// imply and no foreign key declares (docs/retrieval.md, stage 7).
	Joins []string `json:"joins,omitempty"` // "public.film_category.category_id = public.category.category_id"
	// Renamed are the table's former names and its columns', with the
	// migrations that renamed them: "renamed from public.categories
	// (0007_x.sql)", "column label renamed from title (0007_x.sql)".
	Renamed []string `json:"renamed,omitempty"`
	// History are the migrations that created, altered or renamed the
	// table, oldest first, with their versions: "created by
	// 0001_x.sql (version 1)" (the first and the latest 15).
	History []string `json:"history,omitempty"`
	// ReferencedByTotal and JoinsTotal count all of them when their list
	// was cut at MaxKeysListed.
	ReferencedByTotal int `json:"referenced_by_total,omitempty"`
	JoinsTotal        int `json:"joins_total,omitempty"`
}

// MaxKeysListed bounds the keys into a described table and its inferred
// joins: a hub table of a large schema (users among ten thousand
// tables) is joined by thousands, more than one reply should carry.
const MaxKeysListed = 1000

// TablesReply is the reply of the tables endpoint.
type TablesReply struct {
	Database string `json:"database"`
	Version  int64  `json:"version"`
	// Indexed is the catalog version the answering daemon's index
	// reflects: searches see the schema of that version.
	Indexed int64       `json:"indexed"`
	Tables  []TableInfo `json:"tables"`
	// Total counts the tables and views of the catalog; a listing holds
	// at most Limit of them, and Next, when set, is the After of the
	// next page.
	Total int    `json:"total"`
	Next  string `json:"next,omitempty"`
	// Drift lists, oldest first, up to MaxDriftListed statements of the
	// history the catalog could not follow; DriftTotal counts them all.
	Drift      []Drift `json:"drift,omitempty"`
	DriftTotal int     `json:"drift_total,omitempty"`
	// Objects answers the request's Objects, in its order.
	Objects []ObjectVersion `json:"objects,omitempty"`
	// History answers the request's History; Letter its LettersSince
	// (nil: no letter since then).
	History *CatalogHistory `json:"history,omitempty"`
	Letter  *LetterInfo     `json:"letter,omitempty"`
	// RenamedTo says, when the Table asked for is a former name, what it
	// was renamed to and by which migration; Tables describes that one.
	RenamedTo *RenamedTo `json:"renamed_to,omitempty"`
	// Graph answers the request's Neighbourhood.
	Graph *TableGraph `json:"graph,omitempty"`
	Error *Error      `json:"error,omitempty"`
}

// RenamedTo is where a former name went.
type RenamedTo struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source,omitempty"` // the migration that renamed it
}

// Errorf builds a wire error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Target is the database a request is about, for a server that takes it
// from the request's subject when the body leaves it out.
func (r *SearchRequest) Target() *string { return &r.Database }

// Target is as for SearchRequest.
func (r *AskRequest) Target() *string { return &r.Database }

// Target is as for SearchRequest.
func (r *TablesRequest) Target() *string { return &r.Database }

// Target is as for SearchRequest.
func (r *FeedbackRequest) Target() *string { return &r.Database }

// MaxFeedbackSQLBytes bounds the SQL of a feedback request: a worked
// example is one query a person reads, not a script.
const MaxFeedbackSQLBytes = 64 << 10

// FeedbackRequest hands back SQL that answers a question: a model's
// answer accepted as it was, or one a person corrected. SQL the guard
// passes against the database's catalog is stored as a worked example
// (an examples.upsert event), which retrieval reads from then on.
type FeedbackRequest struct {
	Database string `json:"database"`
	Question string `json:"question"`
	SQL      string `json:"sql"`
	// Schema is the schema the SQL was written in (its search_path
	// before public), as for examples.
	Schema string `json:"schema,omitempty"`
	// AskID is the ask whose answer this is (AskReply.AskID), and
	// Corrected says the SQL is that answer corrected.
	AskID     string `json:"ask_id,omitempty"`
	Corrected bool   `json:"corrected,omitempty"`
	// Client is the program that handed the feedback on, as it names
	// itself ("mcp:<client name>" from `schemaq mcp`): recorded with the
	// example beside its author, and not authenticated.
	Client string `json:"client,omitempty"`
}

// Validate checks a feedback request.
func (r *FeedbackRequest) Validate() error {
	if err := ValidateDatabase(r.Database); err != nil {
		return err
	}
	if err := validateQuestion(r.Question, 0); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(r.SQL) == "":
		return fieldErr("sql", "required: the query that answers the question")
	case len(r.SQL) > MaxFeedbackSQLBytes:
		return fieldErr("sql", "longer than %d bytes", MaxFeedbackSQLBytes)
	case r.Schema != "" && (strings.TrimSpace(r.Schema) != r.Schema || len(r.Schema) > maxIDLen):
		return fieldErr("schema", "a schema name, without surrounding spaces")
	case r.Corrected && r.AskID == "":
		return fieldErr("ask_id", "required when corrected is set: the ask whose SQL was corrected")
	}
	if r.Client != "" {
		if err := validateID("client", r.Client); err != nil {
			return err
		}
	}
	if r.AskID != "" {
		return validateID("ask_id", r.AskID)
	}
	return nil
}

// FeedbackReply is the reply of the feedback endpoint: the example the
// feedback was stored as, once the stream has it. A worker indexes it
// shortly after (wait on Seq as for any example).
type FeedbackReply struct {
	Database string `json:"database"`
	// Example is the stored example's id, the same for the same question
	// and SQL.
	Example string `json:"example"`
	// Version is the catalog version the SQL was checked at, and Tables
	// the relations it reads there.
	Version int64    `json:"version"`
	Tables  []string `json:"tables"`
	// Seq is the examples.upsert event's position in the stream;
	// Duplicate says the same feedback was already stored.
	Seq       uint64   `json:"seq"`
	Duplicate bool     `json:"duplicate,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Error     *Error   `json:"error,omitempty"`
}
