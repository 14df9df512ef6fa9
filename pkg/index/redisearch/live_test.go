package redisearch

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"
	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/indextest"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/pkg/text"
)

// liveClient connects to the server SCHEMAQ_TEST_REDISEARCH_URL names (a
// redis:8 or redis/redis-stack-server container) and skips without one:
// these machines have no Redis with the query engine (docs/redis.md).
func liveClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("SCHEMAQ_TEST_REDISEARCH_URL")
	if url == "" {
		t.Skip("SCHEMAQ_TEST_REDISEARCH_URL not set: no Redis with the query engine to test against")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("SCHEMAQ_TEST_REDISEARCH_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// openLive opens a store under a prefix of its own and removes every key
// and index of it when the test ends.
func openLive(t *testing.T, rdb redis.UniversalClient, opt Options) *Store {
	t.Helper()
	if opt.Prefix == "" {
		opt.Prefix = "schemaqtest:" + nuid.Next() + ":"
	}
	opt.Writer = true
	s, err := Open(context.Background(), rdb, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.DropAll(context.Background()); err != nil {
			t.Errorf("clean up %s: %v", opt.Prefix, err)
		}
	})
	return s
}

func TestConformanceLive(t *testing.T) {
	rdb := liveClient(t)
	for _, mode := range []struct{ algorithm, search string }{{"HNSW", SearchServer}, {"FLAT", SearchServer}, {"HNSW", SearchMemory}} {
		t.Run(mode.algorithm+"/"+mode.search, func(t *testing.T) {
			indextest.Run(t, func(t *testing.T) index.Store {
				return openLive(t, rdb, Options{Dimensions: indextest.Dimensions, Model: "local", Algorithm: mode.algorithm, Search: mode.search})
			})
		})
	}
}

// FT.HYBRID and the client-side fusion return the same chunks first.
func TestHybridPathsAgreeLive(t *testing.T) {
	rdb := liveClient(t)
	s := openLive(t, rdb, Options{Dimensions: indextest.Dimensions, Model: "local", Algorithm: "FLAT", Search: SearchServer})
	if !s.hybrid {
		t.Skipf("search module %s has no FT.HYBRID; only the client-side path runs", formatModuleVersion(s.moduleVersion))
	}
	ctx := context.Background()
	emb := embed.NewLocal(indextest.Dimensions)
	var recs []index.Record
	for _, name := range []string{"orders", "order_lines", "customers", "shipments", "carriers", "refunds", "payments", "invoices"} {
		c := chunk.Chunk{ID: chunk.ID("shop", chunk.KindTable, "public."+name, 0), Database: "shop", Kind: chunk.KindTable,
			Name: "public." + name, Schema: "public", Title: name, Columns: []string{"id", name + "_id"}, Text: "CREATE TABLE public." + name, Version: 1}
		recs = append(recs, index.Record{Chunk: c, Vector: emb.Vector(c.Title + " " + c.Text)})
	}
	if _, err := s.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	q := HybridQuery{Text: index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: text.Terms("orders and their shipments")},
		Vector: emb.Vector("orders and their shipments"), Window: 8, Limit: 3}
	server, path, err := s.SearchHybrid(ctx, q)
	if err != nil || path != PathServer {
		t.Fatalf("server path: %v (%s)", err, path)
	}
	client, err := s.clientHybrid(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(hs []index.Hit) []string {
		out := make([]string, len(hs))
		for i, h := range hs {
			out[i] = h.Chunk.ID
		}
		return out
	}
	if !slices.Equal(ids(server), ids(client)) {
		t.Errorf("FT.HYBRID %v, client-side %v", ids(server), ids(client))
	}
}

// A worker with a new configuration builds the next version while the
// old one keeps serving, and the alias moves only on Promote.
func TestReindexSwapsAliasLive(t *testing.T) {
	reindexSwaps(t, liveClient(t))
}

// The same on a Redis without the query engine: the versions, the claim
// and the promotion are plain Redis, so searching in memory needs no
// index definitions to be rebuilt and swapped.
func TestReindexOnPlainRedis(t *testing.T) {
	reindexSwaps(t, testenv.StartRedis(t).Client())
}

func reindexSwaps(t *testing.T, rdb *redis.Client) {
	ctx := context.Background()
	prefix := "schemaqtest:" + nuid.Next() + ":"
	old := openLive(t, rdb, Options{Prefix: prefix, Dimensions: 8, Model: "a"})
	r := rec("shop", chunk.KindTable, "public.orders", 1, nil)
	if _, err := old.Upsert(ctx, []index.Record{r}); err != nil {
		t.Fatal(err)
	}
	// A reader of a configuration no worker builds yet starts unready,
	// saying why, and follows the build once it starts.
	early, err := Open(ctx, rdb, Options{Prefix: prefix, Dimensions: 16, Model: "b"})
	if err != nil {
		t.Fatalf("reader of an unbuilt configuration: %v", err)
	}
	if err := early.Check(ctx); err == nil || !strings.Contains(err.Error(), "start the workers with the new configuration") {
		t.Fatalf("reader of an unbuilt configuration: %v", err)
	}
	next := openLive(t, rdb, Options{Prefix: prefix, Dimensions: 16, Model: "b"})
	if next.Version() != old.Version()+1 || !next.Rebuilt() {
		t.Fatalf("next version %d (rebuilt %v), old %d", next.Version(), next.Rebuilt(), old.Version())
	}
	reader, err := Open(ctx, rdb, Options{Prefix: prefix, Dimensions: 16, Model: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Check(ctx); err == nil {
		t.Error("a reader of a version under construction reads as ready")
	}
	hits, err := old.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: []string{"order"}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("the old version stopped serving during the build: %v %v", hits, err)
	}
	r16 := r
	r16.Vector = embed.NewLocal(16).Vector(r.Text)
	if _, err := next.Upsert(ctx, []index.Record{r16}); err != nil {
		t.Fatal(err)
	}
	if ok, err := next.Promote(ctx); err != nil || !ok {
		t.Fatalf("promote: %v %v", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for reader.Check(ctx) != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := reader.Check(ctx); err != nil {
		t.Errorf("reader after promotion: %v", err)
	}
	for early.Check(ctx) != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := early.Check(ctx); err != nil || early.Version() != next.Version() {
		t.Errorf("the reader started before the build, after promotion: %v (version %d)", err, early.Version())
	}
	hits, err = reader.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: r16.Vector, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Errorf("search after promotion: %v %v", hits, err)
	}
	if err := old.Check(ctx); err == nil {
		t.Error("a process of the replaced configuration still reads as ready")
	}
	if n, _ := rdb.Exists(ctx, old.chunkKey(r.ID)).Result(); n != 0 {
		t.Error("the replaced version's hashes were not dropped")
	}
}
