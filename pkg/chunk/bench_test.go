package chunk

import (
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// Chunking benchmarks, alone and together with the Apply they follow in a
// worker. Run:
//
//	go test ./pkg/chunk -run '^$' -bench . -benchmem -count 6 | tee chunk.txt
func BenchmarkChunk(b *testing.B) {
	for _, tc := range []struct{ name, path string }{
		{"input=spiderunion", "bench/spiderunion/schema.sql"},
		{"input=gisia", "corpus/gisia/db/structure.sql"},
	} {
		sql := testenv.ReadShared(b, strings.Split(tc.path, "/")...)
		c, err := catalog.Snapshot("db", tc.path, sql)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/stage=chunk", func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(Catalog(c, Options{}))
			}
			b.ReportMetric(float64(n), "chunks/op")
		})
		b.Run(tc.name+"/stage=apply+chunk", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := catalog.Snapshot("db", tc.path, sql)
				if err != nil {
					b.Fatal(err)
				}
				Catalog(c, Options{})
			}
		})
	}
}

// A worker re-chunks its database's catalog after every migration; a
// Chunker reuses every table the migration left alone, so what is left is
// the join index over the whole catalog. Run beside BenchmarkChunk.
func BenchmarkChunkerUnchanged(b *testing.B) {
	sql := testenv.ReadShared(b, "corpus", "gisia", "db", "structure.sql")
	c, err := catalog.Snapshot("db", "structure.sql", sql)
	if err != nil {
		b.Fatal(err)
	}
	k := NewChunker(Options{})
	k.Catalog(c)
	b.ReportAllocs()
	for b.Loop() {
		k.Catalog(c)
	}
}
