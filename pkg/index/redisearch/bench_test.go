package redisearch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/redistest"
	"github.com/schemaq/schemaq/pkg/sharedtest"
)

// BenchmarkUpsertSpiderUnion writes the 876 SpiderUnion table chunks
// (512-dimension vectors) into a real redis-server: the store's side of
// indexing, pipelined Lua calls included. The query engine's own
// indexing, which a plain redis-server does not do, comes on top.
func BenchmarkUpsertSpiderUnion(b *testing.B) {
	sql, err := os.ReadFile(filepath.Join(sharedtest.Dir(b), "bench", "spiderunion", "schema.sql"))
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
	srv := redistest.Start(b)
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
