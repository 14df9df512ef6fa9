// Package mcpserver exposes schemaq to AI agents as a Model Context
// Protocol server (github.com/modelcontextprotocol/go-sdk): tools to list
// databases and tables, describe a table, search the schema, ask for
// checked SQL, hand back confirmed SQL and explain a retrieval, and a
// resource per table. It talks
// to a running schemaq through a Backend (pkg/client over NATS), like any
// other service.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/impact"
)

// Backend is what the tools call; *client.Client implements it.
type Backend interface {
	Databases(ctx context.Context) ([]client.Database, error)
	Tables(ctx context.Context, req *events.TablesRequest) (*events.TablesReply, error)
	Search(ctx context.Context, req *events.SearchRequest) (*events.SearchReply, error)
	Ask(ctx context.Context, req *events.AskRequest) (*events.AskReply, error)
	Feedback(ctx context.Context, req *events.FeedbackRequest) (*events.FeedbackReply, error)
}

var _ Backend = (*client.Client)(nil)

// Migration is a migration an agent proposes: its file name and SQL.
type Migration struct {
	Name string `json:"name" jsonschema:"the migration's file name, as errors and drift cite it"`
	SQL  string `json:"sql" jsonschema:"the migration's SQL"`
}

// Checker replays proposed migrations on a database's catalog and says
// what they would break (pkg/impact); check_migration calls it.
type Checker interface {
	Check(ctx context.Context, db string, migrations []Migration) (*impact.Report, error)
}

// Option configures the server.
type Option func(*tools)

// WithChecker adds the tool check_migration.
func WithChecker(c Checker) Option { return func(t *tools) { t.check = c } }

// Bounds of check_migration's input.
const (
	MaxMigrations   = 100
	MaxMigrationSQL = 1 << 20
)

// Bounds keep replies small enough for an agent's context.
const (
	MaxK          = 25
	MaxTables     = 500
	MaxResultText = 4000
)

// ResourcePrefix starts every table resource URI:
// schemaq://<database>/tables/<schema.table>.
const ResourcePrefix = "schemaq://"

// New builds the server.
func New(b Backend, version string, opts ...Option) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "schemaq", Title: "schemaq: schema retrieval and text-to-SQL", Version: version},
		&mcp.ServerOptions{Instructions: "Use list_databases, then search_schema or list_tables to find the tables a question needs, " +
			"describe_table for their DDL, and ask_sql for a checked, read-only PostgreSQL query. SQL is never executed. " +
			"When the user confirms an answer is right, or corrects it, submit_feedback stores it as a worked example."})
	t := &tools{b: b}
	for _, o := range opts {
		o(t)
	}
	// Every tool only reads; ask_sql also calls the configured model.
	closed, open := false, true
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &closed}
	mcp.AddTool(s, &mcp.Tool{Name: "list_databases", Annotations: readOnly, Description: "List the databases schemaq knows, with the version (last migration) of each catalog."}, t.listDatabases)
	mcp.AddTool(s, &mcp.Tool{Name: "list_tables", Annotations: readOnly, Description: "List a database's tables and views: schema-qualified name, comment and column count. At most 500."}, t.listTables)
	mcp.AddTool(s, &mcp.Tool{Name: "describe_table", Annotations: readOnly, Description: "Describe one table or view: its canonical CREATE TABLE or CREATE VIEW (with column comments and constraints), the foreign keys out of it and into it, the joins its column names imply where no key declares them, and the labels of enum-typed columns."}, t.describeTable)
	mcp.AddTool(s, &mcp.Tool{Name: "search_schema", Annotations: readOnly, InputSchema: searchSchema(), Description: "Find the tables, views, doc sections and question/SQL examples most relevant to a natural-language question, ranked, with scores and their text."}, t.searchSchema)
	mcp.AddTool(s, &mcp.Tool{Name: "ask_sql", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &open}, InputSchema: inputSchema[AskIn](),
		Description: "Answer a question with one read-only PostgreSQL query, checked against the database's catalog (single SELECT, no side effects, only known tables). Returns the SQL, an explanation, the tables used and warnings; the SQL is not run. Without a configured model, retrieval_only is true, sql is empty and context lists what a model would see."}, t.askSQL)
	notDestructive := false
	mcp.AddTool(s, &mcp.Tool{Name: "submit_feedback", Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &notDestructive, OpenWorldHint: &closed}, InputSchema: inputSchema[FeedbackIn](),
		Description: "Report SQL that correctly answers a question, after the user accepted ask_sql's answer or corrected it. The SQL is checked like ask_sql's (one read-only query over the database's own tables) and, if it passes, stored as a worked example that later searches and asks learn from; refused SQL is not stored and the error says why. Only submit SQL the user confirmed is right. Sending the same question and SQL twice stores one example."}, t.submitFeedback)
	if t.check != nil {
		mcp.AddTool(s, &mcp.Tool{Name: "check_migration", Annotations: readOnly, InputSchema: inputSchema[CheckIn](),
			Description: "Check proposed migrations before they are published: replay them, in order, on the database's current catalog (nothing is published) and report what they would break: a migration the catalog would refuse, worked examples whose SQL would read what is gone, doc sections naming dropped tables or columns, views that would no longer resolve, and drift. breaks is true when anything would."}, t.checkMigration)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "explain_retrieval", Annotations: readOnly, InputSchema: searchSchema(), Description: "Show how retrieval ranked candidates for a question: each candidate's rank and score at every stage (BM25, vectors, fusion, schema routing, foreign-key propagation, rescoring, final)."}, t.explainRetrieval)
	s.AddReceivingMiddleware(t.listResources)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "table", Title: "Table DDL", MIMEType: "text/plain",
		URITemplate: ResourcePrefix + "{database}/tables/{table}",
		Description: "The canonical CREATE TABLE of a table (schema.table) of a database, with comments and constraints."}, t.readTable)
	return s
}

type tools struct {
	b     Backend
	check Checker // nil: no check_migration
}

// toolError turns a backend failure into the error the SDK reports as a
// tool error; wire errors keep their code.
func toolError(err error) error {
	var we *events.Error
	if errors.As(err, &we) {
		return fmt.Errorf("%s: %s", we.Code, we.Message)
	}
	return err
}

// DatabasesOut is list_databases's result.
type DatabasesOut struct {
	Databases []client.Database `json:"databases"`
}

func (t *tools) listDatabases(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, DatabasesOut, error) {
	dbs, err := t.databases(ctx, req.Extra)
	if err != nil {
		return nil, DatabasesOut{}, err
	}
	return nil, DatabasesOut{Databases: dbs}, nil
}

// databases are the databases the request's token may use.
func (t *tools) databases(ctx context.Context, extra *mcp.RequestExtra) ([]client.Database, error) {
	dbs, err := t.b.Databases(ctx)
	if err != nil {
		return nil, toolError(err)
	}
	out := []client.Database{}
	for _, db := range dbs {
		if mayUse(extra, db.Name) == nil {
			out = append(out, db)
		}
	}
	return out, nil
}

// DatabaseIn names a database.
type DatabaseIn struct {
	Database string `json:"database" jsonschema:"the database name, as list_databases gives it"`
}

// TablesOut is list_tables's result.
type TablesOut struct {
	Database  string             `json:"database"`
	Version   int64              `json:"version"`
	Tables    []events.TableInfo `json:"tables"`
	Truncated bool               `json:"truncated,omitempty"`
	// Drift is what of the database's history the catalog could not
	// follow: tables or columns it may miss or not know the type of.
	Drift      []events.Drift `json:"drift,omitempty"`
	DriftTotal int            `json:"drift_total,omitempty"`
}

func (t *tools) listTables(ctx context.Context, req *mcp.CallToolRequest, in DatabaseIn) (*mcp.CallToolResult, TablesOut, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, TablesOut{}, err
	}
	r, err := t.b.Tables(ctx, &events.TablesRequest{Database: in.Database, Limit: MaxTables})
	if err != nil {
		return nil, TablesOut{}, toolError(err)
	}
	return nil, TablesOut{Database: r.Database, Version: r.Version, Tables: r.Tables, Truncated: r.Next != "",
		Drift: r.Drift, DriftTotal: r.DriftTotal}, nil
}

// TableIn names a table of a database.
type TableIn struct {
	Database string `json:"database" jsonschema:"the database name"`
	Table    string `json:"table" jsonschema:"the table, as schema.table or just table"`
}

func (t *tools) describeTable(ctx context.Context, req *mcp.CallToolRequest, in TableIn) (*mcp.CallToolResult, events.TableInfo, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, events.TableInfo{}, err
	}
	if strings.TrimSpace(in.Table) == "" {
		return nil, events.TableInfo{}, errors.New("bad_request: table is required")
	}
	r, err := t.b.Tables(ctx, &events.TablesRequest{Database: in.Database, Table: in.Table})
	if err != nil {
		return nil, events.TableInfo{}, toolError(err)
	}
	return nil, r.Tables[0], nil
}

// SearchIn is a question to retrieve context for.
type SearchIn struct {
	Database string   `json:"database" jsonschema:"the database name"`
	Question string   `json:"question" jsonschema:"the natural-language question"`
	K        int      `json:"k,omitempty" jsonschema:"how many results, 1 to 25 (default 10)"`
	Kinds    []string `json:"kinds,omitempty" jsonschema:"only these kinds: table, view, doc, example"`
	Hints    string   `json:"hints,omitempty" jsonschema:"what you know beside the question: a definition, the columns meant (searched as a weaker second query)"`
	Schemas  []string `json:"schemas,omitempty" jsonschema:"only tables and views of these schemas: name the one meant when a result says the question fits several"`
}

// searchSchema is SearchIn's schema with what the struct tags cannot say:
// the kinds there are. k's bounds are in its description and checked by
// the tool, not the schema: the SDK's schema check answers "maximum:
// 500/1 is greater than 25.000000", the tool names the argument and the
// range.
func searchSchema() *jsonschema.Schema {
	sch := inputSchema[SearchIn]()
	sch.Properties["kinds"].Items.Enum = []any{"table", "view", "doc", "example"}
	return sch
}

// inputSchema is T's schema with its list arguments typed "array", not
// ["null", "array"] as a Go slice infers: clients that build arguments
// from the schema (the MCP Inspector's --tool-arg kinds='["doc"]') parse
// a value as JSON only for a plain array type and send it as a string
// otherwise, which the schema then refuses. An absent list is still
// fine.
func inputSchema[T any]() *jsonschema.Schema {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: input schema: %v", err)) // a programming error, found by every test
	}
	for _, p := range sch.Properties {
		if slices.Equal(p.Types, []string{"null", "array"}) {
			p.Type, p.Types = "array", nil
		}
	}
	return sch
}

func (in SearchIn) request(explain bool) (*events.SearchRequest, error) {
	if in.K < 0 || in.K > MaxK {
		return nil, fmt.Errorf("bad_request: k must be between 1 and %d (default 10), got %d", MaxK, in.K)
	}
	return &events.SearchRequest{Database: in.Database, Question: in.Question, K: in.K, Kinds: in.Kinds, Explain: explain, Hints: in.Hints, Schemas: in.Schemas}, nil
}

// SearchResult is one search_schema result.
type SearchResult struct {
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Score     float64 `json:"score"`
	Text      string  `json:"text"`
	Truncated bool    `json:"truncated,omitempty"`
	// Why says why join completion put the table where it is: a bridge
	// that joins two results ("joins public.a and public.b"), or a table
	// placed among the k ("has name, which no table before it covers;
	// joins public.film_actor"). An agent reads it as the join to make.
	Why string `json:"why,omitempty"`
}

// SearchOut is search_schema's result.
type SearchOut struct {
	Results []SearchResult `json:"results"`
	// Joins are the joins the column names imply between two results
	// where no foreign key declares them ("film_category.category_id =
	// category.category_id"); declared keys are in the tables' text.
	Joins    []string `json:"joins,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Schemas are the schemas the question may be about, likeliest
	// first, when it could be about several; Ambiguous: the likeliest
	// has less than 0.6 of the odds, so ask which is meant, and search
	// again with it.
	Schemas   []events.SchemaShare `json:"schemas,omitempty"`
	Ambiguous bool                 `json:"ambiguous,omitempty"`
}

func (t *tools) searchSchema(ctx context.Context, req *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, SearchOut, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, SearchOut{}, err
	}
	sreq, err := in.request(false)
	if err != nil {
		return nil, SearchOut{}, err
	}
	r, err := t.b.Search(ctx, sreq)
	if err != nil {
		return nil, SearchOut{}, toolError(err)
	}
	out := SearchOut{Results: []SearchResult{}, Warnings: r.Warnings, Schemas: r.Schemas, Ambiguous: r.Ambiguous}
	for _, it := range r.Results {
		res := SearchResult{Kind: it.Kind, Name: it.Name, Score: it.Score, Text: it.Text, Why: cmp.Or(it.Bridge, it.Placed)}
		if it.Kind == "example" && it.Title != "" {
			res.Name = it.Title // an example is known by its question, not its id
		}
		if len(res.Text) > MaxResultText {
			res.Text, res.Truncated = res.Text[:MaxResultText], true
		}
		out.Results = append(out.Results, res)
	}
	out.Joins = joinLines(r.Joins)
	return nil, out, nil
}

// AskIn is a question to answer with SQL.
type AskIn struct {
	Database            string   `json:"database" jsonschema:"the database name"`
	Question            string   `json:"question" jsonschema:"the natural-language question"`
	AllowSystemCatalogs bool     `json:"allow_system_catalogs,omitempty" jsonschema:"let the SQL read pg_catalog and information_schema, refused otherwise"`
	Hints               string   `json:"hints,omitempty" jsonschema:"what you know beside the question: a definition, the columns meant (searched as a weaker second query and shown to the model)"`
	Schemas             []string `json:"schemas,omitempty" jsonschema:"only tables and views of these schemas: name the one meant when a result says the question fits several"`
}

// AskOut is ask_sql's result.
type AskOut struct {
	SQL string `json:"sql"`
	// AskID names this answer for submit_feedback.
	AskID       string   `json:"ask_id,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Tables      []string `json:"tables,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`
	// RetrievalOnly: no model is configured, so there is no SQL; Context
	// is what a model would have been given.
	RetrievalOnly bool     `json:"retrieval_only,omitempty"`
	Context       []string `json:"context,omitempty"`
	Joins         []string `json:"joins,omitempty"` // with Context: as in SearchOut
	// Schemas and Ambiguous: as in SearchOut.
	Schemas   []events.SchemaShare `json:"schemas,omitempty"`
	Ambiguous bool                 `json:"ambiguous,omitempty"`
}

func (t *tools) askSQL(ctx context.Context, req *mcp.CallToolRequest, in AskIn) (*mcp.CallToolResult, AskOut, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, AskOut{}, err
	}
	r, err := t.b.Ask(ctx, &events.AskRequest{Database: in.Database, Question: in.Question, AllowSystemCatalogs: in.AllowSystemCatalogs, Hints: in.Hints, Schemas: in.Schemas})
	if err != nil {
		if r != nil && r.RejectedSQL != "" {
			return nil, AskOut{}, fmt.Errorf("%v (rejected SQL, not safe to run: %s)", toolError(err), r.RejectedSQL)
		}
		return nil, AskOut{}, toolError(err)
	}
	out := AskOut{SQL: r.SQL, AskID: r.AskID, Explanation: r.Explanation, Tables: r.Tables, Warnings: r.Warnings, RetrievalOnly: r.RetrievalOnly,
		Schemas: r.Schemas, Ambiguous: r.Ambiguous}
	if r.RetrievalOnly {
		for _, c := range r.Context {
			out.Context = append(out.Context, c.Kind+" "+c.Name)
		}
		out.Joins = joinLines(r.Joins)
	}
	return nil, out, nil
}

// FeedbackIn is SQL that answers a question.
type FeedbackIn struct {
	Database  string `json:"database" jsonschema:"the database name"`
	Question  string `json:"question" jsonschema:"the natural-language question the SQL answers"`
	SQL       string `json:"sql" jsonschema:"the SQL the user confirmed answers it"`
	AskID     string `json:"ask_id,omitempty" jsonschema:"the ask_id ask_sql returned, when the SQL is its answer or a correction of it"`
	Corrected bool   `json:"corrected,omitempty" jsonschema:"true when the SQL corrects ask_sql's answer rather than accepting it as it was"`
	Schema    string `json:"schema,omitempty" jsonschema:"the schema the SQL was written in, when its unqualified names are not in public"`
}

// FeedbackOut is submit_feedback's result.
type FeedbackOut struct {
	Example  string   `json:"example"`
	Version  int64    `json:"version"`
	Tables   []string `json:"tables"`
	Warnings []string `json:"warnings,omitempty"`
}

func (t *tools) submitFeedback(ctx context.Context, req *mcp.CallToolRequest, in FeedbackIn) (*mcp.CallToolResult, FeedbackOut, error) {
	if err := mayWrite(req.Extra, in.Database); err != nil {
		return nil, FeedbackOut{}, err
	}
	r, err := t.b.Feedback(ctx, &events.FeedbackRequest{Database: in.Database, Question: in.Question, SQL: in.SQL, AskID: in.AskID, Corrected: in.Corrected, Schema: in.Schema,
		Client: clientOf(req)})
	if err != nil {
		return nil, FeedbackOut{}, toolError(err)
	}
	return nil, FeedbackOut{Example: r.Example, Version: r.Version, Tables: r.Tables, Warnings: r.Warnings}, nil
}

// clientOf names the MCP client that called, as it named itself at
// initialize ("mcp:claude-desktop"), for the feedback it gives; "mcp"
// when it gave no name. Over HTTP with tokens, the token's name follows
// ("mcp:claude-desktop@shop-agents"): the daemon knows the MCP server
// only as the NATS user it connects as, and the token says which team's
// agent it was.
func clientOf(req *mcp.CallToolRequest) string {
	name := ""
	if req != nil {
		// From the request itself on the protocol of 2026-07-28 and
		// later, else from the session's initialize.
		if ci := req.ClientInfo(); ci != nil {
			name = ci.Name
		}
	}
	who := "mcp"
	if name = events.AsID(name, 100); name != "" {
		who += ":" + name
	}
	if req != nil {
		if g, _ := grantOf(req.Extra); g != nil {
			who += "@" + g.Name
		}
	}
	return who
}

// CheckIn is proposed migrations for a database.
type CheckIn struct {
	Database   string      `json:"database" jsonschema:"the database name"`
	Migrations []Migration `json:"migrations" jsonschema:"the migrations to check, in the order they would apply after those already applied"`
}

// CheckOut is check_migration's result.
type CheckOut struct {
	*impact.Report
	Breaks bool `json:"breaks"`
}

func (t *tools) checkMigration(ctx context.Context, req *mcp.CallToolRequest, in CheckIn) (*mcp.CallToolResult, CheckOut, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, CheckOut{}, err
	}
	if err := events.ValidateDatabase(in.Database); err != nil {
		return nil, CheckOut{}, toolError(events.Errorf(events.CodeBadRequest, "%v", err))
	}
	switch n := len(in.Migrations); {
	case n == 0:
		return nil, CheckOut{}, errors.New("bad_request: migrations: give at least one {name, sql}")
	case n > MaxMigrations:
		return nil, CheckOut{}, fmt.Errorf("bad_request: migrations: %d; at most %d in one check", n, MaxMigrations)
	}
	for i, m := range in.Migrations {
		if strings.TrimSpace(m.Name) == "" || len(m.SQL) > MaxMigrationSQL {
			return nil, CheckOut{}, fmt.Errorf("bad_request: migrations[%d]: a name and at most %d bytes of SQL", i, MaxMigrationSQL)
		}
	}
	rep, err := t.check.Check(ctx, in.Database, in.Migrations)
	if err != nil {
		return nil, CheckOut{}, toolError(err)
	}
	return nil, CheckOut{Report: rep, Breaks: rep.Breaks(false)}, nil
}

// ExplainOut is explain_retrieval's result: the results and each
// candidate's path through the stages.
type ExplainOut struct {
	Results    []string             `json:"results"`
	QueryTerms []events.QueryTerm   `json:"query_terms"`
	Explain    []events.ExplainItem `json:"explain"`
}

func (t *tools) explainRetrieval(ctx context.Context, req *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, ExplainOut, error) {
	if err := mayUse(req.Extra, in.Database); err != nil {
		return nil, ExplainOut{}, err
	}
	sreq, err := in.request(true)
	if err != nil {
		return nil, ExplainOut{}, err
	}
	r, err := t.b.Search(ctx, sreq)
	if err != nil {
		return nil, ExplainOut{}, toolError(err)
	}
	// The reply's explain travels as JSON of untyped shape; the tool's
	// output is typed, so clients get a schema they can check.
	out := ExplainOut{Results: []string{}, QueryTerms: r.QueryTerms, Explain: []events.ExplainItem{}}
	if r.Explain != nil {
		b, err := json.Marshal(r.Explain)
		if err == nil {
			err = json.Unmarshal(b, &out.Explain)
		}
		if err != nil {
			return nil, ExplainOut{}, fmt.Errorf("explain: %w", err)
		}
	}
	for _, it := range r.Results {
		out.Results = append(out.Results, it.Kind+" "+it.Name)
	}
	return nil, out, nil
}

// ResourcesPage is how many table resources one resources/list page holds.
const ResourcesPage = 200

// listResources answers resources/list with every table and view of every
// database the request's token may use, ResourcesPage at a time, so a
// client can browse them; the SDK itself lists only static resources.
// The cursor names the database and the last table listed, so a page
// reads only its own tables: an offset had every page read every
// table before it (50 pages of a 10,000-table database read 500,000).
func (t *tools) listResources(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "resources/list" {
			return next(ctx, method, req)
		}
		var at resourceCursor
		if p, ok := req.GetParams().(*mcp.ListResourcesParams); ok && p != nil && p.Cursor != "" {
			var err error
			if at, err = decodeCursor(p.Cursor); err != nil {
				return nil, err
			}
		}
		dbs, err := t.databases(ctx, req.GetExtra())
		if err != nil {
			return nil, err
		}
		slices.SortFunc(dbs, func(a, b client.Database) int { return strings.Compare(a.Name, b.Name) })
		return t.resourcesPage(ctx, dbs, at), nil
	}
}

// resourceCursor is where a resources/list page ends: the database and
// the last table listed of it.
type resourceCursor struct {
	Database string `json:"db"`
	After    string `json:"after,omitempty"`
}

func decodeCursor(s string) (resourceCursor, error) {
	var c resourceCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.Database == "" {
		return c, fmt.Errorf("resources/list: cursor %s is not one this server gave", events.Quote(s))
	}
	return c, nil
}

func (c resourceCursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// resourcesPage lists up to ResourcesPage tables from at on, databases
// in name order; a database gone since the cursor was given is passed.
func (t *tools) resourcesPage(ctx context.Context, dbs []client.Database, at resourceCursor) *mcp.ListResourcesResult {
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	start, found := slices.BinarySearchFunc(dbs, at.Database, func(d client.Database, name string) int { return strings.Compare(d.Name, name) })
	after := at.After
	if !found {
		after = ""
	}
	for i := start; i < len(dbs); i, after = i+1, "" {
		db := dbs[i].Name
		for {
			room := ResourcesPage - len(res.Resources)
			r, err := t.b.Tables(ctx, &events.TablesRequest{Database: db, Limit: room, After: after})
			if err != nil {
				break // a database with docs only has no tables
			}
			for _, tb := range r.Tables {
				res.Resources = append(res.Resources, &mcp.Resource{URI: ResourcePrefix + db + "/tables/" + url.PathEscape(tb.Name),
					Name: db + "/" + tb.Name, MIMEType: "text/plain", Description: tb.Comment})
			}
			if len(res.Resources) >= ResourcesPage {
				switch {
				case r.Next != "":
					res.NextCursor = resourceCursor{Database: db, After: r.Next}.String()
				case i+1 < len(dbs):
					res.NextCursor = resourceCursor{Database: dbs[i+1].Name}.String()
				}
				return res
			}
			if after = r.Next; after == "" {
				break
			}
		}
	}
	return res
}

// readTable serves schemaq://<database>/tables/<schema.table>.
func (t *tools) readTable(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "schemaq" || !strings.HasPrefix(u.Path, "/tables/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	table, _ := url.PathUnescape(strings.TrimPrefix(u.Path, "/tables/"))
	if err := mayUse(req.Extra, u.Host); err != nil {
		return nil, err
	}
	r, err := t.b.Tables(ctx, &events.TablesRequest{Database: u.Host, Table: table})
	if err != nil {
		var we *events.Error
		if errors.As(err, &we) && (we.Code == events.CodeNotFound || we.Code == events.CodeUnknownDatabase || we.Code == events.CodeBadRequest) {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, toolError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: r.Tables[0].DDL}}}, nil
}

func joinLines(joins []events.Join) []string {
	var out []string
	for _, j := range joins {
		out = append(out, j.String())
	}
	return out
}
