package retrieve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/pkg/text"
)

// referenceVocab is the vocabulary rebuilt whole, as it was before it
// was updated per schema: the oracle newVocab is held to.
func referenceVocab(cat *catalog.Catalog) *vocab {
	v := &vocab{names: map[string]map[string]int{}, columns: map[string]map[string]int{}, df: map[string]int{}}
	// add counts one table or view for each of its distinct terms.
	add := func(m map[string]map[string]int, schema string, terms map[string]bool) {
		if m[schema] == nil {
			m[schema] = map[string]int{}
		}
		for t := range terms {
			m[schema][t]++
		}
	}
	v.postings, v.length, v.coll = map[string]map[string]float64{}, map[string]float64{}, map[string]float64{}
	count := func(schema string, terms []string, w float64) {
		for _, t := range append(terms, text.Compounds(terms)...) {
			if v.postings[t] == nil {
				v.postings[t] = map[string]float64{}
			}
			v.postings[t][schema] += w
			v.length[schema] += w
			v.coll[t] += w
			v.total += w
		}
	}
	// object analyses a table's or view's name and columns once, for the
	// name and column sets and for the likelihood's counts.
	object := func(schema, name string, renamed []catalog.Rename, columns []*catalog.Column) {
		names, cols := map[string]bool{}, map[string]bool{}
		for _, t := range text.Terms(schema) {
			names[t] = true
		}
		for _, n := range catalog.NamesOf(name, renamed) {
			nameTerms := text.Terms(n)
			for _, t := range nameTerms {
				names[t] = true
			}
			count(schema, nameTerms, 2)
		}
		for _, c := range columns {
			for _, n := range c.Names() {
				ts := text.Terms(n)
				for _, t := range ts {
					cols[t] = true
				}
				count(schema, ts, 1)
			}
		}
		add(v.names, schema, names)
		add(v.columns, schema, cols)
	}
	v.idents = map[string]map[string]int{}
	v.objDF = map[string]int{}
	objDF := func(name string, renamed []catalog.Rename, columns []*catalog.Column) {
		has := map[string]bool{}
		for _, n := range catalog.NamesOf(name, renamed) {
			for _, x := range text.Terms(n) {
				has[x] = true
			}
		}
		for _, c := range columns {
			for _, n := range c.Names() {
				for _, x := range text.Terms(n) {
					has[x] = true
				}
			}
		}
		for x := range has {
			v.objDF[x]++
		}
		v.objects++
	}
	for _, vw := range cat.Views() {
		objDF(vw.Name, vw.Renamed, vw.Columns)
	}
	// ident files a table's or view's names under its schema once each.
	ident := func(schema, name string, renamed []catalog.Rename, columns []*catalog.Column) {
		names := map[string]bool{}
		for _, n := range catalog.NamesOf(name, renamed) {
			names[strings.ToLower(n)] = true
		}
		for _, c := range columns {
			names[strings.ToLower(c.Name)] = true
		}
		for n := range names {
			if v.idents[n] == nil {
				v.idents[n] = map[string]int{}
			}
			v.idents[n][schema]++
		}
	}
	for _, t := range cat.Tables() {
		if t.PartitionOf == nil {
			objDF(t.Name, t.Renamed, t.Columns)
		}
		object(t.Schema, t.Name, t.Renamed, t.Columns)
		if t.PartitionOf != nil {
			continue
		}
		ident(t.Schema, t.Name, t.Renamed, t.Columns)
	}
	for _, vw := range cat.Views() {
		ident(vw.Schema, vw.Name, vw.Renamed, vw.Columns)
	}
	for _, vw := range cat.Views() {
		object(vw.Schema, vw.Name, vw.Renamed, vw.Columns)
	}
	for schema := range v.names {
		seen := map[string]bool{}
		for t := range v.names[schema] {
			seen[t] = true
		}
		for t := range v.columns[schema] {
			seen[t] = true
		}
		for t := range seen {
			v.df[t]++
		}
	}
	v.heads = map[string][]string{}
	for schema, names := range v.names {
		uses := func(t string) bool { return names[t] > 0 || v.columns[schema][t] > 0 }
		for _, m := range []map[string]int{names, v.columns[schema]} {
			for t := range m {
				// Only the head, the last part, leads to the compound:
				// a productcategory is a kind of category record, and a
				// question about products is not about it. With both
				// parts, the compound's rare term pulled it to the top
				// of every question about products.
				if _, head, ok := split(t, uses); ok && !slices.Contains(v.heads[head], t) {
					v.heads[head] = append(v.heads[head], t)
				}
			}
		}
	}
	for h := range v.heads {
		slices.Sort(v.heads[h]) // map order must not leak into query order
	}
	v.deletes = map[string][]string{}
	for t := range v.df {
		if len(t) < 3 {
			continue
		}
		v.deletes[t] = append(v.deletes[t], t)
		for i := range len(t) {
			if i == 0 || t[i] != t[i-1] { // a doubled letter deletes to one variant
				d := t[:i] + t[i+1:]
				v.deletes[d] = append(v.deletes[d], t)
			}
		}
	}
	v.extends = map[string][]string{}
	for t := range v.df {
		for n := 4; n < len(t); n++ {
			if len(t)-n <= 3 {
				v.extends[t[:n]] = append(v.extends[t[:n]], t)
			}
		}
	}
	for s := range v.extends {
		slices.Sort(v.extends[s]) // read in order: a query lists them so
	}
	return v
}

// sameVocab compares the parts of two vocabularies that retrieval reads;
// the delete index's lists are compared as sets (their order is not read).
func sameVocab(t *testing.T, step string, got, want *vocab) {
	t.Helper()
	sameFields(t, step, "a rebuild", []field{
		{"names", got.names, want.names}, {"columns", got.columns, want.columns}, {"df", got.df, want.df},
		{"postings", got.postings, want.postings}, {"length", got.length, want.length}, {"coll", got.coll, want.coll},
		{"total", got.total, want.total}, {"heads", got.heads, want.heads}, {"deletes", sortedLists(got.deletes), sortedLists(want.deletes)},
		{"extends", got.extends, want.extends},
		{"idents", got.idents, want.idents}, {"objDF", got.objDF, want.objDF}, {"objects", got.objects, want.objects},
	})
}

// field is one part of two vocabularies, or of two shares, to compare.
type field struct {
	name      string
	got, want any
}

// sameFields fails the test at the first field that differs from what
// it is held to.
func sameFields(t *testing.T, step, what string, fs []field) {
	t.Helper()
	for _, f := range fs {
		if !reflect.DeepEqual(f.got, f.want) {
			t.Fatalf("%s: %s differs from %s", step, f.name, what)
		}
	}
}

// sortedLists sorts each list of m, for lists whose order is not read.
func sortedLists(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range m {
		out[k] = slices.Sorted(slices.Values(v))
	}
	return out
}

// sameTerms checks that v holds, for every table and view of cat and
// no other, the terms a plain scan of its names and columns finds
// (coverage gaps compare them).
func sameTerms(t *testing.T, step string, v *vocab, cat *catalog.Catalog) {
	t.Helper()
	want := map[string][]string{}
	scan := func(schema, key, name string, renamed []catalog.Rename, columns []*catalog.Column) {
		names := catalog.NamesOf(name, renamed)
		for _, c := range columns {
			names = append(names, c.Names()...)
		}
		var ts []string
		for _, n := range names {
			ts = append(ts, text.Terms(n)...)
		}
		slices.Sort(ts)
		want[schema+"\x00"+key] = slices.Compact(ts)
	}
	for _, tb := range cat.Tables() {
		scan(tb.Schema, tb.QualName().Key(), tb.Name, tb.Renamed, tb.Columns)
	}
	for _, vw := range cat.Views() {
		scan(vw.Schema, vw.QualName().Key(), vw.Name, vw.Renamed, vw.Columns)
	}
	got := map[string][]string{}
	for schema, part := range v.parts {
		for key, ts := range part.objTerms {
			got[schema+"\x00"+key] = ts
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the terms of tables and views differ from a scan", step)
	}
}

// sameOwners checks that v names, for every table, view and column name
// of cat, the tables and views a plain scan finds: by schema, then tables
// before views, each in catalog order; none for a name more than
// maxIdentifierOwners have.
func sameOwners(t *testing.T, step string, v *vocab, cat *catalog.Catalog) {
	t.Helper()
	type owner struct {
		schema, key string
		names       []string
	}
	var all []owner
	for _, tb := range cat.Tables() {
		if tb.PartitionOf == nil {
			all = append(all, owner{tb.Schema, tb.QualName().Key(), append([]string{tb.Name}, columnNames(tb.Columns)...)})
		}
	}
	for _, vw := range cat.Views() {
		all = append(all, owner{vw.Schema, vw.QualName().Key(), append([]string{vw.Name}, columnNames(vw.Columns)...)})
	}
	slices.SortStableFunc(all, func(a, b owner) int { return strings.Compare(a.schema, b.schema) })
	want := map[string][]string{}
	for _, o := range all {
		for _, n := range o.names {
			n = strings.ToLower(n)
			if !slices.Contains(want[n], o.key) {
				want[n] = append(want[n], o.key)
			}
		}
	}
	for n, keys := range want {
		if len(keys) > maxIdentifierOwners {
			keys = nil
		}
		if got := v.owners(n); !slices.Equal(got, keys) {
			t.Fatalf("%s: owners of %s: %v, want %v", step, n, got, keys)
		}
	}
}

func columnNames(cols []*catalog.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// TestVocabUpdatesLikeARebuild carries one vocabulary through a history
// that adds, changes, moves and drops tables, views and whole schemas,
// and compares it with a rebuild at every step.
func TestVocabUpdatesLikeARebuild(t *testing.T) {
	c, err := catalog.Snapshot("db", "base.sql", `
		CREATE SCHEMA shop; CREATE SCHEMA hr;
		CREATE TABLE shop.productcategory (id int, name text);
		CREATE TABLE shop.product (id int, category_id int, name text);
		CREATE TABLE shop.category (id int);
		CREATE TABLE hr.employees (id int, dept_no int, hire_date date);
		CREATE TABLE hr.departments (dept_no int, dept_name text);
		CREATE VIEW hr.managers AS SELECT id FROM hr.employees;
		CREATE TABLE public.settings (key text, value text);`)
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{
		`CREATE TABLE shop.orders (id int, customer_id int, placed_at date)`,
		`ALTER TABLE shop.orders ADD COLUMN shipping_adress text`,
		`ALTER TABLE hr.employees RENAME COLUMN dept_no TO department_number`,
		`DROP VIEW hr.managers`,
		`CREATE SCHEMA school; CREATE TABLE school.students (id int, enrolment int, free_meals int)`,
		`ALTER TABLE shop.category SET SCHEMA school`,
		`DROP TABLE public.settings`,
		`DROP SCHEMA hr CASCADE`,
		`CREATE TABLE shop.category (id int, label text); CREATE VIEW shop.sales AS SELECT id FROM shop.orders`,
		`ALTER TABLE shop.product RENAME TO products`,
		`DROP TABLE shop.productcategory`,
		`CREATE INDEX ON shop.orders (placed_at)`,
		`CREATE TABLE shop.events (id int, occurred_at date) PARTITION BY RANGE (occurred_at);
		 CREATE TABLE shop.events_2024 PARTITION OF shop.events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')`,
	}
	v := newVocab(c, nil)
	sameVocab(t, "the base", v, referenceVocab(c))
	sameOwners(t, "the base", v, c)
	sameTerms(t, "the base", v, c)
	for i, sql := range steps {
		n, err := c.Apply("m.sql", sql)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		n.ShareWith(c) // as a worker does before it writes
		v = newVocab(n, v)
		step := fmt.Sprintf("step %d (%s)", i+1, sql)
		sameVocab(t, step, v, referenceVocab(n))
		sameOwners(t, step, v, n)
		sameTerms(t, step, v, n)
		c = n
	}
}

// TestVocabUpdatesSpiderUnion does the same on SpiderUnion's 166 schemas,
// where a migration touches one or two of them.
func TestVocabUpdatesSpiderUnion(t *testing.T) {
	c, err := catalog.Snapshot("su", "schema.sql", testenv.ReadShared(t, "bench", "spiderunion", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	schemas := c.Schemas()
	v := newVocab(c, nil)
	sameVocab(t, "the snapshot", v, referenceVocab(c))
	sameOwners(t, "the snapshot", v, c)
	sameTerms(t, "the snapshot", v, c)
	for i := range 40 {
		s := schemas[(i*37)%len(schemas)]
		var sql string
		switch i % 4 {
		case 0:
			sql = fmt.Sprintf("CREATE TABLE %q.probe_%d (probe_id int, observed_at date)", s, i)
		case 1:
			sql = fmt.Sprintf("ALTER TABLE %q.probe_%d ADD COLUMN reading_value numeric", schemas[((i-1)*37)%len(schemas)], i-1)
		case 2:
			sql = fmt.Sprintf("DROP SCHEMA %q CASCADE", s)
		case 3:
			d := schemas[((i-1)*37)%len(schemas)] // the one dropped just before
			sql = fmt.Sprintf("CREATE SCHEMA %q; CREATE TABLE %q.replaced (id int)", d, d)
		}
		n, err := c.Apply("m.sql", sql)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, sql, err)
		}
		n.ShareWith(c) // as a worker does before it writes
		v = newVocab(n, v)
		step := fmt.Sprintf("step %d (%s)", i+1, sql)
		sameVocab(t, step, v, referenceVocab(n))
		sameOwners(t, step, v, n)
		sameTerms(t, step, v, n)
		c = n
	}
}

// TestSharedStartsCostTheirNumber: a start thousands of terms share
// (abcd for abcdaaa … abcdzzz, each a column) is filed once per term:
// copying its list for each term allocated 2.5 GB for these 17,576
// columns, where filing them costs tens of megabytes. Bytes allocated,
// not time, so that a busy machine cannot fail it.
func TestSharedStartsCostTheirNumber(t *testing.T) {
	var b strings.Builder
	for tbl := range 18 {
		fmt.Fprintf(&b, "CREATE TABLE t%d (", tbl)
		for c := range 1000 {
			i := tbl*1000 + c
			if i >= 26*26*26 {
				break
			}
			if c > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "abcd%c%c%c int", 'a'+i/676%26, 'a'+i/26%26, 'a'+i%26)
		}
		b.WriteString(");\n")
	}
	cat, err := catalog.Snapshot("db", "s.sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := newVocab(cat, nil)
	runtime.ReadMemStats(&after)
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 400 {
		t.Errorf("building the vocabulary of 17,576 columns that share a start allocated %d MB", mb)
	}
	if ext := v.extends["abcd"]; len(ext) < 16000 || !slices.IsSorted(ext) {
		t.Errorf("abcd extends to %d terms, sorted %v; want them all, in order", len(ext), slices.IsSorted(ext))
	}
}

// TestSchemaShareUpdatesLikeARebuild runs random migrations on one big
// schema, where each changes a few of its tables and views: the share
// updated from the one before (nextSchemaVocab) must equal the share
// built from nothing, and the vocabulary a rebuild.
func TestSchemaShareUpdatesLikeARebuild(t *testing.T) {
	words := []string{"product", "category", "productcategory", "order", "line", "orderline", "customer", "address",
		"name", "title", "price", "total", "created", "at", "status", "shipping", "adress", "line1", "country", "code"}
	rng := rand.New(rand.NewPCG(7, 55))
	word := func() string { return words[rng.IntN(len(words))] }
	// Parts that come and go, alone or run together (warehousebin), so
	// that heads are filed and unfiled as the parts do.
	parts := []string{"warehouse", "bin", "vendor", "rating", "season"}
	part := func() string {
		if rng.IntN(2) == 0 {
			return parts[rng.IntN(len(parts))]
		}
		return parts[rng.IntN(len(parts))] + parts[rng.IntN(len(parts))]
	}
	var b strings.Builder
	// A table named like its schema: the schema's name counts once for it.
	b.WriteString("CREATE SCHEMA app;\nCREATE TABLE app.app (id int, app_name text);\n")
	for i := range 40 {
		fmt.Fprintf(&b, "CREATE TABLE app.%s_%d (id int PRIMARY KEY, %s_%s text, %q int);\n", word(), i, word(), word(), word())
	}
	c, err := catalog.Snapshot("db", "base.sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(c, nil)
	incremental := 0
	for step := range 150 {
		var tables []*catalog.Table
		for _, tb := range c.Tables() {
			if tb.Schema == "app" && tb.PartitionOf == nil {
				tables = append(tables, tb)
			}
		}
		var views []*catalog.View
		for _, vw := range c.Views() {
			if vw.Schema == "app" {
				views = append(views, vw)
			}
		}
		tb := tables[rng.IntN(len(tables))]
		col := tb.Columns[rng.IntN(len(tb.Columns))].Name
		var sql string
		switch rng.IntN(9) {
		case 0:
			sql = fmt.Sprintf("CREATE TABLE app.%s_n%d (id int, %s_%s text)", word(), step, word(), word())
		case 1:
			sql = fmt.Sprintf("ALTER TABLE app.%q ADD COLUMN %s text", tb.Name, part())
		case 2:
			sql = fmt.Sprintf("ALTER TABLE app.%q RENAME COLUMN %q TO %s_r%d", tb.Name, col, part(), step)
		case 3:
			sql = fmt.Sprintf("ALTER TABLE app.%q RENAME TO %s_%s_r%d", tb.Name, word(), word(), step)
		case 4:
			if len(tables) > 20 {
				sql = fmt.Sprintf("DROP TABLE app.%q CASCADE", tb.Name)
			}
		case 5:
			if col != "id" && len(tb.Columns) > 1 {
				sql = fmt.Sprintf("ALTER TABLE app.%q DROP COLUMN %q CASCADE", tb.Name, col)
			}
		case 6:
			sql = fmt.Sprintf("CREATE VIEW app.%s_v%d AS SELECT %q AS %s_%s FROM app.%q", word(), step, col, word(), word(), tb.Name)
		case 7:
			if len(views) > 0 {
				sql = fmt.Sprintf("DROP VIEW app.%q", views[rng.IntN(len(views))].Name)
			}
		case 8:
			// Several tables at once, and a partitioned one.
			sql = fmt.Sprintf(`CREATE TABLE app.%[1]s_p%[2]d (id int, at date) PARTITION BY RANGE (at);
				CREATE TABLE app.%[1]s_p%[2]d_2024 PARTITION OF app.%[1]s_p%[2]d FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
				ALTER TABLE app.%[3]q ADD COLUMN %[4]s_x%[2]d int`, word(), step, tb.Name, word())
		}
		if sql == "" {
			continue
		}
		n, err := c.Apply("m.sql", sql)
		if err != nil {
			t.Fatalf("step %d (%s): %v", step, sql, err)
		}
		n.ShareWith(c) // as a worker does before it writes
		name := fmt.Sprintf("step %d (%s)", step, sql)
		if next, _ := nextSchemaVocab("app", v.parts["app"], objectsBySchema(n)["app"]); next != nil {
			incremental++
			sameShare(t, name, next, newSchemaVocab("app", objectsBySchema(n)["app"]))
		}
		v = newVocab(n, v)
		sameVocab(t, name, v, referenceVocab(n))
		sameOwners(t, name, v, n)
		sameTerms(t, name, v, n)
		c = n
	}
	if incremental < 100 {
		t.Fatalf("only %d of the migrations updated the share: the test does not test the update", incremental)
	}
}

// sameShare checks that a share updated from another holds what one
// built from nothing does (the order of a head's compounds is not read).
func sameShare(t *testing.T, step string, got, want *schemaVocab) {
	t.Helper()
	sameFields(t, step, "the share built from nothing", []field{
		{"names", got.names, want.names}, {"columns", got.columns, want.columns},
		{"post", got.post, want.post}, {"length", got.length, want.length}, {"heads", sortedLists(got.heads), sortedLists(want.heads)},
		{"idents", got.idents, want.idents}, {"objDF", got.objDF, want.objDF}, {"counted", got.counted, want.counted},
		{"objTerms", got.objTerms, want.objTerms},
	})
}

// BenchmarkNextVocab is a daemon's work on the vocabulary when a
// migration alters one table of 10,000, in 1,000 schemas or in one.
func BenchmarkNextVocab(b *testing.B) {
	for _, schemas := range []int{1000, 1} {
		var ddl []byte
		per := 10_000 / schemas
		for s := range schemas {
			ddl = fmt.Appendf(ddl, "CREATE SCHEMA s%d;\n", s)
			for i := range per {
				ddl = fmt.Appendf(ddl, "CREATE TABLE s%d.order_line_%d (t%d_id int PRIMARY KEY, product_code_%d text, shipped_at date, quantity int);\n", s, i, i, i%500)
			}
		}
		base, err := catalog.Snapshot("db", "s.sql", string(ddl))
		if err != nil {
			b.Fatal(err)
		}
		cat, err := base.Apply("m.sql", "ALTER TABLE s0.order_line_1 ADD COLUMN warehouse_bin text;")
		if err != nil {
			b.Fatal(err)
		}
		prev := newVocab(base, nil)
		for _, from := range []string{"previous", "nothing"} {
			b.Run(fmt.Sprintf("schemas=%d/from=%s", schemas, from), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if from == "previous" {
						newVocab(cat, prev)
					} else {
						newVocab(cat, nil)
					}
				}
			})
		}
	}
}
