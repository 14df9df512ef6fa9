package catalog

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

func TestInferJoins(t *testing.T) {
	for _, tc := range []struct {
		name, ddl string
		want      []string // "from.column → to.column"
	}{
		{"a column named as another table's key",
			`CREATE TABLE film (film_id int PRIMARY KEY, title text);
			 CREATE TABLE category (category_id int PRIMARY KEY, name text);
			 CREATE TABLE film_category (film_id int, category_id int, PRIMARY KEY (film_id, category_id));`,
			[]string{"public.film_category.category_id → public.category.category_id", "public.film_category.film_id → public.film.film_id"}},
		{"case and underscores ignored",
			`CREATE TABLE "Team" ("TeamID" int PRIMARY KEY);
			 CREATE TABLE player (player_id int PRIMARY KEY, team_id int);`,
			[]string{"public.player.team_id → public.team.TeamID"}},
		{"one key shared by two tables",
			`CREATE TABLE person (name text PRIMARY KEY);
			 CREATE TABLE male (name text PRIMARY KEY);`,
			[]string{"public.male.name → public.person.name"}},
		{"a bare id names its table, singular or plural",
			`CREATE TABLE customers (id int PRIMARY KEY, name text);
			 CREATE TABLE categories (id int PRIMARY KEY);
			 CREATE TABLE orders (id int PRIMARY KEY, customer_id int, category_id int);
			 CREATE TABLE notes (id int PRIMARY KEY, customersid int);`,
			[]string{"public.notes.customersid → public.customers.id", "public.orders.category_id → public.categories.id", "public.orders.customer_id → public.customers.id"}},
		{"a namespaced table is named without its namespace within it",
			`CREATE TABLE ci_builds (id int PRIMARY KEY, runner_id int);
			 CREATE TABLE ci_runners (id int PRIMARY KEY);
			 CREATE TABLE ci_build_needs (id int PRIMARY KEY, build_id int);
			 CREATE TABLE packages_build_infos (id int PRIMARY KEY, build_id int);`,
			[]string{"public.ci_build_needs.build_id → public.ci_builds.id", "public.ci_builds.runner_id → public.ci_runners.id"}},
		{"plurals of words ending in e",
			`CREATE TABLE courses (id int PRIMARY KEY);
			 CREATE TABLE purchases (id int PRIMARY KEY);
			 CREATE TABLE enrolment (id int PRIMARY KEY, course_id int, purchase_id int);`,
			[]string{"public.enrolment.course_id → public.courses.id", "public.enrolment.purchase_id → public.purchases.id"}},
		{"a column named for a table in the singular, of its key's type",
			`CREATE TABLE country ("Code" text PRIMARY KEY, "Name" text);
			 CREATE TABLE economy ("Country" text PRIMARY KEY, gdp real);
			 CREATE TABLE encounters (id uuid PRIMARY KEY);
			 CREATE TABLE claims (id int PRIMARY KEY, encounter uuid);
			 CREATE TABLE borders ("Country1" text, "Country2" text, length real);`,
			[]string{"public.borders.Country1 → public.country.Code", "public.borders.Country2 → public.country.Code",
				"public.claims.encounter → public.encounters.id", "public.economy.Country → public.country.Code"}},
		{"a column named for a table and its key column",
			`CREATE TABLE country (code char(2) PRIMARY KEY);
			 CREATE TABLE countries (iso text PRIMARY KEY);
			 CREATE TABLE city (id int PRIMARY KEY, country_code varchar(2), countries_iso text);`,
			[]string{"public.city.countries_iso → public.countries.iso", "public.city.country_code → public.country.code"}},
		{"a plural or another type is a value, not the key",
			`CREATE TABLE pages (pid int PRIMARY KEY);
			 CREATE TABLE rating (rating_id int PRIMARY KEY);
			 CREATE TABLE langs (lid int PRIMARY KEY, pages int, rating real, tag text[]);
			 CREATE TABLE tag (tag_id text[] PRIMARY KEY);`,
			nil},
		{"a bare id alone joins nothing",
			`CREATE TABLE a (id int PRIMARY KEY);
			 CREATE TABLE b (id int PRIMARY KEY, x int);`,
			nil},
		{"a table with foreign keys has declared its joins",
			`CREATE TABLE dept (dept_id int PRIMARY KEY);
			 CREATE TABLE site (site_id int PRIMARY KEY);
			 CREATE TABLE emp (emp_id int PRIMARY KEY, dept_id int REFERENCES dept, site_id int);`,
			nil},
		{"composite keys are no one's key",
			`CREATE TABLE stock (store_id int, item_id int, PRIMARY KEY (store_id, item_id));
			 CREATE TABLE sale (sale_id int PRIMARY KEY, store_id int, item_id int);`,
			nil},
		{"not across schemas",
			`CREATE SCHEMA a; CREATE SCHEMA b;
			 CREATE TABLE a.region (region_id int PRIMARY KEY);
			 CREATE TABLE b.office (office_id int PRIMARY KEY, region_id int);`,
			nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := Snapshot("db", "s.sql", tc.ddl)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range declaredJoins(cat) {
				got = append(got, j.From.Key()+"."+j.FromColumn+" → "+j.To.Key()+"."+j.ToColumn)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("joins %q, want %q", got, tc.want)
			}
		})
	}
}

// A schema of ten thousand tables infers its joins in one pass over the
// columns: no pairwise comparison of tables.
func BenchmarkInferJoins(b *testing.B) {
	var ddl []byte
	for i := range 10000 {
		ddl = fmt.Appendf(ddl, "CREATE TABLE t%d (t%d_id int PRIMARY KEY, t%d_id int, label text);\n", i, i, (i+1)%10000)
	}
	cat, err := Snapshot("db", "s.sql", string(ddl))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if n := len(declaredJoins(cat)); n != 10000 {
			b.Fatalf("%d joins, want 10000", n)
		}
	}
}

// The keys a partition declares are its root's joins: only the root is
// chunked and named by queries. Incoming keys are the tables' own.
func TestPartitionKeysJoinTheirRoot(t *testing.T) {
	const ddl = `
CREATE TABLE customer (customer_id int PRIMARY KEY, name text);
CREATE TABLE region (region_id int PRIMARY KEY, name text);
CREATE TABLE payment (payment_id int, customer_id int, paid_on date) PARTITION BY RANGE (paid_on);
CREATE TABLE payment_2022 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2023-01-01') PARTITION BY LIST (customer_id);
CREATE TABLE payment_2022_a PARTITION OF payment_2022 FOR VALUES IN (1);
ALTER TABLE payment_2022_a ADD CONSTRAINT fk_c FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
CREATE TABLE audit (entry int, region int REFERENCES region);
`
	cat, err := Snapshot("db", "s.sql", ddl)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(cat)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"public.payment", "public.customer", 1},
		{"public.customer", "public.payment", 1},
		{"public.payment_2022_a", "public.customer", 0},
		{"public.audit", "public.region", 1},
	} {
		if got := g.Neighbours(tc.a)[tc.b]; got != tc.want {
			t.Errorf("%s joins %s: %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	in := g.Incoming(QualName{Schema: "public", Name: "customer"})
	if len(in) != 1 || in[0].From.Name != "payment_2022_a" || in[0].Key.Columns[0] != "customer_id" {
		t.Errorf("incoming keys of customer: %+v", in)
	}
}

// A join is written with its names as declared, as describing a table
// writes its keys; replies name tables by key, as their results do.
func TestInferredJoinNames(t *testing.T) {
	cat, err := Snapshot("db", "s.sql", `CREATE TABLE "Team" ("TeamID" int PRIMARY KEY);
		CREATE TABLE player (player_id int PRIMARY KEY, team_id int);`)
	if err != nil {
		t.Fatal(err)
	}
	j := declaredJoins(cat)
	if len(j) != 1 {
		t.Fatalf("joins %v", j)
	}
	if got := j[0].String(); got != "public.player.team_id = public.Team.TeamID" {
		t.Errorf("String %q", got)
	}
	// Replies name tables by their keys (the daemon's wire form).
	if got := j[0].From.Key() + " " + j[0].To.Key(); got != "public.player public.team" {
		t.Errorf("keys %q", got)
	}
}

func TestDescribe(t *testing.T) {
	cat, err := Snapshot("db", "s.sql", `
CREATE TYPE mood AS ENUM ('ok', 'sad');
CREATE TABLE customer (customer_id int PRIMARY KEY, name text, mood mood, referrer int REFERENCES customer);
CREATE TABLE payment (payment_id int, customer_id int, paid_on date) PARTITION BY RANGE (paid_on);
CREATE TABLE payment_2022 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
CREATE TABLE payment_2023 PARTITION OF payment FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
ALTER TABLE payment_2022 ADD CONSTRAINT c1 FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
ALTER TABLE payment_2023 ADD CONSTRAINT c2 FOREIGN KEY (customer_id) REFERENCES customer (customer_id);
CREATE TABLE note (note_id int PRIMARY KEY, customer_id int);
CREATE VIEW sad AS SELECT name FROM customer WHERE mood = 'sad';
CREATE TABLE memo (memo_id int PRIMARY KEY, body text);
`)
	if err != nil {
		t.Fatal(err)
	}
	if cat, err = cat.Apply("0002_notes.sql", "ALTER TABLE memo RENAME TO remark; ALTER TABLE remark RENAME COLUMN body TO content;"); err != nil {
		t.Fatal(err)
	}
	g := NewGraph(cat)
	tests := []struct {
		name string
		want Description // DDL and Columns not compared
	}{
		{"customer", Description{Name: "public.customer", References: []string{"referrer → public.customer.customer_id"},
			ReferencedBy: []string{"public.customer.referrer → customer_id", "public.payment_2022.customer_id → customer_id", "public.payment_2023.customer_id → customer_id"},
			Joins:        []string{"public.note.customer_id = public.customer.customer_id"}, Enums: []string{"mood: ok, sad"}}},
		// A partitioned table's joins are the keys its partitions
		// declare, each once.
		{"payment", Description{Name: "public.payment", References: []string{"customer_id → public.customer.customer_id"}}},
		{"public.sad", Description{Name: "public.sad", View: true, References: []string{"reads public.customer"}}},
		// A renamed table says what it was called, and by which migration.
		{"remark", Description{Name: "public.remark",
			Renamed: []string{"renamed from public.memo (0002_notes.sql)", "column content renamed from body (0002_notes.sql)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := g.Describe(tt.name)
			if d == nil {
				t.Fatal("not described")
			}
			if d.DDL == "" || d.Columns == 0 {
				t.Errorf("no DDL or columns: %+v", d)
			}
			d.DDL, d.Columns = "", 0
			if !reflect.DeepEqual(*d, tt.want) {
				t.Errorf("Describe = %+v\nwant       %+v", *d, tt.want)
			}
		})
	}
	if d := g.Describe("missing"); d != nil {
		t.Errorf("a missing table described: %+v", d)
	}
}

// TestWarmBuildsWhatQuestionsFollow: a warmed graph has its neighbours,
// and its inferred joins only when asked, before any question reads them.
func TestWarmBuildsWhatQuestionsFollow(t *testing.T) {
	cat, err := Snapshot("db", "s.sql", `CREATE TABLE category (category_id int PRIMARY KEY);
		CREATE TABLE film_category (film_id int, category_id int);
		CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (a_id int REFERENCES a);`)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(cat)
	g.Warm(false)
	if len(g.adj["public.a"]) != 1 || g.inferred != nil {
		t.Fatalf("warmed without inferred joins: neighbours %v, inferred %v", g.adj, g.inferred)
	}
	g.Warm(true)
	if len(g.inferred["public.category"]) != 1 {
		t.Fatalf("warmed with inferred joins: %v", g.inferred)
	}
}

// declaredJoins are the joins inferred for cat's tables that declare no
// key of their own, schema by schema in name order.
func declaredJoins(cat *Catalog) []InferredJoin {
	found := inferJoins(cat, func(t *Table) bool { return len(t.ForeignKeys) > 0 }, nil)
	var out []InferredJoin
	for _, name := range slices.Sorted(maps.Keys(found)) {
		out = append(out, found[name].joins...)
	}
	return out
}

// TestNextGraph: a version's graph built from the previous one (Next)
// has the neighbours and joins a graph built from nothing has. It finds
// joins again only in the schemas whose tables changed, and updates the
// neighbours unless a partition or its root changed.
func TestNextGraph(t *testing.T) {
	base, err := Snapshot("db", "base.sql", `
		CREATE SCHEMA films; CREATE SCHEMA shop; CREATE SCHEMA hr; CREATE SCHEMA "Shop";
		CREATE TABLE films.category (category_id int PRIMARY KEY, name text);
		CREATE TABLE films.film (film_id int PRIMARY KEY, title text);
		CREATE TABLE films.film_category (film_id int, category_id int);
		CREATE TABLE films.reviews (film_id int REFERENCES films.film, body text);
		CREATE TABLE shop.customers (id int PRIMARY KEY, name text);
		CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int, total numeric);
		CREATE TABLE shop.products (id int PRIMARY KEY);
		CREATE TABLE shop.lines (order_id int REFERENCES shop.orders, product_id int, qty int);
		CREATE TABLE shop.events (at date, customer_id int REFERENCES shop.customers) PARTITION BY RANGE (at);
		CREATE TABLE shop.events_2026 PARTITION OF shop.events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
		CREATE TABLE "Shop".lines (order_id int REFERENCES shop.orders);
		CREATE TABLE hr.staff (staff_id int PRIMARY KEY, name text);
		CREATE TABLE hr.shifts (shift_id int PRIMARY KEY, staff_id int);
		CREATE TABLE hr.clock (at timestamptz, staff_id int) PARTITION BY RANGE (at);`)
	if err != nil {
		t.Fatal(err)
	}
	prev := NewGraph(base)
	prev.Warm(true)
	before := fmt.Sprint(prev.adj)
	if n := prev.Neighbours("shop.lines")["shop.orders"]; n != 2 {
		t.Fatalf("shop.lines and \"Shop\".lines share a key: %d keys to shop.orders, want 2", n)
	}
	for _, tc := range []struct {
		name, sql string
		found     []string // the schemas whose joins are found again
		updated   bool     // the neighbours updated, not built from nothing
	}{
		{"nothing a join reads", "CREATE VIEW films.titles AS SELECT title FROM films.film; COMMENT ON VIEW films.titles IS 'titles';", nil, true},
		{"a column that names no key", "ALTER TABLE films.film ADD COLUMN length int;", []string{"films"}, true},
		{"a column that names a key", "ALTER TABLE films.film ADD COLUMN category_id int;", []string{"films"}, true},
		{"a table joined dropped", "DROP TABLE films.category;", []string{"films"}, true},
		{"a key dropped", "ALTER TABLE hr.staff DROP CONSTRAINT staff_pkey;", []string{"hr"}, true},
		{"a key declared", "ALTER TABLE shop.orders ADD FOREIGN KEY (customer_id) REFERENCES shop.customers;", []string{"shop"}, true},
		{"a second key between two tables", "ALTER TABLE shop.lines ADD COLUMN order2_id int REFERENCES shop.orders;", []string{"shop"}, true},
		{"a table and the keys to it", "DROP TABLE shop.orders CASCADE;", []string{"Shop", "shop"}, true},
		{"one of two tables under one key", `DROP TABLE "Shop".lines;`, nil, true},
		{"a new schema", "CREATE SCHEMA pay; CREATE TABLE pay.payments (id int PRIMARY KEY, staff_id int REFERENCES hr.staff);", []string{"pay"}, true},
		{"a table renamed", "ALTER TABLE films.film RENAME TO movie;", []string{"films"}, true},
		{"a new partition", "CREATE TABLE shop.events_2027 PARTITION OF shop.events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');", nil, false},
		{"a key on a partitioned table", "ALTER TABLE shop.events ADD COLUMN product_id int REFERENCES shop.products;", []string{"shop"}, false},
		{"a key on a partition", "ALTER TABLE shop.events_2026 ADD FOREIGN KEY (customer_id) REFERENCES shop.customers;", nil, false},
		{"a partition detached", "ALTER TABLE shop.events DETACH PARTITION shop.events_2026;", []string{"shop"}, false},
		{"a partition in another schema declares its root's key", "CREATE SCHEMA logs; CREATE TABLE logs.clock_2026 PARTITION OF hr.clock (FOREIGN KEY (staff_id) REFERENCES hr.staff) FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');", []string{"hr"}, false},
		// Statements that reach every table copy every table
		// (thaw.go): their versions find every schema's joins again.
		{"a schema renamed", "ALTER SCHEMA hr RENAME TO people;", []string{"Shop", "films", "people", "shop"}, false},
		{"a schema dropped", "DROP SCHEMA hr CASCADE;", []string{"Shop", "films", "shop"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, err := base.Apply("m.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			next, fresh := prev.Next(cat), NewGraph(cat)
			next.Warm(true)
			fresh.Warm(true)
			if !reflect.DeepEqual(next.adj, fresh.adj) {
				t.Errorf("neighbours %v, from nothing %v", next.adj, fresh.adj)
			}
			if !sameGraph(next, fresh) {
				t.Errorf("incoming keys %v, from nothing %v", next.incoming, fresh.incoming)
			}
			if !reflect.DeepEqual(next.inferred, fresh.inferred) {
				t.Errorf("joins %v, from nothing %v", next.inferred, fresh.inferred)
			}
			old := *prev.found.Load()
			var found []string
			for name, s := range *next.found.Load() {
				if old[name] != s {
					found = append(found, name)
				}
			}
			slices.Sort(found)
			if !slices.Equal(found, tc.found) {
				t.Errorf("found joins again in %v, want %v", found, tc.found)
			}
			shared := 0
			for k, m := range next.adj {
				if reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(prev.adj[k]).UnsafePointer() {
					shared++
				}
			}
			if updated := shared > 0; updated != tc.updated {
				t.Errorf("updated %v (%d neighbour sets shared), want %v", updated, shared, tc.updated)
			}
			if next.base != nil || next.lent != nil {
				t.Error("the graph still holds the previous version's")
			}
			if after := fmt.Sprint(prev.adj); after != before {
				t.Fatalf("the previous version's neighbours changed:\n%s\nwere\n%s", after, before)
			}
		})
	}
}

// BenchmarkNextGraph builds and warms a version's graph after a migration
// that added a column to one table of ten thousand, from the previous
// version's graph and from nothing: a daemon does it for every version.
// Joins are inferred schema by schema, so a catalog in one schema infers
// them all again either way; its neighbours are updated.
func BenchmarkNextGraph(b *testing.B) {
	for _, schemas := range []int{1000, 1} {
		var ddl []byte
		per := 10_000 / schemas
		for s := range schemas {
			ddl = fmt.Appendf(ddl, "CREATE SCHEMA s%d;\n", s)
			// Every other table declares a key to the one before; the
			// others' joins are inferred.
			for i := range per {
				ddl = fmt.Appendf(ddl, "CREATE TABLE s%d.t%d (t%d_id int PRIMARY KEY, t%d_id int, label text", s, i, i, (i+1)%per)
				if i%2 == 1 {
					ddl = fmt.Appendf(ddl, ", up int REFERENCES s%d.t%d", s, i-1)
				}
				ddl = append(ddl, ");\n"...)
			}
		}
		base, err := Snapshot("db", "s.sql", string(ddl))
		if err != nil {
			b.Fatal(err)
		}
		cat, err := base.Apply("m.sql", "ALTER TABLE s0.t1 ADD COLUMN extra text;")
		if err != nil {
			b.Fatal(err)
		}
		prev := NewGraph(base)
		prev.Warm(true)
		for _, from := range []string{"previous", "nothing"} {
			b.Run(fmt.Sprintf("schemas=%d/from=%s", schemas, from), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					g := NewGraph(cat)
					if from == "previous" {
						g = prev.Next(cat)
					}
					g.Warm(true)
				}
			})
		}
	}
}

// sameGraph reports whether two warmed graphs of one catalog hold the
// same keys, partitions, neighbours and joins.
func sameGraph(a, b *Graph) bool {
	return reflect.DeepEqual(a.incoming, b.incoming) && reflect.DeepEqual(a.partitions, b.partitions) &&
		reflect.DeepEqual(a.partitionKeys, b.partitionKeys) && reflect.DeepEqual(a.adj, b.adj) &&
		reflect.DeepEqual(a.inferred, b.inferred)
}

// TestSharedKeyNamesJoinNothing: a key name many tables share names none
// of them. Joining each to every other grew with the square of the
// tables: 2,000 tables keyed by name made two million joins and took
// 2 GB, and a schema of ten thousand could stop every daemon that
// serves it.
func TestSharedKeyNamesJoinNothing(t *testing.T) {
	for _, tc := range []struct {
		tables, want int
	}{
		{2, 1},
		{maxKeyOwners, maxKeyOwners * (maxKeyOwners - 1) / 2}, // each pair once
		{maxKeyOwners + 1, 0},
		{2000, 0},
	} {
		var ddl []byte
		for i := range tc.tables {
			ddl = fmt.Appendf(ddl, "CREATE TABLE t%d (name text PRIMARY KEY, country text, v int);\n", i)
		}
		ddl = append(ddl, "CREATE TABLE country (code text PRIMARY KEY);\n"...)
		cat, err := Snapshot("db", "s.sql", string(ddl))
		if err != nil {
			t.Fatal(err)
		}
		// Every table's country column still joins country, the one
		// table it names.
		byName := 0
		for _, j := range declaredJoins(cat) {
			if j.To.Name != "country" {
				byName++
			}
		}
		if byName != tc.want {
			t.Errorf("%d tables keyed by name: %d joins by it, want %d", tc.tables, byName, tc.want)
		}
		if n := len(declaredJoins(cat)) - byName; n != tc.tables {
			t.Errorf("%d tables with a country column: %d joins to country, want %d", tc.tables, n, tc.tables)
		}
	}
}
