package verify

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/sqlguard"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const shopDDL = `
CREATE TABLE customers (id bigint PRIMARY KEY, email text, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, total numeric, placed_at timestamptz);
CREATE TABLE secrets (id int, value text);
INSERT INTO customers SELECT g, 'c' || g || '@x.com', 'c' || g FROM generate_series(1, 1000) g;
ANALYZE customers;
CREATE ROLE reader NOLOGIN;
ALTER ROLE reader LOGIN;
GRANT USAGE ON SCHEMA public TO reader;
GRANT SELECT ON customers, orders TO reader;
`

// TestVerifyAgainstPostgres EXPLAINs answers as a reader role: what
// plans passes, what PostgreSQL cannot plan is refused with its message,
// plans past the limits are refused as too expensive, and nothing runs.
func TestVerifyAgainstPostgres(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "verify_shop")
	if _, err := p.Query("verify_shop", shopDDL); err != nil {
		t.Fatal(err)
	}
	v, err := New(Config{DSN: p.DSN("verify_{database}", "reader"), MaxRows: 1e6, MaxCost: 1e7})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tests := []struct {
		sql      string
		planning bool   // want a planning refusal
		want     string // a substring of the refusal; "" for none
	}{
		{"SELECT c.name, count(o.id) FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name", false, ""},
		{"SELECT name + 1 FROM customers", true, "operator does not exist: text + integer"},
		{"SELECT nickname FROM customers", true, `column "nickname" does not exist`},
		{"SELECT * FROM secrets", true, "permission denied for table secrets"},
		{"SELECT a.id FROM customers a, customers b, customers c", false, "too expensive: PostgreSQL estimates a cost of"},
		{"SELECT g FROM generate_series(1, 2000000000) g WHERE g % 7 = 0", false, "too expensive: PostgreSQL estimates"},
		{"SELECT a.id FROM customers a, customers b LIMIT 10", false, ""},
		// EXPLAIN plans and never runs: the sleep would outlast the timeout.
		{"SELECT pg_sleep(30)", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			t0 := time.Now()
			err := v.Verify(context.Background(), "shop", tc.sql)
			if time.Since(t0) > 5*time.Second {
				t.Errorf("verification took %v: it must not run the query", time.Since(t0))
			}
			var r *sqlguard.Rejection
			kind := sqlguard.ErrUnsafe
			if tc.planning {
				kind = sqlguard.ErrInvalid
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && !errors.As(err, &r):
				t.Fatalf("got %v, want a refusal with %q", err, tc.want)
			case tc.want != "" && (r.Kind != kind || !strings.Contains(r.Reason, tc.want)):
				t.Errorf("refusal %+v, want %v and %q", r, kind, tc.want)
			}
		})
	}
	// A server that does not answer is not a verdict.
	down, err := New(Config{DSN: "host=/nonexistent port=5432 user=reader dbname=x", Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := down.Verify(context.Background(), "shop", "SELECT 1"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unreachable server: %v, want ErrUnavailable", err)
	}
}
