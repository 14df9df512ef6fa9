package redisearch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nats-io/nuid"
	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// BenchmarkUpsertSpiderUnion writes the 876 SpiderUnion table chunks
// (512-dimension vectors) into a real redis-server: the store's side of
// indexing, pipelined Lua calls included. The query engine's own
// indexing, which a plain redis-server does not do, comes on top.
func BenchmarkUpsertSpiderUnion(b *testing.B) {
	sql, err := os.ReadFile(filepath.Join(testenv.SharedDir(b), "bench", "spiderunion", "schema.sql"))
	if err != nil {
		b.Skip(err)
	}
	cat, err := catalog.Snapshot("bench", "schema.sql", string(sql))
	if err != nil {
		b.Fatal(err)
	}
	emb := embed.NewLocal(0)
	var recs []index.Record
	for _, c := range chunk.Catalog(cat, chunk.Options{}) {
		recs = append(recs, index.Record{Chunk: c, Vector: emb.Vector(c.Text)})
	}
	srv := testenv.StartRedis(b)
	rdb := srv.Client()
	opt := Options{Prefix: "b:", Dimensions: emb.Dimensions(), Model: emb.Model(), Algorithm: "HNSW", Weights: index.DefaultWeights, Writer: true}
	s := withVersion(&Store{rdb: rdb, opt: opt, spec: specOf(opt), scorer: "BM25STD"}, 1)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range recs {
			recs[j].Version = int64(i + 1) // each round replaces the last
		}
		if n, err := s.Upsert(ctx, recs); err != nil || n != len(recs) {
			b.Fatalf("wrote %d of %d: %v", n, len(recs), err)
		}
	}
	b.ReportMetric(float64(len(recs)), "chunks/op")
}

// BenchmarkReplaceSchemaLive times a projection that lands in one MULTI
// (atomicChanges), on the server SCHEMAQ_TEST_REDISEARCH_URL names: the
// query engine indexes every hash, vector included, before the MULTI
// returns, and no other client is served meanwhile. ns/op is that hold.
func BenchmarkReplaceSchemaLive(b *testing.B) {
	url := os.Getenv("SCHEMAQ_TEST_REDISEARCH_URL")
	if url == "" {
		b.Skip("SCHEMAQ_TEST_REDISEARCH_URL not set")
	}
	ropt, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(ropt)
	defer rdb.Close()
	emb := embed.NewLocal(0)
	ctx := context.Background()
	for _, n := range []int{16, 64, atomicChanges} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s, err := Open(ctx, rdb, Options{Prefix: "schemaqbench:" + nuid.Next() + ":", Dimensions: emb.Dimensions(), Model: emb.Model(),
				Algorithm: "HNSW", Weights: index.DefaultWeights, Writer: true})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.DropAll(ctx) }()
			recs := make([]index.Record, n)
			for i := range recs {
				name := fmt.Sprintf("public.t%04d", i)
				c := chunk.Chunk{Database: "bench", Kind: chunk.KindTable, Name: name, Title: name, Columns: []string{"id", "amount"},
					ID: chunk.ID("bench", chunk.KindTable, name, 0)}
				recs[i] = index.Record{Chunk: c}
			}
			kinds := []string{chunk.KindTable}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range recs {
					recs[j].Version = int64(i + 1)
					recs[j].Text = fmt.Sprintf("CREATE TABLE %s (id bigint, amount numeric) -- round %d", recs[j].Name, i)
					recs[j].Hash = recs[j].Text
					recs[j].Vector = emb.Vector(recs[j].Text)
				}
				b.StartTimer()
				res, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "bench", Version: int64(i + 1), Since: int64(i), Kinds: kinds, Upserts: recs})
				b.StopTimer()
				if err != nil || res.Written != n {
					b.Fatalf("wrote %d of %d: %v", res.Written, n, err)
				}
			}
		})
	}
}

// bigDatabase is a store on a plain redis-server holding a database
// "big" of n tables at version 1, and the record of its table i at
// version v.
func bigDatabase(b *testing.B, n int) (*Store, *embed.Local, func(i int, v int64) index.Record) {
	emb := embed.NewLocal(64)
	opt := Options{Prefix: "b:", Dimensions: emb.Dimensions(), Model: emb.Model(), Algorithm: "FLAT", Weights: index.DefaultWeights, Writer: true}
	s := withVersion(&Store{rdb: testenv.StartRedis(b).Client(), opt: opt, spec: specOf(opt), scorer: "BM25STD"}, 1)
	table := func(i int, v int64) index.Record {
		name := fmt.Sprintf("public.t%d", i)
		c := chunk.Chunk{ID: chunk.ID("big", chunk.KindTable, name, 0), Database: "big", Kind: chunk.KindTable, Name: name, Schema: "public",
			Title: name, Text: "CREATE TABLE " + name + " (id bigint)", Hash: strconv.FormatInt(v, 10), Version: v}
		return index.Record{Chunk: c, Vector: emb.Vector(c.Text)}
	}
	recs := make([]index.Record, 0, n)
	for i := range n {
		recs = append(recs, table(i, 1))
	}
	if _, err := s.Upsert(context.Background(), recs); err != nil {
		b.Fatal(err)
	}
	return s, emb, table
}

// BenchmarkDocEditInBigDatabase is the store's side of one doc edit
// (three sections written, the older ones removed) in a database of
// 10,000 tables, on a plain redis-server.
func BenchmarkDocEditInBigDatabase(b *testing.B) {
	s, emb, _ := bigDatabase(b, 10_000)
	ctx := context.Background()
	b.ReportAllocs()
	v := int64(1)
	for b.Loop() {
		v++
		var sections []index.Record
		for part := range 3 {
			c := chunk.Chunk{ID: chunk.ID("big", chunk.KindDoc, "guide.md", part), Database: "big", Kind: chunk.KindDoc, Name: "guide.md", Part: part,
				Title: "Guide", Text: fmt.Sprintf("section %d, edit %d", part, v), Hash: strconv.FormatInt(v, 10), Version: v}
			sections = append(sections, index.Record{Chunk: c, Vector: emb.Vector(c.Text)})
		}
		if _, err := s.Upsert(ctx, sections); err != nil {
			b.Fatal(err)
		}
		if _, err := s.DeleteStale(ctx, index.Stale{Database: "big", Kinds: []string{chunk.KindDoc}, Names: map[string]int64{"guide.md": v}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMigrationReadsInBigDatabase is what a one-table migration
// reads of the store before it writes, in a database of 10,000 tables on
// a plain redis-server: the stored chunks' hashes, after one table
// changed.
func BenchmarkMigrationReadsInBigDatabase(b *testing.B) {
	const tables = 10_000
	s, _, table := bigDatabase(b, tables)
	ctx := context.Background()
	b.ReportAllocs()
	v := int64(1)
	for b.Loop() {
		v++
		if _, err := s.Upsert(ctx, []index.Record{table(int(v)%tables, v)}); err != nil {
			b.Fatal(err)
		}
		ms, err := s.Metas(ctx, index.Filter{Database: "big", Kinds: []string{chunk.KindTable, chunk.KindView}})
		if err != nil || len(ms) != tables {
			b.Fatalf("%d metas, %v", len(ms), err)
		}
	}
}
