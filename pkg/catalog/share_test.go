package catalog

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkShared holds Apply's sharing to its definition: an object of next
// is prev's very object exactly when the two are equal.
func checkShared(tb testing.TB, prev, next *Catalog) {
	tb.Helper()
	for q, t := range next.tables {
		p := prev.tables[q]
		if p == nil {
			continue
		}
		if same, eq := p == t, p.equal(t); same != eq {
			tb.Fatalf("table %s: shared %v, equal %v", q, same, eq)
		}
	}
	for q, v := range next.views {
		if p := prev.views[q]; p != nil && (p == v) != p.equal(v) {
			tb.Fatalf("view %s: shared %v, equal %v", q, p == v, p.equal(v))
		}
	}
}

func TestShareWithKeepsWhatDidNotChange(t *testing.T) {
	base, err := Snapshot("shop", "base.sql", `
		CREATE TYPE mood AS ENUM ('ok', 'sad');
		CREATE TABLE customers (id bigint PRIMARY KEY, email text UNIQUE, m mood);
		CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, total numeric CHECK (total > 0));
		CREATE TABLE notes (id int);
		CREATE VIEW big AS SELECT id FROM orders WHERE total > 100;`)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := base.MarshalJSON()
	tests := []struct {
		name    string
		sql     string
		changed []string // tables and views that must be new objects
	}{
		{"a new table", `CREATE TABLE payments (id int)`, nil},
		{"a column added", `ALTER TABLE notes ADD COLUMN body text`, []string{"notes"}},
		{"a comment", `COMMENT ON COLUMN orders.total IS 'gross'`, []string{"orders"}},
		{"a rename followed by the referencing key", `ALTER TABLE customers RENAME TO clients`, []string{"orders"}},
		{"a column renamed", `ALTER TABLE orders RENAME COLUMN total TO amount`, []string{"orders"}},
		{"a view replaced", `CREATE OR REPLACE VIEW big AS SELECT id FROM orders WHERE total > 1000`, []string{"big"}},
		{"a table dropped", `DROP TABLE notes`, nil},
		{"a label added", `ALTER TYPE mood ADD VALUE 'glad'`, nil},
		{"an index", `CREATE INDEX ON orders (total)`, []string{"orders"}},
		{"nothing", `GRANT SELECT ON orders TO reader`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, err := base.Apply("m.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			next.ShareWith(base)
			checkShared(t, base, next)
			for q, tb := range next.tables {
				if p := base.tables[q]; p != nil && p != tb && !contains(tc.changed, q.Name) {
					t.Errorf("table %s is a new object though the migration did not change it", q)
				}
			}
			for _, name := range tc.changed {
				q := QualName{DefaultSchema, name}
				if p := base.tables[q]; p != nil && p == next.tables[q] {
					t.Errorf("table %s changed but is shared", q)
				}
				if p := base.views[q]; p != nil && p == next.views[q] {
					t.Errorf("view %s changed but is shared", q)
				}
			}
			if after, _ := base.MarshalJSON(); string(after) != string(before) {
				t.Fatal("the migration changed the catalog it was applied to")
			}
		})
	}
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// TestEqualReadsEveryField changes each field of a fully populated
// object, one at a time, and expects equal to notice: a field added to a
// type and forgotten in equal would make sharing keep a stale object.
func TestEqualReadsEveryField(t *testing.T) {
	tests := []struct {
		name  string
		make  func() any
		equal func(a, b any) bool
	}{
		{"table", func() any { return fullTable() }, func(a, b any) bool { return a.(*Table).equal(b.(*Table)) }},
		{"view", func() any {
			return &View{Schema: "s", Name: "v", Materialized: true, Definition: "SELECT 1", Columns: []*Column{fullColumn()},
				Reads: []QualName{{"s", "t"}}, Comment: "c", Renamed: []Rename{{From: "s.old", Source: "1.sql"}}}
		}, func(a, b any) bool { return a.(*View).equal(b.(*View)) }},
		{"enum", func() any { return &Enum{Schema: "s", Name: "e", Labels: []string{"a"}, Comment: "c"} },
			func(a, b any) bool { return a.(*Enum).equal(b.(*Enum)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(mutations(reflect.ValueOf(tc.make())))
			if n == 0 {
				t.Fatal("no fields found")
			}
			for i := range n {
				a, b := tc.make(), tc.make()
				if !tc.equal(a, b) {
					t.Fatal("two identical objects are not equal")
				}
				m := mutations(reflect.ValueOf(b))[i]
				m.apply()
				if tc.equal(a, b) {
					t.Errorf("changing %s is not seen by equal", m.path)
				}
			}
		})
	}
}

func fullColumn() *Column {
	return &Column{Name: "c", Type: "text", Enum: &QualName{"s", "e"}, NotNull: true, Default: "'x'::text",
		Generated: "g", Identity: "ALWAYS", Comment: "c", Inferred: true, Renamed: []Rename{{From: "old", Source: "1.sql"}}}
}

func fullTable() *Table {
	return &Table{Schema: "s", Name: "t", Columns: []*Column{fullColumn()},
		PrimaryKey:  &Key{Name: "pk", Columns: []string{"c"}, Inherited: true},
		Unique:      []Key{{Name: "u", Columns: []string{"c"}, Inherited: true}},
		ForeignKeys: []ForeignKey{{Name: "fk", Columns: []string{"c"}, RefTable: QualName{"s", "r"}, RefColumns: []string{"id"}, OnDelete: "CASCADE", OnUpdate: "CASCADE", Inherited: true}},
		Checks:      []Check{{Name: "ck", Expr: "c > 0", Columns: []string{"c"}, Exclude: true}},
		Indexes: []Index{{Name: "ix", Keys: []IndexKey{{Column: "c", Expr: "c + 1", Order: "DESC"}}, Include: []string{"c"},
			Unique: true, Where: "c > 0", Reads: []string{"c"}, Names: []string{"c"}, Inherited: true}},
		Inherits: []QualName{{"s", "p"}}, PartitionOf: &QualName{"s", "p"}, PartitionBound: "DEFAULT", PartitionBy: "LIST (c)", Comment: "c",
		Renamed: []Rename{{From: "s.old", Source: "1.sql"}}, History: []Change{{Seq: 1, Source: "1.sql", What: "created"}}}
}

type mutation struct {
	path  string
	apply func()
}

// mutations lists one change per leaf field reachable from v (strings,
// bools, int64s, and a nil for each pointer and slice), in a stable order.
func mutations(v reflect.Value) []mutation {
	var out []mutation
	var walk func(v reflect.Value, path string)
	// Slice elements are never nil pointers; fields may be.
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				return
			}
			if v.CanSet() && !strings.HasSuffix(path, "[]") { // a field, not the object or an element
				out = append(out, mutation{path + "=nil", func() { v.Set(reflect.Zero(v.Type())) }})
			}
			walk(v.Elem(), path)
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case reflect.Slice:
			out = append(out, mutation{path + "=nil", func() { v.Set(reflect.Zero(v.Type())) }})
			for i := range v.Len() {
				walk(v.Index(i), path+"[]")
			}
		case reflect.String:
			out = append(out, mutation{path, func() { v.SetString(v.String() + "x") }})
		case reflect.Bool:
			out = append(out, mutation{path, func() { v.SetBool(!v.Bool()) }})
		case reflect.Int64:
			out = append(out, mutation{path, func() { v.SetInt(v.Int() + 1) }})
		default:
			panic("mutations: add a case for " + v.Kind().String() + " at " + path)
		}
	}
	walk(v, "")
	return out
}

// TestFinishedCatalogListsItsOwnObjects: the cached order of a finished
// catalog is not the caller's to change, and follows ShareWith.
func TestFinishedCatalogListsItsOwnObjects(t *testing.T) {
	prev, err := Snapshot("db", "s.sql", "CREATE TABLE b (id int); CREATE TABLE a (id int); CREATE TABLE c (id int)")
	if err != nil {
		t.Fatal(err)
	}
	got := prev.Tables()
	slices.Reverse(got)
	if names := tableNames(prev.Tables()); !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("after a caller reversed its list: %v", names)
	}
	raw, _ := prev.MarshalJSON()
	var decoded Catalog
	if err := decoded.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	if decoded.Tables()[0] == prev.Tables()[0] {
		t.Fatal("a decoded catalog holds the objects of another")
	}
	decoded.ShareWith(prev)
	for i, tb := range decoded.Tables() {
		if tb != prev.Tables()[i] {
			t.Errorf("table %s: the list still holds the object ShareWith replaced", tb.Name)
		}
	}
}

func tableNames(ts []*Table) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// TestTablesStayInNameOrder: a catalog's tables are listed in name order
// whether its order was sorted, carried over from the catalog it was
// cloned from, kept through ShareWith, or read off the wire.
func TestTablesStayInNameOrder(t *testing.T) {
	base, err := Snapshot("db", "base.sql", `
		CREATE SCHEMA b; CREATE SCHEMA d;
		CREATE TABLE b.m (id int PRIMARY KEY); CREATE TABLE b.p (m_id int REFERENCES b.m);
		CREATE TABLE d.a (x int); CREATE TABLE d.k (x int); CREATE TABLE public.z (x int);`)
	if err != nil {
		t.Fatal(err)
	}
	inOrder := func(t *testing.T, what string, c *Catalog) {
		t.Helper()
		got, want := c.Tables(), sortedValues(c.tables)
		if !slices.Equal(got, want) {
			t.Errorf("%s: tables %v, want %v", what, qualNames(got), qualNames(want))
		}
	}
	inOrder(t, "the base", base)
	for _, tc := range []struct{ name, sql string }{
		{"nothing changed", "COMMENT ON TABLE d.a IS 'a';"},
		{"a table first", "CREATE SCHEMA a; CREATE TABLE a.first (x int);"},
		{"a table last", "CREATE TABLE public.zz (x int);"},
		{"tables between", "CREATE TABLE b.n (x int); CREATE TABLE d.b (x int); CREATE TABLE d.j (x int);"},
		{"a table dropped", "DROP TABLE d.k;"},
		{"the first and last dropped", "DROP TABLE b.p; DROP TABLE b.m; DROP TABLE public.z;"},
		{"a table renamed past others", "ALTER TABLE d.a RENAME TO zed;"},
		{"a table moved to another schema", "ALTER TABLE public.z SET SCHEMA b;"},
		{"a schema renamed", "ALTER SCHEMA b RENAME TO y;"},
		{"every table dropped", "DROP TABLE b.p, b.m, d.a, d.k, public.z;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base.Tables() // the order a clone starts from
			n, err := base.Apply("m.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, "applied", n)
			n.ShareWith(base)
			inOrder(t, "shared", n)
			// A clone of a clone whose order was never listed.
			m, err := n.Apply("m2.sql", "CREATE TABLE public.again (x int);")
			if err != nil {
				t.Fatal(err)
			}
			o, err := m.Apply("m3.sql", "CREATE TABLE b.again (x int);")
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, "applied twice", o)
			inOrder(t, "applied once", m)
			var d Decoder
			got, err := d.Unmarshal(wireBytes(t, o))
			if err != nil {
				t.Fatal(err)
			}
			inOrder(t, "decoded", got)
		})
	}
	// A catalog written by hand need not list its tables in order.
	var wire map[string]any
	if err := json.Unmarshal(wireBytes(t, base), &wire); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(wire["tables"].([]any))
	b, err := json.Marshal(wire)
	if err != nil {
		t.Fatal(err)
	}
	var d Decoder
	got, err := d.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	inOrder(t, "decoded from tables in reverse", got)
}

func qualNames(ts []*Table) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.QualName().String()
	}
	return out
}
