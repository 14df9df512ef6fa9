package benchmark

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// Every request issued is counted once, including those still waiting
// when the run ends and those that never get a reply.
func TestLoadCountsEveryRequest(t *testing.T) {
	errBusy := errors.New("busy")
	tests := []struct {
		name string
		call func(ctx context.Context, i int) error
		want func(t *testing.T, r LoadReport, issued int64)
	}{
		{"all answered", func(ctx context.Context, i int) error { time.Sleep(time.Millisecond); return nil },
			func(t *testing.T, r LoadReport, issued int64) {
				if r.Answered != int(issued) || r.Errors != 0 || r.Throughput <= 0 {
					t.Errorf("report %+v, %d issued", r, issued)
				}
			}},
		{"a lost replica: requests that never return time out", func(ctx context.Context, i int) error {
			if i%4 == 0 {
				<-ctx.Done() // a daemon killed with the request in flight
				return ctx.Err()
			}
			return nil
		}, func(t *testing.T, r LoadReport, issued int64) {
			if r.TimedOut == 0 || r.Answered == 0 || r.Requests != int(issued) || r.Errors != r.TimedOut {
				t.Errorf("report %+v, %d issued", r, issued)
			}
		}},
		{"error replies by code", func(ctx context.Context, i int) error {
			if i%2 == 0 {
				return errBusy
			}
			return nil
		}, func(t *testing.T, r LoadReport, issued int64) {
			if r.FailedBy["busy"] != r.Failed || r.Failed == 0 || r.Requests != int(issued) || r.FirstError != "busy" {
				t.Errorf("report %+v, %d issued", r, issued)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var issued atomic.Int64
			r := Load(context.Background(), LoadConfig{Concurrency: 4, Duration: 100 * time.Millisecond, Timeout: 30 * time.Millisecond,
				Code: func(err error) string { return err.Error() }},
				func(ctx context.Context, i int) error { issued.Add(1); return tc.call(ctx, i) })
			if r.Requests != r.Answered+r.Failed+r.TimedOut {
				t.Errorf("requests %d != answered %d + failed %d + timed out %d", r.Requests, r.Answered, r.Failed, r.TimedOut)
			}
			tc.want(t, r, issued.Load())
		})
	}
}

func TestReplicate(t *testing.T) {
	sql := `CREATE SCHEMA shop;
CREATE TYPE shop.status AS ENUM ('new', 'paid');
CREATE TABLE shop.customers (id int PRIMARY KEY, name text);
CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int REFERENCES shop.customers (id), status shop.status);
CREATE TABLE notes (id int, body text);`
	copies, err := Replicate(sql, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies.Scripts) != 3 {
		t.Fatalf("%d copies for 7 tables of 3, want 3", len(copies.Scripts))
	}
	want := map[string][]string{"shop": {"shop_2", "shop_3"}, "public": {"public_2", "public_3"}}
	if !maps.EqualFunc(copies.Of, want, slices.Equal[[]string]) {
		t.Errorf("copies named %v, want %v", copies.Of, want)
	}
	third := copies.Scripts[2]
	for _, want := range []string{"CREATE SCHEMA shop_3", "shop_3.customers", "REFERENCES shop_3.customers", "shop_3.status", "public_3.notes"} {
		if !strings.Contains(third, want) {
			t.Errorf("copy 3 lacks %q:\n%s", want, third)
		}
	}
	if strings.Contains(third, "shop.") {
		t.Errorf("copy 3 still names the original schema:\n%s", third)
	}
}

// TestLookAlike pools perturbed copies beside every database: as many
// tables again per copy, under schemas that clash with none of the
// originals (shop_2 is one already), the originals untouched, the keys
// and foreign keys of every copy kept, a share of the other columns
// gone, the same ones for the same seed.
func TestLookAlike(t *testing.T) {
	sql := `CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY, name text, email text, phone text, city text, country text);
CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int REFERENCES shop.customers (id), placed_at date, total numeric, note text, channel text);
CREATE SCHEMA shop_2;
CREATE TABLE shop_2.items (sku text PRIMARY KEY, title text, price numeric, weight numeric, colour text, size text);`
	cat, err := catalog.Snapshot("db", "s.sql", sql)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 3, Drop: 0.5, Seed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Tables()); n != 9 {
		t.Fatalf("%d tables, want 3 copies of 3", n)
	}
	dropped, kept := 0, 0
	for _, tb := range got.Tables() {
		orig := cat.Table(tb.QualName())
		if orig != nil {
			if len(tb.Columns) != len(orig.Columns) {
				t.Errorf("the original %s lost columns", tb.QualName())
			}
			continue
		}
		if !strings.Contains(tb.Schema, "_copy") {
			t.Errorf("copy schema %s could clash with an original (shop_2 exists)", tb.Schema)
		}
		if tb.PrimaryKey == nil {
			t.Errorf("%s lost its key", tb.QualName())
		}
		if tb.Name == "orders" && (len(tb.ForeignKeys) != 1 || tb.Column("customer_id") == nil) {
			t.Errorf("%s lost its foreign key", tb.QualName())
		}
		dropped += 6 - len(tb.Columns)
		kept += len(tb.Columns)
	}
	if dropped == 0 || kept <= 6 {
		t.Errorf("copies dropped %d columns and kept %d: want some of each", dropped, kept)
	}
	again, _, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 3, Drop: 0.5, Seed: 7}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range got.Tables() {
		if a := again.Table(tb.QualName()); a == nil || len(a.Columns) != len(tb.Columns) {
			t.Errorf("%s differs between two runs of one seed", tb.QualName())
		}
	}
	if _, _, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 2, Drop: 1}, nil); err == nil {
		t.Error("dropping every column is refused")
	}
}

// TestLookAlikeWords has copies say their words another way: every
// copy's names in its own words (no former names remembered), joins
// intact, and each question asked of one database in its words, with
// its gold tables there.
func TestLookAlikeWords(t *testing.T) {
	sql := `CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY, name text, email text, "CustomerCity" text);
CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int REFERENCES shop.customers (id), placed_at date, total numeric);
CREATE TABLE shop.order_products (order_id int REFERENCES shop.orders (id), product_id int, quantity int);`
	cat, err := catalog.Snapshot("db", "s.sql", sql)
	if err != nil {
		t.Fatal(err)
	}
	var qs []Question
	for i := range 40 {
		qs = append(qs, Question{ID: i, Question: "Which Customers ordered the most products?", GoldTables: []string{"shop.customers", "shop.orders", "shop.order_products"}})
	}
	la := LookAlike{Copies: 4, Words: 1, Seed: 3}
	got, asked, err := lookAlike(cat, "s.sql", sql, la, qs)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Tables()); n != 12 {
		t.Fatalf("%d tables, want 4 databases of 3", n)
	}
	copied := 0
	for _, tb := range got.Tables() {
		if len(tb.Renamed) > 0 {
			t.Errorf("%s remembers former names %v: search would read the original's words", tb.QualName(), tb.Renamed)
		}
		if tb.Schema == "shop" {
			continue
		}
		if strings.Contains(strings.ToLower(tb.DDL()), "customer") {
			t.Errorf("a copy with every word said another way still says customer:\n%s", tb.DDL())
		}
		copied++
	}
	if copied != 9 {
		t.Errorf("%d copy tables, want 9", copied)
	}
	moved := 0
	for i, q := range asked {
		if len(q.GoldTables) != 3 {
			t.Fatalf("question %d: gold %v", i, q.GoldTables)
		}
		for _, g := range q.GoldTables {
			sch, name, _ := strings.Cut(g, ".")
			tb := findTable(got, sch, name)
			if tb == nil {
				t.Fatalf("question %d (%q): gold table %s is not in the catalog", i, q.Question, g)
			}
			if len(tb.ForeignKeys) == 0 && tb.PrimaryKey == nil {
				t.Errorf("%s lost its keys", g)
			}
		}
		if q.Question == qs[i].Question {
			if !strings.HasPrefix(q.GoldTables[0], "shop.") {
				t.Errorf("question %d asked in the original's words of %v", i, q.GoldTables)
			}
			continue
		}
		moved++
		if strings.Contains(q.Question, "Customers") || !strings.HasPrefix(q.Question, "Which ") || !strings.HasSuffix(q.Question, "?") {
			t.Errorf("question %d reworded to %q", i, q.Question)
		}
	}
	if moved == 0 || moved == len(qs) {
		t.Errorf("%d of %d questions asked of a copy: want some, not all", moved, len(qs))
	}
	again, asked2, err := lookAlike(cat, "s.sql", sql, la, qs)
	if err != nil {
		t.Fatal(err)
	}
	if again.DDL() != got.DDL() || !slices.EqualFunc(asked, asked2, func(a, b Question) bool { return a.Question == b.Question }) {
		t.Error("two runs of one seed differ")
	}
}

func findTable(cat *catalog.Catalog, schema, name string) *catalog.Table {
	for _, tb := range cat.Tables() {
		if strings.EqualFold(tb.Schema, schema) && strings.EqualFold(tb.Name, name) {
			return tb
		}
	}
	return nil
}

func TestSayAnotherWay(t *testing.T) {
	words := map[string]string{"customer": "client", "order": "purchase", "category": "kind", "person": "individual"}
	for _, tc := range []struct{ in, want string }{
		{"customer_id", "client_id"},
		{"CustomerID", "ClientID"},
		{"CUSTOMER_ORDERS", "CLIENT_PURCHASES"},
		{"How many customers placed orders?", "How many clients placed purchases?"},
		{"categories", "kinds"},
		{"people", "individuals"},
		{"ordered", "ordered"},
		{"customer2", "client2"},
		{"Customer City", "Client City"},
	} {
		if got := sayAnotherWay(tc.in, words); got != tc.want {
			t.Errorf("sayAnotherWay(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
