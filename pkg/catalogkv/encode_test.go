package catalogkv

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// BenchmarkEncode is the catalog encoding every write pays, at a hundred
// tables (a small database's history) and at a thousand.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{100, 1000} {
		c := catalog.New("bench")
		var sql strings.Builder
		for i := range n {
			fmt.Fprintf(&sql, "CREATE TABLE t%d (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now(), owner_id bigint);\n", i)
		}
		c, err := c.Apply("bench.sql", sql.String())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tables=%d/fresh", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tables=%d/reused", n), func(b *testing.B) {
			b.ReportAllocs()
			var e encoder
			for b.Loop() {
				if _, err := e.encode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
