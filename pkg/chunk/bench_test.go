package chunk

import (
	"fmt"
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

// BenchmarkChunkerMigration chunks a catalog of ten thousand tables after
// a migration that added a column to one of them, as a worker does each
// version: the two versions alternate, each one table from the last.
func BenchmarkChunkerMigration(b *testing.B) {
	var ddl []byte
	for i := range 10_000 {
		ddl = fmt.Appendf(ddl, "CREATE TABLE t%d (id bigint PRIMARY KEY, name text, note text", i)
		if i > 0 {
			ddl = fmt.Appendf(ddl, ", t%d_id bigint REFERENCES t%d", i-1, i-1)
		}
		ddl = append(ddl, ");\n"...)
	}
	base, err := catalog.Snapshot("db", "big.sql", string(ddl))
	if err != nil {
		b.Fatal(err)
	}
	next, err := base.Apply("m.sql", "ALTER TABLE t5000 ADD COLUMN extra text;")
	if err != nil {
		b.Fatal(err)
	}
	k := NewChunker(Options{})
	k.Catalog(base)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c := base
		if i++; i%2 == 1 {
			c = next
		}
		k.Catalog(c)
	}
}
