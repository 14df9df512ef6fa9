package openai_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/ask/openai"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// step scripts one answer of the fake gateway.
type step struct {
	status     int    // non-2xx answers with an error body
	retryAfter string // header on errors
	content    string // the assistant message
	raw        string // a raw body instead (malformed JSON, no choices)
	delay      time.Duration
	noJSONMode bool // answer 400 when response_format is sent
}

// gateway speaks /v1/chat/completions as OpenAI does and records requests.
type gateway struct {
	mu       sync.Mutex
	steps    []step
	requests []chatRequest
}

type chatRequest struct {
	Model          string                           `json:"model"`
	Messages       []struct{ Role, Content string } `json:"messages"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	MaxTokens   int      `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	g.mu.Lock()
	g.requests = append(g.requests, req)
	var s step
	if len(g.steps) > 0 {
		s, g.steps = g.steps[0], g.steps[1:]
	}
	g.mu.Unlock()
	time.Sleep(s.delay)
	w.Header().Set("Content-Type", "application/json")
	if s.noJSONMode && req.ResponseFormat != nil {
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":{"message":"response_format is not supported by this model","type":"invalid_request_error"}}`))
		return
	}
	if s.status >= 300 {
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		w.WriteHeader(s.status)
		body := `{"error":{"message":"scripted failure","type":"server_error"}}`
		if s.raw != "" {
			body = s.raw
		}
		_, _ = w.Write([]byte(body))
		return
	}
	if s.raw != "" {
		_, _ = w.Write([]byte(s.raw))
		return
	}
	resp := map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": s.content}}},
		"usage": map[string]any{"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
			"prompt_tokens_details": map[string]any{"cached_tokens": 768}},
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func (g *gateway) calls() []chatRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]chatRequest(nil), g.requests...)
}

func newGateway(t *testing.T, timeout time.Duration, steps ...step) (*gateway, *openai.Gateway) {
	t.Helper()
	g := &gateway{steps: steps}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	gw, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test-secret", Model: "gpt-test",
		Timeout: timeout, Retry: httpretry.Config{MaxRetries: 2, InitialInterval: time.Millisecond, MaxInterval: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return g, gw
}

const shopDDL = `CREATE TABLE customers (id bigint PRIMARY KEY, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, total numeric);`

func fixture(t *testing.T) (*catalog.Catalog, *retrieve.Result) {
	t.Helper()
	cat, err := catalog.Snapshot("shop", "shop.sql", shopDDL)
	if err != nil {
		t.Fatal(err)
	}
	var items []retrieve.Item
	for _, c := range chunk.Catalog(cat, chunk.Options{}) {
		items = append(items, retrieve.Item{Candidate: rerank.Candidate{Kind: c.Kind, Name: c.Name, Title: c.Title,
			Text: c.Text, Chunks: []chunk.Chunk{c}, Score: 1}})
	}
	doc := chunk.Doc("shop", "revenue.md", "Revenue", "Revenue is the sum of orders.total.", nil, chunk.Options{})[0]
	items = append(items, retrieve.Item{Candidate: rerank.Candidate{Kind: doc.Kind, Name: doc.Name, Title: doc.Title, Text: doc.Text, Chunks: []chunk.Chunk{doc}}})
	return cat, &retrieve.Result{Items: items}
}

func askOnce(t *testing.T, gw ask.Gateway, q string, res *retrieve.Result, cat *catalog.Catalog) (*ask.Answer, error) {
	t.Helper()
	a, err := ask.New(gw)
	if err != nil {
		t.Fatal(err)
	}
	return a.Ask(context.Background(), cat, ask.Request{Database: "shop", Question: q}, res)
}

// replyError is the error a daemon's reply carries for the answer.
func replyError(ans *ask.Answer) *events.Error {
	if ans == nil || ans.Err == nil {
		return nil
	}
	return daemon.AskError(ans.Err)
}

func TestAskWritesCheckedSQL(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, 5*time.Second, step{content: "```json\n{\"sql\": \"SELECT c.name, sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name;\", \"explanation\": \"revenue per customer\"}\n```"})
	q := "What is the revenue per customer?  (with odd  spacing)"
	reply, err := askOnce(t, gw, q, res, cat)
	if err != nil || replyError(reply) != nil {
		t.Fatalf("%v %+v", err, reply)
	}
	if reply.SQL != "SELECT c.name, sum(o.total) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name" ||
		reply.Explanation != "revenue per customer" || strings.Join(reply.Tables, ",") != "public.customers,public.orders" {
		t.Errorf("reply %+v", reply)
	}
	if reply.Usage.Prompt != 1000 || reply.Usage.Cached != 768 || reply.LLM <= 0 {
		t.Errorf("usage/timings %+v %v", reply.Usage, reply.LLM)
	}
	calls := g.calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	msgs := calls[0].Messages
	sys, user := msgs[0].Content, msgs[len(msgs)-1]
	if !strings.Contains(sys, "CREATE TABLE public.orders (") || !strings.Contains(sys, "## Schema") || !strings.Contains(sys, "Revenue is the sum") {
		t.Errorf("the schema block does not hold the chosen DDL and docs:\n%s", sys)
	}
	if user.Role != "user" || user.Content != q {
		t.Errorf("the question did not arrive unchanged: %+v", user)
	}
	if calls[0].ResponseFormat == nil || calls[0].ResponseFormat.Type != "json_object" || calls[0].Model != "gpt-test" {
		t.Errorf("request %+v", calls[0])
	}
}

// TestTemperatureIsSent: the configured temperature reaches the server,
// zero included (go-openai leaves a zero out, and the server's default
// would apply).
func TestTemperatureIsSent(t *testing.T) {
	cat, res := fixture(t)
	for _, temp := range []float32{0, 0.25} {
		g := &gateway{steps: []step{{content: `{"sql": "SELECT 1", "explanation": "x"}`}}}
		srv := httptest.NewServer(g)
		gw, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-test", Temperature: temp})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := askOnce(t, gw, "How many customers?", res, cat); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		calls := g.calls()
		if len(calls) != 1 || calls[0].Temperature == nil || *calls[0].Temperature != float64(temp) {
			t.Errorf("temperature %v: the request carried %v", temp, calls[0].Temperature)
		}
	}
}

func TestSameContextSendsIdenticalPrefix(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, 5*time.Second, step{content: `{"sql":"SELECT 1"}`}, step{content: `{"sql":"SELECT 1"}`})
	if _, err := askOnce(t, gw, "first question", res, cat); err != nil {
		t.Fatal(err)
	}
	// Same context, retrieved in another order.
	rev := &retrieve.Result{Items: append([]retrieve.Item(nil), res.Items...)}
	for i, j := 0, len(rev.Items)-1; i < j; i, j = i+1, j-1 {
		rev.Items[i], rev.Items[j] = rev.Items[j], rev.Items[i]
	}
	if _, err := askOnce(t, gw, "a different question", rev, cat); err != nil {
		t.Fatal(err)
	}
	calls := g.calls()
	if calls[0].Messages[0].Content != calls[1].Messages[0].Content {
		t.Error("two asks with the same context sent different prefixes")
	}
}

func TestGuardFailureRepairsOnce(t *testing.T) {
	cat, res := fixture(t)
	tests := []struct {
		name     string
		steps    []step
		wantSQL  string
		wantCode string
	}{
		{"repair succeeds", []step{{content: `{"sql": "DELETE FROM orders"}`}, {content: `{"sql": "SELECT count(*) FROM orders", "explanation": "fixed"}`}}, "SELECT count(*) FROM orders", ""},
		{"unknown table, still wrong", []step{{content: `{"sql": "SELECT * FROM payments"}`}, {content: `{"sql": "SELECT * FROM refunds"}`}}, "SELECT * FROM refunds", events.CodeUnknownTable},
		{"unsafe twice", []step{{content: `{"sql": "SELECT pg_sleep(5)"}`}, {content: `{"sql": "SELECT 1; DROP TABLE orders"}`}}, "SELECT 1; DROP TABLE orders", events.CodeUnsafeSQL},
		{"invalid SQL twice", []step{{content: `{"sql": "SELEC 1"}`}, {content: `{"sql": "SELEKT 1"}`}}, "SELEKT 1", events.CodeInvalidSQL},
		{"not JSON twice", []step{{content: "I cannot help"}, {content: "still no"}}, "", events.CodeInvalidOutput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, gw := newGateway(t, 5*time.Second, tc.steps...)
			reply, err := askOnce(t, gw, "how many orders?", res, cat)
			if err != nil {
				t.Fatal(err)
			}
			calls := g.calls()
			if len(calls) != 2 {
				t.Fatalf("%d gateway calls, want exactly one repair", len(calls))
			}
			repair := calls[1].Messages
			if repair[len(repair)-2].Role != "assistant" || !strings.Contains(repair[len(repair)-1].Content, "Your answer was rejected: ") {
				t.Errorf("the repair request does not quote the rejection: %+v", repair[len(repair)-2:])
			}
			// Refused SQL is never in sql, only in rejected_sql.
			gotSQL := reply.SQL
			if tc.wantCode != "" {
				if reply.SQL != "" {
					t.Errorf("a refused answer left sql %q", reply.SQL)
				}
				gotSQL = reply.RejectedSQL
			}
			if gotSQL != tc.wantSQL {
				t.Errorf("sql %q, want %q", gotSQL, tc.wantSQL)
			}
			switch {
			case tc.wantCode == "" && replyError(reply) != nil:
				t.Errorf("unexpected error %v", replyError(reply))
			case tc.wantCode != "" && (replyError(reply) == nil || replyError(reply).Code != tc.wantCode):
				t.Errorf("error %v, want %s", replyError(reply), tc.wantCode)
			}
			if reply.Usage.Prompt != 2000 {
				t.Errorf("usage should add both calls: %+v", reply.Usage)
			}
		})
	}
	// The first rejection's exact reason reaches the model.
	g, gw := newGateway(t, 5*time.Second, step{content: `{"sql": "SELECT * FROM payments"}`}, step{content: `{"sql": "SELECT 1"}`})
	if _, err := askOnce(t, gw, "q", res, cat); err != nil {
		t.Fatal(err)
	}
	if last := g.calls()[1].Messages; !strings.Contains(last[len(last)-1].Content, "unknown_table: relation payments is not in database shop") {
		t.Errorf("repair message: %s", last[len(last)-1].Content)
	}
}

// TestUnknownColumnIsRepairedWithTheRealNames: a column that a migration
// renamed is refused, and the repair request names the real column.
func TestUnknownColumnIsRepairedWithTheRealNames(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, time.Second, step{content: `{"sql": "SELECT c.nme FROM customers c"}`}, step{content: `{"sql": "SELECT c.name FROM customers c"}`})
	reply, err := askOnce(t, gw, "customer names", res, cat)
	if err != nil || replyError(reply) != nil || reply.SQL != "SELECT c.name FROM customers c" {
		t.Fatalf("%v %+v", err, reply)
	}
	calls := g.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls, want the repair round", len(calls))
	}
	last := calls[1].Messages[len(calls[1].Messages)-1].Content
	if !strings.Contains(last, "unknown_column: column c.nme does not exist in public.customers (did you mean name?)") {
		t.Errorf("the repair request does not name the real column: %s", last)
	}
}

// TestSystemCatalogsOnRequest: the request's allow_system_catalogs reaches
// the guard.
func TestSystemCatalogsOnRequest(t *testing.T) {
	cat, res := fixture(t)
	for _, allow := range []bool{true, false} {
		_, gw := newGateway(t, time.Second, step{content: `{"sql": "SELECT relname FROM pg_catalog.pg_class"}`}, step{content: `{"sql": "SELECT relname FROM pg_catalog.pg_class"}`})
		a, err := ask.New(gw)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := a.Ask(context.Background(), cat, ask.Request{Database: "shop", Question: "tables?", SystemCatalogs: allow}, res)
		if err != nil {
			t.Fatal(err)
		}
		if ok := replyError(reply) == nil && reply.SQL != ""; ok != allow {
			t.Errorf("allow=%v: %+v", allow, reply)
		}
	}
}

// TestRetryAfterAndAuth: a Retry-After beyond the deadline ends the ask at
// once with retry_after; refused credentials are gateway_auth, not retried.
func TestRetryAfterAndAuth(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, time.Second, step{status: 429, retryAfter: "20"}, step{content: `{"sql": "SELECT 1"}`})
	t0 := time.Now()
	reply, err := askOnce(t, gw, "q", res, cat)
	if err != nil || replyError(reply) == nil || replyError(reply).Code != events.CodeGatewayError || replyError(reply).RetryAfter != 20 || time.Since(t0) > 900*time.Millisecond {
		t.Errorf("429 with Retry-After 20 and 1 s to go: %v %+v after %v", err, reply, time.Since(t0))
	}
	if n := len(g.calls()); n != 1 {
		t.Errorf("%d calls; a Retry-After past the deadline is not waited for", n)
	}
	for _, status := range []int{401, 403} {
		g, gw := newGateway(t, time.Second, step{status: status}, step{content: `{"sql": "SELECT 1"}`})
		reply, err := askOnce(t, gw, "q", res, cat)
		if err != nil || replyError(reply) == nil || replyError(reply).Code != events.CodeGatewayAuth || len(g.calls()) != 1 {
			t.Errorf("%d: %v %+v after %d calls", status, err, reply, len(g.calls()))
		}
	}
}

// TestGatewayFailsInTheRepairRound: the first answer's refusal is kept.
func TestGatewayFailsInTheRepairRound(t *testing.T) {
	cat, res := fixture(t)
	_, gw := newGateway(t, time.Second, step{content: `{"sql": "DELETE FROM orders"}`}, step{status: 400})
	reply, err := askOnce(t, gw, "remove old orders", res, cat)
	if err != nil || replyError(reply) == nil || replyError(reply).Code != events.CodeGatewayError {
		t.Fatalf("%v %+v", err, reply)
	}
	if reply.SQL != "" || reply.RejectedSQL != "DELETE FROM orders" || !strings.Contains(replyError(reply).Message, "in the repair round") ||
		!strings.Contains(replyError(reply).Message, "the first answer was refused") {
		t.Errorf("reply %+v", reply)
	}
}

func TestUnanswerableIsNotRepaired(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, 5*time.Second, step{content: `{"sql": "", "explanation": "there is no weather data"}`})
	reply, err := askOnce(t, gw, "what is the weather?", res, cat)
	if err != nil || replyError(reply) == nil || replyError(reply).Code != events.CodeUnanswerable || !strings.Contains(replyError(reply).Message, "weather") || len(g.calls()) != 1 {
		t.Errorf("%v %+v (%d calls)", err, reply, len(g.calls()))
	}
}

func TestGatewayFailures(t *testing.T) {
	cat, res := fixture(t)
	ok := step{content: `{"sql": "SELECT 1"}`}
	tests := []struct {
		name    string
		timeout time.Duration
		steps   []step
		calls   int
		wantErr string // "" means the ask succeeds
	}{
		{"500 then success", time.Second, []step{{status: 500}, ok}, 2, ""},
		{"429 with Retry-After then success", time.Second, []step{{status: 429, retryAfter: "0"}, ok}, 2, ""},
		{"500 past the retries", time.Second, []step{{status: 500}, {status: 502}, {status: 503}}, 3, "503"},
		{"400 is not retried", time.Second, []step{{status: 400}, ok}, 1, "400"},
		{"malformed body", time.Second, []step{{raw: `{"choices": [`}}, 1, "gateway"},
		{"empty choices", time.Second, []step{{raw: `{"id":"x","object":"chat.completion","choices":[]}`}}, 1, "no choices"},
		{"timeout", 50 * time.Millisecond, []step{{delay: 300 * time.Millisecond, content: `{"sql":"SELECT 1"}`}, {delay: 300 * time.Millisecond}, {delay: 300 * time.Millisecond}}, 0, "exceeded"},
		{"no JSON mode: falls back", time.Second, []step{{noJSONMode: true}, {noJSONMode: true, content: `Here: {"sql": "SELECT 1"}`}}, 2, ""},
		// A 400 that only mentions JSON is not a refusal of JSON mode.
		{"a 400 about the JSON body is not a refusal of JSON mode", time.Second, []step{{status: 400, raw: `{"error":{"message":"invalid JSON in request body","type":"invalid_request_error"}}`}, ok}, 1, "400"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, gw := newGateway(t, tc.timeout, tc.steps...)
			reply, err := askOnce(t, gw, "q", res, cat)
			if tc.wantErr == "" {
				if err != nil || replyError(reply) != nil || reply.SQL != "SELECT 1" {
					t.Fatalf("%v %+v", err, reply)
				}
			} else if err != nil || replyError(reply) == nil || replyError(reply).Code != events.CodeGatewayError || !strings.Contains(replyError(reply).Message, tc.wantErr) {
				t.Fatalf("got %v %+v, want a gateway_error reply mentioning %q", err, reply, tc.wantErr)
			} else if reply.SQL != "" {
				t.Errorf("a gateway_error answer carries no sql: %+v", reply)
			}
			if reply != nil && replyError(reply) != nil && strings.Contains(replyError(reply).Message, "sk-test-secret") {
				t.Errorf("the API key leaked: %v", replyError(reply))
			}
			if tc.calls > 0 && len(g.calls()) != tc.calls {
				t.Errorf("%d calls, want %d", len(g.calls()), tc.calls)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := openai.New(openai.Config{Temperature: 3})
	for _, want := range []string{"SCHEMAQ_LLM_BASE_URL", "SCHEMAQ_LLM_MODEL", "temperature"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v should mention %s", err, want)
		}
	}
}

// The asker's hints reach the model after the question, in the user
// message, so the cacheable system prefix stays the same.
func TestHintsFollowTheQuestion(t *testing.T) {
	cat, res := fixture(t)
	g, gw := newGateway(t, 5*time.Second, step{content: `{"sql":"SELECT 1"}`}, step{content: `{"sql":"SELECT 1"}`})
	a, err := ask.New(gw)
	if err != nil {
		t.Fatal(err)
	}
	for _, hints := range []string{"", "revenue refers to sum(orders.total)"} {
		if _, err := a.Ask(context.Background(), cat, ask.Request{Database: "shop", Question: "revenue per customer?", Hints: hints}, res); err != nil {
			t.Fatal(err)
		}
	}
	calls := g.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls", len(calls))
	}
	if calls[0].Messages[0].Content != calls[1].Messages[0].Content {
		t.Error("hints changed the system prefix")
	}
	user := calls[1].Messages[len(calls[1].Messages)-1].Content
	if !strings.HasPrefix(user, "revenue per customer?") || !strings.Contains(user, "revenue refers to sum(orders.total)") {
		t.Errorf("user message %q", user)
	}
	if got := calls[0].Messages[len(calls[0].Messages)-1].Content; got != "revenue per customer?" {
		t.Errorf("without hints the user message is the question alone, got %q", got)
	}
}
