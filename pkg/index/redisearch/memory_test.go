package redisearch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/indextest"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// inMemory is a SearchMemory store over plain Redis (bare: no index
// definitions, which searching in memory does not use), under a prefix
// of its own.
func inMemory(t *testing.T, rdb redis.UniversalClient, prefix string, dim int) *Store {
	t.Helper()
	opt := Options{Prefix: prefix, Dimensions: dim, Model: "local", Algorithm: "HNSW", Weights: index.DefaultWeights, Writer: true, Search: SearchMemory}
	s := withVersion(&Store{rdb: rdb, opt: opt, spec: specOf(opt), scorer: "BM25STD"}, 1)
	if err := rdb.HSet(context.Background(), s.metaKey(), "current", 1, "spec:1", s.spec).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The whole Store contract, searches included, on a real redis-server
// without the query engine, through Open as the roles open it: searching
// in memory needs no index definitions, so CI runs it.
func TestConformanceInMemoryOnPlainRedis(t *testing.T) {
	rdb := testenv.StartRedis(t).Client()
	indextest.Run(t, func(t *testing.T) index.Store {
		return openLive(t, rdb, Options{Dimensions: indextest.Dimensions, Model: "local", Search: SearchMemory})
	})
}

// A process's snapshot follows what other processes write: upserts,
// version raises, deletes, a database's removal, each seen by the next
// search, and a reader that falls behind the change log's horizon loads
// the database whole and is right again.
func TestMemorySnapshotFollowsOtherWriters(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	writer := inMemory(t, rdb, "t:", dim)
	reader := inMemory(t, rdb, "t:", dim) // another daemon on the same index
	names := func(s *Store, db string) []string {
		t.Helper()
		hits, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: db}, Terms: []string{"id"}, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, fmt.Sprintf("%s@%d", h.Chunk.Name, h.Chunk.Version))
		}
		slices.Sort(out)
		return out
	}
	expect := func(step string, db string, want ...string) {
		t.Helper()
		slices.Sort(want)
		for who, s := range map[string]*Store{"writer": writer, "reader": reader} {
			if got := names(s, db); !slices.Equal(got, want) {
				t.Fatalf("%s: %s sees %v, want %v", step, who, got, want)
			}
		}
	}
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil), rec("shop", chunk.KindTable, "public.customers", 1, nil),
		rec("hr", chunk.KindTable, "public.staff", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	expect("first load", "shop", "public.orders@1", "public.customers@1")
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.refunds", 2, nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Touch(ctx, "shop", []string{chunk.ID("shop", chunk.KindTable, "public.orders", 0)}, 2); err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "shop", []string{chunk.ID("shop", chunk.KindTable, "public.customers", 0)}); err != nil {
		t.Fatal(err)
	}
	expect("upsert, touch and delete", "shop", "public.orders@2", "public.refunds@2")
	expect("another database untouched", "hr", "public.staff@1")
	if err := writer.DeleteDatabase(ctx, "hr"); err != nil {
		t.Fatal(err)
	}
	expect("database deleted", "hr")
	// Past the horizon: the reader's generation is forgotten by the log.
	recs := make([]index.Record, 0, logHorizon+300)
	for i := range logHorizon + 300 {
		recs = append(recs, rec("shop", chunk.KindTable, "public.orders", int64(3+i), nil))
	}
	// The delete's entry is among those the log forgets: only a whole
	// load tells the reader that refunds is gone.
	if err := writer.Delete(ctx, "shop", []string{chunk.ID("shop", chunk.KindTable, "public.refunds", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if h, _ := rdb.HGet(ctx, writer.gensKey("shop"), "h:shop").Int64(); h == 0 {
		t.Fatal("the change log has no horizon after more generations than it keeps")
	}
	if n, _ := rdb.ZCard(ctx, writer.changesKey("shop")).Result(); n > 3 {
		t.Errorf("the change log holds %d ids, more than the database ever had", n)
	}
	expect("behind the horizon", "shop", fmt.Sprintf("public.orders@%d", 3+logHorizon+299))
}

// In memory, searches rank exactly as the embedded store's: the same
// analysed fields, the same BM25 and KNN code, ties by id.
func TestMemorySearchRanksAsTheEmbeddedStore(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	red := inMemory(t, rdb, "t:", dim)
	mem, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), dim)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	var recs []index.Record
	for i, name := range []string{"orders", "order_lines", "customers", "customer_addresses", "shipments", "carriers", "refunds", "payments", "invoices", "invoice_lines"} {
		r := rec("shop", chunk.KindTable, "public."+name, 1, nil)
		r.Title, r.Columns = "public."+name, []string{"id", name + "_id", fmt.Sprintf("col%d", i%3), "created_at"}
		r.Text = fmt.Sprintf("CREATE TABLE public.%s (id bigint, %s_id bigint, col%d text, created_at timestamptz)", name, name, i%3)
		r.Vector = local.Vector(r.Text)
		recs = append(recs, r)
	}
	for _, s := range []index.Store{red, mem} {
		if _, err := s.Upsert(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	for _, terms := range [][]string{{"order"}, {"customer", "address"}, {"col1"}, {"invoice", "line", "created"}, {"id"}} {
		q := index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: terms, Limit: 10}
		a, errA := red.SearchText(ctx, q)
		b, errB := mem.SearchText(ctx, q)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !sameHits(a, b) {
			t.Errorf("BM25 %v: redis %v, embedded %v", terms, hitNames(a), hitNames(b))
		}
		v := index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: local.Vector(fmt.Sprint(terms)), Limit: 5}
		a, _ = red.SearchVector(ctx, v)
		b, _ = mem.SearchVector(ctx, v)
		if !sameHits(a, b) {
			t.Errorf("KNN %v: redis %v, embedded %v", terms, hitNames(a), hitNames(b))
		}
	}
}

func sameHits(a, b []index.Hit) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i].Chunk.ID != b[i].Chunk.ID || a[i].Score != b[i].Score {
			return false
		}
	}
	return true
}

func hitNames(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = fmt.Sprintf("%s %.4f", h.Chunk.Name, h.Score)
	}
	return out
}

// A speculative view is the snapshot as this process holds it; Confirm
// reports whether a write came after it, the next speculation is off
// while writes arrive, and a retrieval made after a write sees it.
func TestSpeculativeViewsAreConfirmed(t *testing.T) {
	ctx := context.Background()
	writer, reader := writerAndReader(t)
	reader.opt.Lease = -1 // speculation is what serves without a lease
	find := func(v index.Searcher) []string {
		t.Helper()
		hits, err := v.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"id"}, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, h.Chunk.Name)
		}
		slices.Sort(out)
		return out
	}
	confirm := func(v index.Searcher) (bool, bool) {
		t.Helper()
		c, ok := v.(index.Confirmer)
		if !ok {
			return false, false
		}
		current, err := c.Confirm(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return current, true
	}
	if _, err := reader.Pin(ctx, "shop"); err != nil { // the first load
		t.Fatal(err)
	}
	v, err := reader.PinSpeculative(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if current, speculative := confirm(v); !speculative || !current {
		t.Fatalf("with no write since the load: speculative %v, current %v; want both", speculative, current)
	}
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.refunds", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	v2, _ := reader.PinSpeculative(ctx, "shop")
	if got := find(v2); !slices.Equal(got, []string{"public.orders"}) {
		t.Fatalf("the speculative view holds %v, want the snapshot as it was", got)
	}
	if current, speculative := confirm(v2); !speculative || current {
		t.Errorf("a view that misses a write: speculative %v, confirmed current %v", speculative, current)
	}
	v3, _ := reader.PinSpeculative(ctx, "shop")
	if _, speculative := v3.(index.Confirmer); speculative {
		t.Error("speculating right after a write was found: most such speculations fail")
	}
	if got := find(v3); !slices.Equal(got, []string{"public.orders", "public.refunds"}) {
		t.Errorf("the view after the write holds %v", got)
	}
}

// A retrieval that starts after a write finds it, though it began on a
// speculative view: the retriever confirms the view and runs again.
func TestRetrievalAfterAWriteSeesIt(t *testing.T) {
	ctx := context.Background()
	writer, reader := writerAndReader(t)
	ret, err := retrieve.New(reader, local, nil, retrieve.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	ask := func() []string {
		t.Helper()
		res, err := ret.Retrieve(ctx, retrieve.Request{Database: "shop", Question: "refunds", K: 5})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range res.Items {
			out = append(out, it.Name)
		}
		return out
	}
	if got := ask(); slices.Contains(got, "public.refunds") {
		t.Fatalf("found refunds before it was written: %v", got)
	}
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.refunds", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	if got := ask(); !slices.Contains(got, "public.refunds") {
		t.Errorf("a retrieval after the write: %v, want public.refunds among them", got)
	}
}

// writerAndReader are two processes on one plain redis-server, searching
// in memory, with the shop's orders table written.
func writerAndReader(t *testing.T) (writer, reader *Store) {
	t.Helper()
	rdb := testenv.StartRedis(t).Client()
	writer, reader = inMemory(t, rdb, "t:", dim), inMemory(t, rdb, "t:", dim)
	if _, err := writer.Upsert(context.Background(), []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	return writer, reader
}

// A database's snapshot is dropped once no search has used it for
// snapshotIdle, and loaded again by the next search.
func TestIdleSnapshotsAreDropped(t *testing.T) {
	ctx := context.Background()
	_, reader := writerAndReader(t)
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	reader.mem.now = func() time.Time { return clock }
	held := func() bool {
		reader.mem.mu.Lock()
		defer reader.mem.mu.Unlock()
		_, ok := reader.mem.dbs[memKey{reader.ver(), "shop"}]
		return ok
	}
	if _, err := reader.Pin(ctx, "shop"); err != nil || !held() {
		t.Fatalf("after a search: held %v, %v", held(), err)
	}
	clock = clock.Add(snapshotIdle / 2)
	if _, err := reader.Pin(ctx, "hr"); err != nil || !held() {
		t.Fatalf("half the idle time on: held %v, %v", held(), err)
	}
	clock = clock.Add(snapshotIdle)
	if _, err := reader.Pin(ctx, "hr"); err != nil || held() {
		t.Fatalf("idle past snapshotIdle: held %v, %v", held(), err)
	}
	v, err := reader.Pin(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := v.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"id"}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("loaded again: %v, %v", hits, err)
	}
}

// Searches keep answering, from whole snapshots, while another process
// writes: every search sees some complete set of the writer's tables (a
// prefix of what it wrote), and once the writer stops a search sees all.
func TestMemorySearchesWhileWritesArrive(t *testing.T) {
	ctx := context.Background()
	writer, reader := writerAndReader(t)
	ret, err := retrieve.New(reader, local, nil, retrieve.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	const tables = 120
	done := make(chan error, 1)
	go func() {
		for i := range tables {
			r := rec("shop", chunk.KindTable, fmt.Sprintf("public.t%03d", i), 1, nil)
			if _, err := writer.Upsert(ctx, []index.Record{r}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	stopSearch := make(chan struct{})
	// prefix reports whether hits are the orders table and t000…t(n-1).
	prefix := func(hits []index.Hit) bool {
		var ts []string
		for _, h := range hits {
			if h.Chunk.Name != "public.orders" {
				ts = append(ts, h.Chunk.Name)
			}
		}
		slices.Sort(ts)
		for i, n := range ts {
			if n != fmt.Sprintf("public.t%03d", i) {
				return false
			}
		}
		return len(ts) == len(hits)-1
	}
	searchers := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				default:
				}
				v, err := reader.PinSpeculative(ctx, "shop")
				if err != nil {
					searchers <- err
					return
				}
				hits, err := v.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"id"}, Limit: 500})
				if err != nil {
					searchers <- err
					return
				}
				if !prefix(hits) {
					searchers <- fmt.Errorf("a search saw a set of tables that was never whole: %d hits", len(hits))
					return
				}
				if c, ok := v.(index.Confirmer); ok {
					if _, err := c.Confirm(ctx); err != nil {
						searchers <- err
						return
					}
				}
				if _, err := ret.Retrieve(ctx, retrieve.Request{Database: "shop", Question: "orders", K: 3}); err != nil {
					searchers <- err
					return
				}
				select {
				case <-stopSearch:
					searchers <- nil
					return
				default:
				}
			}
		}()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	close(stopSearch)
	for range 4 {
		if err := <-searchers; err != nil {
			t.Fatal(err)
		}
	}
	v, err := reader.Pin(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	hits, err := v.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"id"}, Limit: 500})
	if err != nil || len(hits) != tables+1 {
		t.Errorf("after the writer stopped: %d tables, %v; want %d", len(hits), err, tables+1)
	}
}

// With Redis down, a search in memory without a lease fails as the
// store being unavailable (the daemon's store_unavailable), whether it
// checks first or speculates, rather than answering from a snapshot it
// cannot check. (With one: TestLeaseLapsesWithRedisDown.)
func TestMemorySearchWithRedisDown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale time.Duration
		wait  time.Duration // after Redis goes, before searching
		serve bool
	}{
		{"no stale reads", 0, 0, false},
		{"within the stale window", time.Minute, 0, true},
		{"past the stale window", 300 * time.Millisecond, 500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.StartRedis(t)
			s := inMemory(t, srv.Client(), "t:", dim)
			s.opt.Lease, s.opt.StaleReads = -1, tc.stale
			if _, err := s.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Pin(ctx, "shop"); err != nil { // loaded while Redis is up
				t.Fatal(err)
			}
			srv.Stop()
			time.Sleep(tc.wait)
			p, err := s.Pin(ctx, "shop")
			if tc.serve {
				if err != nil {
					t.Fatalf("Pin with Redis down, within the window: %v", err)
				}
				hits, err := p.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}, Limit: 5})
				if err != nil || len(hits) != 1 {
					t.Errorf("search of the held snapshot: %v %v", hits, err)
				}
			} else if !errors.Is(err, index.ErrUnavailable) {
				t.Errorf("Pin with Redis down: %v, want ErrUnavailable", err)
			}
			if _, err := s.Pin(ctx, "hr"); !errors.Is(err, index.ErrUnavailable) {
				t.Errorf("Pin of a database never held, Redis down: %v, want ErrUnavailable", err)
			}
			if err := s.Check(ctx); (err == nil) != tc.serve {
				t.Errorf("Check with Redis down: %v; ready only while it serves what it holds", err)
			}
			v, err := s.PinSpeculative(ctx, "shop")
			if err != nil {
				t.Fatalf("a speculative pin needs no round trip: %v", err)
			}
			c, ok := v.(index.Confirmer)
			if !ok {
				t.Fatal("no speculation on a snapshot loaded a moment ago with no write seen")
			}
			if ok, err := c.Confirm(ctx); tc.serve != (ok && err == nil) || !tc.serve && !errors.Is(err, index.ErrUnavailable) {
				t.Errorf("Confirm with Redis down: %v %v", ok, err)
			}
			if got, want := s.LeaseStats().Stale > 0, tc.serve; got != want {
				t.Errorf("stale searches counted: %d", s.LeaseStats().Stale)
			}
		})
	}
}

// A projection too big for one MULTI lands in batches. A reader holding
// the database keeps the snapshot it has until the projection has landed
// whole, also when the projection stopped part way (its writer died, or
// its Redis failed over with part of the batches): it then waits for the
// next projection, which clears the mark.
func TestBatchedProjectionLandsWhole(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	writer := inMemory(t, rdb, "t:", dim)
	reader := inMemory(t, rdb, "t:", dim)
	reader.opt.Lease = -1 // checks before every search: the strictest reader
	kinds := []string{chunk.KindTable, chunk.KindView}
	tables := func(from, to int, version int64) []index.Record {
		var out []index.Record
		for i := from; i <= to; i++ {
			out = append(out, rec("shop", chunk.KindTable, fmt.Sprintf("public.ledger_%03d", i), version, nil))
		}
		return out
	}
	count := func() int {
		t.Helper()
		p, err := reader.Pin(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		hits, err := p.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"ledger"}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if _, err := writer.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 1, Since: 0, Kinds: kinds, Upserts: tables(1, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 10 {
		t.Fatalf("after the first projection the reader sees %d tables, want 10", n)
	}
	// A batched projection to version 2 stopped after its first batches:
	// the mark, and part of the chunks.
	if err := rdb.HSet(ctx, writer.gensKey("shop"), "l:shop", 2).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Upsert(ctx, tables(11, 60, 2)); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 10 {
		t.Errorf("while a projection lands the reader sees %d tables, want the 10 it held", n)
	}
	// The projection again, whole: 200 changes, in batches.
	res, err := writer.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 2, Since: 1, Kinds: kinds, Upserts: tables(11, 210, 2)})
	if err != nil || res.Written != 200 {
		t.Fatalf("the projection again: %+v %v", res, err)
	}
	if n, _ := rdb.HExists(ctx, writer.gensKey("shop"), "l:shop").Result(); n {
		t.Error("the landing mark outlived the projection")
	}
	if n := count(); n != 210 {
		t.Errorf("after the projection landed the reader sees %d tables, want 210", n)
	}
	// A reader that holds nothing loads what is there.
	if err := rdb.HSet(ctx, writer.gensKey("shop"), "l:shop", 3).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := inMemory(t, rdb, "t:", dim)
	fresh.opt.Lease = -1
	if p, err := fresh.Pin(ctx, "shop"); err != nil {
		t.Fatal(err)
	} else if hits, _ := p.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"ledger"}, Limit: 1000}); len(hits) != 210 {
		t.Errorf("a first load during a landing: %d tables", len(hits))
	}
}
