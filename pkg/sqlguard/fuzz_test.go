package sqlguard

import (
	"errors"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// FuzzCheck: any text is allowed with a result or refused with a
// *Rejection; never a panic. Run longer with:
//
//	go test ./pkg/sqlguard -run '^$' -fuzz FuzzCheck -fuzztime 5m
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"SELECT 1", "WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "SELECT pg_sleep(1)",
		"SELECT a.b.c.d FROM t", "SELECT * FROM generate_series(1,2) g(x) JOIN LATERAL (SELECT x) y ON true",
		"VALUES (1), (2) ORDER BY 1", "SELECT (SELECT max(id) FROM orders) FILTER (WHERE true)",
		"SELECT * FROM ONLY orders * ", "TABLE orders", "SELECT ROW(1, 2).f1",
	} {
		f.Add(s)
	}
	cat, err := catalog.Snapshot("db", "s.sql", "CREATE TABLE orders (id int, total numeric); CREATE SCHEMA b; CREATE TABLE b.t (x int);")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		res, err := Check(sql, cat)
		if err != nil {
			var r *Rejection
			if !errors.As(err, &r) {
				t.Fatalf("error is not a *Rejection: %T %v", err, err)
			}
			return
		}
		if res == nil {
			t.Fatal("nil result without an error")
		}
	})
}
