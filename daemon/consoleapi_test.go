package daemon_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// consoleRig is the example shop with two examples (one of them stale),
// a doc and a dead letter of shop and one of another team's database,
// behind the HTTP API with a token of each kind.
func consoleRig(t *testing.T) (*rig, *httptest.Server) {
	t.Helper()
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli), daemon.WithRecords(r.cli))
	r.publishShop()
	ctx := context.Background()
	ev, err := events.New("shop-examples", "shop", time.Now(), &events.ExamplesUpsert{Examples: []events.Example{
		{ID: "per-customer", Question: "orders per customer", SQL: "SELECT customer_id, count(*) FROM orders GROUP BY 1"},
		{ID: "ghosts", Question: "how many ghosts", SQL: "SELECT count(*) FROM ghosts"},
		{ID: "fb-1", Question: "paid orders", SQL: "SELECT count(*) FROM orders", Origin: events.OriginFeedback, Author: "http:someone"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for i, db := range []string{"shop", "other"} {
		doc, err := events.New(db+"-guide", db, time.Now(), &events.DocUpsert{DocID: "guide.md", Body: "# Guide"})
		if err != nil {
			t.Fatal(err)
		}
		data, err := doc.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := deadletter.Publish(ctx, r.js, deadletter.Letter{Database: db, Subject: events.DocsSubject(db), Source: db + "/guide.md",
			Kind: events.DLQKindInvalid, Reason: "field data.body: not UTF-8", StreamSeq: uint64(7 + i), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	tokens := []bearer.Token{
		{Name: "shop-reader", Token: "shop-reader-0123456789", Databases: []string{"shop"}, Access: "read"},
		{Name: "shop-writer", Token: "shop-writer-0123456789", Databases: []string{"shop"}, Access: "write"},
		{Name: "shop-admin", Token: "shop-admin-01234567890", Databases: []string{"shop"}, Access: "admin"},
		{Name: "other-admin", Token: "other-admin-0123456789", Databases: []string{"other"}, Access: "admin"},
	}
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Tokens: tokens}))
	t.Cleanup(srv.Close)
	return r, srv
}

// TestConsoleEndpoints runs each console endpoint as each token, and
// the reply's status and body are what the token may see.
func TestConsoleEndpoints(t *testing.T) {
	r, srv := consoleRig(t)
	testenv.Eventually(t, 10*time.Second, "examples listed", func() bool {
		_, _, body := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`)
		return strings.Contains(body, "ghosts")
	})
	testenv.Eventually(t, 10*time.Second, "one feedback example counted", func() bool { return feedbackCount(t, r) == 1 })
	// shop's six migrations fill a bound of six: operations names shop as
	// near it to shop's admin, and to nobody else.
	scfg := streams.DefaultConfig
	scfg.MaxEventsPerDatabase = 6
	if _, err := streams.Ensure(context.Background(), r.js, scfg); err != nil {
		t.Fatal(err)
	}
	replySchema := openAPISchemas(t, srv.URL)
	schemaOf := map[string]string{"/v1/examples": "ExamplesReply", "/v1/examples/delete": "ExamplesDeleteReply", "/v1/examples/approve": "ExamplesApproveReply", "/v1/docs": "DocsReply",
		"/v1/check": "CheckReply", "/v1/operations": "OperationsReply", "/v1/deadletters/retry": "LetterReply", "/v1/deadletters/delete": "LetterReply"}
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		has, hasNot             []string
	}{
		{"examples with why stale", "/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`, 200,
			[]string{`"per-customer"`, `"ghosts"`, `"stale":"`, `ghosts`}, nil},
		{"only the stale", "/v1/examples", "shop-reader-0123456789", `{"database":"shop","stale":true}`, 200,
			[]string{`"ghosts"`}, []string{`"per-customer"`}},
		{"another team's examples", "/v1/examples", "shop-reader-0123456789", `{"database":"other"}`, 403, []string{"forbidden"}, []string{"ghosts"}},
		{"a database with no catalog", "/v1/examples", "shop-admin-01234567890", `{"database":"shop"}`, 200, nil, nil},
		{"an unknown field", "/v1/examples", "shop-reader-0123456789", `{"database":"shop","stalest":true}`, 400, []string{"stalest"}, nil},
		{"a bad database name", "/v1/examples", "shop-reader-0123456789", `{"database":"../etc"}`, 400, []string{"field database"}, nil},
		{"docs as sections", "/v1/docs", "shop-reader-0123456789", `{"database":"shop"}`, 200, []string{`"refunds.md"`, `"sections":[{"heading":`}, nil},
		{"a reader deletes", "/v1/examples/delete", "shop-reader-0123456789", `{"database":"shop","ids":["ghosts"]}`, 403, []string{"read access", "needs write"}, nil},
		{"a delete of what is not there", "/v1/examples/delete", "shop-writer-0123456789", `{"database":"shop","ids":["nosuchid"]}`, 404, []string{"nosuchid", "nothing was deleted"}, nil},
		{"a writer deletes", "/v1/examples/delete", "shop-writer-0123456789", `{"database":"shop","ids":["ghosts"]}`, 200, []string{`"deleted":["ghosts"]`}, nil},
		{"a reader approves", "/v1/examples/approve", "shop-reader-0123456789", `{"database":"shop","ids":["fb-1"]}`, 403, []string{"needs write"}, nil},
		{"an approval of a published example", "/v1/examples/approve", "shop-writer-0123456789", `{"database":"shop","ids":["per-customer"]}`, 400, []string{"not a feedback example"}, nil},
		{"an approval of what is not there", "/v1/examples/approve", "shop-writer-0123456789", `{"database":"shop","ids":["nope"]}`, 404, []string{"no such example"}, nil},
		{"a writer approves", "/v1/examples/approve", "shop-writer-0123456789", `{"database":"shop","ids":["fb-1"]}`, 200, []string{`"approved_by":"http:shop-writer"`}, []string{`"duplicate"`}},
		{"the approval is stored", "/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`, 200, []string{`"approved_by":"http:shop-writer"`, `"origin":"feedback"`, `"author":"http:someone"`}, nil},
		{"a check PostgreSQL refuses", "/v1/check", "shop-reader-0123456789",
			`{"database":"shop","migrations":[{"name":"0007_drop.sql","sql":"ALTER TABLE orders DROP COLUMN customer_id;"}]}`, 200,
			[]string{`"breaks":true`, `"postgres":true`, "order_totals"}, nil},
		{"a check that passes", "/v1/check", "shop-reader-0123456789",
			`{"database":"shop","migrations":[{"name":"0007_add.sql","sql":"ALTER TABLE orders ADD COLUMN note text;"}]}`, 200,
			[]string{`"breaks":false`, `"after":7`}, nil},
		{"a check with no migrations", "/v1/check", "shop-reader-0123456789", `{"database":"shop","migrations":[]}`, 400, []string{"at least one"}, nil},
		{"a check of another team's", "/v1/check", "shop-reader-0123456789", `{"database":"other","migrations":[{"name":"a.sql","sql":"CREATE TABLE t (id int);"}]}`, 403, nil, nil},
		{"operations as a writer", "/v1/operations", "shop-writer-0123456789", `{}`, 403, []string{"needs admin"}, []string{"guide.md"}},
		{"operations as shop's admin", "/v1/operations", "shop-admin-01234567890", `{}`, 200,
			[]string{`"shop/guide.md"`, `"catalogs":{"shop":6}`, `"dead_letters":1`, `"max_events_per_database":6`, `"near_bound":{"shop":{"schema":6}}`}, []string{"other/guide.md", `"other"`}},
		{"operations as other's admin", "/v1/operations", "other-admin-0123456789", `{}`, 200,
			[]string{`"other/guide.md"`, `"catalogs":{}`}, []string{"shop/guide.md", `"shop"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := httpPost(t, srv.URL+tc.path, tc.token, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if h.Get(daemon.HeaderRequestID) == "" {
				t.Error("no request id")
			}
			schema := "ErrorReply"
			if status == 200 {
				schema = schemaOf[tc.path]
			}
			if err := replySchema(schema, body); err != nil {
				t.Errorf("the reply does not match %s: %v\n%s", schema, err, body)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, s) {
					t.Errorf("the reply lacks %s: %s", s, body)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(body, s) {
					t.Errorf("the reply has %s: %s", s, body)
				}
			}
		})
	}

	// The approved feedback example is indexed as the team's own now: it
	// leaves the feedback cap's count.
	testenv.Eventually(t, 10*time.Second, "no feedback example counted", func() bool { return feedbackCount(t, r) == 0 })

	// Dead letters: another team's is not there for this token, and
	// one's own is re-sent to its own subject, then deleted.
	ctx := context.Background()
	box, err := deadletter.Open(ctx, r.js)
	if err != nil {
		t.Fatal(err)
	}
	letters, err := box.List(ctx, "")
	if err != nil || len(letters) != 2 {
		t.Fatalf("letters: %v %+v", err, letters)
	}
	seqOf := map[string]uint64{}
	for _, l := range letters {
		seqOf[l.Database] = l.Seq
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/deadletters/retry", "shop-admin-01234567890", jsonOf(t, map[string]any{"seq": seqOf["other"]})); status != 404 {
		t.Errorf("shop's admin retried other's letter: %d %s", status, body)
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/deadletters/delete", "shop-writer-0123456789", jsonOf(t, map[string]any{"seq": seqOf["shop"]})); status != 403 {
		t.Errorf("a writer deleted a letter: %d %s", status, body)
	}
	status, _, body := httpPost(t, srv.URL+"/v1/deadletters/retry", "shop-admin-01234567890", jsonOf(t, map[string]any{"seq": seqOf["shop"]}))
	if status != 200 || !strings.Contains(body, `"retried":"`+events.DocsSubject("shop")+`"`) {
		t.Errorf("retry: %d %s", status, body)
	}
	status, _, body = httpPost(t, srv.URL+"/v1/deadletters/delete", "other-admin-0123456789", jsonOf(t, map[string]any{"seq": seqOf["other"]}))
	if status != 200 || !strings.Contains(body, `"deleted":true`) {
		t.Errorf("delete: %d %s", status, body)
	}
	if left, _ := box.List(ctx, ""); len(left) != 0 {
		t.Errorf("letters left: %+v", left)
	}
}

// The console's endpoints are POSTs of JSON: a form post from another
// origin (no preflight) is refused before it does anything.
func TestConsoleEndpointsRefuseForms(t *testing.T) {
	_, srv := consoleRig(t)
	for _, path := range []string{"/v1/examples/delete", "/v1/deadletters/delete", "/v1/check"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"database":"shop","ids":["per-customer"],"seq":1}`))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Authorization", "Bearer shop-admin-01234567890")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType {
			t.Errorf("%s as text/plain: %d", path, resp.StatusCode)
		}
		if status, _, _ := httpPost(t, srv.URL+path, "", `{}`); status != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d", path, status)
		}
	}
}

// openAPISchemas reads the API's document and returns a validator of a
// reply against one of its schemas.
func openAPISchemas(t *testing.T, base string) func(schema, body string) error {
	t.Helper()
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	spec, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return schemaValidator(t, spec)
}

// schemaValidator validates a JSON body against a schema of the
// OpenAPI document spec.
func schemaValidator(t *testing.T, spec []byte) func(schema, body string) error {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]*jsonschema.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	return func(schema, body string) error {
		s := doc.Components.Schemas[schema]
		if s == nil {
			return fmt.Errorf("no schema %s", schema)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return err
		}
		var inst any
		if err := json.Unmarshal([]byte(body), &inst); err != nil {
			return err
		}
		return res.Validate(inst)
	}
}

// feedbackCount is how many examples the index holds as feedback.
func feedbackCount(t *testing.T, r *rig) int {
	n, err := r.store.Count(context.Background(), index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}, Tags: map[string]string{chunk.TagOrigin: events.OriginFeedback}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A check runs SQL a browser sent: deep nesting, a statement of a
// megabyte and the most migrations one check takes are answered with a
// report or a clear refusal, within the deadline, and the daemon goes on.
func TestConsoleCheckOfHostileSQL(t *testing.T) {
	_, srv := consoleRig(t)
	many := make([]map[string]string, 200)
	for i := range many {
		many[i] = map[string]string{"name": fmt.Sprintf("%04d.sql", i+7), "sql": fmt.Sprintf("CREATE TABLE t%d (id int PRIMARY KEY, parent int REFERENCES t%d (id));", i, max(i-1, 0))}
	}
	many[0]["sql"] = "CREATE TABLE t0 (id int PRIMARY KEY, parent int);"
	for _, tc := range []struct {
		name       string
		migrations any
		status     int
		has        string
	}{
		{"nesting past the parser's depth", []map[string]string{{"name": "0007.sql", "sql": "CREATE VIEW v AS SELECT " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + ";"}}, 200, `"refused"`},
		{"a statement of nearly a megabyte", []map[string]string{{"name": "0007.sql", "sql": "COMMENT ON TABLE orders IS '" + strings.Repeat("x", 1000000) + "';"}}, 200, `"breaks":false`},
		{"two hundred migrations", many, 200, `"after":206`},
		{"one more", append(many, map[string]string{"name": "x.sql", "sql": "SELECT 1;"}), 400, "at most 200"},
		{"a migration without a name", []map[string]string{{"name": " ", "sql": "SELECT 1;"}}, 400, "migrations[0].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := httpPost(t, srv.URL+"/v1/check", "shop-reader-0123456789", jsonOf(t, map[string]any{"database": "shop", "migrations": tc.migrations}))
			if status != tc.status || !strings.Contains(body, tc.has) {
				t.Errorf("status %d, want %d with %s: %.300s", status, tc.status, tc.has, body)
			}
		})
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`); status != 200 {
		t.Errorf("the daemon after the hostile checks: %d %s", status, body)
	}
}

// The daemon row of docs/deploy.md's NATS permissions grants no publish
// on the schema and docs subjects. A retry from the console, run by a
// daemon as that user, is dropped by NATS with no reply to wait for: it
// answers stream_unavailable within its short wait, naming the subject,
// and the letter stays, as docs/api.md says. Operations still answer.
func TestConsoleRetryAsTheDocumentedDaemon(t *testing.T) {
	conf := testenv.DocsNATSConfig(t, filepath.Join("..", "docs", "deploy.md"), "For example, in the NATS server's configuration", "authorization")
	// An unrestricted user sets up the streams and runs the worker.
	conf = strings.Replace(conf, "users = [\n", "users = [\n    { user: admin, password: admin_pass }\n", 1)
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NATSWith(t, natsembed.Options{ConfigFile: path})
	connect := func(user string) *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(user, user+"_pass"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	r := newRigConn(t, ns, connect("admin"))
	r.publishShop()
	dnc := connect("daemon")
	dcli, err := client.New(dnc)
	if err != nil {
		t.Fatal(err)
	}
	r.nc = dnc
	r.daemon(daemon.DefaultConfig, nil, daemon.WithRecords(dcli))
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{}))
	defer srv.Close()

	ctx := context.Background()
	doc, _ := events.New("shop-guide", "shop", time.Now(), &events.DocUpsert{DocID: "guide.md", Body: "# Guide"})
	data, _ := doc.Encode()
	if err := deadletter.Publish(ctx, r.js, deadletter.Letter{Database: "shop", Subject: events.DocsSubject("shop"), Source: "guide.md",
		Kind: events.DLQKindInvalid, Reason: "field data.body: not UTF-8", StreamSeq: 9, Data: data}); err != nil {
		t.Fatal(err)
	}
	box, err := deadletter.Open(ctx, r.js)
	if err != nil {
		t.Fatal(err)
	}
	letters, err := box.List(ctx, "shop")
	if err != nil || len(letters) != 1 {
		t.Fatalf("letters: %v %+v", err, letters)
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/operations", "", `{}`); status != 200 || !strings.Contains(body, `"guide.md"`) {
		t.Errorf("operations as the documented daemon: %d %.300s", status, body)
	}
	start := time.Now()
	status, _, body := httpPost(t, srv.URL+"/v1/deadletters/retry", "", jsonOf(t, map[string]any{"seq": letters[0].Seq}))
	took := time.Since(start)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "may this daemon's NATS user publish on schemaq.docs.shop") {
		t.Errorf("retry without the permission: %d %s", status, body)
	}
	if took > 15*time.Second {
		t.Errorf("the retry took %v: it waited past its short wait", took)
	}
	if _, err := box.Get(ctx, letters[0].Seq); err != nil {
		t.Errorf("the letter is gone after a retry that published nothing: %v", err)
	}
}

// blockingRecords holds every listing until release is closed.
type blockingRecords struct {
	daemon.Records
	entered chan struct{}
	release chan struct{}
}

func (b *blockingRecords) Examples(ctx context.Context, db string) ([]client.StoredExample, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.Records.Examples(ctx, db)
}

// One token's console requests cannot hold every slot: past a few at
// once it is told to wait, while another team's token is answered.
func TestConsoleLimitsEachCaller(t *testing.T) {
	r := newRig(t)
	recs := &blockingRecords{Records: r.cli, entered: make(chan struct{}, 16), release: make(chan struct{})}
	r.daemon(daemon.DefaultConfig, nil, daemon.WithRecords(recs))
	r.publishShop()
	tokens := []bearer.Token{
		{Name: "shop-reader", Token: "shop-reader-0123456789", Databases: []string{"shop"}, Access: "read"},
		{Name: "other-admin", Token: "other-admin-0123456789", Databases: []string{"other"}, Access: "admin"},
	}
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Tokens: tokens}))
	defer srv.Close()
	done := make(chan int, 8)
	for range 4 {
		go func() {
			status, _, _ := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`)
			done <- status
		}()
	}
	for range 4 {
		<-recs.entered
	}
	status, h, body := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "console requests running already") {
		t.Errorf("a fifth request of one token: %d %s", status, body)
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/operations", "other-admin-0123456789", `{}`); status != 200 {
		t.Errorf("another team while the first holds its slots: %d %.200s", status, body)
	}
	close(recs.release)
	for range 4 {
		if s := <-done; s != 200 {
			t.Errorf("a held request answered %d", s)
		}
	}
	if status, _, body := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", `{"database":"shop"}`); status != 200 {
		t.Errorf("after the slots were given back: %d %.200s", status, body)
	}
}

// TestDocsPages pages through a database of 230 docs, twelve of them
// in a row over half a MiB each: every doc comes once, in stream order, in pages
// bounded by count and by bytes, and a doc deleted between two pages is
// not listed.
func TestDocsPages(t *testing.T) {
	r, srv := consoleRig(t)
	ctx := context.Background()
	big := strings.Repeat("The ledger keeps every refund and payment line. ", 12_000) // ~590 KB
	var ids []string
	for i := range 230 {
		id := fmt.Sprintf("page-%03d.md", i)
		body := fmt.Sprintf("# Doc %d\n\nabout orders %d\n", i, i)
		if i >= 100 && i < 112 {
			body += big
		}
		ev, err := events.New("doc-"+id, "shop", time.Now(), &events.DocUpsert{DocID: id, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.cli.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	type page struct {
		Docs []struct {
			DocID    string `json:"doc_id"`
			Seq      uint64
			Sections []struct{ Heading, Text string }
		}
		Total   int
		NextSeq uint64 `json:"next_seq"`
	}
	get := func(body string) page {
		t.Helper()
		return postOK[page](t, srv.URL+"/v1/docs", "shop-reader-0123456789", body)
	}
	seen := map[string]bool{}
	var after, lastSeq uint64
	pages, deleted := 0, ids[200]
	for {
		p := get(fmt.Sprintf(`{"database":"shop","after_seq":%d}`, after))
		pages++
		want := 231 // the shop's refunds.md and the 230
		if pages > 1 {
			want-- // one deleted after the first page
		}
		if p.Total != want {
			t.Fatalf("page %d: total %d, want %d", pages, p.Total, want)
		}
		bytes := 0
		for i, d := range p.Docs {
			if seen[d.DocID] || d.Seq <= lastSeq {
				t.Fatalf("page %d: %s (seq %d) again or out of order", pages, d.DocID, d.Seq)
			}
			seen[d.DocID], lastSeq = true, d.Seq
			if len(d.Sections) == 0 {
				t.Fatalf("%s has no sections", d.DocID)
			}
			if i > 0 && bytes >= 4<<20 {
				t.Fatalf("page %d goes on past 4 MiB", pages)
			}
			for _, s := range d.Sections {
				bytes += len(s.Heading) + len(s.Text)
			}
		}
		if len(p.Docs) > 50 || len(p.Docs) == 0 {
			t.Fatalf("page %d has %d docs", pages, len(p.Docs))
		}
		if pages == 1 {
			if _, err := r.cli.DeleteDocs(ctx, "shop", []string{deleted}); err != nil {
				t.Fatal(err)
			}
		}
		if p.NextSeq == 0 {
			break
		}
		after = p.NextSeq
	}
	if seen[deleted] || len(seen) != 230 || !seen["refunds.md"] || !seen[ids[0]] || !seen[ids[229]] {
		t.Errorf("%d docs seen over %d pages (deleted one seen: %v)", len(seen), pages, seen[deleted])
	}
	if pages < 6 {
		t.Errorf("%d pages: the byte bound never cut one", pages)
	}
	if p := get(`{"database":"shop","limit":7}`); len(p.Docs) != 7 || p.NextSeq != p.Docs[6].Seq {
		t.Errorf("limit 7: %d docs, next %d", len(p.Docs), p.NextSeq)
	}
	for _, body := range []string{`{"database":"shop","limit":501}`, `{"database":"shop","limit":-1}`, `{"database":"shop","after_seq":-1}`} {
		if code, _, out := httpPost(t, srv.URL+"/v1/docs", "shop-reader-0123456789", body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, code, out)
		}
	}
}

// TestExamplesPages pages through 2,500 examples stored by five events
// (so pages start inside one event's examples), every seventh stale:
// each comes once, in stream order, the stale listing pages the same
// way, and examples deleted between two pages are not listed.
func TestExamplesPages(t *testing.T) {
	r, srv := consoleRig(t)
	ctx := context.Background()
	stale := 0
	for b := range 5 {
		exs := make([]events.Example, 500)
		for i := range exs {
			n := b*500 + i
			exs[i] = events.Example{ID: fmt.Sprintf("p%04d", n), Question: fmt.Sprintf("orders of customer %d", n), SQL: fmt.Sprintf("SELECT count(*) FROM orders WHERE customer_id = %d", n)}
			if n%7 == 0 {
				exs[i].SQL = fmt.Sprintf("SELECT count(*) FROM ghosts_%d", n)
				stale++
			}
		}
		ev, err := events.New(fmt.Sprintf("page-batch-%d", b), "shop", time.Now(), &events.ExamplesUpsert{Examples: exs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.cli.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Examples []struct {
			ID    string
			Seq   uint64
			Stale string
		}
		Total   int
		NextSeq uint64 `json:"next_seq"`
		NextID  string `json:"next_id"`
	}
	get := func(body string) page {
		t.Helper()
		return postOK[page](t, srv.URL+"/v1/examples", "shop-reader-0123456789", body)
	}
	// The rig's three examples (one stale) come first.
	const rig, rigStale = 3, 1
	// Deleted after the first listing's second page: that listing and
	// the later ones do not have them.
	deleted := []string{"p2402", "p2403"}
	for _, tc := range []struct {
		stale       bool
		limit, want int
	}{{false, 0, rig + 2500 - 2}, {true, 0, rigStale + stale}, {false, 333, rig + 2500 - 2}} {
		seen := map[string]bool{}
		var lastSeq uint64
		var lastID string
		pages := 0
		for p := (page{}); pages == 0 || p.NextID != ""; {
			p = get(fmt.Sprintf(`{"database":"shop","stale":%v,"limit":%d,"after_seq":%d,"after_id":%q}`, tc.stale, tc.limit, p.NextSeq, p.NextID))
			pages++
			if n := len(p.Examples); n == 0 || n > cmp.Or(tc.limit, 200) {
				t.Fatalf("page %d has %d examples", pages, n)
			}
			for _, ex := range p.Examples {
				if seen[ex.ID] || ex.Seq < lastSeq || (ex.Seq == lastSeq && ex.ID <= lastID) {
					t.Fatalf("page %d: %+v again or out of order", pages, ex)
				}
				var n int
				_, err := fmt.Sscanf(ex.ID, "p%d", &n)
				if isStale := ex.ID == "ghosts" || (err == nil && n%7 == 0); isStale != (ex.Stale != "") || (tc.stale && !isStale) {
					t.Fatalf("page %d: %+v, stale: want %v", pages, ex, isStale)
				}
				seen[ex.ID], lastSeq, lastID = true, ex.Seq, ex.ID
			}
			if pages == 2 && !tc.stale && tc.limit == 0 {
				if _, err := r.cli.DeleteExamples(ctx, "shop", deleted); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(seen) != tc.want || seen[deleted[0]] {
			t.Errorf("stale %v, limit %d: %d examples over %d pages, want %d", tc.stale, tc.limit, len(seen), pages, tc.want)
		}
	}
	for _, body := range []string{`{"database":"shop","limit":1001}`, `{"database":"shop","limit":-1}`, `{"database":"shop","after_id":7}`} {
		if code, _, out := httpPost(t, srv.URL+"/v1/examples", "shop-reader-0123456789", body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, code, out)
		}
	}
}

// postOK posts body and decodes the 200 reply as T.
func postOK[T any](t *testing.T, url, token, body string) T {
	t.Helper()
	code, _, out := httpPost(t, url, token, body)
	var v T
	if err := json.Unmarshal([]byte(out), &v); code != http.StatusOK || err != nil {
		t.Fatalf("%s: %d %v %.300s", body, code, err, out)
	}
	return v
}
