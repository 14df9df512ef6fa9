package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/mcpserver"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// fakeLLM answers with SQL, or fails for questions that say "gateway-down".
// A question holding "answer[SQL]" is answered with that SQL, as a model
// led astray would.
func fakeLLM(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1].Content
		if strings.Contains(last, "gateway-down") {
			http.Error(w, `{"error":{"message":"upstream overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		sql := "SELECT count(*) FROM orders"
		for _, m := range req.Messages {
			if _, rest, ok := strings.Cut(m.Content, "answer["); ok {
				sql, _, _ = strings.Cut(rest, "]")
			}
		}
		content, _ := json.Marshal(map[string]string{"sql": sql, "explanation": "counts orders"})
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant",
				"content": string(content)}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func mcpFixture(t *testing.T) (*client.Client, *impactSource) {
	t.Helper()
	llm := fakeLLM(t)
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m", "SCHEMAQ_LLM_RETRIES", "0")
	t.Cleanup(func() { stop() })
	shop := filepath.Join("..", "..", "examples", "shop")
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	tenant := filepath.Join("..", "..", "pkg", "catalog", "testdata", "tenant-helper")
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "tenant", "--wait", "20s", tenant); code != exitOK {
		t.Fatalf("publish tenant: %s", errOut)
	}
	// --wait: the searches below find the docs and examples at once.
	if _, errOut, code := runAt(t, url, "publish", "docs", "--db", "shop", "--wait", "20s", filepath.Join(shop, "docs")); code != exitOK {
		t.Fatalf("publish docs: %s", errOut)
	}
	if _, errOut, code := runAt(t, url, "publish", "examples", "--db", "shop", "--wait", "20s", filepath.Join(shop, "examples.jsonl")); code != exitOK {
		t.Fatalf("publish examples: %s", errOut)
	}
	publishVideo(t, url)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cli, _ := client.New(nc)
	src, err := newImpactSource(nc)
	if err != nil {
		t.Fatal(err)
	}
	return cli, src
}

func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call returns the tool's structured output as JSON text, or its error text.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if res.IsError {
		return strings.Join(text, "\n"), true
	}
	b, _ := json.Marshal(res.StructuredContent)
	return string(b), false
}

func TestMCPTools(t *testing.T) {
	cli, checker := mcpFixture(t)
	cs := connect(t, mcpserver.New(cli, "0.0.0-test", mcpserver.WithChecker(checker)))
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s lacks a description or input schema", tl.Name)
		}
	}
	if got := strings.Join(names, ","); got != "ask_sql,check_migration,describe_table,explain_retrieval,list_databases,list_tables,search_schema,submit_feedback" {
		t.Errorf("tools: %s", got)
	}

	tests := []struct {
		tool    string
		args    map[string]any
		isError bool
		want    []string
	}{
		{"list_databases", map[string]any{}, false, []string{`"name":"shop"`, `"version":6`}},
		{"list_tables", map[string]any{"database": "shop"}, false, []string{`"public.orders"`, `"public.order_totals"`}},
		{"describe_table", map[string]any{"database": "shop", "table": "orders"}, false, []string{"CREATE TABLE public.orders", `customer_id → public.customers.id`, `public.payments.order_id → id`}},
		// Views are listed, so they are described too.
		{"describe_table", map[string]any{"database": "shop", "table": "order_totals"}, false, []string{"CREATE VIEW public.order_totals", `reads public.`}},
		{"search_schema", map[string]any{"database": "shop", "question": "how are partial refunds recorded", "kinds": []string{"doc"}, "k": 2}, false, []string{`"kind":"doc"`, `refunds.md`}},
		{"search_schema", map[string]any{"database": "shop", "question": "which customers placed the most orders", "kinds": []string{"example"}, "k": 1}, false, []string{`"kind":"example"`, `"name":"How many orders did each customer place?"`}},
		{"ask_sql", map[string]any{"database": "shop", "question": "How many orders are there?"}, false, []string{`"sql":"SELECT count(*) FROM orders"`, `"tables":["public.orders"]`, `"ask_id":"`}},
		// Confirmed SQL is stored as an example; refused SQL is not.
		{"submit_feedback", map[string]any{"database": "shop", "question": "Orders per customer email", "sql": "SELECT c.email, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1"}, false,
			[]string{`"example":"fb-`, `"tables":["public.customers","public.orders"]`, `"version":6`}},
		{"submit_feedback", map[string]any{"database": "shop", "question": "Forget the orders", "sql": "DELETE FROM orders"}, true, []string{"unsafe_sql", "nothing was stored"}},
		{"submit_feedback", map[string]any{"database": "shop", "question": "Ghost rows", "sql": "SELECT * FROM ghosts"}, true, []string{"unknown_table", "ghosts"}},
		{"submit_feedback", map[string]any{"database": "shop", "question": "x", "sql": "SELECT 1", "corrected": true}, true, []string{"ask_id"}},
		// A proposed migration is replayed, not published.
		{"check_migration", map[string]any{"database": "shop", "migrations": []map[string]any{{"name": "0007_drop_payments.sql", "sql": "DROP TABLE payments;"}}}, false,
			[]string{`"breaks":true`, `"dropped":["public.payments"]`, `"reason":"reads public.payments, which the migrations drop"`, `"after":7`}},
		{"check_migration", map[string]any{"database": "shop", "migrations": []map[string]any{{"name": "0007_loyalty.sql", "sql": "CREATE TABLE loyalty (points int);"}}}, false, []string{`"breaks":false`}},
		{"check_migration", map[string]any{"database": "shop", "migrations": []map[string]any{}}, true, []string{"at least one"}},
		{"explain_retrieval", map[string]any{"database": "shop", "question": "payments per order", "k": 3}, false, []string{`"fused_rank"`, `"bm25_rank"`, `"query_terms"`, `"why":"question"`}},
		// Hints reach retrieval as a second query.
		{"explain_retrieval", map[string]any{"database": "shop", "question": "what came back", "hints": "came back refers to refunds", "k": 3}, false, []string{`"hint_rank"`, `"why":"hint:question"`}},
		// A name written out picks its table.
		{"explain_retrieval", map[string]any{"database": "shop", "question": "what came back", "hints": "refers to payments.order_id", "k": 3}, false, []string{`"identifier":"payments.order_id","identifier_rank":1`}},
		// A schema without foreign keys: the joins its names imply.
		{"describe_table", map[string]any{"database": "video", "table": "film_category"}, false, []string{`"joins":["public.film_category.category_id = public.category.category_id","public.film_category.film_id = public.film.film_id"]`}},
		{"search_schema", map[string]any{"database": "video", "question": "How many comedy films are there?"}, false, []string{`"joins":["public.film_category.category_id = public.category.category_id","public.film_category.film_id = public.film.film_id"]`}},
		// A table join completion adds says why: the join to make.
		{"search_schema", map[string]any{"database": "shop", "question": "payments of customers", "kinds": []string{"table"}, "k": 2}, false, []string{`"name":"public.orders"`, `"why":"joins public.payments and public.customers"`}},
		// Drift in a catalog is shown by the tools about its database.
		{"list_tables", map[string]any{"database": "tenant"}, false, []string{`"drift_total":4`, `"inferred":"column public.projects.tenant_id"`}},
		{"search_schema", map[string]any{"database": "tenant", "question": "tenant of each invoice"}, false, []string{`"warnings":["the catalog of tenant has drift: 4 statement(s)`}},
		// Errors.
		{"list_tables", map[string]any{"database": "nope"}, true, []string{"unknown_database"}},
		{"describe_table", map[string]any{"database": "shop", "table": "ghosts"}, true, []string{"not_found"}},
		{"describe_table", map[string]any{"database": "shop", "table": " "}, true, []string{"table is required"}},
		{"search_schema", map[string]any{"database": "shop", "question": "x", "k": 500}, true, []string{"k must be between 1 and 25 (default 10), got 500"}},
		{"search_schema", map[string]any{"database": "shop", "question": "x", "kinds": []string{"tables"}}, true, []string{"kinds"}},
		{"search_schema", map[string]any{"database": "shop"}, true, []string{"question"}},
		{"search_schema", map[string]any{"database": "Bad!", "question": "x"}, true, []string{"bad_request"}},
		{"ask_sql", map[string]any{"database": "shop", "question": "gateway-down: anything"}, true, []string{"gateway_error"}},
		{"ask_sql", map[string]any{"database": "shop", "question": 42}, true, []string{"question"}},
	}
	for _, tc := range tests {
		out, isErr := call(t, cs, tc.tool, tc.args)
		if isErr != tc.isError {
			t.Errorf("%s %v: error=%v, want %v: %s", tc.tool, tc.args, isErr, tc.isError, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s %v: %s does not contain %s", tc.tool, tc.args, out, w)
			}
		}
	}

	// The feedback stored says which client it came through.
	exs, err := cli.Examples(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	var through []string
	for _, ex := range exs {
		if ex.Origin == events.OriginFeedback {
			through = append(through, ex.Client+" "+ex.Author)
		}
	}
	if len(through) != 1 || through[0] != "mcp:test-agent nats" {
		t.Errorf("the feedback's client and author: %q, want \"mcp:test-agent nats\"", through)
	}

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "schemaq://shop/tables/public.customers"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "CREATE TABLE public.customers") {
		t.Errorf("resource: %+v %v", res, err)
	}
	// resources/list names every table and view, each readable: the
	// shop's 8, the tenant fixture's 6 and video's 4.
	listed, err := cs.ListResources(ctx, nil)
	if err != nil || len(listed.Resources) != 18 {
		t.Fatalf("resources/list: %v %v", listed, err)
	}
	for _, r := range listed.Resources {
		got, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		if err != nil || !strings.Contains(got.Contents[0].Text, "CREATE ") {
			t.Errorf("listed resource %s does not read: %v", r.URI, err)
		}
	}
	res, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "schemaq://shop/tables/public.order_totals"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "CREATE VIEW public.order_totals") {
		t.Errorf("view resource: %+v %v", res, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "schemaq://shop/tables/public.ghosts"}); err == nil {
		t.Error("a missing table resource should be an error")
	}
}

func TestMCPOverHTTP(t *testing.T) {
	cli, _ := mcpFixture(t)
	server := mcpserver.New(cli, "0.0.0-test")
	srv := httptest.NewServer(mcpserver.HTTPHandler(server, mcpserver.HTTPConfig{}))
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1.0.0"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out, isErr := call(t, cs, "search_schema", map[string]any{"database": "shop", "question": "which customers placed orders", "k": 3})
	if isErr || !strings.Contains(out, "public.orders") {
		t.Errorf("search over HTTP: %s", out)
	}
}

// bearerAuth adds an Authorization header to every request.
type bearerAuth struct{ token string }

func (b bearerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPHTTPNeedsATokenBeyondLoopback runs `schemaq mcp --http` as
// users do: with SCHEMAQ_MCP_TOKEN every request must carry it, and a
// non-loopback address without a token is refused at start.
func TestMCPHTTPNeedsATokenBeyondLoopback(t *testing.T) {
	ns := testenv.NATS(t)
	if _, errOut, code := runAt(t, ns.ClientURL(), "mcp", "--http", "0.0.0.0:0"); code != exitUsage || !strings.Contains(errOut, "needs a bearer token: set SCHEMAQ_MCP_TOKEN") {
		t.Errorf("non-loopback without a token (exit %d): %s", code, errOut)
	}
	if _, errOut, code := runAt(t, ns.ClientURL(), "mcp", "--http", "127.0.0.1:0", "--max-sessions", "0"); code != exitUsage || !strings.Contains(errOut, "--max-sessions must be 1 or more") {
		t.Errorf("no room for a session (exit %d): %s", code, errOut)
	}
	addr := freePort(t)
	startService(t, "mcp", []string{"mcp", "--http", addr}, map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_MCP_TOKEN": "s3cret"})
	url := "http://" + addr
	var resp *http.Response
	testenv.Eventually(t, 10*time.Second, "mcp listening", func() bool {
		r, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			return false
		}
		resp = r
		return true
	})
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without the token: %d %v", resp.StatusCode, resp.Header)
	}
	for token, ok := range map[string]bool{"wrong": false, "s3cret": true} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1.0.0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerAuth{token}}, MaxRetries: -1}, nil)
		if ok != (err == nil) {
			t.Errorf("token %q: connect error %v", token, err)
		}
		if err != nil {
			continue
		}
		tools, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(tools.Tools) != 8 {
			t.Errorf("tools with the token: %v %v", tools, err)
		}
		cs.Close()
	}
}

// storesDDL pools two near-identical shops and a payroll in one database:
// a question about orders fits either shop.
const storesDDL = `CREATE SCHEMA store_east;
CREATE TABLE store_east.customers (customer_id bigint PRIMARY KEY, full_name text, city text);
CREATE TABLE store_east.orders (order_id bigint PRIMARY KEY, customer_id bigint REFERENCES store_east.customers, placed_at date, total numeric);
CREATE SCHEMA store_west;
CREATE TABLE store_west.customers (customer_id bigint PRIMARY KEY, full_name text, city text);
CREATE TABLE store_west.orders (order_id bigint PRIMARY KEY, customer_id bigint REFERENCES store_west.customers, placed_at date, total numeric);
CREATE SCHEMA payroll;
CREATE TABLE payroll.employees (employee_id bigint PRIMARY KEY, full_name text, hired_on date);
CREATE TABLE payroll.salaries (employee_id bigint REFERENCES payroll.employees, amount numeric, paid_on date);
`

// TestAmbiguousQuestions: a question two schemas fit alike says so in
// every reply (search and ask, JSON and text, MCP) with the schemas to
// choose from, naming one settles it, and /metrics counts such replies.
func TestAmbiguousQuestions(t *testing.T) {
	dir := t.TempDir()
	addr, metrics := freePort(t), freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_METRICS_ADDR", metrics)
	defer stop()
	publishSnapshot(t, url, "stores", storesDDL)
	const question = "How many orders did each customer place?"
	type reply struct {
		Ambiguous bool                 `json:"ambiguous"`
		Schemas   []events.SchemaShare `json:"schemas"`
		Warnings  []string             `json:"warnings"`
	}
	listed := func(r reply) string {
		var s []string
		for _, sh := range r.Schemas {
			s = append(s, sh.Schema)
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}
	const warning = "the question fits several schemas: "
	for _, args := range [][]string{
		{"search", "--db", "stores", "--json", question},
		{"ask", "--db", "stores", "--json", question},
	} {
		out, errOut, code := runAt(t, url, args...)
		var r reply
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("%s (exit %d): %s %s", args[0], code, out, errOut)
		}
		if !r.Ambiguous || listed(r) != "store_east store_west" || !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, warning) }) {
			t.Errorf("%s of a question two schemas fit: %s", args[0], out)
		}
	}
	if _, errOut, code := runAt(t, url, "search", "--db", "stores", question); code != exitOK || !strings.Contains(errOut, "warning: "+warning) {
		t.Errorf("search, text (exit %d), without the warning: %s", code, errOut)
	}
	out, _, _ := runAt(t, url, "search", "--db", "stores", "--schemas", "store_west", "--json", question)
	var r reply
	if json.Unmarshal([]byte(out), &r) != nil || r.Ambiguous || len(r.Schemas) != 0 {
		t.Errorf("search with the schema named: %s", out)
	}
	out, _, _ = runAt(t, url, "search", "--db", "stores", "--json", "What is the salary of each employee?")
	if json.Unmarshal([]byte(out), &r) != nil || r.Ambiguous || len(r.Schemas) == 0 || r.Schemas[0].Schema != "payroll" {
		t.Errorf("search of a question one schema answers: %s", out)
	}

	// An agent sees the same, and can name the schema.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cli, _ := client.New(nc)
	cs := connect(t, mcpserver.New(cli, "0.0.0-test"))
	for _, tc := range []struct {
		tool      string
		args      map[string]any
		ambiguous bool
	}{
		{"search_schema", map[string]any{"database": "stores", "question": question}, true},
		{"ask_sql", map[string]any{"database": "stores", "question": question}, true},
		{"search_schema", map[string]any{"database": "stores", "question": question, "schemas": []string{"store_east"}}, false},
		{"ask_sql", map[string]any{"database": "stores", "question": question, "schemas": []string{"store_east"}}, false},
	} {
		out, isErr := call(t, cs, tc.tool, tc.args)
		var r reply
		if isErr || json.Unmarshal([]byte(out), &r) != nil || r.Ambiguous != tc.ambiguous || (tc.ambiguous && listed(r) != "store_east store_west") {
			t.Errorf("%s %v: %s, want ambiguous %v", tc.tool, tc.args, out, tc.ambiguous)
		}
	}
	// Three searches and two asks fit both shops.
	body := scrapeUntil(t, metrics, 10*time.Second, func(body string) bool {
		return strings.Contains(body, `schemaq_daemon_ambiguous_total{endpoint="search"} 3`)
	})
	for _, want := range []string{`schemaq_daemon_ambiguous_total{endpoint="search"} 3`, `schemaq_daemon_ambiguous_total{endpoint="ask"} 2`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// This daemon has no gateway: its asks were answered with retrieval
	// only, and counted.
	if m := regexp.MustCompile(`(?m)^schemaq_daemon_retrieval_only_total (\d+)$`).FindStringSubmatch(body); m == nil || len(m[1]) == 1 && m[1] < "2" {
		t.Errorf("schemaq_daemon_retrieval_only_total: %v, want at least the 2 asks", m)
	}
}

// TestMCPTokensPerDatabase runs `schemaq mcp --http --tokens-file`'s
// handler against the real stack with two tokens of the shop database:
// every tool and resource refuses any other database, list_databases
// and resources/list show only the shop, feedback needs write access,
// and a session answers only the token that opened it.
func TestMCPTokensPerDatabase(t *testing.T) {
	for _, mode := range []struct {
		name   string
		cfg    mcpserver.HTTPConfig
		client string // the feedback's client
	}{
		{"sessions", mcpserver.HTTPConfig{}, "mcp:agent@shop-writer"},
		// Without sessions the client names itself in every request
		// (the protocol of 2026-07-28, which the Go SDK speaks).
		{"stateless", mcpserver.HTTPConfig{Stateless: true}, "mcp:agent@shop-writer"},
	} {
		t.Run(mode.name, func(t *testing.T) { checkMCPTokens(t, mode.cfg, mode.client) })
	}
}

func checkMCPTokens(t *testing.T, cfg mcpserver.HTTPConfig, wantClient string) {
	cli, checker := mcpFixture(t)
	server := mcpserver.New(cli, "0.0.0-test", mcpserver.WithChecker(checker))
	const readToken, writeToken = "shop-reader-token-0123", "shop-writer-token-0123"
	ring := bearer.NewKeyring("", []bearer.Token{
		{Name: "shop-reader", Token: readToken, Databases: []string{"shop"}, Access: bearer.AccessRead},
		{Name: "shop-writer", Token: writeToken, Databases: []string{"shop"}, Access: bearer.AccessWrite},
	})
	srv := httptest.NewServer(mcpserver.RequireToken(ring, mcpserver.HTTPHandler(server, cfg)))
	t.Cleanup(srv.Close) // after the sessions' own cleanups, which close their streams
	connectAs := func(token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearerAuth{token}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	reader, writer := connectAs(readToken), connectAs(writeToken)
	ctx := context.Background()

	if out, isErr := call(t, reader, "list_databases", map[string]any{}); isErr || !strings.Contains(out, `"shop"`) || strings.Contains(out, "video") || strings.Contains(out, "tenant") {
		t.Errorf("list_databases with the shop's token: %s", out)
	}
	// Each tool's arguments, valid but for the database; a tool added
	// without a row here fails the test.
	args := map[string]func(db string) map[string]any{
		"list_tables":       func(db string) map[string]any { return map[string]any{"database": db} },
		"describe_table":    func(db string) map[string]any { return map[string]any{"database": db, "table": "film"} },
		"search_schema":     func(db string) map[string]any { return map[string]any{"database": db, "question": "films"} },
		"explain_retrieval": func(db string) map[string]any { return map[string]any{"database": db, "question": "films"} },
		"ask_sql":           func(db string) map[string]any { return map[string]any{"database": db, "question": "How many films?"} },
		"submit_feedback": func(db string) map[string]any {
			return map[string]any{"database": db, "question": "How many orders?", "sql": "SELECT count(*) FROM orders"}
		},
		"check_migration": func(db string) map[string]any {
			return map[string]any{"database": db, "migrations": []map[string]any{{"name": "9_x.sql", "sql": "CREATE TABLE x (a int);"}}}
		},
	}
	tools, err := reader.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "list_databases" {
			continue
		}
		mk, ok := args[tl.Name]
		if !ok {
			t.Errorf("tool %s: no arguments to check its access with", tl.Name)
			continue
		}
		for _, db := range []string{"video", "tenant", "nope"} {
			if out, isErr := call(t, reader, tl.Name, mk(db)); !isErr || !strings.Contains(out, `forbidden: token "shop-reader" may not use database "`+db+`"`) {
				t.Errorf("%s on %s with the shop's token: %s", tl.Name, db, out)
			}
		}
		out, _ := call(t, reader, tl.Name, mk("shop"))
		if forbidden := strings.Contains(out, "forbidden"); forbidden != (tl.Name == "submit_feedback") {
			t.Errorf("%s on shop with the shop's read token: %s", tl.Name, out)
		}
	}
	if out, isErr := call(t, writer, "submit_feedback", args["submit_feedback"]("shop")); isErr {
		t.Errorf("feedback with the shop's write token: %s", out)
	}
	// The example names the token its feedback came with.
	testenv.Eventually(t, 10*time.Second, "the writer's example", func() bool {
		exs, err := cli.Examples(ctx, "shop")
		return err == nil && slices.ContainsFunc(exs, func(ex client.StoredExample) bool { return ex.Client == wantClient })
	})

	listed, err := reader.ListResources(ctx, nil)
	if err != nil || len(listed.Resources) == 0 {
		t.Fatalf("resources/list: %v %v", listed, err)
	}
	for _, r := range listed.Resources {
		if !strings.HasPrefix(r.URI, mcpserver.ResourcePrefix+"shop/") {
			t.Errorf("resources/list with the shop's token lists %s", r.URI)
		}
	}
	if _, err := reader.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ResourcePrefix + "video/tables/public.film"}); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("reading another database's table: %v", err)
	}

	// Raw requests: no token, and a session opened by one token asked
	// with another.
	post := func(token, session string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // the status is what counts
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	if code, _ := post("", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	code, session := post(readToken, "")
	if cfg.Stateless {
		if code != http.StatusOK || session != "" {
			t.Errorf("initialize without sessions: %d, session %q", code, session)
		}
		// A client of an older protocol named itself only at
		// initialize, which no session remembers: the token names it.
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"submit_feedback","arguments":{"database":"shop","question":"Orders in all","sql":"SELECT count(*) FROM orders"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+writeToken)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), `"isError":true`) {
			t.Fatalf("feedback of an older protocol's client: %d %s", resp.StatusCode, body)
		}
		testenv.Eventually(t, 10*time.Second, "the older client's example", func() bool {
			exs, err := cli.Examples(ctx, "shop")
			return err == nil && slices.ContainsFunc(exs, func(ex client.StoredExample) bool {
				return ex.Question == "Orders in all" && ex.Client == "mcp@shop-writer"
			})
		})
		return
	}
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize with the read token: %d %q", code, session)
	}
	if code, _ := post(writeToken, session); code != http.StatusForbidden {
		t.Errorf("the reader's session asked with the writer's token: %d, want 403", code)
	}
	if code, _ := post(readToken, session); code != http.StatusOK {
		t.Errorf("the reader's session with its own token: %d", code)
	}
}
