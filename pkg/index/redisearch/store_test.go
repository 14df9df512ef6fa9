package redisearch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/testenv"
)

const dim = 8

var local = embed.NewLocal(dim)

// bare is a Store over plain Redis at version 1, without the index
// definitions: everything but the searches works on it, so those parts
// are tested against a real redis-server wherever one is installed.
func bare(t *testing.T, rdb redis.UniversalClient) *Store {
	t.Helper()
	opt := Options{Prefix: "t:", Dimensions: dim, Model: "local", Algorithm: "HNSW", Weights: index.DefaultWeights, Writer: true}
	s := withVersion(&Store{rdb: rdb, opt: opt, spec: specOf(opt), scorer: "BM25STD"}, 1)
	if err := rdb.HSet(context.Background(), s.metaKey(), "current", 1, "spec:1", s.spec).Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func rec(db, kind, name string, version int64, tags map[string]string) index.Record {
	c := chunk.Chunk{ID: chunk.ID(db, kind, name, 0), Database: db, Kind: kind, Name: name, Title: name,
		Columns: []string{"id", "name"}, Text: "CREATE TABLE " + name + " (id int, name text)", Tags: tags,
		Hash: fmt.Sprintf("h-%s-%d", name, version), Version: version}
	if kind == chunk.KindTable {
		c.Schema = "public"
	}
	return index.Record{Chunk: c, Vector: local.Vector(c.Text)}
}

func TestWritesOnPlainRedis(t *testing.T) {
	ctx := context.Background()
	s := bare(t, testenv.StartRedis(t).Client())
	recs := []index.Record{
		rec("shop", chunk.KindTable, "public.orders", 2, nil),
		rec("shop", chunk.KindTable, "public.customers", 2, nil),
		rec("shop", chunk.KindDoc, "refunds.md", 7, map[string]string{"product": "checkout"}),
		rec("hr", chunk.KindTable, "public.staff", 1, nil),
	}
	if n, err := s.Upsert(ctx, recs); err != nil || n != 4 {
		t.Fatalf("upsert wrote %d, %v", n, err)
	}
	older := rec("shop", chunk.KindTable, "public.orders", 1, nil)
	if n, err := s.Upsert(ctx, []index.Record{older}); err != nil || n != 0 {
		t.Errorf("an older version was written: %d, %v", n, err)
	}
	for _, tc := range []struct {
		f    index.Filter
		want int
	}{
		{index.Filter{Database: "shop"}, 3},
		{index.Filter{Database: "shop", Kinds: []string{chunk.KindTable}}, 2},
		{index.Filter{Database: "shop", Schemas: []string{"public"}}, 2},
		{index.Filter{Database: "shop", Tags: map[string]string{"product": "checkout"}}, 1},
		{index.Filter{Database: "shop", Tags: map[string]string{"product": "billing"}}, 0},
		{index.Filter{Database: "hr"}, 1},
		{index.Filter{Database: "none"}, 0},
	} {
		if n, err := s.Count(ctx, tc.f); err != nil || n != tc.want {
			t.Errorf("Count(%+v) = %d, %v; want %d", tc.f, n, err, tc.want)
		}
	}
	metas, err := s.Metas(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindTable}})
	if err != nil || len(metas) != 2 || metas[recs[0].ID] != (index.Meta{Hash: "h-public.orders-2", Version: 2}) {
		t.Errorf("Metas = %v, %v", metas, err)
	}
	// The hash holds exactly what a search hydrates a chunk from.
	fields, err := s.rdb.HGetAll(ctx, s.chunkKey(recs[2].ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := chunkOf(fields)
	if err != nil || got.ID != recs[2].ID || got.Database != "shop" || got.Kind != chunk.KindDoc || got.Tags["product"] != "checkout" ||
		got.Text != recs[2].Text || got.Version != 7 || len(got.Columns) != 2 {
		t.Errorf("hash does not round-trip: %+v, %v", got, err)
	}
	if v := index.DecodeVector([]byte(fields[fVector])); embed.Cosine(v, recs[2].Vector) < 0.9999 {
		t.Errorf("vector does not round-trip")
	}

	if n, err := s.Touch(ctx, "shop", []string{recs[0].ID, "shop:table:nope"}, 3); err != nil || n != 1 {
		t.Errorf("Touch raised %d, %v; want 1", n, err)
	}
	if n, _ := s.Touch(ctx, "hr", []string{recs[0].ID}, 9); n != 0 {
		t.Error("Touch crossed databases")
	}
	if n, _ := s.Touch(ctx, "shop", []string{recs[0].ID}, 2); n != 0 {
		t.Error("Touch lowered a version")
	}
	// DeleteStale: customers (2) goes, orders (touched to 3) stays.
	if n, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindTable}, Below: 3}); err != nil || n != 1 {
		t.Errorf("DeleteStale removed %d, %v; want 1", n, err)
	}
	if err := s.DeleteName(ctx, "shop", chunk.KindDoc, "refunds.md"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 1 {
		t.Errorf("%d chunks left in shop, want orders only", n)
	}
	if err := s.Delete(ctx, "hr", []string{recs[0].ID}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 1 {
		t.Error("Delete scoped to hr removed a chunk of shop")
	}

	for _, v := range []int64{3, 7, 5} {
		if err := s.SetProjected(ctx, "shop", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.Projected(ctx, "shop"); err != nil || v != 7 {
		t.Errorf("projected %d, %v; want 7", v, err)
	}
	if err := s.DeleteDatabase(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 0 {
		t.Errorf("%d left after DeleteDatabase", n)
	}
	if v, _ := s.Projected(ctx, "shop"); v != 0 {
		t.Errorf("projected version survived DeleteDatabase: %d", v)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "hr"}); n != 1 {
		t.Error("DeleteDatabase touched another database")
	}
	keys, _ := s.rdb.Keys(ctx, s.versionPrefix(1)+"c:{shop}:*").Result()
	if len(keys) != 0 {
		t.Errorf("hashes left behind: %v", keys)
	}
}

func TestRejectsBadWrites(t *testing.T) {
	ctx := context.Background()
	s := bare(t, testenv.StartRedis(t).Client())
	r := rec("shop", chunk.KindTable, "public.orders", 1, nil)
	r.Vector = make([]float32, dim+1)
	if _, err := s.Upsert(ctx, []index.Record{r}); !errors.Is(err, index.ErrDimension) {
		t.Errorf("wrong dimension: %v", err)
	}
	r = rec("", chunk.KindTable, "public.orders", 1, nil)
	if _, err := s.Upsert(ctx, []index.Record{r}); !errors.Is(err, index.ErrNoDatabase) {
		t.Errorf("no database: %v", err)
	}
	if _, err := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: make([]float32, 3), Limit: 1}); !errors.Is(err, index.ErrDimension) {
		t.Errorf("query dimension: %v", err)
	}
	if _, err := s.SearchText(ctx, index.TextQuery{Terms: []string{"x"}, Limit: 1}); !errors.Is(err, index.ErrNoDatabase) {
		t.Errorf("query without database: %v", err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 0 {
		t.Errorf("a rejected batch left %d chunks", n)
	}
}

func TestEmbeddingCacheInRedis(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	s := bare(t, srv.Client())
	s.opt.CacheTTL = time.Hour
	cached := embed.NewCached(local, s)
	texts := []string{"orders by customer", "refunds", "orders by customer"}
	first, err := cached.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if hits, misses := cached.Stats(); hits != 1 || misses != 2 {
		t.Errorf("first pass: %d hits, %d misses; want 2 misses (one per distinct text) and the repeat as a hit", hits, misses)
	}
	// A second process (a new Cached over the same Redis) hits.
	again := embed.NewCached(local, bare(t, srv.Client()))
	second, err := again.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if hits, misses := again.Stats(); hits != 3 || misses != 0 {
		t.Errorf("second process: %d hits, %d misses; want 3 and 0", hits, misses)
	}
	for i := range texts {
		if embed.Cosine(first[i], second[i]) < 0.9999 {
			t.Errorf("cached vector %d differs", i)
		}
	}
	key := s.cacheKey(embed.CacheKey(local.Model(), dim, "refunds"))
	if ttl, err := s.rdb.TTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("cache entry %s has TTL %v, %v; want ≤ 1h", key, ttl, err)
	}
}

// Redis going away: every call fails as index.ErrUnavailable (asks reply
// store_unavailable, workers retry), and the same Store works again once
// Redis is back, with no reconnect by the caller.
func TestUnavailableThenRecovers(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	s := bare(t, rdb)
	if err := s.Check(ctx); err != nil {
		t.Fatalf("ready store: %v", err)
	}
	srv.Stop()
	r := rec("shop", chunk.KindTable, "public.orders", 1, nil)
	calls := map[string]func() error{
		"Check":  func() error { return s.Check(ctx) },
		"Upsert": func() error { _, err := s.Upsert(ctx, []index.Record{r}); return err },
		"Count": func() error {
			_, err := s.Count(ctx, index.Filter{Database: "shop", Kinds: []string{"table"}})
			return err
		},
		"Projected": func() error { _, err := s.Projected(ctx, "shop"); return err },
		"Cache":     func() error { _, err := s.GetVectors(ctx, []string{"k"}); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, index.ErrUnavailable) {
			t.Errorf("%s with Redis down: %v, want ErrUnavailable", name, err)
		}
	}
	srv.Start()
	// The restarted server has lost its data (no persistence here); the
	// store's scripts are loaded again on first use.
	if err := rdb.HSet(ctx, s.metaKey(), "current", 1, "spec:1", s.spec).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("after restart: %v", err)
	}
	if n, err := s.Upsert(ctx, []index.Record{r}); err != nil || n != 1 {
		t.Errorf("upsert after restart: %d, %v", n, err)
	}
}

func TestOpenNamesWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	_, err := Open(ctx, srv.Client(), Options{Dimensions: dim, Search: SearchServer})
	if err == nil || !strings.Contains(err.Error(), "no search module") || !strings.Contains(err.Error(), Requirement) {
		t.Errorf("plain Redis, searching in the server: %v; want the requirement named", err)
	}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer down.Close()
	_, err = Open(ctx, down, Options{Dimensions: dim})
	if !errors.Is(err, index.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1:1 unreachable") {
		t.Errorf("no server: %v", err)
	}
	if _, err := Open(ctx, srv.Client(), Options{Dimensions: dim, Algorithm: "IVF"}); err == nil || !strings.Contains(err.Error(), "HNSW or FLAT") {
		t.Errorf("bad algorithm: %v", err)
	}
}

func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		version        int
		search         string
		scorer, errSub string
		engine, hybrid bool
	}{
		{0, SearchServer, "", "no search module", false, false},
		{0, SearchMemory, "", "", false, false},
		{20612, SearchServer, "", "2.6.12 is too old", false, false},
		{20612, SearchMemory, "", "", false, false},
		{20816, SearchServer, "BM25", "", true, false},
		{21005, SearchMemory, "BM25STD", "", true, false},
		{80200, SearchServer, "BM25STD", "", true, false},
		{80400, SearchServer, "BM25STD", "", true, true},
	} {
		s := &Store{opt: Options{Search: tc.search}}
		err := s.setCapabilities(tc.version)
		if tc.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errSub) {
				t.Errorf("%d %s: %v, want %q", tc.version, tc.search, err, tc.errSub)
			}
			continue
		}
		if err != nil || s.scorer != tc.scorer || s.engine != tc.engine || s.hybrid != tc.hybrid {
			t.Errorf("%d %s: scorer %q engine %v hybrid %v err %v", tc.version, tc.search, s.scorer, s.engine, s.hybrid, err)
		}
	}
}

func TestParseModuleList(t *testing.T) {
	resp2 := []any{
		[]any{"name", "ReJSON", "ver", int64(80200), "path", "/x", "args", []any{}},
		[]any{"name", "search", "ver", int64(80205), "path", "/y", "args", []any{}},
	}
	resp3 := []any{map[any]any{"name": "search", "ver": int64(21010), "path": "/y", "args": []any{}}}
	for name, tc := range map[string]struct {
		reply any
		want  int
	}{"resp2": {resp2, 80205}, "resp3": {resp3, 21010}, "none": {[]any{}, 0}, "junk": {"x", 0}} {
		if got := parseModuleList(tc.reply); got != tc.want {
			t.Errorf("%s: %d, want %d", name, got, tc.want)
		}
	}
}

// The version claims decide, across every process, which index version
// serves a configuration; they run on plain Redis.
func TestVersionClaims(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	meta := "t:meta"
	claim := func(spec string, writer bool) string {
		w := "0"
		if writer {
			w = "1"
		}
		res, err := claimScript.Run(ctx, rdb, []string{meta}, spec, w).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d %s", res[0], res[1])
	}
	promote := func(v int) int {
		n, err := promoteScript.Run(ctx, rdb, []string{meta}, v).Int()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		what, got, want string
	}{
		{"a reader before any index", claim("A", false), "0 other"},
		{"the first writer creates version 1", claim("A", true), "1 new"},
		{"a second writer of A joins it", claim("A", true), "1 current"},
		{"a reader of A uses it", claim("A", false), "1 current"},
		{"a reader of B is refused", claim("B", false), "1 other"},
		{"a writer of B builds version 2", claim("B", true), "2 new"},
		{"another writer of B joins the build", claim("B", true), "2 next"},
		{"a reader of B waits for it", claim("B", false), "2 next"},
		{"A still serves", claim("A", false), "1 current"},
	}
	for _, s := range steps {
		if s.got != s.want {
			t.Errorf("%s: %s, want %s", s.what, s.got, s.want)
		}
	}
	if old := promote(2); old != 1 {
		t.Errorf("promote 2 replaced %d, want 1", old)
	}
	if old := promote(2); old != 0 {
		t.Errorf("promoting again replaced %d, want 0 (already current)", old)
	}
	if got := claim("B", false); got != "2 current" {
		t.Errorf("after promotion a reader of B: %s", got)
	}
	if got := claim("C", true); got != "3 new" {
		t.Errorf("writer of C: %s", got)
	}
	if got := claim("D", true); got != "4 new" {
		t.Errorf("writer of D takes over the build: %s", got)
	}
	if ab, _ := rdb.HGet(ctx, meta, "abandoned").Int(); ab != 3 {
		t.Errorf("abandoned build %d, want 3", ab)
	}
	if old := promote(3); old != -1 {
		t.Errorf("promoting an abandoned build: %d, want -1", old)
	}
}

// A reader waiting for a build notices the promotion by itself (no
// readiness probe needed), and one whose version was replaced stops.
func TestReaderFollowsPromotion(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	s := bare(t, rdb)
	s.opt.Writer = false
	s.version.Store(2)
	s.pending = true
	s.servable = fmt.Errorf("%w: still being built", index.ErrUnavailable)
	if err := s.servableErr(ctx); !errors.Is(err, index.ErrUnavailable) {
		t.Fatalf("during the build: %v", err)
	}
	if err := s.Check(ctx); err == nil {
		t.Error("a reader of a version under construction reads as ready")
	}
	if err := rdb.HSet(ctx, s.metaKey(), "current", 2).Err(); err != nil {
		t.Fatal(err)
	}
	s.checkedAt = time.Time{} // as if the re-check interval had passed
	if err := s.servableErr(ctx); err != nil {
		t.Errorf("after promotion: %v", err)
	}
	if err := rdb.HSet(ctx, s.metaKey(), "current", 3).Err(); err != nil {
		t.Fatal(err)
	}
	s.checkedAt = time.Time{}
	if err := s.servableErr(ctx); !errors.Is(err, index.ErrUnavailable) || !strings.Contains(err.Error(), "another configuration") {
		t.Errorf("after another configuration took over: %v", err)
	}
	if _, err := s.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.x", 1, nil)}); err == nil {
		t.Error("a replaced version still takes writes")
	}
}

// unlinkMatching removes exactly the keys under a pattern, across more
// than one batch.
func TestUnlinkMatching(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	s := bare(t, rdb)
	pipe := rdb.Pipeline()
	for i := range 2500 {
		pipe.Set(ctx, fmt.Sprintf("t:v7:c:%d", i), "x", 0)
	}
	pipe.Set(ctx, "t:v8:c:1", "keep", 0)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.unlinkMatching(ctx, s.versionPrefix(7)+"*"); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Keys(ctx, "t:v7:*").Result(); len(n) != 0 {
		t.Errorf("%d keys of version 7 left", len(n))
	}
	if v, _ := rdb.Get(ctx, "t:v8:c:1").Result(); v != "keep" {
		t.Error("a key of another version was removed")
	}
}

func withVersion(s *Store, v int) *Store {
	s.version.Store(int64(v))
	return s
}

// A reader that starts before any worker made an index (or before the
// workers run its configuration) starts unready, says why, and serves
// once a worker makes a version of its configuration: a daemon started
// first in a compose stack or a rollout need not crash and restart.
func TestReaderWaitsForAnIndex(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	s := bare(t, rdb)
	s.opt.Writer = false
	s.version.Store(0)
	rdb.Del(ctx, s.metaKey()) // no worker has run
	if err := s.resolveVersion(ctx); err != nil {
		t.Fatalf("a reader with no index yet fails to open: %v", err)
	}
	if err := s.Check(ctx); !errors.Is(err, index.ErrUnavailable) || !strings.Contains(err.Error(), "no index under") {
		t.Fatalf("before any index: %v", err)
	}
	// A worker of another configuration makes version 1: still waiting,
	// now naming the mismatch.
	rdb.HSet(ctx, s.metaKey(), "current", 1, "spec:1", "layout=0 dim=3 model=other")
	if err := s.Check(ctx); !errors.Is(err, index.ErrUnavailable) || !strings.Contains(err.Error(), "was built for") {
		t.Fatalf("with another configuration's index: %v", err)
	}
	// A worker of this configuration builds version 2, then switches to it.
	rdb.HSet(ctx, s.metaKey(), "next", 2, "spec:2", s.spec)
	if err := s.Check(ctx); !errors.Is(err, index.ErrUnavailable) || s.Version() != 2 {
		t.Fatalf("while version 2 is built: %v, version %d", err, s.Version())
	}
	rdb.HSet(ctx, s.metaKey(), "current", 2)
	rdb.HDel(ctx, s.metaKey(), "next")
	if err := s.Check(ctx); err != nil {
		t.Fatalf("once version 2 is current: %v", err)
	}
	if err := s.servableErr(ctx); err != nil {
		t.Errorf("searches still refused: %v", err)
	}
}

// ReplaceSchema writes what changed, deletes what the catalog dropped,
// leaves unchanged chunks and other kinds alone (RediSearch would
// re-index every hash written), and is serialised per database.
func TestReplaceSchemaOnPlainRedis(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	s := bare(t, rdb)
	orders, customers, doc := rec("shop", chunk.KindTable, "public.orders", 1, nil), rec("shop", chunk.KindTable, "public.customers", 1, nil),
		rec("shop", chunk.KindDoc, "refunds.md", 1, nil)
	if _, err := s.Upsert(ctx, []index.Record{orders, customers, doc}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProjected(ctx, "shop", 1); err != nil {
		t.Fatal(err)
	}
	kinds := []string{chunk.KindTable, chunk.KindView}
	payments := rec("shop", chunk.KindTable, "public.payments", 2, nil)
	res, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 2, Since: 1, Kinds: kinds,
		Upserts: []index.Record{payments}, Remove: []string{customers.ID, doc.ID, "other:table:public.orders"}})
	if err != nil || res.Written != 1 || res.Deleted != 1 || res.Skipped {
		t.Fatalf("replace: %+v %v", res, err)
	}
	metas, err := s.Metas(ctx, index.Filter{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := metas[customers.ID]; ok || len(metas) != 3 {
		t.Errorf("after the replace: %v", metas)
	}
	if metas[orders.ID].Version != 1 {
		t.Errorf("an unchanged chunk was rewritten: %+v", metas[orders.ID])
	}
	if _, ok := metas[doc.ID]; !ok {
		t.Error("a doc chunk went with the schema's")
	}
	if p, _ := s.Projected(ctx, "shop"); p != 2 {
		t.Errorf("projected %d, want 2", p)
	}
	// Read at an old projection: refused, to be read again.
	if _, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 3, Since: 1, Kinds: kinds, Remove: []string{payments.ID}}); !errors.Is(err, index.ErrMoved) {
		t.Errorf("a stale read: %v", err)
	}
	// An older catalog than the index reflects changes nothing.
	if res, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 1, Since: 2, Kinds: kinds}); err != nil || !res.Skipped {
		t.Errorf("an older catalog: %+v %v", res, err)
	}
	// A projection waits for another's lock, and takes it once freed.
	if err := rdb.Set(ctx, s.lockKey("shop"), "someone", lockTTL).Err(); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		rdb.Del(ctx, s.lockKey("shop"))
	}()
	t0 := time.Now()
	res, err = s.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 3, Since: 2, Kinds: kinds})
	if err != nil || res.Skipped || time.Since(t0) < 150*time.Millisecond {
		t.Errorf("waiting for the lock: %+v %v after %v", res, err, time.Since(t0))
	}
	if n, _ := rdb.Exists(ctx, s.lockKey("shop")).Result(); n != 0 {
		t.Error("the lock was left behind")
	}
}

// A projection lands the same whether it goes in one MULTI or, past
// atomicChanges, in batches; and one MULTI needs no script cached on the
// server (a restart or SCRIPT FLUSH empties the cache).
func TestReplaceSchemaAtEverySizeOnPlainRedis(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	for _, tc := range []struct {
		name  string
		n     int
		flush bool
	}{
		{"small, scripts flushed", 3, true},
		{"largest in one MULTI", atomicChanges - 1, false},
		{"in batches", atomicChanges + 10, false},
		{"in batches, scripts flushed", atomicChanges + 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushDB(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			s := bare(t, rdb)
			old := rec("shop", chunk.KindTable, "public.old", 1, nil)
			if _, err := s.Upsert(ctx, []index.Record{old}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetProjected(ctx, "shop", 1); err != nil {
				t.Fatal(err)
			}
			var ups []index.Record
			for i := range tc.n {
				ups = append(ups, rec("shop", chunk.KindTable, fmt.Sprintf("public.t%03d", i), 2, nil))
			}
			if tc.flush {
				if err := rdb.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			res, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 2, Since: 1,
				Kinds: []string{chunk.KindTable}, Upserts: ups, Remove: []string{old.ID}})
			if err != nil || res.Written != tc.n || res.Deleted != 1 {
				t.Fatalf("replace: %+v %v, want %d written and 1 deleted", res, err, tc.n)
			}
			if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != tc.n {
				t.Errorf("%d chunks stored, want %d", n, tc.n)
			}
			if p, _ := s.Projected(ctx, "shop"); p != 2 {
				t.Errorf("projected %d, want 2", p)
			}
		})
	}
}

// A Redis that lost everything (a failover to a replica that had not
// synced, a restart without persistence) no longer records which index
// version is current: readers stop serving and say why, the writer's
// next check puts its version back, and the readers serve it again.
func TestVersionsLostAreRestored(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	w := openLive(t, rdb, Options{Dimensions: dim, Model: "a"})
	r, err := Open(ctx, rdb, Options{Prefix: w.opt.Prefix, Dimensions: dim, Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Check(ctx); err != nil {
		t.Fatalf("reader before: %v", err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(ctx); !errors.Is(err, index.ErrUnavailable) || !strings.Contains(err.Error(), "no longer records an index version") {
		t.Fatalf("reader after the loss: %v", err)
	}
	if err := w.Check(ctx); err != nil {
		t.Fatalf("writer after the loss: %v", err)
	}
	if cur, err := rdb.HGet(ctx, w.metaKey(), "current").Int(); err != nil || cur != w.Version() {
		t.Fatalf("restored current version %d (%v), want %d", cur, err, w.Version())
	}
	if err := r.Check(ctx); err != nil || r.Version() != w.Version() {
		t.Errorf("reader after the restore: %v (version %d)", err, r.Version())
	}
	if _, err := w.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	hits, err := r.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("search after the restore: %v %v", hits, err)
	}
}
