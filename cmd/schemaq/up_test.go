package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// syncBuffer is a bytes.Buffer safe for the goroutines of a running command.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if handedOut.add(addr) {
			return addr
		}
	}
}

// handedOut are the addresses freePort gave this test binary. The kernel
// may offer a port again once its listener is closed, and two services
// of one test given the same port answered each other's health checks:
// TestComposeStack went on while one replica had not started.
var handedOut = portSet{seen: map[string]bool{}}

type portSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// add records addr and says whether it is new.
func (s *portSet) add(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[addr] {
		return false
	}
	s.seen[addr] = true
	return true
}

// startUp runs `schemaq up` until the returned stop is called; vars
// stand in for the environment.
func startUp(t *testing.T, dataDir, addr string, vars ...string) (stop func() string) {
	t.Helper()
	var out, errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	getenv := func(k string) string {
		for i := 0; i+1 < len(vars); i += 2 {
			if vars[i] == k {
				return vars[i+1]
			}
		}
		return ""
	}
	go func() {
		done <- runEnv(ctx, []string{"up", "--data-dir", dataDir, "--listen", addr, "--log-format", "json"},
			&env{stdout: &out, stderr: &errOut, getenv: getenv})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), "schemaq is up") {
		if time.Now().After(deadline) {
			t.Fatalf("up did not start: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return func() string {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("up returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("up did not stop within 30s")
		}
		return errOut.String()
	}
}

func runAt(t *testing.T, url string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runEnv(context.Background(), args, &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
		if k == "SCHEMAQ_NATS_URL" {
			return url
		}
		return ""
	}})
	if err != nil && !errors.Is(err, errSilent) {
		errOut.WriteString("schemaq: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

// TestQuickStart is the README's quick start, end to end.
func TestQuickStart(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	shop := filepath.Join("..", "..", "examples", "shop")

	out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations"))
	if code != exitOK || !strings.Contains(out, "published 6 event(s) to shop, 0 duplicate(s)") || !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("publish migrations (exit %d): %s %s", code, out, errOut)
	}
	if out, _, code := runAt(t, url, "publish", "migrations", "--db", "shop", filepath.Join(shop, "migrations")); code != exitOK ||
		!strings.Contains(out, "published 0 event(s)") || !strings.Contains(out, "nothing to publish: every migration is applied to shop") {
		t.Errorf("re-publish should find nothing pending: %s", out)
	}
	if out, _, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--from", "5", filepath.Join(shop, "migrations")); code != exitOK ||
		!strings.Contains(out, "published 2 event(s)") || strings.Contains(out, "0001_customers.sql") {
		t.Errorf("--from 5 should publish migrations 5 and 6 only: %s", out)
	}
	// --wait returns once every doc and example is searchable: the
	// searches below do not poll.
	if out, errOut, code := runAt(t, url, "publish", "docs", "--db", "shop", "--tag", "team=payments", "--wait", "20s", filepath.Join(shop, "docs")); code != exitOK ||
		!strings.Contains(out, "published 2 event(s)") || !strings.Contains(out, "2 docs of shop indexed and searchable") {
		t.Errorf("publish docs (exit %d): %s %s", code, out, errOut)
	}
	if out, _, _ := runAt(t, url, "search", "--db", "shop", "partial refunds", "--kind", "doc", "--k", "1"); !strings.Contains(out, "refunds.md") {
		t.Errorf("a doc search right after publish docs --wait: %s", out)
	}
	if out, errOut, code := runAt(t, url, "publish", "examples", "--db", "shop", "--wait", "20s", filepath.Join(shop, "examples.jsonl")); code != exitOK ||
		!strings.Contains(out, "published 1 event(s)") || !strings.Contains(out, "examples of shop indexed and searchable") {
		t.Errorf("publish examples (exit %d): %s %s", code, out, errOut)
	}

	out, _, code = runAt(t, url, "tables", "--db", "shop")
	if code != exitOK || !strings.Contains(out, "catalog version 6") || !strings.Contains(out, "public.shipping_addresses") ||
		!regexp.MustCompile(`public\.order_totals\s+\(view\)`).MatchString(out) {
		t.Errorf("tables: %s", out)
	}
	if out, _, code = runAt(t, url, "tables", "--db", "shop", "public.customers"); code != exitOK || !strings.Contains(out, "-- referenced by: public.orders.customer_id → id") {
		t.Errorf("tables public.customers: %s", out)
	}
	var found bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !found; time.Sleep(50 * time.Millisecond) {
		out, _, _ = runAt(t, url, "search", "--db", "shop", "partial refunds", "--kind", "doc", "--k", "1")
		found = strings.Contains(out, "refunds.md")
	}
	if !found {
		t.Errorf("doc search: %s", out)
	}
	// The examples are evidence too: the net-revenue example's SQL reads
	// payments, which a question about revenue in March then finds.
	type explained struct {
		Name        string `json:"name"`
		ExampleRank int    `json:"example_rank"`
	}
	var voted bool
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !voted; time.Sleep(50 * time.Millisecond) {
		out, _, _ = runAt(t, url, "search", "--db", "shop", "how much revenue did we make in March", "--kind", "table", "--explain", "--json")
		var reply struct {
			Explain []explained `json:"explain"`
		}
		voted = json.Unmarshal([]byte(out), &reply) == nil && slices.Contains(reply.Explain, explained{"public.payments", 1})
	}
	if !voted {
		t.Errorf("no example voted for public.payments: %s", out)
	}
	// - reads the question from stdin.
	var piped bytes.Buffer
	err := runEnv(context.Background(), []string{"search", "--db", "shop", "-", "--kind", "table", "--k", "1"}, &env{
		stdin: strings.NewReader("which customers placed 'the most' orders?\n"), stdout: &piped, stderr: &piped,
		getenv: func(k string) string { return map[string]string{"SCHEMAQ_NATS_URL": url}[k] }})
	if err != nil || !strings.Contains(piped.String(), "public.") {
		t.Errorf("search - (stdin): %v %s", err, piped.String())
	}
	// Explained in text, as SQL comments: stdout stays pipeable.
	out, _, code = runAt(t, url, "ask", "--db", "shop", "Which customers placed the most orders?", "--explain")
	if code != exitOK || !strings.Contains(out, "-- explain:") || !strings.Contains(out, "--   {") || !strings.Contains(out, "-- query terms: ") {
		t.Errorf("ask --explain: %s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "--") {
			t.Errorf("ask --explain without a gateway wrote a line that is not a comment: %q", line)
		}
	}
	out, errOut, code = runAt(t, url, "ask", "--db", "shop", "Which customers placed the most orders?", "--json")
	var reply struct {
		Tables      []string `json:"tables"`
		Explanation string   `json:"explanation"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &reply) != nil || !strings.Contains(strings.Join(reply.Tables, " "), "public.orders") ||
		!strings.Contains(reply.Explanation, "SCHEMAQ_LLM_BASE_URL") {
		t.Errorf("ask (exit %d): %s %s", code, out, errOut)
	}
	// --k N prints N ranked results, scores in rank order; bridge tables
	// come apart, labelled.
	out, _, _ = runAt(t, url, "search", "--db", "shop", "products customers ordered", "--k", "3")
	ranked := regexp.MustCompile(`(?m)^ ?\d+  \S+ +\S+ +([0-9.]+)$`).FindAllStringSubmatch(out, -1)
	if len(ranked) != 3 {
		t.Errorf("search --k 3 printed %d ranked results:\n%s", len(ranked), out)
	}
	for i := 1; i < len(ranked); i++ {
		a, _ := strconv.ParseFloat(ranked[i-1][1], 64)
		b, _ := strconv.ParseFloat(ranked[i][1], 64)
		if b > a {
			t.Errorf("scores out of rank order:\n%s", out)
		}
	}
	if strings.Contains(out, "join tables") && !regexp.MustCompile(`(?m)^    table +public\.\S+ +joins public\.`).MatchString(out) {
		t.Errorf("bridges printed without their reason:\n%s", out)
	}
	// Without a gateway, the text output lists the context it promises.
	if out, _, code := runAt(t, url, "ask", "--db", "shop", "Which customers placed the most orders?"); code != exitOK ||
		!strings.Contains(out, "-- context:") || !regexp.MustCompile(`--  1  (table|view) +public\.\w+`).MatchString(out) {
		t.Errorf("retrieval-only ask (exit %d): %s", code, out)
	} else if !regexp.MustCompile(`(?m)^-- +\d+  example +[A-Z][^\n]*\?$`).MatchString(out) {
		// An example is read by its question, as in search, not its id.
		t.Errorf("retrieval-only ask lists no example by its question:\n%s", out)
	}
	publishVideo(t, url)
	if out, _, code := runAt(t, url, "ask", "--db", "video", "How many comedy films are there?"); code != exitOK ||
		!strings.Contains(out, "-- join (by name): public.film_category.category_id = public.category.category_id\n") {
		t.Errorf("retrieval-only ask (exit %d) without the inferred joins: %s", code, out)
	}
	// Describing a table shows the joins its names imply, both ways.
	if out, _, code := runAt(t, url, "tables", "--db", "video", "category"); code != exitOK ||
		!strings.HasSuffix(out, ");\n-- created by video.sql (version 1)\n-- join (by name): public.film_category.category_id = public.category.category_id\n") {
		t.Errorf("tables category (exit %d): %q", code, out)
	}
	if _, errOut, code := runAt(t, url, "ask", "--db", "nope", "anything?"); code != exitFailure || !strings.Contains(errOut, "unknown_database") {
		t.Errorf("ask unknown db (exit %d): %s", code, errOut)
	}

	// A migration that does not apply is dead-lettered with its reason.
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	for name, sql := range map[string]string{"0001_a.sql": "CREATE TABLE a (id int);", "0002_b.sql": "CREATE TABLE a (id int);"} {
		os.WriteFile(filepath.Join(bad, name), []byte(sql), 0o644)
	}
	// --wait fails as soon as the letter is there, long before its limit.
	t0 := time.Now()
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "bad", "--wait", "60s", bad); code != exitFailure ||
		!strings.Contains(errOut, "0002_b.sql was dead-lettered") || !strings.Contains(errOut, "relation public.a already exists") || time.Since(t0) > 30*time.Second {
		t.Errorf("publish a bad history (exit %d): %s", code, errOut)
	}
	out, _, _ = runAt(t, url, "dlq", "list", "--db", "bad")
	if !strings.Contains(out, "0002_b.sql") || !strings.Contains(out, "relation public.a already exists") {
		t.Errorf("dlq list: %s", out)
	}
	out, _, _ = runAt(t, url, "status", "--json")
	var st struct {
		Catalogs    map[string]int64 `json:"catalogs"`
		DeadLetters uint64           `json:"dead_letters"`
	}
	if json.Unmarshal([]byte(out), &st) != nil || st.Catalogs["shop"] != 6 || st.Catalogs["bad"] != 1 || st.DeadLetters != 1 {
		t.Errorf("status: %s", out)
	}
	// dlq show gives the reason and the event; dlq retry republishes it
	// (it fails again, so a new letter appears) and removes the old one.
	out, _, _ = runAt(t, url, "dlq", "list", "--json")
	var letters []struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal([]byte(out), &letters) != nil || len(letters) != 1 {
		t.Fatalf("dlq list --json: %s", out)
	}
	seq := strconv.FormatUint(letters[0].Seq, 10)
	if out, _, code := runAt(t, url, "dlq", "show", seq); code != exitOK || !strings.Contains(out, `"seq":2`) || !strings.Contains(out, "reason: schema.migration 2 does not apply") {
		t.Errorf("dlq show: %s", out)
	}
	if out, errOut, code := runAt(t, url, "dlq", "retry", seq); code != exitOK || !strings.Contains(out, "republished to schemaq.schema.bad") {
		t.Errorf("dlq retry (exit %d): %s %s", code, out, errOut)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, _ = runAt(t, url, "dlq", "list", "--json")
		_ = json.Unmarshal([]byte(out), &letters)
		if len(letters) == 1 && strconv.FormatUint(letters[0].Seq, 10) != seq {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retried event was not dead-lettered again: %s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	logs := stop()
	if !strings.Contains(logs, "event dead-lettered") {
		t.Errorf("the dead letter was not logged")
	}

	// State survives a restart.
	stop = startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()
	out, _, code = runAt(t, url, "tables", "--db", "shop", "orders")
	if code != exitOK || !strings.Contains(out, "CREATE TABLE public.orders") {
		t.Errorf("after restart: %s", out)
	}
}

// TestAskWithGateway runs up against an OpenAI-compatible chat server
// (httptest, the real request and response shapes).
func TestAskWithGateway(t *testing.T) {
	var mu sync.Mutex
	answers := []string{
		`{"sql": "SELECT c.name, count(o.id) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY 2 DESC;", "explanation": "orders per customer"}`,
		`{"sql": "DELETE FROM orders"}`, `{"sql": "SELECT pg_sleep(1)"}`, // rejected, then rejected again after the repair
		`{"sql": "DELETE FROM orders"}`, `{"sql": "SELECT pg_sleep(1)"}`, // the same, asked for JSON
		`{"sql": "SELECT count(*) FROM film_category fc JOIN category c ON c.category_id = fc.category_id WHERE c.name = 'Comedy'", "explanation": "comedies"}`,
	}
	var prompts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		prompts = append(prompts, req.Messages[0].Content)
		if len(answers) == 0 {
			// A test asking more than it scripted fails, not hangs.
			mu.Unlock()
			http.Error(w, `{"error":{"message":"no scripted answer left","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		content := answers[0]
		answers = answers[1:]
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_LLM_BASE_URL", srv.URL+"/v1", "SCHEMAQ_LLM_MODEL", "gpt-test", "SCHEMAQ_LLM_API_KEY", "sk-x")
	defer stop()
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	out, errOut, code := runAt(t, url, "ask", "--db", "shop", "Which customers placed the most orders?")
	if code != exitOK || !strings.HasPrefix(out, "SELECT c.name, count(o.id) FROM customers c JOIN orders o") || !strings.Contains(out, "-- tables: public.customers, public.orders") {
		t.Fatalf("ask (exit %d): %s %s", code, out, errOut)
	}
	mu.Lock()
	if !strings.Contains(prompts[0], "CREATE TABLE public.orders (") {
		t.Errorf("the prompt lacks the orders DDL:\n%s", prompts[0])
	}
	mu.Unlock()
	out, errOut, code = runAt(t, url, "ask", "--db", "shop", "Delete every order")
	// Nothing on stdout: `schemaq ask … | psql` must not run refused SQL.
	if code != exitFailure || out != "" || !strings.Contains(errOut, "-- rejected SQL (not safe to run):\n-- SELECT pg_sleep(1)") ||
		!strings.Contains(errOut, "unsafe_sql: function pg_sleep() has side effects") {
		t.Errorf("rejected ask (exit %d): %q %q", code, out, errOut)
	}
	out, _, code = runAt(t, url, "ask", "--db", "shop", "Delete every order", "--json")
	var rep struct {
		SQL, RejectedSQL string
	}
	if err := json.Unmarshal([]byte(out), &struct {
		SQL         *string `json:"sql"`
		RejectedSQL *string `json:"rejected_sql"`
	}{&rep.SQL, &rep.RejectedSQL}); err != nil || code != exitFailure || rep.SQL != "" || rep.RejectedSQL != "SELECT pg_sleep(1)" {
		t.Errorf("rejected ask --json (exit %d): %s", code, out)
	}

	// A schema that declares no foreign keys: the prompt gives the model
	// the joins its names imply among the tables it shows.
	publishVideo(t, url)
	if out, errOut, code := runAt(t, url, "ask", "--db", "video", "How many comedy films are there?"); code != exitOK || !strings.Contains(out, "JOIN category") {
		t.Fatalf("ask video (exit %d): %s %s", code, out, errOut)
	}
	mu.Lock()
	last := prompts[len(prompts)-1]
	mu.Unlock()
	if !strings.Contains(last, "## Joins implied by column names (no foreign key declares them)\n\nfilm_category.category_id = category.category_id\nfilm_category.film_id = film.film_id\n") {
		t.Errorf("the prompt lacks the inferred joins:\n%s", last)
	}
	// search shows them too, after its results.
	if out, _, code := runAt(t, url, "search", "--db", "video", "comedy films"); code != exitOK ||
		!strings.Contains(out, "joins the column names imply (no foreign key declares them):\n    public.film_category.category_id = public.category.category_id\n") {
		t.Errorf("search (exit %d) without the inferred joins:\n%s", code, out)
	}
}

// videoDDL declares no foreign keys: its joins are in its names alone.
const videoDDL = `CREATE TABLE film (film_id int PRIMARY KEY, title text);
CREATE TABLE category (category_id int PRIMARY KEY, name text);
CREATE TABLE film_category (film_id int, category_id int, PRIMARY KEY (film_id, category_id));
CREATE TABLE actor (actor_id int PRIMARY KEY, first_name text, last_name text);
`

// publishVideo publishes videoDDL as the snapshot of database video.
func publishVideo(t *testing.T, url string) {
	t.Helper()
	publishSnapshot(t, url, "video", videoDDL)
}

// publishSnapshot publishes ddl as database db's snapshot and waits until
// it is searchable.
func publishSnapshot(t *testing.T, url, db, ddl string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), db+".sql")
	if err := os.WriteFile(file, []byte(ddl), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAt(t, url, "publish", "snapshot", "--db", db, "--wait", "20s", file); code != exitOK {
		t.Fatalf("publish snapshot of %s: %s", db, errOut)
	}
}

// scrapeUntil reads /metrics at addr until done says the body is what
// the test waits for, or timeout passes, and returns the last body.
func scrapeUntil(t *testing.T, addr string, timeout time.Duration, done func(body string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if done(string(b)) || time.Now().After(deadline) {
			return string(b)
		}
	}
}

// TestMetricsAfterEventsAndAsks reads /metrics after real events and
// requests, and checks /readyz.
func TestMetricsAfterEventsAndAsks(t *testing.T) {
	dir := t.TempDir()
	addr, metrics := freePort(t), freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_METRICS_ADDR", metrics)
	defer stop()
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	// A history with DDL run inside a function applies with drift, which
	// every command about the database shows.
	tenant := filepath.Join("..", "..", "pkg", "catalog", "testdata", "tenant-helper")
	if out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "tenant", "--wait", "20s", tenant); code != exitOK ||
		!strings.Contains(errOut, "the catalog of tenant has drift: 4 statement(s)") {
		t.Errorf("publish with drift (exit %d): %s %s", code, out, errOut)
	}
	if out, _, _ := runAt(t, url, "status"); !strings.Contains(out, "version 4, drift: 4 statement(s) skipped, inferred or evaluated in part") {
		t.Errorf("status: %s", out)
	}
	if _, errOut, _ := runAt(t, url, "tables", "--db", "tenant"); !strings.Contains(errOut, "seq 3 0003_tenant_defaults.sql: statement 5 (line 5, column 1): skipped") {
		t.Errorf("tables: %s", errOut)
	}
	if _, errOut, _ := runAt(t, url, "search", "--db", "tenant", "tenant of an invoice"); !strings.Contains(errOut, "warning: the catalog of tenant has drift") {
		t.Errorf("search: %s", errOut)
	}
	runAt(t, url, "search", "--db", "shop", "orders")
	runAt(t, url, "ask", "--db", "shop", "how many orders?")
	runAt(t, url, "ask", "--db", "nope", "how many orders?")
	resp, err := http.Get("http://" + metrics + "/readyz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz: %v %v", resp, err)
	}
	resp.Body.Close()
	body := scrapeUntil(t, metrics, 10*time.Second, func(body string) bool {
		return strings.Contains(body, `schemaq_worker_events_total{outcome="ack",type="schema.migration"} 10`)
	})
	for _, want := range []string{
		`schemaq_worker_events_total{outcome="ack",type="schema.migration"} 10`,
		"schemaq_worker_catalog_drift_total 4",
		`schemaq_worker_apply_seconds_count{type="schema.migration"}`, // ≥ 6: waits for a gap are handled too
		`schemaq_daemon_requests_total{code="ok",endpoint="search"} 2`,
		`schemaq_daemon_requests_total{code="ok",endpoint="ask"} 1`,
		`schemaq_daemon_requests_total{code="unknown_database",endpoint="ask"} 1`,
		`schemaq_daemon_stage_seconds_count{stage="retrieve"}`,
		"schemaq_embed_calls_total", "schemaq_embed_cache_misses_total", "schemaq_worker_consumer_pending",
		"go_goroutines", `schemaq_build_info{goversion="`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestLargeSnapshot publishes a schema dump over the 1 MiB event limit: the
// CLI compresses it and the worker applies it.
func TestLargeSnapshot(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "CREATE TABLE public.table_%04d (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz, amount numeric(12,2));\n", i)
		fmt.Fprintf(&b, "COMMENT ON TABLE public.table_%04d IS 'Table number %d of a large application schema, with a comment long enough to matter.';\n", i, i)
	}
	dump := filepath.Join(dir, "structure.sql")
	if err := os.WriteFile(dump, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if b.Len() <= 1<<20 {
		t.Fatalf("the dump should exceed 1 MiB, is %d bytes", b.Len())
	}
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()
	// --wait lasts until 5,000 tables are indexed, which under -race and
	// the other packages' tests takes a while.
	out, errOut, code := runAt(t, url, "publish", "snapshot", "--db", "big", "--wait", "3m", dump)
	if code != exitOK || !strings.Contains(out, "catalog big is at version 1") {
		t.Fatalf("publish a %d-byte snapshot (exit %d): %s %s", b.Len(), code, out, errOut)
	}
	out, _, _ = runAt(t, url, "tables", "--db", "big", "--json")
	var tb struct {
		Tables []struct{ Name string } `json:"tables"`
	}
	if json.Unmarshal([]byte(out), &tb) != nil || len(tb.Tables) != 5000 {
		t.Errorf("tables after a large snapshot: %d", len(tb.Tables))
	}
}

// TestHugeSnapshot publishes a 50,000-table schema end to end. Its SQL is
// too large for a message even compressed, so the client puts it in the
// object store and the event carries a reference; its catalog is too
// large for a key-value entry, so the worker keeps it in the object store
// too. Its names are drawn from 6,000 random words, as a real schema's
// repeat a vocabulary (one of random names throughout would be refused
// for its words: TestWordsPerDatabaseAreBounded), and each text column
// has a random default, so that neither compresses away.
func TestHugeSnapshot(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("-short or -race: the 50,000-table snapshot runs without the race detector (.ci/run does)")
	}
	const tables, vocabulary = 50_000, 6_000
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 50_000))
	letters := func(n int) string {
		const alphabet = "abcdefghijklmnopqrstuvwxyz"
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	pool := make([]string, vocabulary)
	for i := range pool {
		pool[i] = letters(4 + rng.IntN(6))
	}
	word := func() string { return pool[rng.IntN(len(pool))] }
	var b strings.Builder
	var probe string
	for i := range tables {
		if i%500 == 0 {
			fmt.Fprintf(&b, "CREATE SCHEMA s%03d;\n", i/500)
		}
		// Two words of the pool by i make the name unique without a
		// number of its own: 50,000 numbers would be 50,000 words.
		name := fmt.Sprintf("%s_%s_%s", pool[i%vocabulary], pool[i/vocabulary], word())
		if i == tables/2 {
			name, probe = "loyalty_ledger_entries", fmt.Sprintf("s%03d.loyalty_ledger_entries", i/500)
		}
		fmt.Fprintf(&b, "CREATE TABLE s%03d.%s (id bigint PRIMARY KEY, c_%s_%s text DEFAULT '%s', c_%s_at timestamptz, c_%s numeric(12,2));\n",
			i/500, name, word(), word(), letters(20), word(), word())
	}
	dump := filepath.Join(dir, "structure.sql")
	if err := os.WriteFile(dump, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()
	out, errOut, code := runAt(t, url, "publish", "snapshot", "--db", "huge", "--wait", "10m", dump)
	if code != exitOK || !strings.Contains(out, "catalog huge is at version 1") {
		t.Fatalf("publish a %d-byte snapshot (exit %d): %s %s", b.Len(), code, out, errOut)
	}
	out, errOut, code = runAt(t, url, "search", "--db", "huge", "--kind", "table", "--k", "3", "loyalty ledger entries")
	if code != exitOK || !strings.Contains(out, probe) {
		t.Errorf("search in the huge schema (exit %d): %s %s", code, out, errOut)
	}
	out, errOut, code = runAt(t, url, "tables", "--db", "huge", probe)
	if code != exitOK || !strings.Contains(out, "loyalty_ledger_entries") {
		t.Errorf("describe a table of the huge schema (exit %d): %s %s", code, out, errOut)
	}
	// Both payloads went through the object store, and the event's SQL
	// object is gone once the catalog holds the schema.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	obj, err := streams.Objects(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	names, err := obj.List(context.Background())
	if err != nil {
		t.Fatalf("list objects: %v", err)
	}
	var catalogs, eventSQL int
	for _, o := range names {
		switch {
		case strings.HasPrefix(o.Name, "catalogs/huge/"):
			catalogs++
		case strings.HasPrefix(o.Name, "events/huge/"):
			eventSQL++
		}
	}
	if catalogs != 1 || eventSQL != 0 {
		t.Errorf("objects: %d catalogs (want 1) and %d event payloads (want 0, deleted once applied): %v", catalogs, eventSQL, names)
	}
	// A sweep, however short its grace, keeps the catalog in use.
	out, errOut, code = runAt(t, url, "sweep", "--grace", "1ms")
	if code != exitOK || !strings.Contains(out, "removed 0 object(s)") || !strings.Contains(out, "kept 1 needed") {
		t.Errorf("sweep after a huge snapshot (exit %d): %s %s", code, out, errOut)
	}
}

// TestTokenBudgetFlag: --token-budget (here its variable) reaches the
// daemon's retrieval, and a reply says what the budget cut.
func TestTokenBudgetFlag(t *testing.T) {
	dir := t.TempDir()
	addr, metrics := freePort(t), freePort(t)
	url := "nats://" + addr
	// A budget below one table's DDL keeps only the first result.
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_TOKEN_BUDGET", "1", "SCHEMAQ_METRICS_ADDR", metrics)
	defer stop()
	publishVideo(t, url)
	out, errOut, code := runAt(t, url, "search", "--db", "video", "-k", "4", "--json", "comedy films")
	var rep events.SearchReply
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("search (exit %d): %v %s %s", code, err, out, errOut)
	}
	const cut = "the token budget of 1 kept 1 of 4 results"
	if len(rep.Results) != 1 || !slices.Contains(rep.Warnings, cut) {
		t.Errorf("search under a budget of 1: %d results, warnings %q; want 1 and %q", len(rep.Results), rep.Warnings, cut)
	}
	// A retrieval-only ask shows the same context and says so.
	out, errOut, code = runAt(t, url, "ask", "--db", "video", "-k", "4", "How many comedy films are there?")
	if code != exitOK || !strings.Contains(out, "-- tables: public.film\n") || strings.Contains(out, "--  2 ") || !strings.Contains(errOut, "warning: "+cut) {
		t.Errorf("retrieval-only ask (exit %d) under a budget of 1:\n%s%s", code, out, errOut)
	}
	// Operators see how often the budget bites.
	body := scrapeUntil(t, metrics, 10*time.Second, func(body string) bool {
		return strings.Contains(body, `schemaq_daemon_budget_cuts_total{endpoint="ask"} 1`)
	})
	for _, want := range []string{`schemaq_daemon_budget_cuts_total{endpoint="ask"} 1`, `schemaq_daemon_budget_cuts_total{endpoint="search"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if _, errOut, code := runAt(t, url, "serve", "--token-budget", "-1"); code != exitUsage || !strings.Contains(errOut, "--token-budget must be zero or more") {
		t.Errorf("a negative budget (exit %d): %s", code, errOut)
	}
}

// TestRetrievalWeightFlags: --example-weight and --doc-weight (here their
// variables) reach the daemon's retrieval. By default the shop's docs and
// examples vote for public.payments; at 0 they are context only.
func TestRetrievalWeightFlags(t *testing.T) {
	shop := filepath.Join("..", "..", "examples", "shop")
	for _, tc := range []struct {
		name      string
		vars      []string
		wantVotes bool
	}{
		{"default", nil, true},
		{"zero", []string{"SCHEMAQ_EXAMPLE_WEIGHT", "0", "SCHEMAQ_DOC_WEIGHT", "0"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			addr := freePort(t)
			url := "nats://" + addr
			stop := startUp(t, filepath.Join(dir, "data"), addr, tc.vars...)
			defer stop()
			if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
				t.Fatalf("publish migrations: %s", errOut)
			}
			for _, kind := range []string{"docs", "examples"} {
				src := filepath.Join(shop, kind)
				if kind == "examples" {
					src += ".jsonl"
				}
				if _, errOut, code := runAt(t, url, "publish", kind, "--db", "shop", src); code != exitOK {
					t.Fatalf("publish %s: %s", kind, errOut)
				}
			}
			// Both are indexed before the votes are read, so an absent vote
			// means the weight, not a race.
			indexed := func(kind, question, want string) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
					out, _, _ := runAt(t, url, "search", "--db", "shop", question, "--kind", kind, "--k", "1")
					if strings.Contains(out, want) {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("no %s found for %q: %s", kind, question, out)
					}
				}
			}
			indexed("doc", "partial refunds", "refunds.md")
			indexed("example", "net revenue last month", "What was net revenue last month?")

			var reply struct {
				Explain []events.ExplainItem `json:"explain"`
			}
			out, errOut, code := runAt(t, url, "search", "--db", "shop", "how do partial refunds work", "--kind", "table", "--explain", "--json")
			if code != exitOK || json.Unmarshal([]byte(out), &reply) != nil {
				t.Fatalf("search (exit %d): %s %s", code, out, errOut)
			}
			docVoted := slices.ContainsFunc(reply.Explain, func(x events.ExplainItem) bool { return x.Name == "public.payments" && x.DocRank > 0 })
			out, errOut, code = runAt(t, url, "search", "--db", "shop", "how much revenue did we make in March", "--kind", "table", "--explain", "--json")
			if code != exitOK || json.Unmarshal([]byte(out), &reply) != nil {
				t.Fatalf("search (exit %d): %s %s", code, out, errOut)
			}
			exampleVoted := slices.ContainsFunc(reply.Explain, func(x events.ExplainItem) bool { return x.Name == "public.payments" && x.ExampleRank > 0 })
			if docVoted != tc.wantVotes || exampleVoted != tc.wantVotes {
				t.Errorf("doc voted %v, example voted %v; want both %v", docVoted, exampleVoted, tc.wantVotes)
			}
		})
	}
	for _, flag := range []string{"--example-weight", "--doc-weight"} {
		if _, errOut, code := runAt(t, "nats://127.0.0.1:1", "serve", flag, "-0.5"); code != exitUsage || !strings.Contains(errOut, flag+" must be zero or more") {
			t.Errorf("a negative %s (exit %d): %s", flag, code, errOut)
		}
	}
}

// TestUpServesHTTP: up --http-addr serves the HTTP API beside NATS:
// /openapi.json and POST /v1/search, answered from what was published.
func TestUpServesHTTP(t *testing.T) {
	dir := t.TempDir()
	addr, api := freePort(t), freePort(t)
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_HTTP_ADDR", api)
	defer stop()
	shop := filepath.Join("..", "..", "examples", "shop")
	if out, errOut, code := runAt(t, "nats://"+addr, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish (exit %d): %s %s", code, out, errOut)
	}
	resp, err := http.Get("http://" + api + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(spec), `"openapi": "3.1.0"`) || !strings.Contains(string(spec), `"/v1/search"`) {
		t.Errorf("/openapi.json: %d %.200s", resp.StatusCode, spec)
	}
	resp, err = http.Post("http://"+api+"/v1/search", "application/json", strings.NewReader(`{"database":"shop","question":"which customers placed the most orders","k":3}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"public.orders"`) || resp.Header.Get("Schemaq-Request-Id") == "" {
		t.Errorf("POST /v1/search: %d %s", resp.StatusCode, body)
	}
}

// --listen is an address with a numeric port; anything else is a usage
// error that names the flag.
func TestListenAddr(t *testing.T) {
	for _, tt := range []struct {
		listen, host string
		port         int
		err          string
	}{
		{"127.0.0.1:4222", "127.0.0.1", 4222, ""},
		{"[::1]:4223", "::1", 4223, ""},
		{"localhost", "", 0, "--listen: address localhost: missing port in address"},
		{"127.0.0.1:nats", "", 0, `--listen: port "nats" is not a number`},
	} {
		host, port, err := listenAddr(tt.listen)
		if tt.err != "" {
			var u *usageError
			if !errors.As(err, &u) || err.Error() != tt.err {
				t.Errorf("%q: %v, want the usage error %q", tt.listen, err, tt.err)
			}
			continue
		}
		if err != nil || host != tt.host || port != tt.port {
			t.Errorf("%q: %q %d %v", tt.listen, host, port, err)
		}
	}
}
