package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// pgColumn is what PostgreSQL reports for one column of a table or view.
type pgColumn struct {
	typ, def string
	notNull  bool
	view     bool
}

// describe reads every user column of every table and view in db, keyed
// "schema.relation.column", and every key as "schema.relation key name:
// columns".
func describe(p *testenv.Postgres, t *testing.T, db string) (map[string]pgColumn, []string) {
	t.Helper()
	// A database may set its own search_path (tbls' does); the catalog
	// prints names as the default one sees them.
	rows, err := p.Query(db, `SET search_path = "$user", public;
SELECT n.nspname, c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       CASE WHEN a.attgenerated = '' THEN coalesce(pg_get_expr(d.adbin, d.adrelid), '') ELSE '' END
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
ORDER BY 1, 2, a.attnum`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]pgColumn{}
	for _, r := range rows {
		view := r[2] == "v" || r[2] == "m"
		cols[r[0]+"."+r[1]+"."+r[3]] = pgColumn{typ: r[4], notNull: r[5] == "t" && !view, def: r[6], view: view}
	}
	rows, err = p.Query(db, `
SELECT n.nspname, c.relname, con.contype, con.conname,
       array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(num, ord)
                             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord), ',')
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE con.contype IN ('p', 'u', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  -- A foreign key to a partitioned table is cloned for each partition it
  -- references, under the referencing table; only a partition's own
  -- clones are keys of its.
  AND NOT (con.conparentid <> 0 AND NOT c.relispartition)
ORDER BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, fmt.Sprintf("%s.%s %s %s: %s", r[0], r[1], r[2], r[3], r[4]))
	}
	// The indexes CREATE INDEX made and partitions' copies of them (the
	// catalog does not hold expressions as PostgreSQL prints them: an
	// expression is "(expr)").
	rows, err = p.Query(db, `
SELECT n.nspname, t.relname, CASE WHEN i.indisunique THEN 'iu' ELSE 'i' END, c.relname,
  array_to_string(ARRAY(
    SELECT CASE WHEN k.att = 0 THEN '(expr)' ELSE a.attname END ||
      CASE WHEN k.ord > i.indnkeyatts THEN ' INCLUDE'
           ELSE CASE (i.indoption::int2[])[k.ord - 1] & 3 WHEN 1 THEN ' DESC NULLS LAST' WHEN 3 THEN ' DESC'
                WHEN 2 THEN ' NULLS FIRST' ELSE '' END END
    FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(att, ord)
    LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.att
    ORDER BY k.ord), ', ') || CASE WHEN i.indpred IS NOT NULL THEN ' WHERE' ELSE '' END
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  AND t.relkind IN ('r', 'p', 'f')
  AND NOT EXISTS (SELECT 1 FROM pg_constraint con
                  WHERE con.conindid = i.indexrelid AND con.conrelid = i.indrelid AND con.contype IN ('p', 'u', 'x'))
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = t.oid AND e.deptype = 'e')`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		keys = append(keys, fmt.Sprintf("%s.%s %s %s: %s", r[0], r[1], r[2], r[3], r[4]))
	}
	// Checks and exclusion constraints by name and the columns they read
	// (sorted: PostgreSQL lists them by number). A partition's copies of
	// its parent's checks are not held.
	rows, err = p.Query(db, `
SELECT n.nspname, c.relname, con.contype, con.conname,
       array_to_string(ARRAY(SELECT DISTINCT a.attname FROM unnest(con.conkey) k(num)
                             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY 1), ',')
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE con.contype IN ('c', 'x') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND con.conislocal`)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		keys = append(keys, fmt.Sprintf("%s.%s %s %s: %s", r[0], r[1], r[2], r[3], r[4]))
	}
	slices.Sort(keys)
	return cols, keys
}

// indexLine is describe's line for one of tb's indexes.
func indexLine(tb *Table, ix Index) string {
	var elems []string
	for _, k := range ix.Keys {
		e := "(expr)"
		if k.Column != "" {
			e = k.Column
		}
		if k.Order != "" {
			e += " " + k.Order
		}
		elems = append(elems, e)
	}
	for _, c := range ix.Include {
		elems = append(elems, c+" INCLUDE")
	}
	kind, where := "i", ""
	if ix.Unique {
		kind = "iu"
	}
	if ix.Where != "" {
		where = " WHERE"
	}
	return fmt.Sprintf("%s.%s %s %s: %s%s", tb.Schema, tb.Name, kind, ix.Name, strings.Join(elems, ", "), where)
}

// catalogColumns is describe's view of a catalog.
func catalogColumns(c *Catalog) (map[string]pgColumn, []string) {
	cols := map[string]pgColumn{}
	var keys []string
	for _, tb := range c.Tables() {
		for _, col := range tb.Columns {
			cols[tb.Schema+"."+tb.Name+"."+col.Name] = pgColumn{typ: col.Type, notNull: col.NotNull, def: col.Default}
		}
		if pk := tb.PrimaryKey; pk != nil {
			keys = append(keys, fmt.Sprintf("%s.%s p %s: %s", tb.Schema, tb.Name, pk.Name, strings.Join(pk.Columns, ",")))
		}
		for _, k := range tb.Unique {
			keys = append(keys, fmt.Sprintf("%s.%s u %s: %s", tb.Schema, tb.Name, k.Name, strings.Join(k.Columns, ",")))
		}
		for _, fk := range tb.ForeignKeys {
			keys = append(keys, fmt.Sprintf("%s.%s f %s: %s", tb.Schema, tb.Name, fk.Name, strings.Join(fk.Columns, ",")))
		}
		for _, ix := range tb.Indexes {
			keys = append(keys, indexLine(tb, ix))
		}
		for _, ch := range tb.Checks {
			kind, cols := "c", slices.Clone(ch.Columns)
			if ch.Exclude {
				kind = "x"
			}
			slices.Sort(cols)
			cols = slices.Compact(cols)
			keys = append(keys, fmt.Sprintf("%s.%s %s %s: %s", tb.Schema, tb.Name, kind, ch.Name, strings.Join(cols, ",")))
		}
	}
	for _, v := range c.Views() {
		for _, col := range v.Columns {
			cols[v.Schema+"."+v.Name+"."+col.Name] = pgColumn{typ: col.Type, view: true}
		}
	}
	slices.Sort(keys)
	return cols, keys
}

// diffCatalog lists every difference between what PostgreSQL reports and
// the catalog, one line each, sorted.
func diffCatalog(pgCols map[string]pgColumn, pgKeys []string, c *Catalog) []string {
	ours, ourKeys := catalogColumns(c)
	var diffs []string
	for k, want := range pgCols {
		got, ok := ours[k]
		switch {
		case !ok:
			diffs = append(diffs, k+": missing from the catalog")
		case got.typ != want.typ:
			diffs = append(diffs, fmt.Sprintf("%s: type %q, PostgreSQL %q", k, got.typ, want.typ))
		case got.notNull != want.notNull:
			diffs = append(diffs, fmt.Sprintf("%s: not null %v, PostgreSQL %v", k, got.notNull, want.notNull))
		case got.def != want.def:
			diffs = append(diffs, fmt.Sprintf("%s: default %q, PostgreSQL %q", k, got.def, want.def))
		}
	}
	for k := range ours {
		if _, ok := pgCols[k]; !ok {
			diffs = append(diffs, k+": not in PostgreSQL")
		}
	}
	for _, k := range pgKeys {
		if !slices.Contains(ourKeys, k) {
			diffs = append(diffs, "key "+k+": missing from the catalog")
		}
	}
	for _, k := range ourKeys {
		if !slices.Contains(pgKeys, k) {
			diffs = append(diffs, "key "+k+": not in PostgreSQL")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// checkRendered replays the catalog's own DDL (what `schemaq catalog`
// prints, and what a snapshot built from it would hold) in a fresh
// PostgreSQL database: PostgreSQL must accept it and report the same
// columns, keys and indexes as the catalog holds.
func checkRendered(t *testing.T, p *testenv.Postgres, db string, c *Catalog) {
	t.Helper()
	prelude := objectsNotHeld(t, p, db)
	db += "_rendered"
	p.CreateDB(t, db)
	// The schemas come first in the script; the objects the catalog does
	// not hold (extensions, domains, composite types, functions) go
	// between them and the tables.
	ddl := c.DDL()
	var schemas strings.Builder
	for strings.HasPrefix(ddl, "CREATE SCHEMA ") {
		line, rest, _ := strings.Cut(ddl, "\n")
		schemas.WriteString(line + "\n")
		ddl = rest
	}
	if _, err := p.Query(db, schemas.String()+"\\set ON_ERROR_STOP off\n"+prelude); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Query(db, ddl); err != nil {
		t.Errorf("PostgreSQL refuses the catalog's DDL: %v", err)
		return
	}
	cols, keys := describe(p, t, db)
	for _, d := range diffCatalog(cols, keys, c) {
		t.Errorf("rendered: %s", d)
	}
}

// objectsNotHeld is pg_dump's script of db cut to the objects a table
// may need that the catalog does not hold: extensions, domains, types
// other than enums, and functions (a default may call one). Functions
// run with their bodies unchecked; one that needs a table fails and is
// passed over, as nothing compared depends on it.
func objectsNotHeld(t *testing.T, p *testenv.Postgres, db string) string {
	t.Helper()
	dump, err := p.DumpSchema(db)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("SET check_function_bodies = false;\n")
	for _, block := range strings.Split(dump, "\n--\n-- Name: ")[1:] {
		header, _, _ := strings.Cut(block, "\n")
		_, kind, _ := strings.Cut(header, "; Type: ")
		kind, _, _ = strings.Cut(kind, ";")
		switch kind {
		case "EXTENSION", "DOMAIN", "FUNCTION", "PROCEDURE", "AGGREGATE", "COLLATION":
		case "TYPE":
			if strings.Contains(block, " AS ENUM (") {
				continue
			}
		default:
			continue
		}
		b.WriteString("-- Name: " + block + "\n")
	}
	return b.String()
}

// TestPostgresCorpus loads real-world schemas into PostgreSQL and holds
// the catalog built from the same SQL against what PostgreSQL reports for
// every table and view column (type, nullability, default) and every
// primary, unique and foreign key. Lemmy's history is compared where its
// migrations end, then again after its own down migrations take back the
// last hundred (drops, renames and retypes undone).
func TestPostgresCorpus(t *testing.T) {
	corpus := testenv.SharedPath(t, "corpus")
	p := testenv.StartPostgres(t)
	type input struct {
		name  string
		files []string // applied in order, each as one migration
		// downs are applied after files and compared again. PostgreSQL
		// refuses some of Lemmy's (written for later versions, or for a
		// state an earlier refused one left): those are skipped, as a
		// team would not publish a migration its database refused.
		downs []string
	}
	inputs := []input{
		{name: "pagila", files: []string{"pagila/pagila-schema.sql"}},
		{name: "gisia", files: []string{"gisia/db/structure.sql"}},
		// The trailing ALTER ROLE names the database testdb.
		{name: "testdb", files: []string{"tbls-sample/testdata/ddl/postgres.sql"}},
	}
	order, err := os.ReadFile(filepath.Join(corpus, "lemmy", "ORDER.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL 15 applies Lemmy's history up to migration 247; the next
	// one needs PostgreSQL 16 syntax (see the corpus README).
	lemmy := input{name: "lemmy"}
	for _, f := range strings.Fields(string(order)) {
		if len(lemmy.files) == 247 && p.Major(t) < 16 {
			break
		}
		lemmy.files = append(lemmy.files, filepath.Join("lemmy", f))
	}
	for i := len(lemmy.files) - 1; i >= len(lemmy.files)-100; i-- {
		lemmy.downs = append(lemmy.downs, strings.TrimSuffix(lemmy.files[i], "up.sql")+"down.sql")
	}
	inputs = append(inputs, lemmy)
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			p.CreateDB(t, in.name)
			c := New(in.name)
			apply := func(f string, seq int, mayRefuse bool) {
				b, err := os.ReadFile(filepath.Join(corpus, f))
				if err != nil {
					t.Fatal(err)
				}
				sql := string(b)
				if len(in.files) > 1 {
					sql = "BEGIN;\n" + sql + "\n;\nCOMMIT;\n"
				}
				if _, err := p.Query(in.name, sql); err != nil {
					if mayRefuse {
						t.Logf("skipped, PostgreSQL refuses %s: %v", f, err)
						return
					}
					t.Fatalf("PostgreSQL refuses %s: %v", f, err)
				}
				next, err := c.Apply(f, string(b), Tolerant())
				if err != nil {
					t.Fatal(err)
				}
				c = next.Record(Applied{Seq: int64(seq), ID: f})
			}
			compare := func(after string) {
				cols, keys := describe(p, t, in.name)
				diffs := diffCatalog(cols, keys, c)
				for _, d := range diffs {
					t.Errorf("after %s: %s", after, d)
				}
				t.Logf("after %s: %d columns, %d keys compared; %d differ", after, len(cols), len(keys), len(diffs))
			}
			for i, f := range in.files {
				apply(f, i+1, false)
			}
			for _, d := range c.Drift() {
				// A block that reads data stops, which says the catalog
				// may differ there; the comparison below says whether it
				// does. Skipped or inferred statements are errors here.
				if d.Stopped {
					continue
				}
				t.Errorf("drift on a history PostgreSQL replays in full: %s", d)
			}
			compare(in.files[len(in.files)-1])
			if len(in.downs) > 0 {
				for i, f := range in.downs {
					apply(f, len(in.files)+i+1, true)
				}
				compare(in.downs[len(in.downs)-1])
			}
			checkRendered(t, p, in.name, c)
		})
	}
}

// TestPostgresDrift replays the helper-function fixture, whose DDL a
// static replay cannot see, in PostgreSQL and in a tolerant catalog:
// every column PostgreSQL has is in the catalog, and the only differences
// are the types of the columns the catalog had to infer.
func TestPostgresDrift(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "tenant")
	c := replayFixture(t, Tolerant())
	// The helper the history calls but never creates.
	if _, err := p.Query("tenant", `CREATE SCHEMA ops;
CREATE FUNCTION ops.add_tenant(tbl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('ALTER TABLE %I ADD COLUMN tenant_id bigint', tbl);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (tenant_id > 0)', tbl, tbl || '_tenant_check');
END;
$$;`); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "tenant-helper", "*.sql"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Query("tenant", "BEGIN;\n"+string(b)+"\n;\nCOMMIT;\n"); err != nil {
			t.Fatalf("PostgreSQL refuses %s: %v", f, err)
		}
	}
	cols, keys := describe(p, t, "tenant")
	inferred := 0
	// The helper's checks, which only its EXECUTE made; the history
	// drops the third table's.
	unseen := []string{
		"key public.invoices c invoices_tenant_check: tenant_id: missing from the catalog",
		"key public.projects c projects_tenant_check: tenant_id: missing from the catalog",
	}
	for _, d := range diffCatalog(cols, keys, c) {
		if slices.Contains(unseen, d) {
			continue
		}
		name, _, _ := strings.Cut(d, ":")
		parts := strings.SplitN(name, ".", 3)
		tb := c.Table(QualName{parts[0], parts[1]})
		if tb == nil || len(parts) < 3 || tb.Column(parts[2]) == nil || !tb.Column(parts[2]).Inferred || !strings.Contains(d, `type ""`) {
			t.Error(d)
			continue
		}
		inferred++
	}
	if inferred != 3 {
		t.Errorf("%d inferred columns differ from PostgreSQL only by their type, want the 3 tenant_id columns", inferred)
	}
}

// TestPostgresRoutines replays a history whose DDL PL/pgSQL helpers make
// (EXECUTE format(…) per table, a rename helper that guards on
// information_schema and pg_constraint and loops over its array
// arguments, a DO block looping over information_schema.columns, a
// procedure with VARIADIC arguments, exception handlers) in PostgreSQL and
// in the catalog: the catalog must match PostgreSQL exactly, with no
// drift.
func TestPostgresRoutines(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "routines")
	dir := filepath.Join("testdata", "plpgsql-helpers")
	c, err := replayDir(dir, Tolerant())
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
	slices.Sort(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Query("routines", "BEGIN;\n"+string(b)+"\n;\nCOMMIT;\n"); err != nil {
			t.Fatalf("PostgreSQL refuses %s: %v", f, err)
		}
	}
	for _, d := range c.Drift() {
		t.Errorf("drift: %s", d)
	}
	cols, keys := describe(p, t, "routines")
	diffs := diffCatalog(cols, keys, c)
	for _, d := range diffs {
		t.Error(d)
	}
	t.Logf("%d tables, %d views: %d columns, %d keys compared; %d differ", len(c.Tables()), len(c.Views()), len(cols), len(keys), len(diffs))
	checkRendered(t, p, "routines", c)
}

// TestPostgresStatements applies each script of testdata/postgres-statements
// to a database of its own in PostgreSQL and to a catalog: every column
// (type, nullability, default) and every key must match, with no drift.
func TestPostgresStatements(t *testing.T) {
	p := testenv.StartPostgres(t)
	files, err := filepath.Glob(filepath.Join("testdata", "postgres-statements", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sql")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p.CreateDB(t, "statements_"+name)
			if _, err := p.Query("statements_"+name, string(b)); err != nil {
				t.Fatalf("PostgreSQL refuses %s: %v", f, err)
			}
			c, err := New(name).Apply(f, string(b))
			if err != nil {
				t.Fatal(err)
			}
			if d := c.Drift(); len(d) > 0 {
				t.Errorf("drift: %v", d)
			}
			cols, keys := describe(p, t, "statements_"+name)
			diffs := diffCatalog(cols, keys, c)
			for _, d := range diffs {
				t.Error(d)
			}
			t.Logf("%d columns, %d keys compared; %d differ", len(cols), len(keys), len(diffs))
			checkRendered(t, p, "statements_"+name, c)
		})
	}
}
