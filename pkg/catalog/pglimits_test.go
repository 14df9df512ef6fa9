package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// list joins n elements made by f with ", ".
func list(n int, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i)
	}
	return strings.Join(parts, ", ")
}

// PostgreSQL's limits hold, at them and one past them: past them one
// statement's work grew with the square of its size (a megabyte of
// CREATE TABLE with 100,000 columns took 16 s, a CREATE INDEX of as many
// elements minutes), on the worker that serves every database.
func TestPostgresLimits(t *testing.T) {
	cols := func(n int) string { return list(n, func(i int) string { return fmt.Sprintf("c%d int", i) }) }
	names := func(n int) string { return list(n, func(i int) string { return fmt.Sprintf("c%d", i) }) }
	wide := "CREATE TABLE w (" + cols(40) + ");\n"
	cases := []struct {
		name string
		sql  string
		msg  string // "" when it applies
	}{
		{"a table of 1,600 columns", "CREATE TABLE t (" + cols(1600) + ");", ""},
		{"a table of 1,601 columns", "CREATE TABLE t (" + cols(1601) + ");", "tables can have at most 1600 columns"},
		{"a column added past 1,600", "CREATE TABLE t (" + cols(1600) + ");\nALTER TABLE t ADD COLUMN x int;", "tables can have at most 1600 columns"},
		{"two parents of 900 columns", "CREATE TABLE p1 (" + list(900, func(i int) string { return fmt.Sprintf("a%d int", i) }) + ");\nCREATE TABLE p2 (" +
			list(900, func(i int) string { return fmt.Sprintf("b%d int", i) }) + ");\nCREATE TABLE kid () INHERITS (p1, p2);", "tables can have at most 1600 columns"},
		{"LIKE past 1,600", "CREATE TABLE p1 (" + cols(1600) + ");\nCREATE TABLE t (x int, LIKE p1);", "tables can have at most 1600 columns"},
		{"CREATE TABLE AS of 1,601 columns", "CREATE TABLE t AS SELECT " + list(1601, func(i int) string { return fmt.Sprintf("1 AS c%d", i) }) + ";", "tables can have at most 1600 columns"},
		{"a view of 1,664 columns", "CREATE VIEW v AS SELECT " + list(1664, func(i int) string { return fmt.Sprintf("1 AS c%d", i) }) + ";", ""},
		{"a view of 1,665 columns", "CREATE VIEW v AS SELECT " + list(1665, func(i int) string { return fmt.Sprintf("1 AS c%d", i) }) + ";", "target lists can have at most 1664 entries"},
		{"an index of 32 columns", wide + "CREATE INDEX ON w (" + names(32) + ");", ""},
		{"an index of 33 columns", wide + "CREATE INDEX ON w (" + names(33) + ");", "cannot use more than 32 columns in an index"},
		{"an index of 30 columns and 3 included", wide + "CREATE INDEX ON w (" + names(30) + ") INCLUDE (c31, c32, c33);", "cannot use more than 32 columns in an index"},
		{"a key of 33 columns", wide + "ALTER TABLE w ADD PRIMARY KEY (" + names(33) + ");", "cannot use more than 32 columns in an index"},
		{"a unique key of 32 columns", wide + "ALTER TABLE w ADD UNIQUE (" + names(32) + ");", ""},
		{"a foreign key of 33 columns", wide + "CREATE TABLE r (" + cols(40) + ");\nALTER TABLE r ADD FOREIGN KEY (" + names(33) + ") REFERENCES w (" + names(33) + ");", "cannot have more than 32 keys in a foreign key"},
		{"an exclusion constraint of 33 columns", wide + "ALTER TABLE w ADD EXCLUDE (" + list(33, func(i int) string { return fmt.Sprintf("c%d WITH =", i) }) + ");", "cannot use more than 32 columns in an index"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("db").Apply("0001.sql", tc.sql)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.msg != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg)):
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
		})
	}
}

// A table holds at most maxTableNames constraints and indexes, counted
// together, and the names chosen past a gap are PostgreSQL's lowest.
func TestTableNames(t *testing.T) {
	checks := func(n int) string { return strings.Repeat(", CHECK (a > 0)", n) }
	if _, err := New("db").Apply("0001.sql", "CREATE TABLE t (a int"+checks(maxTableNames)+");"); err != nil {
		t.Fatalf("%d checks refused: %v", maxTableNames, err)
	}
	_, err := New("db").Apply("0001.sql", "CREATE TABLE t (a int"+checks(maxTableNames-1)+");\nCREATE INDEX ON t (a);\nCREATE INDEX ON t (a);")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "schemaq's bound") {
		t.Fatalf("past the bound: %v", err)
	}
	c := mustApply(t, New("db"), `CREATE TABLE t (a int, CHECK (a > 0), CHECK (a > 1), CHECK (a > 2), CHECK (a > 3),
  CONSTRAINT t_a_check01 CHECK (a > 4), CONSTRAINT "t_a_check+5" CHECK (a > 5));
ALTER TABLE t DROP CONSTRAINT t_a_check1;
ALTER TABLE t ADD CHECK (a > 6), ADD CHECK (a > 7);`)
	var got []string
	for _, ch := range c.Table(QualName{"public", "t"}).Checks {
		got = append(got, ch.Name)
	}
	want := "[t_a_check t_a_check2 t_a_check3 t_a_check01 t_a_check+5 t_a_check1 t_a_check4]"
	if fmt.Sprint(got) != want {
		t.Errorf("names %v, want %s", got, want)
	}
}

// The SQL text the catalog holds (checks, generated columns, views) is
// parsed again when a column it may read is renamed, dropped or retyped,
// within a bound per Apply: a rename of forty bytes may rewrite every
// check and generated column of a table, or a view of a quarter of a
// megabyte, and a megabyte of renames took most of an hour. What reads
// a column is remembered, so dropping columns no expression reads costs
// no parse (a thousand drops beside 1,500 generated columns took 10 s),
// and a view that does not name the column is not parsed.
func TestReparseBound(t *testing.T) {
	// A smaller bound than the default's keeps the test quick; the
	// default is the same code with more room.
	const bound = 256 << 10
	limits := WithLimits(Limits{Reparse: bound})
	apply := func(sql string, opts ...ApplyOption) (*Catalog, error) {
		return New("db").Apply("0001.sql", sql, append(opts, limits)...)
	}
	refused := func(err error) bool {
		return errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "schemaq's bound")
	}

	checks := list(maxTableNames-1, func(i int) string { return fmt.Sprintf("CHECK (a > %d)", i) })
	perRename := 0
	for i := range maxTableNames - 1 {
		perRename += len(fmt.Sprintf("a > %d", i)) + reparseOverhead
	}
	renames := func(col string, n int) string {
		return strings.Repeat("ALTER TABLE t RENAME COLUMN "+col+" TO x;\nALTER TABLE t RENAME COLUMN x TO "+col+";\n", n/2)
	}
	within := bound/perRename - 1
	if _, err := apply("CREATE TABLE t (a int, " + checks + ");\n" + renames("a", within)); err != nil {
		t.Fatalf("%d renames of a column %d checks read: %v", within, maxTableNames-1, err)
	}
	if _, err := apply("CREATE TABLE t (a int, " + checks + ");\n" + renames("a", within+4)); !refused(err) {
		t.Fatalf("past the bound: %v", err)
	}

	gen := list(1500, func(i int) string { return fmt.Sprintf("g%d int GENERATED ALWAYS AS (a + %d) STORED", i, i) })
	var drops strings.Builder
	for i := range 200 {
		fmt.Fprintf(&drops, "ALTER TABLE t ADD COLUMN y%d int;\nALTER TABLE t DROP COLUMN y%d;\n", i, i)
	}
	if _, err := apply("CREATE TABLE t (a int, " + gen + ");\n" + drops.String()); err != nil {
		t.Fatalf("drops beside generated columns: %v", err)
	}

	// A view of 60 KB that reads the column: each rename parses it.
	where := strings.ReplaceAll(list(5000, func(i int) string { return fmt.Sprintf("a > %d", i) }), ", ", " AND ")
	view := "CREATE TABLE t (a int, b int, note text);\nCREATE VIEW v AS SELECT a, b FROM t WHERE " + where + ";\n"
	if _, err := apply(view + renames("a", 20)); !refused(err) {
		t.Fatalf("renames under a large view: %v", err)
	}
	// The column it does not name costs nothing.
	if _, err := apply(view + renames("note", 500)); err != nil {
		t.Fatalf("renames of a column the view does not name: %v", err)
	}
	// Inside an exception block the bound is not an error to catch: the
	// block stops, as drift.
	c, err := apply(view+"DO $$ BEGIN\n"+renames("a", 20)+"EXCEPTION WHEN OTHERS THEN NULL; END $$;\n", Tolerant())
	if err != nil {
		t.Fatalf("tolerant apply: %v", err)
	}
	if d := c.Drift(); len(d) != 1 || !strings.Contains(d[0].String(), "schemaq's bound") {
		t.Fatalf("drift %v, want the block stopped at the bound", d)
	}
}
