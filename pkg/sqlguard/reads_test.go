package sqlguard

import (
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

func TestPlaceWithoutSearchPath(t *testing.T) {
	cat, err := catalog.Snapshot("pool", "pool.sql", `
CREATE TABLE public.settings (key text, value text);
CREATE SCHEMA films;
CREATE TABLE films.movies (movie_id int PRIMARY KEY, title text);
CREATE TABLE films.ratings (movie_id int, score int);
CREATE TABLE films."Order Details" (id int);
CREATE VIEW films.top AS SELECT title FROM films.movies;
CREATE SCHEMA shop;
CREATE TABLE shop.movies (sku text, title text);
CREATE TABLE shop.orders (id int, sku text);
CREATE SCHEMA archive;
CREATE TABLE archive.ratings (movie_id int, score int);
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql, want string // want: comma-separated, or "error"
	}{
		{"SELECT title FROM films.movies", "films.movies"},
		{"SELECT * FROM FILMS.MOVIES", "films.movies"},
		{"SELECT value FROM settings", "public.settings"},
		// Only one schema has orders; movies goes where orders is.
		{"SELECT m.title FROM movies m JOIN orders o ON o.sku = m.sku", "shop.movies,shop.orders"},
		// ratings is in films and archive; with movies, films has both.
		{"SELECT AVG(r.score) FROM Movies AS m JOIN ratings AS r USING (movie_id)", "films.movies,films.ratings"},
		// One name two schemas have, and nothing to choose by.
		{"SELECT count(*) FROM movies", ""},
		{"SELECT * FROM `Order Details` WHERE id = 1", "films.order details"},
		{"SELECT '`not a name`' AS s, title FROM films.top", "films.top"},
		{"WITH movies AS (SELECT 1) SELECT * FROM movies, films.ratings", "films.ratings"},
		{"SELECT * FROM nowhere", ""},
		{"SELECT FROM WHERE", "error"},
	} {
		var got []string
		q, err := ParseQuery(tc.sql)
		if err == nil {
			got, _ = q.Place(NewNames(cat), "")
		}
		if tc.want == "error" {
			if err == nil {
				t.Errorf("%q: %v, want a parse error", tc.sql, got)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%q: %v, %v; want %q", tc.sql, got, err, tc.want)
		}
	}
}

func TestBackticksAsQuotes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"SELECT `a b` FROM t", `SELECT "a b" FROM t`},
		{"SELECT 'it''s `x`' FROM `t`", "SELECT 'it''s `x`' FROM \"t\""},
		{"SELECT \"q`q\" FROM t", "SELECT \"q`q\" FROM t"},
		{"SELECT `O'Brien` FROM t", `SELECT "O'Brien" FROM t`},
	} {
		if got := backticksAsQuotes(tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// With the schema an example ran in, unqualified names resolve as
// PostgreSQL would on that search_path: the schema, then public, and no
// further; a name found in neither means the example is not this
// database's.
func TestPlaceOnSearchPath(t *testing.T) {
	cat, err := catalog.Snapshot("pool", "pool.sql", `
CREATE TABLE public.settings (key text);
CREATE SCHEMA films;
CREATE TABLE films.movies (id int);
CREATE TABLE films.ratings (movie_id int);
CREATE SCHEMA shop;
CREATE TABLE shop.movies (sku text);
CREATE TABLE shop.orders (sku text);
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sql, schema string
		want        string
		fits        bool
	}{
		{"SELECT * FROM movies", "films", "films.movies", true},
		{"SELECT * FROM movies", "shop", "shop.movies", true},
		{"SELECT * FROM movies", "", "", false}, // two schemas have it, nothing to choose by
		{"SELECT * FROM movies JOIN settings ON true", "FILMS", "films.movies,public.settings", true},
		{"SELECT * FROM orders", "films", "", false}, // not on films' search_path
		{"SELECT * FROM films.ratings, movies", "shop", "films.ratings,shop.movies", true},
		{"SELECT * FROM movies", "warehouse", "", false}, // a schema this catalog lacks
		{"SELECT * FROM movies m JOIN ratings r ON true", "", "films.movies,films.ratings", true},
	} {
		q, err := ParseQuery(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		keys, missing := q.Place(NewNames(cat), tc.schema)
		if fits := len(missing) == 0; strings.Join(keys, ",") != tc.want || fits != tc.fits {
			t.Errorf("%q in %q: %v (fits %v), want %q (fits %v)", tc.sql, tc.schema, keys, fits, tc.want, tc.fits)
		}
	}
}

func TestCheckExample(t *testing.T) {
	cat, err := catalog.Snapshot("shop", "shop.sql", `
CREATE TABLE public.orders (id int);
CREATE SCHEMA sales;
CREATE TABLE sales.targets (id int);
CREATE SCHEMA hr;
CREATE TABLE hr.targets (id int);
`)
	if err != nil {
		t.Fatal(err)
	}
	cat.Version = 7
	for _, tc := range []struct {
		sql, schema, want string // want: "" when it fits, else a part of the error
	}{
		{"SELECT count(*) FROM orders", "", ""},
		{"SELECT * FROM targets JOIN orders ON true", "sales", ""},
		{"SELECT * FROM targets", "", "reads targets, which database shop (catalog version 7) has neither in public nor in one schema alone"},
		{"SELECT * FROM refunds JOIN sales.quotas ON true", "sales", "reads refunds, sales.quotas, not in schema sales or public of database shop"},
		{"SELECT * FORM orders", "", `syntax error at or near "FORM" at character 10`},
		{"SELECT 'a'" + strings.Repeat("||'a'", 25000) + " FROM orders", "", "nested more than 1000 levels deep (each operator of a chain such as a+b+c counts one); refused before parsing at byte 5011"},
	} {
		err := CheckExample(tc.sql, tc.schema, NewNames(cat))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%.80q in %q: %.300v, want %q", tc.sql, tc.schema, err, tc.want)
		}
	}
}

// TestPlaceFollowsRenames: an example written before a migration renamed
// its tables still reads them, and is rewritten to their names now.
func TestPlaceFollowsRenames(t *testing.T) {
	cat, err := catalog.New("shop").Apply("0001.sql", `
CREATE TABLE categories (id int, title text);
CREATE TABLE products (id int, category_id int);
CREATE SCHEMA sales;
CREATE TABLE sales.orders (id int);`)
	if err != nil {
		t.Fatal(err)
	}
	if cat, err = cat.Apply("0007_rename.sql", `ALTER TABLE categories RENAME TO genres; ALTER TABLE sales.orders SET SCHEMA public;`); err != nil {
		t.Fatal(err)
	}
	names := NewNames(cat)
	for _, tc := range []struct {
		sql, schema string
		keys        string
		followed    int
		rewritten   string
	}{
		{"SELECT c.title FROM categories c JOIN products p ON p.category_id = c.id", "", "public.genres,public.products", 1,
			"SELECT c.title FROM genres c JOIN products p ON p.category_id = c.id"},
		{"SELECT title FROM public.categories", "", "public.genres", 1, "SELECT title FROM public.genres"},
		{`SELECT title FROM "categories"`, "", "public.genres", 1, "SELECT title FROM genres"},
		{"SELECT title FROM `categories`", "", "public.genres", 1, "SELECT title FROM genres"},
		{"SELECT id FROM sales.orders", "", "public.orders", 1, "SELECT id FROM public.orders"},
		{"SELECT id FROM orders", "sales", "public.orders", 0, "SELECT id FROM orders"},
		{"SELECT id FROM products", "", "public.products", 0, "SELECT id FROM products"},
	} {
		q, err := ParseQuery(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p := q.PlaceAll(names, tc.schema)
		if got := strings.Join(p.Keys, ","); got != tc.keys || len(p.Missing) > 0 || len(p.Followed) != tc.followed {
			t.Errorf("%s: keys %s, missing %v, followed %v", tc.sql, got, p.Missing, p.Followed)
		}
		if got := q.Rewrite(tc.sql, p.Followed, nil); got != tc.rewritten {
			t.Errorf("%s: rewritten %q, want %q", tc.sql, got, tc.rewritten)
		}
	}
	if p := mustParse(t, "SELECT 1 FROM categories_old").PlaceAll(names, ""); len(p.Missing) != 1 {
		t.Errorf("a name nothing was renamed from: %+v", p)
	}
	f := mustParse(t, "SELECT 1 FROM categories").PlaceAll(names, "").Followed
	if len(f) != 1 || f[0].String() != "public.categories → public.genres (0007_rename.sql)" {
		t.Errorf("followed %v", f)
	}
}

func mustParse(t *testing.T, sql string) *Query {
	t.Helper()
	q, err := ParseQuery(sql)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestFollowColumns: column references by a name a migration renamed
// follow it, qualified by their relation's alias or, unqualified, when
// one relation alone had the name; a current name is left alone.
func TestFollowColumns(t *testing.T) {
	cat, err := catalog.New("shop").Apply("0001.sql", `
CREATE TABLE categories (id int, title text, slug text);
CREATE TABLE products (id int, category_id int, title text);`)
	if err != nil {
		t.Fatal(err)
	}
	if cat, err = cat.Apply("0008_label.sql", `ALTER TABLE categories RENAME COLUMN title TO label; ALTER TABLE categories RENAME COLUMN slug TO handle; ALTER TABLE categories RENAME TO genres;`); err != nil {
		t.Fatal(err)
	}
	names := NewNames(cat)
	for _, tc := range []struct{ sql, rewritten, followed string }{
		{"SELECT c.title, p.title FROM categories c JOIN products p ON p.category_id = c.id",
			"SELECT c.label, p.title FROM genres c JOIN products p ON p.category_id = c.id",
			"column public.genres.title → label (0008_label.sql)"},
		{"SELECT slug FROM categories WHERE slug <> ''", "SELECT handle FROM genres WHERE handle <> ''", "column public.genres.slug → handle (0008_label.sql)"},
		// title is products' now: unqualified, it is not followed.
		{"SELECT title FROM categories JOIN products ON products.category_id = categories.id", "SELECT title FROM genres JOIN products ON products.category_id = genres.id", ""},
		{"SELECT categories.title FROM categories", "SELECT genres.label FROM genres", "column public.genres.title → label (0008_label.sql)"},
	} {
		q := mustParse(t, tc.sql)
		p := q.PlaceAll(names, "")
		cols := q.FollowColumns(names, p)
		var got []string
		for _, c := range cols {
			got = append(got, c.String())
		}
		if strings.Join(got, "; ") != tc.followed {
			t.Errorf("%s: followed %q, want %q", tc.sql, got, tc.followed)
		}
		if rw := q.Rewrite(tc.sql, p.Followed, cols); rw != tc.rewritten {
			t.Errorf("%s: rewritten\n %s\nwant\n %s", tc.sql, rw, tc.rewritten)
		}
	}
}
