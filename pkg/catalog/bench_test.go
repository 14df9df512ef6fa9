package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v5"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// Apply benchmarks over real input. Run:
//
//	go test ./pkg/catalog -run '^$' -bench . -benchmem -count 6 | tee apply.txt
//	benchstat apply.txt
func BenchmarkApply(b *testing.B) {
	for _, tc := range []struct{ name, path string }{
		{"input=spiderunion", "bench/spiderunion/schema.sql"},
		{"input=gisia", "corpus/gisia/db/structure.sql"},
		{"input=pagila", "corpus/pagila/pagila-schema.sql"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			sql := testenv.ReadShared(b, strings.Split(tc.path, "/")...)
			split, err := pg.SplitWithScanner(stripClientData(sql), true)
			if err != nil {
				b.Fatal(err)
			}
			stmts := len(split)
			b.SetBytes(int64(len(sql)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Snapshot("db", tc.path, sql); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(stmts), "stmts/op")
		})
	}
}

// BenchmarkApplyHistory replays Lemmy's 342 migrations, one Apply each, as
// a worker would: every Apply clones the catalog it starts from.
func BenchmarkApplyHistory(b *testing.B) {
	dir := testenv.SharedPath(b, "corpus", "lemmy")
	order, err := os.ReadFile(filepath.Join(dir, "ORDER.txt"))
	if err != nil {
		b.Fatal(err)
	}
	var files []string
	for _, rel := range strings.Fields(string(order)) {
		src, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, string(src))
	}
	b.Run("input=lemmy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := New("lemmy")
			for i, f := range files {
				n, err := c.Apply("m", f)
				if err != nil {
					b.Fatalf("migration %d: %v", i+1, err)
				}
				c = n
			}
		}
		b.ReportMetric(float64(len(files)), "migrations/op")
	})
}

// BenchmarkMigrateBigCatalog applies one migration to a catalog of ten
// thousand tables as a worker does: a replay from the catalog written
// last, one statement, and the result made to share what did not change.
func BenchmarkMigrateBigCatalog(b *testing.B) {
	base, err := Snapshot("db", "big.sql", bigSchema(10_000))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, sql string }{
		{"add-column", "ALTER TABLE t%[1]d ADD COLUMN extra_%[2]d text;"},
		{"drop-column", "ALTER TABLE t%[1]d DROP COLUMN note;"},
		{"drop-table", "DROP TABLE t%[1]d CASCADE;"},
		{"rename-table", "ALTER TABLE t%[1]d RENAME TO renamed_%[2]d;"},
	} {
		b.Run("migration="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				r := NewReplay(base)
				if err := r.Apply(context.Background(), "m.sql", fmt.Sprintf(tc.sql, i%10_000, i), Applied{Seq: int64(i)}); err != nil {
					b.Fatal(err)
				}
				r.Catalog().ShareWith(base)
			}
		})
	}
}

// bigSchema is n tables, each referencing the one before.
func bigSchema(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "CREATE TABLE t%d (id bigint PRIMARY KEY, name text NOT NULL, note text, created_at timestamptz", i)
		if i > 0 {
			fmt.Fprintf(&sb, ", t%d_id bigint REFERENCES t%d", i-1, i-1)
		}
		sb.WriteString(");\n")
	}
	return sb.String()
}

// BenchmarkIndexMissesOverPartitions applies a migration of 200 DROP
// INDEX IF EXISTS of indexes the catalog does not hold to one with
// 1,000 partitions of an indexed table. A miss may be a partition's copy
// not derived yet (indexOwner); deriving every partition for each miss
// cost 8 ms apiece.
func BenchmarkIndexMissesOverPartitions(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("CREATE TABLE p (a int, b int, c text) PARTITION BY LIST (a);\nCREATE INDEX ON p (b);\nCREATE INDEX ON p (c);\n")
	for i := range 1000 {
		fmt.Fprintf(&sb, "CREATE TABLE p%d PARTITION OF p FOR VALUES IN (%d);\n", i, i)
	}
	c, err := New("db").Apply("0001.sql", sb.String())
	if err != nil {
		b.Fatal(err)
	}
	var drops strings.Builder
	for i := range 200 {
		fmt.Fprintf(&drops, "DROP INDEX IF EXISTS gone_%d;\n", i)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := c.Apply("0002.sql", drops.String()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDumpOwnedSequences applies a pg_dump of ten thousand tables
// with a serial each, in pg_dump's order: the table, its sequence, the
// sequence's OWNED BY, and the defaults last. OWNED BY of a qualified
// sequence must cost no search of the catalog's defaults: searching them
// made the snapshot quadratic (1.2 s more at ten thousand tables).
func BenchmarkDumpOwnedSequences(b *testing.B) {
	var sb strings.Builder
	const n = 10_000
	for i := range n {
		fmt.Fprintf(&sb, "CREATE TABLE public.t%[1]d (id integer NOT NULL, name text);\nCREATE SEQUENCE public.t%[1]d_id_seq AS integer START WITH 1;\nALTER SEQUENCE public.t%[1]d_id_seq OWNED BY public.t%[1]d.id;\n", i)
	}
	for i := range n {
		fmt.Fprintf(&sb, "ALTER TABLE ONLY public.t%[1]d ALTER COLUMN id SET DEFAULT nextval('public.t%[1]d_id_seq'::regclass);\n", i)
	}
	dump := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Snapshot("db", "dump.sql", dump); err != nil {
			b.Fatal(err)
		}
	}
}
