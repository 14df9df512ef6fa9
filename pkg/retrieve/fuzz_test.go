package retrieve_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/indexer"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// Two schemas alike but for their names, so that routing, hedging and
// the schema shares run on every input; no keys on one side, so that
// join inference does too.
const fuzzDDL = `
CREATE SCHEMA east;
CREATE SCHEMA west;
CREATE TABLE east.customers (cust_id int PRIMARY KEY, cust_nm text, signup_dt date);
CREATE TABLE east.orders (order_id int PRIMARY KEY, cust_id int REFERENCES east.customers, total_amt numeric, status text);
CREATE TABLE west.customers (customer_id int PRIMARY KEY, full_name text, country text);
CREATE TABLE west.orders (id int PRIMARY KEY, customer_id int, amount numeric, placed_at timestamptz);
CREATE TABLE west.order_lines (order_id int, product_id int, qty int);
CREATE TYPE west.mood AS ENUM ('happy', 'sad');
CREATE TABLE "West Side"."Product Catalog" ("productID" int, "Unit Price ($)" numeric, mood west.mood);
COMMENT ON TABLE east.orders IS 'Checkouts of the east store.';
`

// FuzzRetrieve: no question or hint, however odd (quotes and operators
// FTS5 and RediSearch give meaning to, numbers, dates, other scripts,
// invalid UTF-8, very long words), makes retrieval fail or return what
// the index does not hold; the daemon answers whatever a caller sends.
func FuzzRetrieve(f *testing.F) {
	ddl := strings.Replace(fuzzDDL, `CREATE TABLE "West Side"`, `CREATE SCHEMA "West Side"; CREATE TABLE "West Side"`, 1)
	cat, err := catalog.Snapshot("shop", "shop.sql", ddl)
	if err != nil {
		f.Fatal(err)
	}
	s, e := indexCatalogs(f, cat)
	ctx := context.Background()
	docs := chunk.Doc("shop", "revenue.md", "Revenue", "# Revenue\n\nNet revenue is `east.orders.total_amt` less refunds.\n\n```sql\nSELECT sum(amount) FROM west.orders\n```", nil, chunk.Options{})
	ex := chunk.Example("shop", "west", "x1", "How many orders per customer?", "SELECT customer_id, count(*) FROM orders GROUP BY 1")
	if _, err := indexer.Chunks(ctx, s, e, append(docs, ex)); err != nil {
		f.Fatal(err)
	}
	r, err := retrieve.New(s, e, oneCatalog{cat}, retrieve.DefaultConfig)
	if err != nil {
		f.Fatal(err)
	}
	known := map[string]bool{}
	for _, t := range cat.Tables() {
		known[t.QualName().Key()] = true
	}
	for _, seed := range [][2]string{
		{"Which customers placed the most orders?", ""},
		{"total amount of orders in 2024-03-01 to 2024/12/31", "amount = sum(total_amt)"},
		{`"unit price" NEAR/3 product* -mood OR (qty:5) @status:{x} ~cust_nm`, `'; DROP TABLE x; --`},
		{"顧客の注文はいくつ？ Müller's Bestellungen ≥ 10 €", "naïve café"},
		{strings.Repeat("a", 5000), strings.Repeat("ab ", 2000)},
		{"\xff\xfe orders \x00 customers", "\x80"},
		{"east west West Side productID Unit Price ($)", ""},
		{"   ", ""},
		{"?!.,;:", "*"},
	} {
		f.Add(seed[0], seed[1], uint8(10))
	}
	f.Fuzz(func(t *testing.T, q, hints string, k uint8) {
		if strings.TrimSpace(q) == "" {
			return // the daemon refuses an empty question before retrieval
		}
		res, err := r.Retrieve(ctx, retrieve.Request{Database: "shop", Question: q, Hints: hints, K: int(k % 32)})
		if err != nil {
			t.Fatalf("Retrieve(%q, hints %q): %v", q, hints, err)
		}
		want := int(k % 32)
		if want <= 0 {
			want = 10
		}
		ranked, seen := 0, map[string]bool{}
		for _, it := range res.Items {
			if it.Bridge == "" {
				ranked++
			}
			if seen[it.Kind+" "+it.Name] {
				t.Errorf("%s %s twice", it.Kind, it.Name)
			}
			seen[it.Kind+" "+it.Name] = true
			if (it.Kind == chunk.KindTable || it.Kind == chunk.KindView) && !known[it.Name] {
				t.Errorf("%s %s is not in the catalog", it.Kind, it.Name)
			}
		}
		if ranked > want {
			t.Errorf("%d ranked results for k %d", ranked, want)
		}
		total := 0.0
		for _, sh := range res.Schemas {
			if sh.Share < 0 || sh.Share > 1 || sh.Schema == "" {
				t.Errorf("schema share %+v", sh)
			}
			total += sh.Share
		}
		// Shares are rounded to three places for the reply, so each may
		// carry half a thousandth more than its exact value.
		if total > 1+0.0005*float64(len(res.Schemas))+1e-9 {
			t.Errorf("schema shares sum to %v: %+v", total, res.Schemas)
		}
		for _, term := range res.Terms {
			if !utf8.ValidString(term.Term) {
				t.Errorf("query term %q is not UTF-8", term.Term)
			}
		}
	})
}
