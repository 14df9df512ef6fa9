package impact

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/namewords"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

const shopDDL = `
CREATE TABLE customers (id bigint PRIMARY KEY, email text, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, note text, total numeric);
CREATE TABLE payments (id bigint, order_id bigint REFERENCES orders, amount numeric);
CREATE TABLE categories (id int, title text);
CREATE VIEW order_notes AS SELECT id, note FROM orders;
`

var (
	examples = []Example{
		{ID: "paid", Question: "Which orders are paid?", SQL: "SELECT o.id FROM orders o JOIN payments p ON p.order_id = o.id"},
		{ID: "per-customer", Question: "Orders per customer", SQL: "SELECT customer_id, count(*) FROM orders GROUP BY 1"},
		{ID: "titles", Question: "Category titles", SQL: "SELECT c.title FROM categories c"},
		{ID: "ghost", Question: "Stale already", SQL: "SELECT * FROM ghosts"},
	}
	docs = []Doc{{ID: "refunds.md", Body: "# Refunds\n\nA refund is a payment with a negative `payments.amount`.\n\n## Notes\n\nThe clerk writes orders.note by hand.\n\n## Customers\n\nEvery customer has an email.\n"}}
)

func TestCheck(t *testing.T) {
	cat, err := catalog.Snapshot("shop", "shop.sql", shopDDL)
	if err != nil {
		t.Fatal(err)
	}
	cat.Version = 6
	for _, tc := range []struct {
		name, sql                         string
		examples, docs, views, drift      int
		followed                          int
		dropped, renamed, refused, reason string
		breaks                            bool
	}{
		{name: "adding a column breaks nothing", sql: "ALTER TABLE orders ADD COLUMN placed_at timestamptz;"},
		{name: "dropping a table", sql: "DROP TABLE payments;", examples: 1, docs: 1, dropped: "public.payments", reason: "reads public.payments, which the migrations drop", breaks: true},
		// PostgreSQL refuses to drop a column a view reads; with CASCADE
		// the view goes too.
		{name: "dropping a column a view reads", sql: "ALTER TABLE orders DROP COLUMN note;", refused: "view public.order_notes depends on it", breaks: true},
		{name: "dropping a column a view and a doc read, with CASCADE", sql: "ALTER TABLE orders DROP COLUMN note CASCADE;", docs: 1, dropped: "public.order_notes,public.orders.note", breaks: true},
		{name: "dropping a column an example reads", sql: "ALTER TABLE categories DROP COLUMN title;", examples: 1, dropped: "public.categories.title", reason: "column c.title does not exist", breaks: true},
		{name: "renaming a table", sql: "ALTER TABLE categories RENAME TO genres;", followed: 1, renamed: "public.categories → public.genres"},
		{name: "renaming a column", sql: "ALTER TABLE categories RENAME COLUMN title TO label;", followed: 1, renamed: "public.categories.title → public.categories.label"},
		{name: "a migration the catalog refuses", sql: "DROP TABLE orders;", refused: "view public.order_notes depends on it", breaks: true},
		{name: "drift", sql: "ALTER TABLE audit_log ADD COLUMN at timestamptz;", drift: 1, breaks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(context.Background(), Input{Catalog: cat, Pending: []Migration{{Seq: 7, Source: "0007_x.sql", SQL: tc.sql}}, Examples: examples, Docs: docs})
			if len(rep.Examples) != tc.examples || len(rep.Docs) != tc.docs || len(rep.Views) != tc.views || len(rep.Drift) != tc.drift || len(rep.Followed) != tc.followed {
				t.Errorf("examples %v, docs %v, views %v, drift %v, followed %v", rep.Examples, rep.Docs, rep.Views, rep.Drift, rep.Followed)
			}
			if got := strings.Join(rep.Dropped, ","); got != tc.dropped {
				t.Errorf("dropped %q, want %q", got, tc.dropped)
			}
			if got := strings.Join(rep.Renamed, ","); got != tc.renamed {
				t.Errorf("renamed %q, want %q", got, tc.renamed)
			}
			if (rep.Refused != nil) != (tc.refused != "") || (rep.Refused != nil && !strings.Contains(rep.Refused.Error, tc.refused)) {
				t.Errorf("refused %+v, want %q", rep.Refused, tc.refused)
			}
			if tc.reason != "" {
				var all []string
				for _, e := range rep.Examples {
					all = append(all, e.Reason)
				}
				for _, v := range rep.Views {
					all = append(all, v.Reason)
				}
				if !strings.Contains(strings.Join(all, "|"), tc.reason) {
					t.Errorf("reasons %q lack %q", all, tc.reason)
				}
			}
			if rep.Breaks(false) != tc.breaks {
				t.Errorf("breaks = %v, want %v", rep.Breaks(false), tc.breaks)
			}
			if tc.refused == "" && rep.After != 7 {
				t.Errorf("after = %d, want 7", rep.After)
			}
		})
	}
}

// TestCheckAtScale: ten thousand tables, ten thousand examples and a
// thousand doc sections, and a pull request of a hundred migrations that
// drop a hundred tables and rename a hundred: exactly the examples that
// read the dropped ones break, those that read the renamed ones follow,
// and the sections that name the dropped ones are reported, each once.
func TestCheckAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a catalog of ten thousand tables")
	}
	var ddl strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&ddl, "CREATE TABLE t%05d (id bigint PRIMARY KEY, v%05d text);\n", i, i)
	}
	cat, err := catalog.Snapshot("big", "big.sql", ddl.String())
	if err != nil {
		t.Fatal(err)
	}
	var exs []Example
	for i := range 10_000 {
		exs = append(exs, Example{ID: fmt.Sprintf("x%05d", i), Question: "q", SQL: fmt.Sprintf("SELECT v%05d FROM t%05d", i, i)})
	}
	var body strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&body, "## Section %d\n\nThe values live in `t%05d.v%05d`.\n\n", i, i*10, i*10)
	}
	var pending []Migration
	for m := range 100 {
		pending = append(pending, Migration{Seq: int64(m + 1), Source: fmt.Sprintf("%04d.sql", m+1),
			SQL: fmt.Sprintf("DROP TABLE t%05d; ALTER TABLE t%05d RENAME TO renamed_%05d;", m*2, m*2+1, m*2+1)})
	}
	rep := Check(context.Background(), Input{Catalog: cat, Pending: pending, Examples: exs, Docs: []Doc{{ID: "values.md", Title: "Values", Body: body.String()}}})
	if rep.Refused != nil || rep.After != 100 {
		t.Fatalf("refused %+v, after %d", rep.Refused, rep.After)
	}
	if len(rep.Examples) != 100 || len(rep.Followed) != 100 || len(rep.Dropped) != 100 || len(rep.Renamed) != 100 {
		t.Errorf("%d examples, %d followed, %d dropped, %d renamed; want 100 each", len(rep.Examples), len(rep.Followed), len(rep.Dropped), len(rep.Renamed))
	}
	// Sections name t00000, t00010, …: those of the hundred dropped even
	// tables below 200 are t00000 … t00190, twenty of them.
	if len(rep.Docs) != 20 {
		t.Errorf("%d doc sections, want 20", len(rep.Docs))
	}
}

// TestCheckWordBound: the migration that takes the catalog's names past
// the bound is refused, as a worker would refuse it, and the report is
// of the catalog before it; a catalog past the bound already may shrink.
func TestCheckWordBound(t *testing.T) {
	cat, err := catalog.Snapshot("shop", "shop.sql", shopDDL)
	if err != nil {
		t.Fatal(err)
	}
	cat.Version = 6
	var n namewords.Counter
	had := n.Count(cat).Words
	made := strings.Fields("quux zorb flim blat wug dax tove grob snark jub plon vex kib mox narf yalp tib grue fnord zyx")
	table := func(i int) string {
		w := made[4*i : 4*i+4]
		return fmt.Sprintf("CREATE TABLE %s (%s int, %s text, %s date);", w[0], w[1], w[2], w[3])
	}
	var five []Migration
	for i := range 5 {
		five = append(five, Migration{Seq: int64(7 + i), Source: fmt.Sprintf("%04d.sql", 7+i), SQL: table(i)})
	}
	for _, tc := range []struct {
		name      string
		pending   []Migration
		bound     int
		refused   int64 // 0: none
		after     int64
		withWords string
	}{
		// Each adds four words (its table's and three columns').
		{"the third of five crosses", five, had + 10, 9, 8, "past the bound of"},
		{"all five fit", five, had + 20, 0, 11, ""},
		{"no bound", five, 0, 0, 11, ""},
		{"past the bound already, a drop applies", []Migration{{Seq: 7, Source: "0007.sql", SQL: "DROP TABLE categories;"}}, had - 5, 0, 7, ""},
		{"past the bound already, new words do not", five[:1], had - 5, 7, 6, "past the bound of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Check(context.Background(), Input{Catalog: cat, Pending: tc.pending, MaxWords: tc.bound})
			switch {
			case tc.refused == 0 && rep.Refused != nil:
				t.Fatalf("refused %+v", rep.Refused)
			case tc.refused != 0 && (rep.Refused == nil || rep.Refused.Migration.Seq != tc.refused || !strings.Contains(rep.Refused.Error, tc.withWords)):
				t.Fatalf("refused %+v, want migration %d", rep.Refused, tc.refused)
			}
			if rep.After != tc.after {
				t.Fatalf("after = %d, want %d", rep.After, tc.after)
			}
		})
	}
}
