package namewords

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// recount counts c's words from nothing, the slow way.
func recount(c *catalog.Catalog) int {
	words := map[string]bool{}
	add := func(n string) {
		for _, w := range text.Terms(n) {
			words[w] = true
		}
	}
	addAll := func(schema, name string, renamed []catalog.Rename, cols []*catalog.Column) {
		add(schema)
		for _, n := range catalog.NamesOf(name, renamed) {
			add(n)
		}
		for _, col := range cols {
			for _, n := range col.Names() {
				add(n)
			}
		}
	}
	for _, t := range c.Tables() {
		addAll(t.Schema, t.Name, t.Renamed, t.Columns)
	}
	for _, v := range c.Views() {
		addAll(v.Schema, v.Name, v.Renamed, v.Columns)
	}
	return len(words)
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		name, ddl string
		want      int
	}{
		{"empty", "", 0},
		// public, order, line, id, quantity; orders and order are one word.
		{"one table", "CREATE TABLE orders (id int, order_line_quantity int);", 5},
		// public, order, id, b: a is a stop word.
		{"words repeat across tables", "CREATE TABLE a_order (id int); CREATE TABLE b_order (id int, a_id int);", 4},
		{"a view's names count", "CREATE TABLE box (id int); CREATE VIEW shipped AS SELECT id AS parcel FROM box;", 5},
		{"a former name counts", "CREATE TABLE box (id int); ALTER TABLE box RENAME COLUMN id TO code; ALTER TABLE box RENAME TO parcel;", 5},
		{"a schema's name counts", "CREATE SCHEMA billing; CREATE TABLE billing.invoice (id int);", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := catalog.Snapshot("db", "s.sql", tc.ddl)
			if err != nil {
				t.Fatal(err)
			}
			var n Counter
			got := n.Count(c).Words
			if got != tc.want || got != recount(c) {
				t.Fatalf("Count = %d, recount = %d, want %d", got, recount(c), tc.want)
			}
		})
	}
}

// TestCountFollowsMigrations applies random migrations, counting each
// catalog from the one before as a worker does, and holds every count to
// one from nothing. A refused count, not kept, must leave the counter as
// it was.
func TestCountFollowsMigrations(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	word := func() string { return fmt.Sprintf("w%c%c", 'a'+r.IntN(6), 'a'+r.IntN(6)) }
	cat, err := catalog.Snapshot("db", "s.sql", "CREATE TABLE t0 (id int, x_y int);")
	if err != nil {
		t.Fatal(err)
	}
	var n Counter
	n.Keep(n.Count(cat))
	tables, views, incremental := 1, 0, 0
	for i := range 300 {
		var sql strings.Builder
		for range 1 + r.IntN(3) {
			tb := fmt.Sprintf("t%d", r.IntN(tables))
			switch r.IntN(7) {
			case 0:
				fmt.Fprintf(&sql, "CREATE TABLE t%d (id int, %s_%s int);\n", tables, word(), word())
				tables++
			case 1:
				fmt.Fprintf(&sql, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s_%s text;\n", tb, word(), word())
			case 2:
				fmt.Fprintf(&sql, "DROP TABLE IF EXISTS %s CASCADE;\n", tb)
			case 3:
				fmt.Fprintf(&sql, "ALTER TABLE IF EXISTS %s RENAME COLUMN id TO %s;\n", tb, word())
			case 4:
				fmt.Fprintf(&sql, "CREATE OR REPLACE VIEW v%d AS SELECT 1 AS %s;\n", views, word())
				views++
			case 5:
				fmt.Fprintf(&sql, "DROP VIEW IF EXISTS v%d;\n", r.IntN(views+1))
			default:
				fmt.Fprintf(&sql, "ALTER TABLE IF EXISTS %s RENAME TO %s_t%d;\n", tb, word(), tables)
				tables++
			}
		}
		next, err := cat.Apply(fmt.Sprintf("%d.sql", i), sql.String())
		if err != nil {
			continue // a rename onto a taken name, a column already renamed
		}
		next.ShareWith(cat)
		got := n.Count(next)
		if want := recount(next); got.Words != want {
			t.Fatalf("migration %d (%s): counted %d words from the catalog before, %d from nothing", i, sql.String(), got.Words, want)
		}
		if len(got.delta) < got.Words {
			incremental++
		}
		if r.IntN(5) == 0 {
			continue // refused: the counter keeps the catalog before
		}
		n.Keep(got)
		cat = next
	}
	if incremental < 100 {
		t.Fatalf("only %d counts were differences: the test does not test them", incremental)
	}
}

// TestCountAnotherDatabase: a counter handed another database's catalog
// counts it from nothing, not as a difference from the first.
func TestCountAnotherDatabase(t *testing.T) {
	a, err := catalog.Snapshot("a", "s.sql", "CREATE TABLE orders (id int);")
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.Snapshot("b", "s.sql", "CREATE TABLE parcels (weight int);")
	if err != nil {
		t.Fatal(err)
	}
	var n Counter
	n.Keep(n.Count(a))
	got := n.Count(b)
	if got.Words != recount(b) {
		t.Fatalf("counted %d words of b, want %d", got.Words, recount(b))
	}
	n.Keep(got)
	if again := n.Count(b); again.Words != recount(b) || len(again.delta) != 0 {
		t.Fatalf("b counted again: %d words, %d changed, want %d and 0", again.Words, len(again.delta), recount(b))
	}
}

// BenchmarkCount is a worker's count after a migration that alters one
// table of 10,000: from the catalog it wrote, from the same catalog
// decoded again (a replica that lost the write to another), and from
// nothing (a snapshot, or a worker's first event of the database).
func BenchmarkCount(b *testing.B) {
	var ddl strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&ddl, "CREATE TABLE order_line_%d (t%d_id int PRIMARY KEY, product_code_%d text, shipped_at date, quantity int);\n", i, i, i%500)
	}
	base, err := catalog.Snapshot("db", "s.sql", ddl.String())
	if err != nil {
		b.Fatal(err)
	}
	next, err := base.Apply("m.sql", "ALTER TABLE order_line_1 ADD COLUMN warehouse_bin text;")
	if err != nil {
		b.Fatal(err)
	}
	next.ShareWith(base)
	for _, from := range []struct {
		name string
		next *catalog.Catalog
	}{{"previous", next}, {"decoded", decodedAgain(b, next)}} {
		b.Run("from="+from.name, func(b *testing.B) {
			var n Counter
			n.Keep(n.Count(base))
			b.ReportAllocs()
			for b.Loop() {
				n.Count(from.next)
			}
		})
	}
	b.Run("from=nothing", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var n Counter
			n.Count(next)
		}
	})
}

// TestCountDecodedCatalog: a catalog decoded again (another worker wrote
// it) holds new objects for unchanged tables; they count as unchanged by
// their names, and only the altered table's words move.
func TestCountDecodedCatalog(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		moved     []string
	}{
		{"a column added", "ALTER TABLE orders ADD COLUMN carrier_code text;", []string{"carrier", "code"}},
		// The same names as before, but a former one more.
		{"a column renamed and back", "ALTER TABLE parcels RENAME COLUMN weight TO mass; ALTER TABLE parcels RENAME COLUMN mass TO weight;", []string{"mass"}},
		{"a table renamed and back", "ALTER TABLE orders RENAME TO sales; ALTER TABLE sales RENAME TO orders;", []string{"sale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := catalog.Snapshot("db", "s.sql", "CREATE TABLE orders (id int, placed_at date); CREATE TABLE parcels (weight int); CREATE VIEW heavy AS SELECT weight FROM parcels;")
			if err != nil {
				t.Fatal(err)
			}
			next, err := base.Apply("m.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			decoded := decodedAgain(t, next)
			var n Counter
			n.Keep(n.Count(base))
			got := n.Count(decoded)
			if got.Words != recount(decoded) {
				t.Fatalf("counted %d words, want %d", got.Words, recount(decoded))
			}
			var moved []string
			for w, d := range got.delta {
				if d != 0 {
					moved = append(moved, w)
				}
			}
			slices.Sort(moved)
			if !slices.Equal(moved, tc.moved) {
				t.Fatalf("words moved: %v, want %v (delta %v)", moved, tc.moved, got.delta)
			}
		})
	}
}

// decodedAgain is c as a worker reads what another wrote: every object
// new.
func decodedAgain(tb testing.TB, c *catalog.Catalog) *catalog.Catalog {
	tb.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		tb.Fatal(err)
	}
	decoded := new(catalog.Catalog)
	if err := json.Unmarshal(b, decoded); err != nil {
		tb.Fatal(err)
	}
	return decoded
}
