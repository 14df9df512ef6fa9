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
	"github.com/schemaq/schemaq/pkg/testenv"
)

// Two schemas alike but for their names, so that routing, hedging and
// the schema shares run on every input; no keys on one side, so that
// join inference does too; and a schema of more tables than the first
// five, with junctions, so that join completion places tables.
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
CREATE SCHEMA films;
CREATE TABLE films.language (language_id int PRIMARY KEY, name text);
CREATE TABLE films.film (film_id int PRIMARY KEY, title text, length int, language_id int REFERENCES films.language);
CREATE TABLE films.actor (actor_id int PRIMARY KEY, first_name text, last_name text);
CREATE TABLE films.film_actor (actor_id int, film_id int, PRIMARY KEY (actor_id, film_id));
CREATE TABLE films.category (category_id int PRIMARY KEY, name text);
CREATE TABLE films.film_category (film_id int REFERENCES films.film, category_id int REFERENCES films.category, PRIMARY KEY (film_id, category_id));
CREATE TABLE films.inventory (inventory_id int PRIMARY KEY, film_id int REFERENCES films.film, store_id int);
CREATE TABLE films.rental (rental_id int PRIMARY KEY, inventory_id int REFERENCES films.inventory, customer_id int);
CREATE SCHEMA games;
CREATE TABLE games.genre (id int PRIMARY KEY, genre_name text);
CREATE TABLE games.game (id int PRIMARY KEY, genre_id int REFERENCES games.genre, game_name text);
CREATE TABLE games.publisher (id int PRIMARY KEY, publisher_name text);
CREATE TABLE games.game_publisher (id int PRIMARY KEY, game_id int REFERENCES games.game, publisher_id int REFERENCES games.publisher);
CREATE TABLE games.platform (id int PRIMARY KEY, platform_name text);
CREATE TABLE games.game_platform (id int PRIMARY KEY, game_publisher_id int REFERENCES games.game_publisher, platform_id int REFERENCES games.platform);
CREATE TABLE games.region_sales (game_platform_id int REFERENCES games.game_platform, num_sales real);
`

// FuzzRetrieve: no question or hint, however odd (quotes and operators
// FTS5 and RediSearch give meaning to, numbers, dates, other scripts,
// invalid UTF-8, very long words), makes retrieval fail, return what
// the index does not hold, or order its first k otherwise than when
// more are asked for; the daemon answers whatever a caller sends.
func FuzzRetrieve(f *testing.F) {
	testenv.CapFuzzWorker(f)
	ddl := strings.Replace(fuzzDDL, `CREATE TABLE "West Side"`, `CREATE SCHEMA "West Side"; CREATE TABLE "West Side"`, 1) + peopleSchemas(4, 8)
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
		{"Which films are starred by Kirk Jovovich, and in which category?", "rental of the film in Nederlands"},
		{"Which games were published by 10TACLE Studios on the platform of Anne Smith?", ""},
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
		// Nothing before the cut depends on k: the results are the first
		// of a longer list, join completion's placements included.
		long, err := r.Retrieve(ctx, retrieve.Request{Database: "shop", Question: q, Hints: hints, K: 31})
		if err != nil {
			t.Fatalf("Retrieve(%q, hints %q, k 31): %v", q, hints, err)
		}
		if len(long.Items) < len(res.Items) {
			t.Fatalf("k 31 gave %d items, k %d gave %d", len(long.Items), want, len(res.Items))
		}
		for i, it := range res.Items {
			if l := long.Items[i]; l.Kind != it.Kind || l.Name != it.Name || l.Placed != it.Placed || l.Bridge != it.Bridge {
				t.Errorf("item %d: %s %s (%q) at k %d, %s %s (%q) at k 31", i, it.Kind, it.Name, it.Placed, want, l.Kind, l.Name, l.Placed)
			}
		}
	})
}
