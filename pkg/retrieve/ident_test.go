package retrieve

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

const identDDL = `
CREATE SCHEMA films;
CREATE TABLE films.movies (movie_id int PRIMARY KEY, movie_release_year int, "directorName" text, title text);
CREATE TABLE films.ratings (movie_id int REFERENCES films.movies, rating_score int, critic text, "Free Meal Count (K-12)" int);
CREATE SCHEMA shop;
CREATE TABLE shop.orders (order_id int PRIMARY KEY, total numeric, title text);
CREATE TABLE shop.movies (sku text PRIMARY KEY, title text, price numeric);
CREATE VIEW films.top_rated AS SELECT m.title, r.rating_score AS best_score FROM films.movies m JOIN films.ratings r USING (movie_id);
`

func TestIdentifierRefs(t *testing.T) {
	cat, err := catalog.Snapshot("db", "ident.sql", identDDL)
	if err != nil {
		t.Fatal(err)
	}
	g := buildGraph(cat, nil)
	for _, tc := range []struct {
		text string
		want string // name→tables, most specific first; "" for none
	}{
		{"released in 1945 refers to movie_release_year = 1945", "movie_release_year→films.movies"},
		{"who directed it: directorName", "directorname→films.movies"},
		{"eligible rate = `Free Meal Count (K-12)` / 100", "free meal count (k-12)→films.ratings"},
		{`the "rating_score" column`, "rating_score→films.ratings"},
		{"orders.total above 100", "orders.total→shop.orders"},
		{"everything in shop.movies", "shop.movies→shop.movies"},
		// Views are named like tables: by a column, qualified or not.
		{"where best_score > 9", "best_score→films.top_rated"},
		{"rows of films.top_rated", "films.top_rated→films.top_rated"},
		{"top_rated.best_score above 9", "top_rated.best_score→films.top_rated"},
		{"top_rated.rating_score is not a column of the view", ""},
		// A name two tables share is less specific: it comes after.
		{"movie_id and rating_score", "rating_score→films.ratings movie_id→films.movies,films.ratings"},
		// Plain words are BM25's; unknown names and values name nothing.
		{"the title and the total of each movie", ""},
		{"where store_code = 'A1' and \"Harrison Ford\" starred", ""},
		{"orders.price is not a column of orders", ""},
	} {
		var got []string
		for _, ref := range g.identifierRefs(tc.text) {
			got = append(got, ref.name+"→"+strings.Join(ref.tables, ","))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q: %q, want %q", tc.text, g, tc.want)
		}
	}
}

// An identifier that too many tables have names none of them.
func TestIdentifierRefsSkipCommonNames(t *testing.T) {
	var ddl strings.Builder
	for i := range maxIdentifierOwners + 1 {
		fmt.Fprintf(&ddl, "CREATE TABLE t%d (id int, created_at timestamp);\n", i)
	}
	ddl.WriteString("CREATE TABLE audit (created_by text);")
	cat, err := catalog.Snapshot("db", "many.sql", ddl.String())
	if err != nil {
		t.Fatal(err)
	}
	g := buildGraph(cat, nil)
	refs := g.identifierRefs("rows whose created_at is after created_by's")
	if len(refs) != 1 || refs[0].name != "created_by" {
		t.Errorf("refs %+v, want created_by alone", refs)
	}
}

// A partitioned table's names belong to it, not to each partition: a
// table of many partitions is still one owner.
func TestIdentifierRefsSkipPartitions(t *testing.T) {
	var ddl strings.Builder
	ddl.WriteString("CREATE TABLE payments (payment_id int, paid_at date) PARTITION BY RANGE (paid_at);\n")
	for m := 1; m <= maxIdentifierOwners+2; m++ {
		fmt.Fprintf(&ddl, "CREATE TABLE payments_%02d PARTITION OF payments FOR VALUES FROM ('2024-%02d-01') TO ('2024-%02d-28');\n", m, m, m)
	}
	cat, err := catalog.Snapshot("db", "parts.sql", ddl.String())
	if err != nil {
		t.Fatal(err)
	}
	refs := buildGraph(cat, nil).identifierRefs("payments by payment_id")
	if len(refs) != 1 || refs[0].name != "payment_id" || strings.Join(refs[0].tables, ",") != "public.payments" {
		t.Errorf("refs %+v, want payment_id in public.payments alone", refs)
	}
}
