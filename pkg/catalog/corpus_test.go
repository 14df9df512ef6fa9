package catalog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestCorpusDumps applies every real-world dump in ../shared/corpus.
func TestCorpusDumps(t *testing.T) {
	tests := []struct {
		file                 string
		tables, views, enums int
	}{
		{"corpus/pagila/pagila-schema.sql", 22, 8, 1},
		{"corpus/gisia/db/structure.sql", 87, 0, 0},
		{"corpus/tbls-sample/testdata/ddl/postgres.sql", 15, 2, 1},
		{"bench/spiderunion/schema.sql", 876, 0, 0},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(filepath.Dir(tc.file)), func(t *testing.T) {
			c, err := Snapshot("db", tc.file, testenv.ReadShared(t, strings.Split(tc.file, "/")...))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Tables()) != tc.tables || len(c.Views()) != tc.views || len(c.Enums()) != tc.enums {
				t.Errorf("got %d tables, %d views, %d enums; want %d, %d, %d",
					len(c.Tables()), len(c.Views()), len(c.Enums()), tc.tables, tc.views, tc.enums)
			}
			roundTrip(t, c)
		})
	}
}

func TestCorpusPagilaDetails(t *testing.T) {
	c, err := Snapshot("pagila", "pagila-schema.sql", testenv.ReadShared(t, "corpus", "pagila", "pagila-schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	film := c.Table(QualName{"public", "film"})
	if film == nil {
		t.Fatal("no public.film")
	}
	rating := film.Column("rating")
	if rating == nil || rating.Enum == nil || *rating.Enum != (QualName{"public", "mpaa_rating"}) {
		t.Errorf("film.rating should be typed by enum public.mpaa_rating, got %+v", rating)
	}
	p := c.Table(QualName{"public", "payment_p2022_01"})
	if p == nil || p.PartitionOf == nil || *p.PartitionOf != (QualName{"public", "payment"}) || !strings.HasPrefix(p.PartitionBound, "FOR VALUES FROM") {
		t.Errorf("payment_p2022_01 should be a partition of payment with a bound, got %+v", p)
	}
	if len(p.ForeignKeys) != 3 {
		t.Errorf("payment_p2022_01 should have its 3 foreign keys, got %+v", p.ForeignKeys)
	}
	if v := c.View(QualName{"public", "rental_by_category"}); v == nil || !v.Materialized || len(v.Reads) == 0 {
		t.Errorf("rental_by_category should be a materialized view with reads, got %+v", v)
	}
}

func TestCorpusTblsComments(t *testing.T) {
	c, err := Snapshot("tbls", "postgres.sql", testenv.ReadShared(t, "corpus", "tbls-sample", "testdata", "ddl", "postgres.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var commented int
	for _, tb := range c.Tables() {
		if tb.Comment != "" {
			commented++
		}
	}
	if commented == 0 {
		t.Error("no table kept its COMMENT ON")
	}
	if c.Table(QualName{"public", "CamelizeTable"}) == nil || c.Table(QualName{"public", "hyphen-table"}) == nil {
		t.Errorf("quoted identifiers lost: %v", c.Tables())
	}
}

// TestCorpusPG18 checks that a script the PostgreSQL 16 grammar cannot
// parse fails with the line and the token.
func TestCorpusPG18(t *testing.T) {
	sql := testenv.ReadShared(t, "corpus", "pagila-pg18", "pagila-schema.sql")
	_, err := Snapshot("pagila", "pagila-pg18/pagila-schema.sql", sql)
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, ErrSyntax) {
		t.Fatalf("got %v, want a syntax *Error", err)
	}
	if ce.Line != 453 || !strings.Contains(err.Error(), `"VIRTUAL"`) || !strings.Contains(err.Error(), "pagila-pg18/pagila-schema.sql") {
		t.Errorf("error should name the source, line 453 and VIRTUAL: %v", err)
	}
}

// replayLemmy applies every up.sql of the Lemmy history in ORDER.txt, one
// event per migration, as a producer would publish them.
func replayLemmy(tb testing.TB) *Catalog {
	tb.Helper()
	dir := testenv.SharedPath(tb, "corpus", "lemmy")
	order, err := os.ReadFile(filepath.Join(dir, "ORDER.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	c := New("lemmy")
	var enc Encoder
	var dec Decoder
	var decoded *Catalog     // what dec decoded last
	var written, read *Graph // the worker's and the daemon's graphs
	for i, rel := range strings.Fields(string(order)) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			tb.Fatal(err)
		}
		before, _ := c.MarshalJSON()
		n, err := c.Apply(rel, string(b))
		if err != nil {
			tb.Fatalf("migration %d: %v", i+1, err)
		}
		// The catalog before shares its unchanged objects with the new
		// one: nothing the migration did may show in it.
		if after, _ := c.MarshalJSON(); !bytes.Equal(before, after) {
			tb.Fatalf("migration %d (%s) changed the catalog it was applied to", i+1, rel)
		}
		n.ShareWith(c)
		checkShared(tb, c, n)
		n.Version = int64(i + 1)
		// What a worker writes of each version: the tables it shares
		// keep their JSON, the bytes stay one Marshal's.
		if got, err := enc.Marshal(n); err != nil || !bytes.Equal(got, wireBytes(tb, n)) {
			tb.Fatalf("migration %d (%s): the encoder's bytes differ from one Marshal's (%v)", i+1, rel, err)
		}
		// What a daemon reads of each version: the same catalog, its
		// unchanged tables the objects it decoded the version before.
		d, err := dec.Unmarshal(wireBytes(tb, n))
		if err != nil || !bytes.Equal(wireBytes(tb, d), wireBytes(tb, n)) {
			tb.Fatalf("migration %d (%s): the decoder read another catalog (%v)", i+1, rel, err)
		}
		for q, t := range n.tables {
			if decoded != nil && c.tables[q] == t && d.tables[q] != decoded.tables[q] {
				tb.Fatalf("migration %d (%s): the decoder decoded %s again, which did not change", i+1, rel, q)
			}
		}
		for _, c := range []*Catalog{n, d} {
			if !slices.Equal(c.Tables(), sortedValues(c.tables)) {
				tb.Fatalf("migration %d (%s): tables out of name order", i+1, rel)
			}
		}
		written, read = nextGraph(tb, written, n), nextGraph(tb, read, d)
		c, decoded = n, d
	}
	return c
}

// nextGraph builds and warms cat's graph from prev's, as a daemon does
// for each version, and holds it to the graph built from nothing.
func nextGraph(tb testing.TB, prev *Graph, cat *Catalog) *Graph {
	tb.Helper()
	g := NewGraph(cat)
	if prev != nil {
		g = prev.Next(cat)
	}
	g.Warm(true)
	fresh := NewGraph(cat)
	fresh.Warm(true)
	if !sameGraph(g, fresh) {
		tb.Fatalf("version %d: the graph built from the previous one differs from the graph built from nothing:\n%v %v\n%v %v",
			cat.Version, g.adj, g.inferred, fresh.adj, fresh.inferred)
	}
	return g
}

// TestCorpusLemmyReplay replays Lemmy's 342 migrations and compares the
// result with Diesel's schema.rs from the same commit: the same tables,
// the same columns in the same order, nullability, types and primary keys.
func TestCorpusLemmyReplay(t *testing.T) {
	want := parseDieselSchema(t, testenv.ReadShared(t, "corpus", "lemmy", "crates", "db_schema_file", "src", "schema.rs"))
	c := replayLemmy(t)
	got := map[string]*Table{}
	for _, tb := range c.Tables() {
		// Both are migration bookkeeping that Lemmy's schema.rs leaves out:
		// Diesel's own table, and the runner's (migration 2025-08-01-000018).
		if tb.Schema == "public" && tb.Name != "__diesel_schema_migrations" && tb.Name != "previously_run_sql" {
			got[tb.Name] = tb
		}
	}
	for name := range got {
		if want[name] == nil {
			t.Errorf("table %s is in the replayed catalog but not in schema.rs", name)
		}
	}
	for name, wt := range want {
		tb := got[name]
		if tb == nil {
			t.Errorf("table %s is in schema.rs but not in the replayed catalog", name)
			continue
		}
		var gotCols, wantCols []string
		for _, c := range tb.Columns {
			gotCols = append(gotCols, c.Name+" "+dieselType(c))
		}
		for _, c := range wt.columns {
			wantCols = append(wantCols, c.name+" "+c.typ)
		}
		if !slices.Equal(gotCols, wantCols) {
			t.Errorf("table %s columns:\n got  %v\n want %v", name, gotCols, wantCols)
		}
		var pk []string
		if tb.PrimaryKey != nil {
			pk = tb.PrimaryKey.Columns
		}
		if !slices.Equal(pk, wt.pk) {
			t.Errorf("table %s primary key: got %v, want %v", name, pk, wt.pk)
		}
	}
	roundTrip(t, c)
}

type dieselTable struct {
	pk      []string
	columns []dieselColumn
}

type dieselColumn struct{ name, typ string }

var (
	dieselTableRe  = regexp.MustCompile(`(?s)diesel::table! \{\s*(.*?)\n\}`)
	dieselHeadRe   = regexp.MustCompile(`(?m)^\s*(\w+) \(([\w, ]+)\) \{`)
	dieselColRe    = regexp.MustCompile(`^\s*(\w+) -> (.+),$`)
	dieselSQLName  = regexp.MustCompile(`#\[sql_name = "(\w+)"\]`)
	dieselMaxLen   = regexp.MustCompile(`#\[max_length = (\d+)\]`)
	dieselEnumName = regexp.MustCompile(`(?s)postgres_type\(name = "(\w+)"\)\)\]\s*pub struct (\w+);`)
)

// parseDieselSchema reads Diesel's table! macros into table → columns with
// a type spelled the way dieselType spells ours.
func parseDieselSchema(t *testing.T, src string) map[string]*dieselTable {
	t.Helper()
	enumNames := map[string]string{}
	for _, m := range dieselEnumName.FindAllStringSubmatch(src, -1) {
		if m[1] != "ltree" { // an extension's type, not an enum
			enumNames[m[2]] = m[1]
		}
	}
	out := map[string]*dieselTable{}
	for _, m := range dieselTableRe.FindAllStringSubmatch(src, -1) {
		head := dieselHeadRe.FindStringSubmatch(m[1])
		if head == nil {
			t.Fatalf("cannot read table! block %.80q", m[1])
		}
		dt := &dieselTable{}
		for _, k := range strings.Split(head[2], ",") {
			dt.pk = append(dt.pk, strings.TrimSpace(k))
		}
		sqlName, maxLen := "", ""
		for _, line := range strings.Split(m[1], "\n") {
			if sm := dieselSQLName.FindStringSubmatch(line); sm != nil {
				sqlName = sm[1]
				continue
			}
			if ml := dieselMaxLen.FindStringSubmatch(line); ml != nil {
				maxLen = ml[1]
				continue
			}
			cm := dieselColRe.FindStringSubmatch(line)
			if cm == nil {
				continue
			}
			name := cm[1]
			if sqlName != "" {
				name = sqlName
			}
			typ := cm[2]
			if e, ok := enumNames[strings.TrimSuffix(strings.TrimPrefix(typ, "Nullable<"), ">")]; ok {
				typ = strings.Replace(typ, strings.TrimSuffix(strings.TrimPrefix(typ, "Nullable<"), ">"), "enum:"+e, 1)
			}
			if maxLen != "" {
				typ = strings.Replace(typ, "Varchar", "Varchar("+maxLen+")", 1)
				typ = strings.Replace(typ, "Bpchar", "Bpchar("+maxLen+")", 1)
			}
			dt.columns = append(dt.columns, dieselColumn{name, typ})
			sqlName, maxLen = "", ""
		}
		out[head[1]] = dt
	}
	if len(out) == 0 {
		t.Fatal("no table! blocks in schema.rs")
	}
	return out
}

// dieselType spells a catalog column the way Diesel's print-schema does.
func dieselType(c *Column) string {
	base := strings.TrimSuffix(c.Type, "[]")
	isArray := base != c.Type
	var d string
	switch {
	case c.Enum != nil:
		d = "enum:" + c.Enum.Name
	default:
		d = map[string]string{
			"integer": "Int4", "serial": "Int4", "bigint": "Int8", "bigserial": "Int8", "smallint": "Int2",
			"real": "Float4", "double precision": "Float8", "boolean": "Bool", "text": "Text",
			"timestamp with time zone": "Timestamptz", "timestamp without time zone": "Timestamp",
			"date": "Date", "jsonb": "Jsonb", "json": "Json", "uuid": "Uuid", "bytea": "Bytea",
			"inet": "Inet", "numeric": "Numeric", "interval": "Interval", "ltree": "Ltree",
			"character varying": "Varchar", "character": "Bpchar", "citext": "Citext",
		}[base]
		if d == "" {
			if m := regexp.MustCompile(`^(character varying|character)\((\d+)\)$`).FindStringSubmatch(base); m != nil {
				d = map[string]string{"character varying": "Varchar", "character": "Bpchar"}[m[1]] + "(" + m[2] + ")"
			} else {
				d = "?" + base
			}
		}
	}
	if isArray {
		d = "Array<Nullable<" + d + ">>"
	}
	if !c.NotNull {
		d = "Nullable<" + d + ">"
	}
	return d
}
