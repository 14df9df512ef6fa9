package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
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
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/pkg/text"
	"github.com/schemaq/schemaq/workers"
)

type env struct {
	ns    *server.Server
	t     *testing.T
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	cats  *catalogkv.Store
	store *sqlite.Store
	emb   embed.Embedder
}

func testConfig() workers.Config {
	cfg := workers.DefaultConfig
	cfg.Consumer.AckWait = 5 * time.Second
	cfg.Consumer.MaxDeliver = 5
	cfg.GapTimeout = 6 * time.Second
	cfg.MessageTimeout = 4 * time.Second
	cfg.RetryDelay = 10 * time.Millisecond
	cfg.MaxRetryDelay = 50 * time.Millisecond
	cfg.ShutdownTimeout = 5 * time.Second
	return cfg
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ns := testenv.NATS(t)
	nc := testenv.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	e := embed.NewLocal(64)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), e.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &env{t: t, ns: ns, nc: nc, js: js, kv: kv, cats: catalogkv.New(kv), store: st, emb: e}
}

// startWorker runs a worker over store until the test ends.
func (e *env) startWorker(cfg workers.Config, store workers.Store, opts ...workers.Option) {
	e.t.Helper()
	w, err := workers.New(e.js, e.cats, store, e.emb, zaptest.NewLogger(e.t), cfg, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("worker: %v", err)
		}
	})
}

// runWorker runs a worker over store and emb until the returned stop.
func (e *env) runWorker(store workers.Store, emb embed.Embedder) (stop func()) {
	e.t.Helper()
	stopped := e.runWorkerWith(testConfig(), store, emb)
	return func() { _ = stopped() }
}

// runWorkerWith runs a worker of cfg over store and emb until the
// returned stop, which returns what Run did.
func (e *env) runWorkerWith(cfg workers.Config, store workers.Store, emb embed.Embedder) (stop func() error) {
	e.t.Helper()
	w, err := workers.New(e.js, e.cats, store, emb, zaptest.NewLogger(e.t), cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	var ran error
	return func() error {
		once.Do(func() { cancel(); ran = <-done })
		return ran
	}
}

// publish sends an event with its id as Nats-Msg-Id and reports whether
// JetStream dropped it as a duplicate.
func (e *env) publish(ev *events.Event) bool {
	e.t.Helper()
	dup, err := e.publishRaw(ev.Subject(), ev.ID, mustEncode(e.t, ev))
	if err != nil {
		e.t.Fatal(err)
	}
	return dup
}

func (e *env) publishRaw(subject, id string, data []byte) (bool, error) {
	m := nats.NewMsg(subject)
	m.Data = data
	if id != "" {
		m.Header.Set(events.HeaderMsgID, id)
	}
	ack, err := e.js.PublishMsg(context.Background(), m)
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

func mustEncode(t *testing.T, ev *events.Event) []byte {
	b, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func migration(t *testing.T, db string, seq int64, sql string) *events.Event {
	t.Helper()
	ev, err := events.New(fmt.Sprintf("%s-%04d", db, seq), db, time.Now(), &events.Migration{Seq: seq, Source: fmt.Sprintf("%04d.sql", seq), SQL: sql})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (e *env) version(db string) int64 {
	c, _, err := e.cats.Get(context.Background(), db)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.Version
}

func (e *env) waitVersion(db string, v int64) {
	e.t.Helper()
	testenv.Eventually(e.t, 20*time.Second, fmt.Sprintf("%s at version %d", db, v), func() bool {
		c, _, err := e.cats.Get(context.Background(), db)
		return err == nil && c.Version == v // an entry being rebuilt does not decode yet
	})
}

type deadLetter struct {
	subject string
	reason  string
	source  string
	orig    string
}

// deadLetters reads every dead letter so far.
func (e *env) deadLetters() []deadLetter {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		e.t.Fatal(err)
	}
	info, _ := s.Info(ctx)
	var out []deadLetter
	for seq := uint64(1); seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		out = append(out, deadLetter{m.Subject, m.Header.Get(events.HeaderDLQReason), m.Header.Get(events.HeaderDLQSource), m.Header.Get(events.HeaderDLQSubject)})
	}
	return out
}

func (e *env) waitDeadLetters(n int) []deadLetter {
	e.t.Helper()
	var dl []deadLetter
	testenv.Eventually(e.t, 20*time.Second, fmt.Sprintf("%d dead letters", n), func() bool { dl = e.deadLetters(); return len(dl) >= n })
	return dl
}

func (e *env) count(db string) int {
	n, err := e.store.Count(context.Background(), index.Filter{Database: db})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestMigrationsApplyInAnyOrder(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	// Published out of order: 3 and 2 wait for 1.
	e.publish(migration(t, "shop", 3, "ALTER TABLE orders ADD COLUMN total numeric;"))
	e.publish(migration(t, "shop", 2, "CREATE TABLE orders (id int, customer_id int REFERENCES customers);"))
	e.publish(migration(t, "shop", 1, "CREATE TABLE customers (id int PRIMARY KEY, email text);"))
	e.waitVersion("shop", 3)
	c, _, _ := e.cats.Get(context.Background(), "shop")
	if c.Table(catalog.QualName{Schema: "public", Name: "orders"}).Column("total") == nil {
		t.Error("migration 3 not applied")
	}
	testenv.Eventually(t, 5*time.Second, "projected to version 3", func() bool {
		p, _ := e.store.Projected(context.Background(), "shop")
		return p == 3
	})
	if n := e.count("shop"); n != 2 {
		t.Errorf("%d chunks, want 2", n)
	}
	hits, err := e.store.SearchText(context.Background(), index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"total"}, Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Chunk.Name != "public.orders" || hits[0].Chunk.Version != 3 {
		t.Errorf("orders v3 not searchable: %+v %v", hits, err)
	}
}

func TestDuplicatePublishIsDropped(t *testing.T) {
	e := newEnv(t)
	ev := migration(t, "shop", 1, "CREATE TABLE a (id int);")
	if e.publish(ev) {
		t.Fatal("first publish reported as duplicate")
	}
	if !e.publish(ev) {
		t.Error("a second publish with the same id was not dropped by the duplicate window")
	}
	e.startWorker(testConfig(), e.store)
	e.waitVersion("shop", 1)
	// Re-published under a new id (outside the window): seq ≤ version, acked as a duplicate.
	dup := migration(t, "shop", 1, "CREATE TABLE a (id int);")
	dup.ID = "shop-0001-again"
	e.publish(dup)
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 2)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("duplicates were dead-lettered: %+v", dl)
	}
}

func TestGapResolvesOrDeadLetters(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.MaxDeliver = 30
	e.startWorker(cfg, e.store)
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	time.Sleep(100 * time.Millisecond) // let it be delivered and wait at least once
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	e.waitVersion("shop", 2)

	e.publish(migration(t, "hr", 5, "CREATE TABLE never (id int);")) // 1–4 never come
	dl := e.waitDeadLetters(1)
	if dl[0].subject != "schemaq.dlq.hr" || !strings.Contains(dl[0].reason, "gap: migration 5 waited 6s for migration 1 of hr, which never arrived (the catalog is at version 0)") ||
		dl[0].orig != "schemaq.schema.hr" || dl[0].source != "0005.sql" {
		t.Errorf("dead letter %+v", dl[0])
	}
	if e.version("hr") != 0 {
		t.Error("a gapped migration changed the catalog")
	}
}

// TestGapLetterIsResentWhenItsPredecessorApplies: a migration dead-lettered
// because its predecessor never came is re-sent by the worker once the
// predecessor is published and applied, and its letter goes; nobody has
// to run dlq retry.
func TestGapLetterIsResentWhenItsPredecessorApplies(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	e.waitVersion("shop", 1)
	e.publish(migration(t, "shop", 3, "CREATE TABLE c (id int);"))
	e.publish(migration(t, "shop", 4, "CREATE TABLE d (id int);"))
	dl := e.waitDeadLetters(2)
	for _, d := range dl {
		if !strings.Contains(d.reason, "for migration 2 of shop, which never arrived (the catalog is at version 1)") {
			t.Errorf("gap letter %+v", d)
		}
	}
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 4)
	testenv.Eventually(t, 10*time.Second, "the re-sent letters removed", func() bool {
		s, _ := e.js.Stream(context.Background(), events.DeadLetterStream)
		info, _ := s.Info(context.Background())
		return info.State.Msgs == 0
	})
}

// TestForgedLetterIsNotResent: a dead letter is data. A letter that names
// a JetStream API subject in its header, as a forger would, is not
// re-sent there; one whose header lies about a valid event's subject is
// re-sent to the event's own subject.
func TestForgedLetterIsNotResent(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	ctx := context.Background()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "VICTIM", Subjects: []string{"victim.>"}}); err != nil {
		t.Fatal(err)
	}
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	e.waitVersion("shop", 1)
	letter := func(target string, data []byte) {
		m := nats.NewMsg(events.DeadLetterSubject("shop"))
		m.Header.Set(events.HeaderDLQKind, events.DLQKindGap)
		m.Header.Set(events.HeaderDLQSeq, "3")
		m.Header.Set(events.HeaderDLQSubject, target)
		m.Data = data
		if _, err := e.js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	letter("$JS.API.STREAM.DELETE.VICTIM", nil)
	letter("schemaq.schema.elsewhere", mustEncode(t, migration(t, "shop", 3, "CREATE TABLE c (id int);")))
	// Migration 2 moves the catalog to just before the letters' seq, so
	// the sweep re-sends them.
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 3)
	if _, err := e.js.Stream(ctx, "VICTIM"); err != nil {
		t.Fatalf("the forged letter reached the JetStream API: stream VICTIM: %v", err)
	}
}

func TestBadInputIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE customers (id int);"))
	e.waitVersion("shop", 1)
	valid := func(typ, db, data string) []byte {
		return []byte(`{"spec":1,"type":"` + typ + `","id":"x","database":"` + db + `","data":` + data + `}`)
	}
	cases := []struct {
		name, subject string
		data          []byte
		reason        string
	}{
		{"malformed JSON", "schemaq.schema.shop", []byte(`{"spec":1,`), "malformed event"},
		{"unknown event type", "schemaq.schema.shop", valid("schema.drop", "shop", `{}`), `unknown event type: "schema.drop"`},
		{"newer spec", "schemaq.schema.shop", []byte(`{"spec":9,"type":"docs.delete","id":"x","database":"shop","data":{"doc_id":"a"}}`), "spec 9"},
		{"invalid database name", "schemaq.schema.Bad!", valid("schema.migration", "Bad!", `{"seq":1,"sql":"SELECT 1"}`), "field database"},
		{"empty snapshot", "schemaq.schema.shop", valid("schema.snapshot", "shop", `{"seq":2,"sql":" "}`), "field data.sql"},
		{"unparseable SQL", "schemaq.schema.shop", valid("schema.migration", "shop", `{"seq":2,"source":"0002_bad.sql","sql":"CREATE TABLE t (\n  id int,\n  x int GENERATED ALWAYS AS (id) VIRTUAL\n);"}`), `0002_bad.sql: statement 1 (line 3, column 34): syntax error at or near \"VIRTUAL\"`},
		{"a table created twice", "schemaq.schema.shop", valid("schema.migration", "shop", `{"seq":2,"source":"0002_again.sql","sql":"CREATE TABLE customers (id int);"}`), "0002_again.sql: statement 1 (line 1, column 1): duplicate object"},
		{"doc with invalid UTF-8", "schemaq.docs.shop", valid("docs.upsert", "shop", "{\"doc_id\":\"a.md\",\"body\":\"caf\xe9\"}"), "invalid UTF-8"},
		{"event on the wrong subject", "schemaq.docs.shop", valid("schema.migration", "shop", `{"seq":2,"sql":"CREATE TABLE z (id int)"}`), "expected schemaq.schema.shop"},
		// 25,000 terms overflowed libpg_query's C stack and killed the
		// worker on every redelivery.
		{"expression nested too deep", "schemaq.schema.shop", valid("schema.migration", "shop", `{"seq":2,"source":"0002_poison.sql","sql":"CREATE TABLE poison (c int DEFAULT 1`+strings.Repeat("+1", 25000)+`)"}`),
			"0002_poison.sql: statement 1 (line 1, column 2035): expression nested more than 1000 levels deep"},
		{"example nested too deep", "schemaq.examples.shop", valid("examples.upsert", "shop", `{"examples":[{"question":"q","sql":"SELECT 1"},{"question":"q2","sql":"SELECT 1`+strings.Repeat("+1", 25000)+`"}]}`),
			"field data.examples[1].sql: expression nested more than 1000 levels deep"},
		{"seq past 2^53", "schemaq.schema.shop", valid("schema.snapshot", "shop", `{"seq":9223372036854775807,"sql":"CREATE TABLE t (id int)"}`), "field data.seq"},
	}
	for i, tc := range cases {
		if _, err := e.publishRaw(tc.subject, fmt.Sprintf("bad-%d", i), tc.data); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	dl := e.waitDeadLetters(len(cases))
	for _, tc := range cases {
		found := false
		for _, d := range dl {
			if strings.Contains(d.reason, strings.ReplaceAll(tc.reason, `\"`, `"`)) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no dead letter with reason %q in %+v", tc.name, tc.reason, dl)
		}
	}
	if e.version("shop") != 1 {
		t.Errorf("bad events changed the catalog to version %d", e.version("shop"))
	}
	// The catalog is still at its last good version, and the next good
	// migration applies.
	e.publish(migration(t, "shop", 2, "CREATE TABLE orders (id int);"))
	e.waitVersion("shop", 2)
}

func TestOversizeEventIsRejected(t *testing.T) {
	e := newEnv(t)
	big := migration(t, "shop", 1, "CREATE TABLE t (id int); -- "+strings.Repeat("x", events.DefaultMaxEventBytes))
	_, err := e.publishRaw(big.Subject(), big.ID, mustEncode(t, big))
	if err == nil {
		t.Fatal("an event over the stream's max message size was accepted")
	}
}

// flakyStore fails the first SetProjected: the chunks are written but the
// worker "dies" before acking.
type flakyStore struct {
	*sqlite.Store
	failed atomic.Bool
}

func (f *flakyStore) SetProjected(ctx context.Context, db string, v int64) error {
	if !f.failed.Swap(true) {
		return errors.New("simulated crash after the index write, before the ack")
	}
	return f.Store.SetProjected(ctx, db, v)
}

// ReplaceSchema crashes the same way on a store that projects in one step:
// the write is committed, the worker never hears so.
func (f *flakyStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	crash := !f.failed.Swap(true) // before the write, which a test may see at once
	res, err := f.Store.ReplaceSchema(ctx, r)
	if err == nil && crash {
		return res, errors.New("simulated crash after the index write, before the ack")
	}
	return res, err
}

func TestCrashBetweenWriteAndAck(t *testing.T) {
	e := newEnv(t)
	fs := &flakyStore{Store: e.store}
	e.startWorker(testConfig(), fs)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int); CREATE TABLE b (id int); CREATE TABLE c (id int);"))
	e.waitVersion("shop", 1)
	// The event is settled once the redelivery acked it: a store that
	// projects in one step shows the version before the first delivery's
	// "crash" is reported.
	testenv.Eventually(t, 10*time.Second, "the event acked after its redelivery", func() bool {
		p, _ := e.store.Projected(context.Background(), "shop")
		c, err := e.js.Consumer(context.Background(), events.Stream, streams.Durable)
		if err != nil || p != 1 {
			return false
		}
		info, err := c.Info(context.Background())
		return err == nil && info.Delivered.Consumer >= 2 && info.NumAckPending == 0 && info.NumPending == 0
	})
	if !fs.failed.Load() {
		t.Fatal("the crash was not simulated")
	}
	metas, _ := e.store.Metas(context.Background(), index.Filter{Database: "shop"})
	if len(metas) != 3 {
		t.Errorf("after redelivery: %d chunks, want exactly 3 (none missing, none duplicated): %v", len(metas), metas)
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
}

func TestDocsAndExamples(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	pub := func(payload any, id string) {
		ev, err := events.New(id, "shop", time.Now(), payload)
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	pub(&events.DocUpsert{DocID: "a.md", Body: "# A\n\none\n\n## B\n\ntwo\n\n## C\n\nthree"}, "d1")
	testenv.Eventually(t, 10*time.Second, "3 sections", func() bool { return e.count("shop") == 3 })
	pub(&events.DocUpsert{DocID: "a.md", Body: "# A\n\nshorter now"}, "d2")
	testenv.Eventually(t, 10*time.Second, "1 section after the edit", func() bool { return e.count("shop") == 1 })
	pub(&events.ExamplesUpsert{Examples: []events.Example{{Question: "How many?", SQL: "SELECT 1"},
		{Question: "Which orders?", SQL: "SELECT 2", Schema: "sales", Origin: events.OriginFeedback, Author: "http:shop-app"}}}, "x1")
	testenv.Eventually(t, 10*time.Second, "examples", func() bool { return e.count("shop") == 3 })
	// An example's schema (its search_path) is kept with it, and feedback
	// is tagged as such: retrieval trusts it less than the team's log.
	hits, err := e.store.SearchText(context.Background(), index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}, Schemas: []string{"sales"}},
		Terms: text.Terms("which orders"), Weights: index.DefaultWeights, Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Chunk.Schema != "sales" || hits[0].Chunk.Tags[chunk.TagOrigin] != events.OriginFeedback {
		t.Fatalf("the feedback example written in sales: %+v, %v", hits, err)
	}
	pub(&events.DocDelete{DocID: "a.md"}, "d3")
	testenv.Eventually(t, 10*time.Second, "doc deleted", func() bool { return e.count("shop") == 2 })
	// Examples are deleted by id; one published without an id has the
	// hash of its question, and an id not indexed is no error.
	pub(&events.ExamplesDelete{IDs: []string{events.ExampleID("how  many?"), "never-published"}}, "x2")
	testenv.Eventually(t, 10*time.Second, "example deleted", func() bool { return e.count("shop") == 1 })
	hits, err = e.store.SearchText(context.Background(), index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}},
		Terms: text.Terms("which orders how many"), Weights: index.DefaultWeights, Limit: 5})
	if err != nil || len(hits) != 1 || hits[0].Chunk.Title != "Which orders?" {
		t.Fatalf("the example left: %v, %v", hits, err)
	}
}

// TestManyWorkersManyDatabases publishes 10 databases × 100 migrations,
// shuffled, to three workers; every catalog must end identical to applying
// its migrations one by one.
func TestManyWorkersManyDatabases(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 1,000 migrations")
	}
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.MaxDeliver = 1000
	cfg.Consumer.MaxAckPending = 1000
	for i := 0; i < 3; i++ {
		e.startWorker(cfg, e.store)
	}
	const dbs, n = 10, 100
	var all []*events.Event
	want := map[string]*catalog.Catalog{}
	for d := 0; d < dbs; d++ {
		db := fmt.Sprintf("db%02d", d)
		evs, c := history(t, db, n)
		all = append(all, evs...)
		want[db] = c
	}
	rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := p; i < len(all); i += 4 {
				if _, err := e.publishRaw(all[i].Subject(), all[i].ID, mustEncode(t, all[i])); err != nil {
					t.Error(err)
				}
			}
		}(p)
	}
	wg.Wait()
	for db, c := range want {
		testenv.Eventually(t, 90*time.Second, db+" fully applied", func() bool { return e.version(db) == n })
		got, _, _ := e.cats.Get(context.Background(), db)
		sameCatalog(t, got, c)
		testenv.Eventually(t, 10*time.Second, db+" projected", func() bool {
			p, _ := e.store.Projected(context.Background(), db)
			return p == n
		})
		metas, _ := e.store.Metas(context.Background(), index.Filter{Database: db})
		if len(metas) != len(c.Tables())+len(c.Views()) {
			t.Errorf("%s: %d chunks, want %d", db, len(metas), len(c.Tables())+len(c.Views()))
		}
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl[0])
	}
}

// history makes a migration history of n steps for db (tables created,
// altered, renamed, commented, viewed) and the catalog that applying it
// one by one gives.
func history(t *testing.T, db string, n int64) ([]*events.Event, *catalog.Catalog) {
	t.Helper()
	d := len(db)
	c := catalog.New(db)
	var out []*events.Event
	for seq := int64(1); seq <= n; seq++ {
		var sql string
		switch {
		case seq%4 == 1:
			sql = fmt.Sprintf("CREATE TABLE t%d (id int PRIMARY KEY, d%d text);", seq, d)
		case seq%4 == 2:
			sql = fmt.Sprintf("ALTER TABLE t%d ADD COLUMN c%d int REFERENCES t%d;", seq-1, seq, max(seq-5, 1))
		case seq%4 == 3:
			sql = fmt.Sprintf("ALTER TABLE t%d RENAME COLUMN c%d TO r%d; COMMENT ON TABLE t%d IS 'step %d';", seq-2, seq-1, seq, seq-2, seq)
		default:
			sql = fmt.Sprintf("CREATE VIEW v%d AS SELECT id FROM t%d;", seq, seq-3)
		}
		// The source as the worker names it: a catalog records which
		// migration renamed what.
		src := fmt.Sprintf("%04d.sql", seq)
		next, err := c.Apply(src, sql)
		if err != nil {
			t.Fatalf("%s %d: %v", db, seq, err)
		}
		c = next.Record(catalog.Applied{Seq: seq, ID: src, Source: src, Checksum: events.Checksum(sql)})
		out = append(out, migration(t, db, seq, sql))
	}
	return out, c
}

// sameCatalog fails unless got and want serialise alike (schema, version
// and history).
func sameCatalog(t *testing.T, got, want *catalog.Catalog) {
	t.Helper()
	// Where each migration sits in the stream is the worker's to record;
	// the serial application does not know it.
	unplaced := func(c *catalog.Catalog) []byte {
		var m map[string]any
		b, _ := json.Marshal(c)
		_ = json.Unmarshal(b, &m)
		if h, ok := m["history"].([]any); ok {
			for _, a := range h {
				delete(a.(map[string]any), "stream_seq")
			}
		}
		b, _ = json.Marshal(m)
		return b
	}
	a, b := unplaced(got), unplaced(want)
	if string(a) != string(b) {
		t.Errorf("%s: catalog at version %d differs from serial application (version %d)", want.Database, got.Version, want.Version)
	}
}

// TestLongHistoryAppliesInOrder publishes a 1,000-migration history of one
// database, in order as `schemaq publish` does, at several concurrencies
// and with three workers on the shared consumer. Waiting for a predecessor
// must not spend deliveries: MaxDeliver is kept low on purpose.
func TestLongHistoryAppliesInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 1,000 migrations per case")
	}
	evs, want := history(t, "big", 1000)
	for _, tc := range []struct {
		name                 string
		workers, concurrency int
	}{
		{"one worker, concurrency 1", 1, 1},
		{"one worker, concurrency 8", 1, 8},
		{"one worker, concurrency 32", 1, 32},
		{"three workers", 3, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := testConfig()
			cfg.Concurrency = tc.concurrency
			cfg.Consumer.MaxDeliver = 3
			for range tc.workers {
				e.startWorker(cfg, e.store)
			}
			for _, ev := range evs {
				e.publish(ev)
			}
			testenv.Eventually(t, 120*time.Second, "all 1,000 applied", func() bool { return e.version("big") == 1000 || len(e.deadLetters()) > 0 })
			if dl := e.deadLetters(); len(dl) != 0 {
				t.Fatalf("%d dead letters, the first: %+v", len(dl), dl[0])
			}
			got, _, _ := e.cats.Get(context.Background(), "big")
			sameCatalog(t, got, want)
			testenv.Eventually(t, 10*time.Second, "projected", func() bool {
				p, _ := e.store.Projected(context.Background(), "big")
				return p == 1000
			})
		})
	}
}

// TestLongHistoryIsRebuilt: a corrupt entry of a database with a
// thousand-migration history is folded again from the stream, one event
// at a time, to the very catalog the queue had built.
func TestLongHistoryIsRebuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 1,000 migrations")
	}
	evs, want := history(t, "big", 1000)
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	for _, ev := range evs {
		e.publish(ev)
	}
	e.waitVersion("big", 1000)
	e.corrupt("big")
	const next = "CREATE TABLE after_rebuild (id int);"
	e.publish(migration(t, "big", 1001, next))
	e.waitVersion("big", 1001)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters, the first: %+v", len(dl), dl[0])
	}
	got, _, err := e.cats.Get(context.Background(), "big")
	if err != nil {
		t.Fatal(err)
	}
	back, err := want.Apply("1001.sql", next)
	if err != nil {
		t.Fatal(err)
	}
	back.Version = 1001
	sameCatalog(t, got, back.Record(catalog.Applied{Seq: 1001, ID: "1001.sql", Source: "1001.sql", Checksum: events.Checksum(next)}))
}

// TestWorkerStoppedMidHistory: one of three workers stops while it holds
// events of a long history; what it held is handed back and the others
// finish it, with nothing lost or dead-lettered.
func TestWorkerStoppedMidHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 600 migrations")
	}
	e := newEnv(t)
	evs, want := history(t, "big", 600)
	stops := []func(){e.runWorker(e.store, e.emb), e.runWorker(e.store, e.emb), e.runWorker(e.store, e.emb)}
	defer func() {
		for _, stop := range stops[1:] {
			stop()
		}
	}()
	for _, ev := range evs {
		e.publish(ev)
	}
	testenv.Eventually(t, 60*time.Second, "some applied", func() bool { return e.version("big") >= 20 })
	stops[0]()
	if v := e.version("big"); v == 600 {
		t.Log("the history was applied before the worker stopped: the test proved less than it should")
	}
	testenv.Eventually(t, 120*time.Second, "all applied", func() bool { return e.version("big") == 600 || len(e.deadLetters()) > 0 })
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters, the first: %+v", len(dl), dl[0])
	}
	got, _, _ := e.cats.Get(context.Background(), "big")
	sameCatalog(t, got, want)
	testenv.Eventually(t, 10*time.Second, "projected", func() bool {
		p, _ := e.store.Projected(context.Background(), "big")
		return p == 600
	})
}

// TestManyDatabasesInterleaved: 20 databases × 100 migrations, published
// interleaved in order per database, across three workers.
func TestManyDatabasesInterleaved(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 2,000 migrations")
	}
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.MaxDeliver = 3
	for range 3 {
		e.startWorker(cfg, e.store)
	}
	const dbs, n = 20, 100
	hist := make([][]*events.Event, dbs)
	want := make([]*catalog.Catalog, dbs)
	for d := range dbs {
		hist[d], want[d] = history(t, fmt.Sprintf("tenant%02d", d), n)
	}
	for i := range n {
		for d := range dbs {
			e.publish(hist[d][i])
		}
	}
	for d := range dbs {
		db := want[d].Database
		testenv.Eventually(t, 120*time.Second, db+" fully applied", func() bool { return e.version(db) == n || len(e.deadLetters()) > 0 })
		got, _, _ := e.cats.Get(context.Background(), db)
		sameCatalog(t, got, want[d])
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("%d dead letters, the first: %+v", len(dl), dl[0])
	}
}

// panickyStore panics on its first write, as a bug deep in indexing would.
type panickyStore struct {
	*sqlite.Store
	panicked atomic.Bool
}

func (p *panickyStore) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	if !p.panicked.Swap(true) {
		panic("simulated bug while writing chunks")
	}
	return p.Store.Upsert(ctx, recs)
}

func (p *panickyStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	if !p.panicked.Swap(true) {
		panic("simulated bug while writing chunks")
	}
	return p.Store.ReplaceSchema(ctx, r)
}

func TestPanicDeadLettersAndWorkerSurvives(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), &panickyStore{Store: e.store})
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "internal error while applying the event: simulated bug") {
		t.Errorf("dead letter %+v", dl[0])
	}
	// The worker lives on: the catalog was written before the panic, so
	// the next migration applies and repairs the index.
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 2)
	testenv.Eventually(t, 10*time.Second, "both tables indexed", func() bool { return e.count("shop") == 2 })
}

// TestRebuildReprojectsStoredState: after the index is rebuilt (another
// embedding model, another layout), a new worker restores it from the
// catalogs and the stream, with nothing published again.
// promotingStore is a store that reports a rebuild and records when the
// worker switches it on, and how full it was then.
type promotingStore struct {
	*sqlite.Store
	count       func(*sqlite.Store) int
	calls       atomic.Int32
	atPromotion atomic.Int32
}

func (p *promotingStore) Rebuilt() bool { return true }

func (p *promotingStore) Promote(context.Context) (bool, error) {
	p.atPromotion.Store(int32(p.count(p.Store)))
	p.calls.Add(1)
	return true, nil
}

func TestRebuildReprojectsStoredState(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "index.db")
	first, err := sqlite.Open(ctx, path, 64)
	if err != nil {
		t.Fatal(err)
	}
	stop := e.runWorker(first, embed.NewLocal(64))
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int); CREATE TABLE b (id int);"))
	doc, _ := events.New("d1", "shop", time.Now(), &events.DocUpsert{DocID: "a.md", Body: "# A\n\none\n\n## B\n\ntwo"})
	e.publish(doc)
	gone, _ := events.New("d2", "shop", time.Now(), &events.DocUpsert{DocID: "gone.md", Body: "# Gone"})
	e.publish(gone)
	del, _ := events.New("d3", "shop", time.Now(), &events.DocDelete{DocID: "gone.md"})
	e.publish(del)
	ex, _ := events.New("x1", "shop", time.Now(), &events.ExamplesUpsert{Examples: []events.Example{{Question: "q", SQL: "SELECT 1"}, {ID: "dropped", Question: "q2", SQL: "SELECT 2"}}})
	e.publish(ex)
	exDel, _ := events.New("x2", "shop", time.Now(), &events.ExamplesDelete{IDs: []string{"dropped"}})
	e.publish(exDel)
	count := func(s *sqlite.Store) int {
		n, _ := s.Count(ctx, index.Filter{Database: "shop"})
		return n
	}
	testenv.Eventually(t, 10*time.Second, "indexed", func() bool { return count(first) == 5 })
	stop()
	first.Close()

	// A new embedding model with other dimensions: the file is rebuilt.
	second, err := sqlite.Open(ctx, path, 128)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if !second.Rebuilt() || count(second) != 0 {
		t.Fatalf("rebuilt=%v count=%d", second.Rebuilt(), count(second))
	}
	// A store that builds beside a served index (the shared Redis one)
	// is switched on once, and only once everything is in it.
	ps := &promotingStore{Store: second, count: count}
	stop = e.runWorker(ps, embed.NewLocal(128))
	defer stop()
	testenv.Eventually(t, 10*time.Second, "re-projected", func() bool { return count(second) == 5 })
	testenv.Eventually(t, 10*time.Second, "promoted", func() bool { return ps.calls.Load() > 0 })
	if n := ps.atPromotion.Load(); n != 5 {
		t.Errorf("promoted with %d chunks in the new index, want all 5", n)
	}
	metas, _ := second.Metas(ctx, index.Filter{Database: "shop"})
	for _, id := range []string{"shop:table:public.a", "shop:table:public.b", "shop:doc:a.md:1", "shop:doc:a.md:2"} {
		if _, ok := metas[id]; !ok {
			t.Errorf("%s missing after re-projection: %v", id, metas)
		}
	}
	if _, ok := metas["shop:doc:gone.md:1"]; ok {
		t.Error("a deleted doc came back")
	}
	if _, ok := metas["shop:example:dropped"]; ok {
		t.Error("a deleted example came back")
	}
}

// docsDownStore fails every doc write as a store outage would.
type docsDownStore struct{ *promotingStore }

func (d docsDownStore) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	for _, r := range recs {
		if r.Kind == "doc" {
			return 0, fmt.Errorf("upsert %s: %w", r.ID, index.ErrUnavailable)
		}
	}
	return d.promotingStore.Upsert(ctx, recs)
}

// A rebuild that cannot replay the docs is not switched on: the old
// index keeps serving everything rather than a new one without docs.
func TestRebuildWithoutDocsIsNotPromoted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	doc, _ := events.New("d1", "shop", time.Now(), &events.DocUpsert{DocID: "a.md", Body: "# A\n\none"})
	e.publish(doc)
	stop := e.runWorker(e.store, e.emb)
	testenv.Eventually(t, 10*time.Second, "indexed", func() bool {
		n, _ := e.store.Count(ctx, index.Filter{Database: "shop"})
		return n == 2
	})
	stop()

	fresh, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), e.emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	ps := &promotingStore{Store: fresh, count: func(s *sqlite.Store) int { n, _ := s.Count(ctx, index.Filter{Database: "shop"}); return n }}
	core, logs := observer.New(zap.InfoLevel)
	w, err := workers.New(e.js, e.cats, docsDownStore{ps}, e.emb, zap.New(core), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	testenv.Eventually(t, 10*time.Second, "the rebuild is refused", func() bool {
		return logs.FilterMessageSnippet("the rebuilt index is not switched on").Len() > 0
	})
	if ps.calls.Load() != 0 {
		t.Errorf("a rebuilt index without its docs was promoted")
	}
	if logs.FilterMessageSnippet("misses docs or examples").Len() == 0 {
		t.Errorf("the failed replay was not reported: %v", logs.All())
	}
}

func TestSnapshotReplacesTheCatalog(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE old_a (id int); CREATE TABLE old_b (id int);"))
	e.waitVersion("shop", 1)
	snap := func(id string, seq int64, sql string) *events.Event {
		ev, err := events.New(id, "shop", time.Now(), &events.Snapshot{Seq: seq, Source: "dump.sql", SQL: sql})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// A snapshot may jump ahead: it replaces the catalog whole.
	e.publish(snap("s10", 10, "CREATE TABLE public.fresh (id int PRIMARY KEY, note text);"))
	e.waitVersion("shop", 10)
	c, _, _ := e.cats.Get(context.Background(), "shop")
	if len(c.Tables()) != 1 || c.Table(catalog.QualName{Schema: "public", Name: "fresh"}) == nil {
		t.Fatalf("snapshot did not replace the catalog: %v", c.Tables())
	}
	testenv.Eventually(t, 10*time.Second, "old tables gone from the index", func() bool {
		metas, _ := e.store.Metas(context.Background(), index.Filter{Database: "shop"})
		_, fresh := metas["shop:table:public.fresh"]
		return len(metas) == 1 && fresh
	})
	// An older snapshot is a duplicate; a bad one is dead-lettered and
	// leaves the catalog as it was.
	e.publish(snap("s5", 5, "CREATE TABLE stale (id int);"))
	e.publish(snap("s11", 11, "CREATE TABLE broken (id int GENERATED ALWAYS AS (id) VIRTUAL);"))
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "schema.snapshot 11 does not apply") || !strings.Contains(dl[0].reason, `"VIRTUAL"`) {
		t.Errorf("dead letter %+v", dl[0])
	}
	// Migrations continue from the snapshot's version.
	e.publish(migration(t, "shop", 11, "ALTER TABLE fresh ADD COLUMN extra int;"))
	e.waitVersion("shop", 11)
	if c, _, _ := e.cats.Get(context.Background(), "shop"); c.Table(catalog.QualName{Schema: "public", Name: "stale"}) != nil {
		t.Error("an older snapshot was applied")
	}
}

// SQL kept in the object store is read when the event applies, checked
// against the checksum the event names, and deleted once the catalog
// holds it; a missing or altered object is a dead letter naming it.
func TestSQLInObjectStore(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	ctx := context.Background()
	obj, err := streams.Objects(ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name, sql string) *events.ObjectRef {
		gz := events.GzipSQL(sql)
		info, err := obj.PutBytes(ctx, name, gz)
		if err != nil {
			t.Fatal(err)
		}
		return &events.ObjectRef{Name: name, Size: info.Size, Gzip: true, Checksum: events.Checksum(sql)}
	}
	snap, _ := events.New("s1", "shop", time.Now(), &events.Snapshot{Seq: 1, Source: "dump.sql",
		SQLObject: put("events/shop/s1", "CREATE TABLE customers (id int PRIMARY KEY); CREATE TABLE orders (id int, customer_id int REFERENCES customers);")})
	e.publish(snap)
	e.waitVersion("shop", 1)
	mig, _ := events.New("m2", "shop", time.Now(), &events.Migration{Seq: 2, Source: "0002.sql",
		SQLObject: put("events/shop/m2", "ALTER TABLE orders ADD COLUMN total numeric;")})
	e.publish(mig)
	e.waitVersion("shop", 2)
	c, _, _ := e.cats.Get(ctx, "shop")
	if o := c.Table(catalog.QualName{Schema: "public", Name: "orders"}); o == nil || len(o.Columns) != 3 {
		t.Fatalf("orders after the migration from an object: %+v", o)
	}
	if a := c.AppliedSeq(2); a == nil || a.Checksum != events.Checksum("ALTER TABLE orders ADD COLUMN total numeric;") {
		t.Errorf("history records %+v", a)
	}
	testenv.Eventually(t, 5*time.Second, "applied objects deleted", func() bool {
		list, _ := obj.List(ctx)
		return len(list) == 0
	})
	// Redelivered after its object is gone, it is still a duplicate.
	dupe, _ := events.New("m2-again", "shop", time.Now(), &events.Migration{Seq: 2, Source: "0002.sql",
		SQLObject: &events.ObjectRef{Name: "events/shop/m2", Gzip: true, Checksum: events.Checksum("ALTER TABLE orders ADD COLUMN total numeric;")}})
	e.publish(dupe)
	// Missing and altered objects are dead letters that say so.
	gone, _ := events.New("m3", "shop", time.Now(), &events.Migration{Seq: 3, Source: "0003.sql",
		SQLObject: &events.ObjectRef{Name: "events/shop/m3", Gzip: true, Checksum: events.Checksum("x")}})
	e.publish(gone)
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "names object events/shop/m3") || !strings.Contains(dl[0].reason, "not there") {
		t.Errorf("missing object: %+v", dl[0])
	}
	ref := put("events/shop/m3b", "ALTER TABLE orders ADD COLUMN note text;")
	ref.Checksum = events.Checksum("something else")
	altered, _ := events.New("m3b", "shop", time.Now(), &events.Migration{Seq: 3, Source: "0003.sql", SQLObject: ref})
	e.publish(altered)
	dl = e.waitDeadLetters(2)
	if !strings.Contains(dl[1].reason, "holds other SQL") {
		t.Errorf("altered object: %+v", dl[1])
	}
	if v := e.version("shop"); v != 2 {
		t.Errorf("catalog at version %d, want 2", v)
	}
	// A refused migration's letter goes once a fixed one takes its seq,
	// and the SQL in its object with it: nothing will read that again.
	refused, _ := events.New("m3c", "shop", time.Now(), &events.Migration{Seq: 3, Source: "0003.sql",
		SQLObject: put("events/shop/m3c", "CREATE TABLE (;")})
	e.publish(refused)
	dl = e.waitDeadLetters(3)
	if !strings.Contains(dl[2].reason, "does not apply") {
		t.Fatalf("refused object: %+v", dl[2])
	}
	e.publish(migration(t, "shop", 3, "ALTER TABLE orders ADD COLUMN note text;"))
	e.waitVersion("shop", 3)
	testenv.Eventually(t, 10*time.Second, "the refused migration's object deleted with its letter", func() bool {
		_, err := obj.GetInfo(ctx, "events/shop/m3c")
		return errors.Is(err, jetstream.ErrObjectNotFound)
	})
}

// tenantHistory is the catalog package's fixture: a helper function adds
// tenant_id columns through EXECUTE format(…), and a later migration
// alters them.
func tenantHistory(t *testing.T, db string) []*events.Event {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "pkg", "catalog", "testdata", "tenant-helper", "*.sql"))
	if err != nil || len(files) != 4 {
		t.Fatalf("fixture: %v %v", files, err)
	}
	var out []*events.Event
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.New(fmt.Sprintf("%s-%d", db, i+1), db, time.Now(), &events.Migration{Seq: int64(i + 1), Source: filepath.Base(f), SQL: string(b)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// DDL a replay cannot see does not stop a history: the statements that
// name it are recorded as drift, what follows applies and is searchable,
// and a snapshot clears the drift. A strict worker refuses instead.
func TestDriftIsRecordedNotRefused(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	for _, ev := range tenantHistory(t, "tenant") {
		e.publish(ev)
	}
	e.waitVersion("tenant", 4)
	c, _, err := e.cats.Get(context.Background(), "tenant")
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Drift(); len(d) != 4 || d[0].Seq != 3 || d[0].Source != "0003_tenant_defaults.sql" || d[0].Inferred != "column public.projects.tenant_id" {
		t.Fatalf("drift: %+v", d)
	}
	testenv.Eventually(t, 10*time.Second, "the table after the drift indexed", func() bool {
		metas, _ := e.store.Metas(context.Background(), index.Filter{Database: "tenant"})
		_, ok := metas["tenant:table:public.reports"]
		return ok
	})
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
	snap, err := events.New("tenant-snap", "tenant", time.Now(), &events.Snapshot{Seq: 5, Source: "dump.sql",
		SQL: "CREATE TABLE projects (id integer PRIMARY KEY, tenant_id bigint DEFAULT 1);"})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(snap)
	e.waitVersion("tenant", 5)
	if c, _, _ := e.cats.Get(context.Background(), "tenant"); len(c.Drift()) != 0 {
		t.Errorf("a snapshot kept the drift: %v", c.Drift())
	}

	strict := newEnv(t)
	cfg := testConfig()
	cfg.StrictCatalog = true
	strict.startWorker(cfg, strict.store)
	for _, ev := range tenantHistory(t, "tenant")[:3] {
		strict.publish(ev)
	}
	dl := strict.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "schema.migration 3 does not apply: 0003_tenant_defaults.sql: statement 1 (line 1, column 1): undefined object: column tenant_id of relation public.projects does not exist") {
		t.Errorf("strict dead letter: %+v", dl[0])
	}
	if v := strict.version("tenant"); v != 2 {
		t.Errorf("strict worker at version %d, want 2", v)
	}
}

// An example whose SQL cannot count as evidence in the catalog (it does
// not parse, or reads a table the catalog lacks on its search_path) is
// indexed all the same, with a warning naming it and why, and counted.
func TestExamplesThatFitNoTableAreReported(t *testing.T) {
	e := newEnv(t)
	core, logs := observer.New(zap.WarnLevel)
	reg := prometheus.NewRegistry()
	w, err := workers.New(e.js, e.cats, e.store, e.emb, zap.New(core), testConfig(), workers.WithMetrics(workers.NewMetrics(reg)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	e.publish(migration(t, "shop", 1, "CREATE TABLE orders (id int); CREATE SCHEMA sales; CREATE TABLE sales.targets (id int);"))
	e.waitVersion("shop", 1)
	ex, err := events.New("x1", "shop", time.Now(), &events.ExamplesUpsert{Examples: []events.Example{
		{ID: "fits", Question: "How many orders?", SQL: "SELECT count(*) FROM orders"},
		{ID: "in-sales", Question: "Targets?", SQL: "SELECT * FROM targets JOIN orders ON true", Schema: "sales"},
		{ID: "dropped", Question: "Refunds?", SQL: "SELECT * FROM refunds"},
		{ID: "typo", Question: "Orders?", SQL: "SELECT * FORM orders"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(ex)
	testenv.Eventually(t, 10*time.Second, "the examples are indexed", func() bool {
		n, _ := e.store.Count(context.Background(), index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}})
		return n == 4
	})
	testenv.Eventually(t, 5*time.Second, "two warnings", func() bool { return logs.FilterMessage("example counts for no table").Len() == 2 })
	got := map[string]string{}
	for _, l := range logs.FilterMessage("example counts for no table").All() {
		f := l.ContextMap()
		got[f["example"].(string)] = fmt.Sprint(f["field"], ": ", f["error"])
	}
	if !strings.Contains(got["dropped"], "data.examples[2].sql: reads refunds") || !strings.Contains(got["typo"], `data.examples[3].sql: parse: syntax error at or near "FORM" at character 10`) {
		t.Errorf("warnings %v", got)
	}
	unplaced := -1.0
	fresh := map[string]uint64{}
	read := func() {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "schemaq_worker_examples_unplaced_total":
				unplaced = mf.GetMetric()[0].GetCounter().GetValue()
			case "schemaq_worker_freshness_seconds":
				for _, m := range mf.GetMetric() {
					fresh[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	// Both events are acknowledged, each having taken its time to
	// searchable; the acknowledgement follows the index write the wait
	// above saw, so it is waited for too.
	acked := func() bool {
		read()
		return fresh[events.TypeMigration] == 1 && fresh[events.TypeExamplesUpsert] == 1
	}
	testenv.Eventually(t, 5*time.Second, "both events acknowledged", acked)
	if unplaced != 2 {
		t.Errorf("schemaq_worker_examples_unplaced_total = %v, want 2", unplaced)
	}
}

// TestNewReplicasLeaveSupersededMigrationsAlone: a broken migration 2,
// fixed and published again, leaves no letter behind; replicas started
// later replay the stream, meet the broken one first and must not
// dead-letter it as a conflict with the applied (fixed) one. Every new
// StatefulSet pod did.
func TestNewReplicasLeaveSupersededMigrationsAlone(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	e.waitVersion("shop", 1)
	broken := migration(t, "shop", 2, "CREATE TABLE b (id int")
	e.publish(broken)
	e.waitDeadLetters(1)
	fixed := migration(t, "shop", 2, "CREATE TABLE b (id int);")
	fixed.ID = "shop-0002-fixed"
	e.publish(fixed)
	e.publish(migration(t, "shop", 3, "CREATE TABLE c (id int);"))
	e.waitVersion("shop", 3)
	testenv.Eventually(t, 10*time.Second, "the refused letter swept", func() bool { return len(e.deadLetters()) == 0 })

	// A migration at an applied seq published after it still conflicts.
	late := migration(t, "shop", 2, "CREATE TABLE other (id int);")
	late.ID = "shop-0002-late"
	e.publish(late)
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "conflicts with the applied history") {
		t.Fatalf("late migration 2: %+v", dl)
	}

	// Replicas start long after the letters' duplicate window, which
	// would otherwise drop their letters as copies of the first ones.
	ctx := context.Background()
	s, err := e.js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	scfg := s.CachedInfo().Config
	scfg.Duplicates = 100 * time.Millisecond
	if _, err := e.js.UpdateStream(ctx, scfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for i := range 3 {
		cfg := testConfig()
		cfg.Consumer.Name = fmt.Sprintf("replica-%d", i)
		e.startWorker(cfg, e.store)
	}
	testenv.Eventually(t, 20*time.Second, "three replicas caught up", func() bool {
		for i := range 3 {
			c, err := e.js.Consumer(context.Background(), events.Stream, fmt.Sprintf("replica-%d", i))
			if err != nil {
				return false
			}
			ci, err := c.Info(context.Background())
			if err != nil || ci.NumPending != 0 || ci.NumAckPending != 0 {
				return false
			}
		}
		return true
	})
	// The late one's letter (rewritten by replicas, some within the
	// duplicate window), and nothing for the broken one.
	brokenSum, lateSum := events.Checksum(broken.Migration.SQL), events.Checksum(late.Migration.SQL)
	lates := 0
	for _, d := range e.deadLetters() {
		switch {
		case strings.Contains(d.reason, brokenSum):
			t.Errorf("a replica dead-lettered the superseded migration: %s", d.reason)
		case strings.Contains(d.reason, lateSum):
			lates++
		}
	}
	if lates == 0 {
		t.Error("the late migration's letter is gone")
	}
}

// corrupt overwrites db's catalog entry with one whose header still
// claims its version but whose body does not decode.
func (e *env) corrupt(db string) {
	e.t.Helper()
	ctx := context.Background()
	entry, err := e.kv.Get(ctx, db)
	if err != nil {
		e.t.Fatal(err)
	}
	b := slices.Clone(entry.Value())
	i := bytes.Index(b, []byte{0x1f, 0x8b}) // the gzip stream after the header
	if i < 0 {
		e.t.Fatal("no gzip stream in the entry")
	}
	b[i], b[i+1] = 'x', 'x'
	if _, err := e.kv.Put(ctx, db, b); err != nil {
		e.t.Fatal(err)
	}
	if _, _, err := e.cats.Get(ctx, db); !errors.Is(err, catalogkv.ErrCorrupt) {
		e.t.Fatalf("the entry still decodes: %v", err)
	}
}

// TestCorruptCatalogIsRebuiltFromTheStream: a catalog entry that does
// not decode is folded again from the database's events (a refused
// migration and its fix, and events that came out of order, included)
// and the history goes on; one whose events the stream no longer holds
// is reported, and affects no other database.
func TestCorruptCatalogIsRebuiltFromTheStream(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int PRIMARY KEY);"))
	e.publish(migration(t, "shop", 3, "CREATE TABLE c (id int, a_id int REFERENCES a);"))
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int"))
	e.waitDeadLetters(1)
	fixed := migration(t, "shop", 2, "CREATE TABLE b (id int);")
	fixed.ID = "shop-0002-fixed"
	e.publish(fixed)
	e.publish(migration(t, "shop", 4, "ALTER TABLE b ADD COLUMN note text;"))
	e.waitVersion("shop", 4)
	want, _, _ := e.cats.Get(context.Background(), "shop")
	e.publish(migration(t, "other", 1, "CREATE TABLE z (id int);"))
	e.waitVersion("other", 1)

	e.corrupt("shop")
	e.publish(migration(t, "shop", 5, "CREATE TABLE d (id int);"))
	e.waitVersion("shop", 5)
	got, _, err := e.cats.Get(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if got.Table(catalog.QualName{Schema: "public", Name: "d"}) == nil || got.Table(catalog.QualName{Schema: "public", Name: "b"}).Column("note") == nil {
		t.Errorf("rebuilt catalog lacks table d or column b.note")
	}
	back, err := want.Apply("0005.sql", "CREATE TABLE d (id int);")
	if err != nil {
		t.Fatal(err)
	}
	back.Version = 5
	sameCatalog(t, got, back.Record(catalog.Applied{Seq: 5, ID: "0005.sql", Source: "0005.sql", Checksum: events.Checksum("CREATE TABLE d (id int);")}))

	// A claim the stream cannot back: version 9 of a two-event history.
	ctx := context.Background()
	c, rev, _ := e.cats.Get(ctx, "other")
	c9 := c.Clone()
	c9.Version = 9
	if _, err := e.cats.Put(ctx, c9, rev); err != nil {
		t.Fatal(err)
	}
	e.corrupt("other")
	e.publish(migration(t, "other", 10, "CREATE TABLE y (id int);"))
	testenv.Eventually(t, 20*time.Second, "a letter that says the catalog cannot be rebuilt", func() bool {
		for _, d := range e.deadLetters() {
			if strings.Contains(d.reason, "rebuilding it from the stream failed: the stream's events of other reach version 1, the entry claims 9") {
				return true
			}
		}
		return false
	})
	e.publish(migration(t, "shop", 6, "CREATE TABLE f (id int);"))
	e.waitVersion("shop", 6)
}

// TestRetiredDatabaseIsForgotten: when a database's catalog entry is
// purged (schemaq databases retire), a running worker drops it from its
// index, and so does one that was stopped then and starts later; a
// database published again in between is left alone.
func TestRetiredDatabaseIsForgotten(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int); CREATE TABLE b (id int);"))
	e.publish(migration(t, "video", 1, "CREATE TABLE film (id int);"))
	doc, _ := events.New("d1", "shop", time.Now(), &events.DocUpsert{DocID: "a.md", Body: "# A\n\none"})
	e.publish(doc)
	stop := e.runWorker(e.store, e.emb)
	testenv.Eventually(t, 10*time.Second, "indexed", func() bool { return e.count("shop") == 3 && e.count("video") == 1 })
	if err := e.kv.Purge(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "a running worker forgets shop", func() bool { return e.count("shop") == 0 })
	if e.count("video") != 1 {
		t.Error("video was forgotten too")
	}
	stop()

	// Stopped while video is retired; started again, it catches up.
	if err := e.kv.Purge(ctx, "video"); err != nil {
		t.Fatal(err)
	}
	again, err := events.New("shop-again-0001", "shop", time.Now(), &events.Migration{Seq: 1, Source: "0001.sql", SQL: "CREATE TABLE c (id int);"})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(again)
	stop = e.runWorker(e.store, e.emb)
	defer stop()
	testenv.Eventually(t, 10*time.Second, "a worker started later forgets video", func() bool { return e.count("video") == 0 })
	testenv.Eventually(t, 10*time.Second, "shop published again", func() bool { return e.count("shop") == 1 })
}

// TestAuditRepairsALostProjection: a store that loses a database's
// chunks and projected marker under a running worker, as a Redis
// failover can lose what the old primary acknowledged, is re-projected
// by the periodic audit, with no event to trigger it.
func TestAuditRepairsALostProjection(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.AuditInterval = 100 * time.Millisecond
	e.startWorker(cfg, e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int); CREATE TABLE b (id int);"))
	e.publish(migration(t, "shop", 2, "CREATE TABLE c (id int);"))
	testenv.Eventually(t, 10*time.Second, "indexed", func() bool { return e.count("shop") == 3 })
	if err := e.store.DeleteDatabase(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "re-projected by the audit", func() bool { return e.count("shop") == 3 })
	if p, err := e.store.Projected(context.Background(), "shop"); err != nil || p != 2 {
		t.Errorf("projected %d (%v), want 2", p, err)
	}
}

// Replicas that each apply every event to the one catalog lose the
// write race to each other all the time. The loser reads the catalog
// again and goes on (the event is then a duplicate), rather than naking
// the event and warning of a passing failure for each.
func TestReplicasRacingForTheCatalogReadAgain(t *testing.T) {
	e := newEnv(t)
	other, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"), e.emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	core, logs := observer.New(zap.WarnLevel)
	for i, st := range []workers.Store{e.store, other} {
		cfg := testConfig()
		cfg.Consumer.Name = fmt.Sprintf("replica-%d", i)
		w, err := workers.New(e.js, e.cats, st, e.emb, zap.New(core), cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	// Several databases interleaved: each gives the replicas another
	// chance to write at the same moment.
	const n = 50
	dbs := []string{"shop", "crm", "hr", "ops"}
	for i := 1; i <= n; i++ {
		for _, db := range dbs {
			e.publish(migration(t, db, int64(i), fmt.Sprintf("CREATE TABLE t%d (id int);", i)))
		}
	}
	for _, db := range dbs {
		e.waitVersion(db, n)
		for _, st := range []*sqlite.Store{e.store, other} {
			testenv.Eventually(t, 20*time.Second, "both replicas projected "+db, func() bool {
				p, err := st.Projected(context.Background(), db)
				return err == nil && p == n
			})
		}
	}
	raced := logs.FilterMessage("event failed; retrying").FilterFieldKey("reason").All()
	conflicts := 0
	for _, l := range raced {
		if strings.Contains(l.ContextMap()["reason"].(string), catalogkv.ErrConflict.Error()) {
			conflicts++
		}
	}
	// Three lost races in a row for one event are possible, not likely.
	if conflicts > n*len(dbs)/20 {
		t.Errorf("%d of %d events retried for a lost write race", conflicts, n*len(dbs))
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
}
