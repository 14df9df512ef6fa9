package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

type rig struct {
	t     *testing.T
	ns    *server.Server
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	store *sqlite.Store
	emb   embed.Embedder
	cli   *client.Client
	cats  *catalogkv.Watcher
	d     *daemon.Daemon // the last one started
}

func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigOn(t, testenv.NATS(t))
}

func newRigOn(t *testing.T, ns *server.Server) *rig {
	t.Helper()
	return newRigConn(t, ns, testenv.Connect(t, ns))
}

// newRigConn is a rig whose worker, client and daemon use nc.
func newRigConn(t *testing.T, ns *server.Server, nc *nats.Conn) *rig {
	t.Helper()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	e := embed.NewLocal(128)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), e.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cats, err := catalogkv.Watch(ctx, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := client.New(nc)
	r := &rig{t: t, ns: ns, nc: nc, js: js, kv: kv, store: st, emb: e, cli: cli, cats: cats}
	wcfg := workers.DefaultConfig
	wcfg.RetryDelay, wcfg.MaxRetryDelay = 10*time.Millisecond, 50*time.Millisecond
	w, err := workers.New(js, catalogkv.New(kv), st, e, zaptest.NewLogger(t), wcfg)
	if err != nil {
		t.Fatal(err)
	}
	r.run(w.Run)
	return r
}

func (r *rig) run(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	r.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("run: %v", err)
		}
	})
}

// countingRetriever counts calls and can be made slow or blocking.
type countingRetriever struct {
	inner *retrieve.Retriever
	calls atomic.Int64
	delay time.Duration
	gate  chan struct{}
}

func (c *countingRetriever) Retrieve(ctx context.Context, req retrieve.Request) (*retrieve.Result, error) {
	c.calls.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	if c.delay > 0 {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.inner.Retrieve(ctx, req)
}

func (c *countingRetriever) Graph(cat *catalog.Catalog) *catalog.Graph { return c.inner.Graph(cat) }

func (r *rig) daemon(cfg daemon.Config, wrap func(*countingRetriever), opts ...daemon.Option) *countingRetriever {
	r.t.Helper()
	ret, err := retrieve.New(r.store, r.emb, r.cats, retrieve.DefaultConfig)
	if err != nil {
		r.t.Fatal(err)
	}
	cr := &countingRetriever{inner: ret}
	if wrap != nil {
		wrap(cr)
	}
	d, err := daemon.New(r.nc, r.cats, r.store, cr, nil, zaptest.NewLogger(r.t), cfg, opts...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.d = d
	r.run(d.Run)
	// Ready, not $SRV.PING: the service answers pings before every
	// endpoint is subscribed.
	testenv.Eventually(r.t, 5*time.Second, "service registered", d.Ready)
	return cr
}

// publishShop publishes the example shop's migrations and docs.
func (r *rig) publishShop() {
	r.t.Helper()
	ctx := context.Background()
	files, err := migrate.Discover(filepath.Join("..", "examples", "shop", "migrations"))
	if err != nil {
		r.t.Fatal(err)
	}
	for i, f := range files {
		sql, _ := os.ReadFile(f.Path)
		ev, err := events.New(fmt.Sprintf("shop-%d", i+1), "shop", time.Now(), &events.Migration{Seq: int64(i + 1), Source: f.Name, SQL: string(sql)})
		if err != nil {
			r.t.Fatal(err)
		}
		if _, err := r.cli.Publish(ctx, ev); err != nil {
			r.t.Fatal(err)
		}
	}
	body, _ := os.ReadFile(filepath.Join("..", "examples", "shop", "docs", "refunds.md"))
	doc, _ := events.New("shop-doc-refunds", "shop", time.Now(), &events.DocUpsert{DocID: "refunds.md", Body: string(body)})
	if _, err := r.cli.Publish(ctx, doc); err != nil {
		r.t.Fatal(err)
	}
	testenv.Eventually(r.t, 10*time.Second, "shop at version 6", func() bool {
		c := r.cats.Catalog("shop")
		return c != nil && c.Version == int64(len(files))
	})
	testenv.Eventually(r.t, 10*time.Second, "shop indexed", func() bool {
		p, _ := r.store.Projected(ctx, "shop")
		return p == int64(len(files))
	})
}

func TestEndpoints(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tables, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "shop"})
	if err != nil || tables.Version != 6 || len(tables.Tables) != 8 {
		t.Fatalf("tables: %+v %v", tables, err)
	}
	one, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "shop", Table: "shipping_addresses"})
	if err != nil || len(one.Tables) != 1 || !strings.Contains(one.Tables[0].DDL, "postal_code text") {
		t.Fatalf("one table: %+v %v", one, err)
	}

	s, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "How many orders did each customer place?", K: 3, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range s.Results {
		names = append(names, it.Name)
	}
	if len(s.Results) < 2 || !strings.Contains(strings.Join(names, " "), "public.orders") || !strings.Contains(strings.Join(names, " "), "public.customers") ||
		s.Explain == nil || s.Results[0].Text == "" {
		t.Errorf("search: %v explain=%v", names, s.Explain != nil)
	}
	if len(s.QueryTerms) == 0 || s.QueryTerms[0] != (events.QueryTerm{Term: "order", Why: "question"}) {
		t.Errorf("explained search should list its query terms, got %+v", s.QueryTerms)
	}
	only, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders", Schemas: []string{"public"}, Kinds: []string{"table", "view"}})
	if err != nil || len(only.Results) == 0 {
		t.Errorf("a schema the database has: %+v %v", only, err)
	}
	docs, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "how are partial refunds recorded", Kinds: []string{"doc"}})
	if err != nil || len(docs.Results) == 0 || docs.Results[0].Kind != "doc" {
		t.Errorf("doc search: %+v %v", docs, err)
	}

	ask, err := r.cli.Ask(ctx, &events.AskRequest{Database: "shop", Question: "What was the net amount paid per order?"})
	if err != nil {
		t.Fatal(err)
	}
	if ask.SQL != "" || !ask.RetrievalOnly || !strings.Contains(ask.Explanation, "SCHEMAQ_LLM_BASE_URL") || len(ask.Context) == 0 || len(ask.Tables) == 0 {
		t.Errorf("retrieval-only ask: %+v", ask)
	}
}

func TestErrors(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
		code string
		msg  string
	}{
		{"empty question", func() error {
			_, err := r.cli.Ask(ctx, &events.AskRequest{Database: "shop", Question: "  "})
			return err
		}, events.CodeBadRequest, "field question: required"},
		{"invalid database name", func() error {
			_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "Shop!", Question: "x"})
			return err
		}, events.CodeBadRequest, "not a valid database name"},
		{"unknown database", func() error {
			_, err := r.cli.Ask(ctx, &events.AskRequest{Database: "nope", Question: "how many?"})
			return err
		}, events.CodeUnknownDatabase, `database "nope"`},
		{"unknown table", func() error {
			_, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "shop", Table: "ghosts"})
			return err
		}, events.CodeNotFound, `table "ghosts"`},
		{"unknown schema in search", func() error {
			_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders", Schemas: []string{"public", "archive"}})
			return err
		}, events.CodeBadRequest, `field schemas[1]: database shop has no schema "archive" at catalog version 6 (it has "public")`},
		{"unknown schema in ask", func() error {
			_, err := r.cli.Ask(ctx, &events.AskRequest{Database: "shop", Question: "orders", Schemas: []string{"Public"}})
			return err
		}, events.CodeBadRequest, `field schemas[0]: database shop has no schema "Public"`},
		{"k out of range", func() error {
			_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "x", K: 1000})
			return err
		}, events.CodeBadRequest, "field k"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var we *events.Error
			if !errors.As(err, &we) || we.Code != tc.code || !strings.Contains(we.Message, tc.msg) {
				t.Errorf("got %v, want %s containing %q", err, tc.code, tc.msg)
			}
		})
	}
	// Raw requests: malformed JSON and unknown fields get bad_request with
	// micro's error headers set.
	for _, body := range []string{`{"database":`, `{"database":"shop","question":"q","extra":1}`, `[]`} {
		msg, err := r.nc.Request("schemaq.search", []byte(body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Header.Get("Nats-Service-Error-Code") != events.CodeBadRequest || !strings.Contains(string(msg.Data), `"code":"bad_request"`) {
			t.Errorf("%s: headers %v body %s", body, msg.Header, msg.Data)
		}
	}
	// An error reply names the database the request did, as an answer
	// does, once it is a database's name; a name that is not one is not
	// echoed.
	for _, c := range []struct{ subject, body, database string }{
		{"schemaq.search.shop", `{"question":"x","k":1000}`, "shop"},
		{"schemaq.ask", `{"database":"nope","question":"how many?"}`, "nope"},
		{"schemaq.tables", `{"database":"shop","table":"ghosts"}`, "shop"},
		{"schemaq.search", `{"database":"Shop!","question":"x"}`, ""},
	} {
		msg, err := r.nc.Request(c.subject, []byte(c.body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply struct {
			Database *string       `json:"database"`
			Error    *events.Error `json:"error"`
		}
		if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error == nil || reply.Database == nil || *reply.Database != c.database {
			t.Errorf("%s %s: %s, want an error naming database %q", c.subject, c.body, msg.Data, c.database)
		}
	}
}

func TestBusyAndTimeout(t *testing.T) {
	r := newRig(t)
	gate := make(chan struct{})
	cfg := daemon.DefaultConfig
	cfg.MaxConcurrent = 1
	cfg.RequestTimeout = 300 * time.Millisecond
	cr := r.daemon(cfg, func(c *countingRetriever) { c.gate = gate })
	r.publishShop()
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
		first <- err
	}()
	testenv.Eventually(t, 5*time.Second, "first request in flight", func() bool { return cr.calls.Load() == 1 })
	_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
	if !errors.Is(err, &events.Error{Code: events.CodeBusy}) {
		t.Errorf("second request: %v, want busy", err)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Errorf("first request: %v", err)
	}

	r2 := newRig(t)
	cfg.MaxConcurrent = 4
	r2.daemon(cfg, func(c *countingRetriever) { c.delay = time.Second })
	r2.publishShop()
	start := time.Now()
	_, err = r2.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
	if !errors.Is(err, &events.Error{Code: events.CodeTimeout}) || time.Since(start) > 900*time.Millisecond {
		t.Errorf("slow request: %v after %v, want timeout within the deadline", err, time.Since(start))
	}
}

func TestReplicasShareLoad(t *testing.T) {
	r := newRig(t)
	a := r.daemon(daemon.DefaultConfig, nil)
	b := r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.cli.Search(context.Background(), &events.SearchRequest{Database: "shop", Question: "orders"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if a.calls.Load() == 0 || b.calls.Load() == 0 || a.calls.Load()+b.calls.Load() != 40 {
		t.Errorf("replica calls %d and %d: both should serve, 40 in all", a.calls.Load(), b.calls.Load())
	}
}

func TestNoDaemon(t *testing.T) {
	ns := testenv.NATS(t)
	nc := testenv.Connect(t, ns)
	cli, _ := client.New(nc)
	_, err := cli.Ask(context.Background(), &events.AskRequest{Database: "shop", Question: "q"})
	if !errors.Is(err, &events.Error{Code: events.CodeNoDaemon}) || !strings.Contains(err.Error(), "schemaq up") {
		t.Errorf("got %v", err)
	}
}

func TestMigrationVisibleWithoutRestart(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	ev, _ := events.New("shop-7", "shop", time.Now(), &events.Migration{Seq: 7, Source: "0007_loyalty.sql", SQL: "CREATE TABLE loyalty_points (customer_id bigint REFERENCES customers, points int);"})
	if _, err := r.cli.Publish(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "new table listed and searchable", func() bool {
		tb, err := r.cli.Tables(context.Background(), &events.TablesRequest{Database: "shop", Table: "loyalty_points"})
		if err != nil || len(tb.Tables) != 1 {
			return false
		}
		s, err := r.cli.Search(context.Background(), &events.SearchRequest{Database: "shop", Question: "loyalty points", K: 1})
		return err == nil && len(s.Results) == 1 && s.Results[0].Name == "public.loyalty_points"
	})
}

// downSearcher is the index as the daemon sees it while its store cannot
// be reached (Redis restarting): every search fails as unavailable.
type downSearcher struct {
	inner retrieve.Searcher
	down  atomic.Bool
}

func (d *downSearcher) SearchText(ctx context.Context, q index.TextQuery) ([]index.Hit, error) {
	if d.down.Load() {
		return nil, fmt.Errorf("text search in %s: %w: dial tcp: connection refused", q.Database, index.ErrUnavailable)
	}
	return d.inner.SearchText(ctx, q)
}

func (d *downSearcher) SearchVector(ctx context.Context, q index.VectorQuery) ([]index.Hit, error) {
	if d.down.Load() {
		return nil, fmt.Errorf("vector search in %s: %w: dial tcp: connection refused", q.Database, index.ErrUnavailable)
	}
	return d.inner.SearchVector(ctx, q)
}

// check is the store's readiness probe as the daemon sees it.
func (d *downSearcher) check(context.Context) error {
	if d.down.Load() {
		return fmt.Errorf("ping: %w: dial tcp: connection refused", index.ErrUnavailable)
	}
	return nil
}

// An unreachable store is a store_unavailable reply the caller can retry,
// not an internal error, when no replica can take the request; the daemon
// leaves the queue group meanwhile and serves again once it is back.
func TestStoreUnavailable(t *testing.T) {
	r := newRig(t)
	ds := &downSearcher{inner: r.store}
	ret, err := retrieve.New(ds, r.emb, r.cats, retrieve.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := daemon.DefaultConfig
	cfg.HealthInterval = 50 * time.Millisecond
	// The health check is left passing, so these requests are taken and
	// find the store down themselves, as they do between two checks.
	var probe atomic.Bool
	r.daemon(cfg, func(c *countingRetriever) { c.inner = ret }, daemon.WithHealth(func(ctx context.Context) error {
		if probe.Load() {
			return ds.check(ctx)
		}
		return nil
	}))
	r.publishShop()
	ctx := context.Background()
	ds.down.Store(true)
	for _, call := range []func() error{
		func() error {
			_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders per customer"})
			return err
		},
		func() error {
			_, err := r.cli.Ask(ctx, &events.AskRequest{Database: "shop", Question: "How many orders per customer?"})
			return err
		},
	} {
		var we *events.Error
		testenv.Eventually(t, 5*time.Second, "in the queue group", r.d.Ready)
		if err := call(); !errors.As(err, &we) || we.Code != events.CodeStoreUnavailable {
			t.Errorf("with the store down: %v, want %s", err, events.CodeStoreUnavailable)
		}
	}
	// While its check fails the daemon takes nothing: the caller learns
	// that no daemon can answer instead of waiting on one that cannot.
	probe.Store(true)
	testenv.Eventually(t, 5*time.Second, "out of the queue group", func() bool {
		_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
		return errors.Is(err, &events.Error{Code: events.CodeNoDaemon})
	})
	ds.down.Store(false)
	testenv.Eventually(t, 5*time.Second, "serving again after the store came back", func() bool {
		res, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders per customer"})
		return err == nil && len(res.Results) > 0
	})
}

// Ready means the server routes requests to the daemon. A daemon whose
// server has not confirmed its subscriptions (here, one that is down)
// is not ready, and says why: a caller that trusted /readyz would send
// requests that no subscription takes.
func TestReadyWaitsForTheServer(t *testing.T) {
	r := newRig(t)
	gone := testenv.NATS(t)
	nc, err := nats.Connect(gone.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(time.Hour),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	gone.Shutdown()
	testenv.Eventually(t, 5*time.Second, "the connection notices", func() bool { return !nc.IsConnected() })
	cfg := daemon.DefaultConfig
	cfg.HealthInterval = 50 * time.Millisecond
	d, err := daemon.New(nc, r.cats, r.store, &countingRetriever{}, nil, zaptest.NewLogger(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.run(d.Run)
	testenv.Eventually(t, 10*time.Second, "a state that says why", func() bool {
		return strings.Contains(d.State(), "the server has not confirmed the subscriptions")
	})
	if d.Ready() {
		t.Fatalf("ready while its server is down (state %q)", d.State())
	}
}

// Two daemons, one cut off from its store: every request succeeds. The
// cut-off one hands what it already took to the other and leaves the
// queue group until its store answers; then it takes its share again.
func TestUnreadyDaemonLeavesQueueGroup(t *testing.T) {
	r := newRig(t)
	ds := &downSearcher{inner: r.store}
	ret, err := retrieve.New(ds, r.emb, r.cats, retrieve.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := daemon.DefaultConfig
	cfg.HealthInterval = 50 * time.Millisecond
	cut := r.daemon(cfg, func(c *countingRetriever) { c.inner = ret }, daemon.WithHealth(ds.check))
	healthy := r.daemon(cfg, nil)
	r.publishShop()
	ctx := context.Background()
	burst := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders per customer"})
				if err != nil || len(res.Results) == 0 {
					t.Errorf("search while one daemon is cut off: %v", err)
				}
			}()
		}
		wg.Wait()
	}
	// Cut before a check notices: the first requests reach the cut-off
	// daemon and must still be answered.
	ds.down.Store(true)
	before := cut.calls.Load()
	burst(40)
	if cut.calls.Load() == before {
		t.Log("no request reached the cut-off daemon before it left; the hand-over was not exercised")
	}
	burst(40)
	served := healthy.calls.Load()
	if served < 40 {
		t.Errorf("the healthy daemon served %d requests, want at least the 40 of the second burst", served)
	}
	ds.down.Store(false)
	testenv.Eventually(t, 5*time.Second, "the daemon rejoins and takes its share", func() bool {
		n := cut.calls.Load()
		burst(10)
		return cut.calls.Load() > n
	})
}

// slowAsker answers after a delay, as a model does.
type slowAsker struct{ delay time.Duration }

func (s slowAsker) Ask(ctx context.Context, _ *catalog.Catalog, _ ask.Request, _ *retrieve.Result) (*ask.Answer, error) {
	select {
	case <-time.After(s.delay):
		return &ask.Answer{SQL: "SELECT 1"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestAskHasItsOwnDeadline: an ask waits for the model (a call and a
// repair round) longer than a search may take.
func TestAskHasItsOwnDeadline(t *testing.T) {
	r := newRig(t)
	r.publishShop()
	ret, err := retrieve.New(r.store, r.emb, r.cats, retrieve.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := daemon.DefaultConfig
	cfg.RequestTimeout, cfg.AskTimeout = 200*time.Millisecond, 5*time.Second
	d, err := daemon.New(r.nc, r.cats, r.store, ret, slowAsker{delay: 600 * time.Millisecond}, zaptest.NewLogger(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.run(d.Run)
	// Ready, not a PING: the service answers PING before every endpoint
	// is subscribed, and an ask sent then found no responder.
	testenv.Eventually(t, 5*time.Second, "serving", func() bool { return d.Ready() && r.cats.Catalog("shop") != nil })
	reply, err := r.cli.Ask(context.Background(), &events.AskRequest{Database: "shop", Question: "how many orders?"})
	if err != nil || reply.SQL != "SELECT 1" {
		t.Fatalf("an ask slower than the search deadline: %v %+v", err, reply)
	}
	cfg.AskTimeout = 0 // asks get the search deadline too
	r2 := newRig(t)
	r2.publishShop()
	ret2, _ := retrieve.New(r2.store, r2.emb, r2.cats, retrieve.DefaultConfig)
	d3, err := daemon.New(r2.nc, r2.cats, r2.store, ret2, slowAsker{delay: 600 * time.Millisecond}, zaptest.NewLogger(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r2.run(d3.Run)
	testenv.Eventually(t, 5*time.Second, "serving", func() bool { return d3.Ready() && r2.cats.Catalog("shop") != nil })
	if _, err := r2.cli.Ask(context.Background(), &events.AskRequest{Database: "shop", Question: "how many orders?"}); !errors.Is(err, &events.Error{Code: events.CodeTimeout}) {
		t.Errorf("without an ask deadline: %v, want timeout", err)
	}
}

// A listing comes in pages that together hold every table once, in order.
func TestTablesArePaged(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	ctx := context.Background()
	var whole *events.TablesReply
	testenv.Eventually(t, 10*time.Second, "catalog", func() bool {
		var err error
		whole, err = r.cli.Tables(ctx, &events.TablesRequest{Database: "shop"})
		return err == nil && whole.Version == 6
	})
	if whole.Total != len(whole.Tables) || whole.Next != "" || whole.Total < 4 {
		t.Fatalf("whole listing: total %d, %d tables, next %q", whole.Total, len(whole.Tables), whole.Next)
	}
	var paged []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > whole.Total {
			t.Fatal("paging does not end")
		}
		p, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "shop", Limit: 2, After: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Tables) > 2 || p.Total != whole.Total {
			t.Fatalf("page after %q: %d tables, total %d", after, len(p.Tables), p.Total)
		}
		for _, tb := range p.Tables {
			paged = append(paged, tb.Name)
		}
		if after = p.Next; after == "" {
			break
		}
	}
	var want []string
	for _, tb := range whole.Tables {
		want = append(want, tb.Name)
	}
	if strings.Join(paged, ",") != strings.Join(want, ",") {
		t.Errorf("pages %v, whole %v", paged, want)
	}
	if _, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "shop", Limit: events.MaxTablesLimit + 1}); !errors.Is(err, &events.Error{Code: events.CodeBadRequest}) {
		t.Errorf("limit over the maximum: %v", err)
	}
}

// Drift in a database's catalog reaches every reply about it: listed by
// tables, and a warning on search and ask.
func TestDriftReachesReplies(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	ctx := context.Background()
	files, err := filepath.Glob(filepath.Join("..", "pkg", "catalog", "testdata", "tenant-helper", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fixture: %v", err)
	}
	for i, f := range files {
		sql, _ := os.ReadFile(f)
		ev, err := events.New(fmt.Sprintf("tenant-%d", i+1), "tenant", time.Now(), &events.Migration{Seq: int64(i + 1), Source: filepath.Base(f), SQL: string(sql)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.cli.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var tables *events.TablesReply
	testenv.Eventually(t, 10*time.Second, "tenant at version 4", func() bool {
		tables, err = r.cli.Tables(ctx, &events.TablesRequest{Database: "tenant"})
		return err == nil && tables.Version == int64(len(files))
	})
	if tables.DriftTotal != 4 || len(tables.Drift) != 4 || tables.Drift[2].Inferred != "" || tables.Drift[2].Statement != 5 ||
		tables.Drift[0].Seq != 3 || tables.Drift[0].Source != "0003_tenant_defaults.sql" {
		t.Fatalf("tables drift: %d %+v", tables.DriftTotal, tables.Drift)
	}
	testenv.Eventually(t, 10*time.Second, "tenant indexed", func() bool {
		p, _ := r.store.Projected(ctx, "tenant")
		return p == int64(len(files))
	})
	s, err := r.cli.Search(ctx, &events.SearchRequest{Database: "tenant", Question: "which tenant owns each invoice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "the catalog of tenant has drift: 4 statement(s)") ||
		!strings.Contains(s.Warnings[0], "0003_tenant_defaults.sql: statement 1") {
		t.Errorf("search warnings: %q", s.Warnings)
	}
	a, err := r.cli.Ask(ctx, &events.AskRequest{Database: "tenant", Question: "which tenant owns each invoice"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(w, "has drift") }) {
		t.Errorf("ask warnings: %q", a.Warnings)
	}
	// A database without drift gets no warning.
	r.publishShop()
	s, err = r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "refunds"})
	if err != nil || len(s.Warnings) != 0 {
		t.Errorf("shop search: %v %q", err, s.Warnings)
	}
}

// A hub table of a large schema is joined by thousands of tables, by
// declared keys and by names: describing it lists MaxKeysListed of each
// and counts them all, so the reply stays well inside NATS's limit.
func TestDescribeHubTable(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	const inferred, declared = events.MaxKeysListed + 100, events.MaxKeysListed + 50
	var b strings.Builder
	b.WriteString("CREATE TABLE users (id bigint PRIMARY KEY, name text);\n")
	for i := range inferred {
		fmt.Fprintf(&b, "CREATE TABLE note_%d (id bigint PRIMARY KEY, user_id bigint, body text);\n", i)
	}
	for i := range declared {
		fmt.Fprintf(&b, "CREATE TABLE ref_%d (id bigint PRIMARY KEY, user_id bigint REFERENCES users);\n", i)
	}
	ev, err := events.New("hub-1", "hub", time.Now(), &events.Snapshot{Seq: 1, Source: "hub.sql", SQLGzip: events.GzipSQL(b.String())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.cli.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "hub catalog", func() bool { return r.cats.Catalog("hub") != nil })
	reply, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "hub", Table: "users"})
	if err != nil {
		t.Fatal(err)
	}
	u := reply.Tables[0]
	if len(u.Joins) != events.MaxKeysListed || u.JoinsTotal != inferred || u.Joins[0] != "public.note_0.user_id = public.users.id" {
		t.Errorf("joins: %d listed, total %d, first %q", len(u.Joins), u.JoinsTotal, u.Joins[0])
	}
	if len(u.ReferencedBy) != events.MaxKeysListed || u.ReferencedByTotal != declared {
		t.Errorf("referenced by: %d listed, total %d", len(u.ReferencedBy), u.ReferencedByTotal)
	}
	// A table with few keeps them all, and no totals.
	reply, err = r.cli.Tables(ctx, &events.TablesRequest{Database: "hub", Table: "note_7"})
	if err != nil {
		t.Fatal(err)
	}
	if n := reply.Tables[0]; len(n.Joins) != 1 || n.JoinsTotal != 0 || n.ReferencedByTotal != 0 {
		t.Errorf("note_7: %+v", n)
	}
}
