package sqlguard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// BenchmarkRecheckExamples is what a new catalog version costs the worked
// examples: indexing its names (renames included) and placing each of
// ten thousand examples' parsed SQL in it, as retrieval, examples list
// --stale and check do. Parsing is once per example, not per version
// (retrieval caches it by the example's hash); parsed=false adds it.
func BenchmarkRecheckExamples(b *testing.B) {
	var ddl strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&ddl, "CREATE TABLE t%04d (id bigint PRIMARY KEY, ref bigint, v text);\n", i)
	}
	cat, err := catalog.Snapshot("big", "big.sql", ddl.String())
	if err != nil {
		b.Fatal(err)
	}
	var renames strings.Builder
	for i := 0; i < 2000; i += 10 {
		fmt.Fprintf(&renames, "ALTER TABLE t%04d RENAME TO r%04d;\n", i, i)
	}
	if cat, err = cat.Apply("0002_renames.sql", renames.String()); err != nil {
		b.Fatal(err)
	}
	sqls := make([]string, 10_000)
	for i := range sqls {
		a, c := i%2000, (i*7+3)%2000
		sqls[i] = fmt.Sprintf("SELECT x.v, count(*) FROM t%04d x JOIN t%04d y ON y.ref = x.id WHERE x.v = 'k%d' GROUP BY 1", a, c, i)
	}
	for _, parsed := range []bool{true, false} {
		b.Run(fmt.Sprintf("examples=10000/parsed=%v", parsed), func(b *testing.B) {
			qs := make([]*Query, len(sqls))
			for i, s := range sqls {
				if qs[i], err = ParseQuery(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				names := NewNames(cat)
				stale, followed := 0, 0
				for i := range qs {
					q := qs[i]
					if !parsed {
						q, _ = ParseQuery(sqls[i])
					}
					p := q.PlaceAll(names, "")
					if len(p.Missing) > 0 {
						stale++
					}
					followed += len(p.Followed)
				}
				if stale != 0 || followed == 0 {
					b.Fatalf("stale %d, followed %d", stale, followed)
				}
			}
		})
	}
}
