package sqlguard

import (
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// TestFit resolves columns as PostgreSQL would, leniently in case, and
// says stale only where a name resolves to nothing.
func TestFit(t *testing.T) {
	cat, err := catalog.New("shop").Apply("0001.sql", `
CREATE TABLE customers (id int PRIMARY KEY, name text, "Signed Up" date);
CREATE TABLE payments (id int PRIMARY KEY, customer_id int REFERENCES customers (id), amount numeric, paid_on date);
ALTER TABLE payments RENAME COLUMN paid_on TO paid_at;
CREATE VIEW big AS SELECT * FROM payments WHERE amount > 100;`)
	if err != nil {
		t.Fatal(err)
	}
	names := NewNames(cat)
	tests := []struct {
		sql, stale string // stale: a part of why; "" fits
	}{
		{"SELECT c.name FROM customers c", ""},
		{"SELECT c.nickname FROM customers c", "column c.nickname does not exist in public.customers"},
		{"SELECT nickname FROM customers", "column nickname is in none of the relations it reads (public.customers)"},
		{"SELECT name, amount FROM customers JOIN payments ON payments.customer_id = customers.id", ""},
		{"SELECT NAME, \"Signed Up\" FROM Customers", ""},
		{"SELECT `Signed Up` FROM customers", ""},
		{"SELECT row_to_json(c) FROM customers c", ""},
		{"SELECT total FROM (SELECT sum(amount) AS total FROM payments) s ORDER BY total", ""},
		{"WITH t(x) AS (SELECT amount FROM payments) SELECT x FROM t", ""},
		{"SELECT n FROM customers, generate_series(1, 3) n", ""},
		{"SELECT g FROM customers, generate_series(1, 3) AS g", ""},
		{"SELECT ctid, name FROM customers", ""},
		{"SELECT paid_on FROM payments", ""}, // renamed: followed
		{"SELECT p.paid_on FROM payments p", ""},
		{"SELECT amount FROM big", ""},
		{"SELECT nope FROM big", "column nope is in none of the relations it reads (public.big)"},
		{"SELECT id FROM ghosts", "reads ghosts"},
		{"SELECT x.anything FROM (SELECT 1) x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			q, err := ParseQuery(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			err = q.Fit(names, "").Err()
			switch {
			case tt.stale == "" && err != nil:
				t.Fatalf("stale: %v", err)
			case tt.stale != "" && (err == nil || !strings.Contains(err.Error(), tt.stale)):
				t.Fatalf("got %v, want %q", err, tt.stale)
			}
		})
	}
}
