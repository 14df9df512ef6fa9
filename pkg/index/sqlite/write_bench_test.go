package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// BenchmarkReplaceSchema is one projection that rewrites n changed tables
// of a database: what the projection after a run of n migrations writes,
// under the store's one writer.
func BenchmarkReplaceSchema(b *testing.B) {
	const dim = 512
	for _, n := range []int{1, 32} {
		b.Run(fmt.Sprintf("changed=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "index.db"), dim)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			recs := func(version int64) []index.Record {
				out := make([]index.Record, n)
				for i := range out {
					vec := make([]float32, dim)
					vec[(i+int(version))%dim] = 1
					var r index.Record
					r.Vector = vec
					r.ID, r.Database, r.Kind, r.Name, r.Schema = fmt.Sprintf("db:table:public.t%d", i), "db", chunk.KindTable, fmt.Sprintf("public.t%d", i), "public"
					r.Title = fmt.Sprintf("table public.t%d", i)
					r.Text = fmt.Sprintf("CREATE TABLE public.t%d (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz, previous_id bigint REFERENCES public.t%d) -- version %d", i, i+1, version)
					r.Columns = []string{"id", "name", "created_at", "previous_id"}
					r.Hash, r.Version = fmt.Sprintf("h%d", version), version
					out[i] = r
				}
				return out
			}
			b.ReportAllocs()
			v := int64(0)
			for b.Loop() {
				v++
				if _, err := s.ReplaceSchema(ctx, index.SchemaReplace{Database: "db", Version: v, Since: v - 1,
					Kinds: []string{chunk.KindTable, chunk.KindView}, Upserts: recs(v)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDocRun is a run of 32 doc edits of three sections each, as a
// worker writes them (indexer.Docs): the sections at once, then the
// older sections removed. Each section's write checks and raises its
// doc's mark.
func BenchmarkDocRun(b *testing.B) {
	const dim, docs, sections = 512, 32, 3
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "index.db"), dim)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	v := int64(0)
	for b.Loop() {
		recs := make([]index.Record, 0, docs*sections)
		names := make(map[string]int64, docs)
		for d := range docs {
			v++
			name := fmt.Sprintf("guides/doc-%d.md", d)
			names[name] = v
			for part := range sections {
				vec := make([]float32, dim)
				vec[(d+part)%dim] = 1
				var r index.Record
				r.Vector = vec
				r.ID, r.Database, r.Kind, r.Name, r.Part = chunk.ID("db", chunk.KindDoc, name, part), "db", chunk.KindDoc, name, part
				r.Title = fmt.Sprintf("Doc %d > Section %d", d, part)
				r.Text = fmt.Sprintf("Section %d of doc %d, edit %d: how refunds are booked against orders.", part, d, v)
				r.Hash, r.Version = fmt.Sprintf("h%d", v), v
				recs = append(recs, r)
			}
		}
		if _, err := s.Upsert(ctx, recs); err != nil {
			b.Fatal(err)
		}
		if _, err := s.DeleteStale(ctx, index.Stale{Database: "db", Kinds: []string{chunk.KindDoc}, Names: names}); err != nil {
			b.Fatal(err)
		}
	}
}
