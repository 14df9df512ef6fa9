package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// thawBase is a catalog whose tables reach each other every way a
// statement's changes spread: foreign keys, partitions, inheritance, an
// enum's columns.
const thawBase = `
	CREATE TYPE mood AS ENUM ('ok', 'sad');
	CREATE TABLE customers (id bigint PRIMARY KEY, email text UNIQUE, m mood DEFAULT 'ok');
	CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, total numeric);
	CREATE TABLE lines (id bigint PRIMARY KEY, order_id bigint REFERENCES orders, sku text);
	CREATE TABLE events (id bigint, at date, customer_id bigint, PRIMARY KEY (id, at), FOREIGN KEY (customer_id) REFERENCES customers) PARTITION BY RANGE (at);
	CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
	CREATE TABLE people (id int PRIMARY KEY, name text);
	CREATE TABLE staff (badge text) INHERITS (people);
	CREATE TABLE notes (id serial, body text);
	CREATE VIEW big AS SELECT id FROM orders WHERE total > 100;`

// TestApplyCopiesOnlyWhatItChanges: the catalog Apply returns shares
// every table the migration did not reach with the catalog it started
// from, and that catalog stays as it was.
func TestApplyCopiesOnlyWhatItChanges(t *testing.T) {
	base, err := Snapshot("shop", "base.sql", thawBase)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := base.MarshalJSON()
	for _, tc := range []struct {
		name, sql string
		copied    []string // the tables the result does not share
	}{
		{"a column", "ALTER TABLE notes ADD COLUMN author text;", []string{"notes"}},
		{"a comment", "COMMENT ON COLUMN orders.total IS 'with tax';", []string{"orders"}},
		{"a comment on a view", "COMMENT ON VIEW big IS 'large';", nil},
		{"a new table referencing others", "CREATE TABLE refunds (id int, order_id bigint REFERENCES orders, customer_id bigint REFERENCES customers);", nil},
		{"a foreign key added", "ALTER TABLE notes ADD COLUMN customer_id bigint REFERENCES customers;", []string{"notes"}},
		{"a partitioned parent and its partition", "ALTER TABLE events ADD COLUMN kind text;", []string{"events", "events_2026"}},
		{"a key the partitions inherit", "ALTER TABLE events ADD UNIQUE (id, at, customer_id);", []string{"events", "events_2026"}},
		{"a new partition", "CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');", nil},
		{"a parent and its child", "ALTER TABLE people ADD COLUMN email text;", []string{"people", "staff"}},
		{"only the parent", "ALTER TABLE ONLY people ALTER COLUMN name SET NOT NULL;", []string{"people", "staff"}},
		{"a view", "CREATE VIEW sad AS SELECT * FROM customers WHERE m = 'sad';", nil},
		{"an index", "CREATE INDEX ON orders (total);", []string{"orders"}},
		{"grants", "GRANT SELECT ON orders TO reader; GRANT SELECT ON lines TO reader;", nil},
		{"a routine that alters", `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN ALTER TABLE lines ADD COLUMN qty int; END $$; SELECT f();`, []string{"lines"}},
		{"an exception block undone", `DO $$ BEGIN ALTER TABLE lines ADD COLUMN qty int; RAISE EXCEPTION 'no'; EXCEPTION WHEN OTHERS THEN NULL; END $$;`, []string{"lines"}},
		{"a function dropped and made again", "CREATE FUNCTION g() RETURNS int LANGUAGE sql AS 'SELECT 1'; DROP FUNCTION g(); DROP FUNCTION IF EXISTS public.h(int); CREATE FUNCTION g() RETURNS int LANGUAGE sql AS 'SELECT 2';", nil},
		{"a table dropped", "DROP TABLE notes;", nil},
		{"a view dropped", "DROP VIEW big;", nil},
		{"a table and the keys to it", "DROP TABLE orders CASCADE;", []string{"lines"}},
		{"a column", "ALTER TABLE customers DROP COLUMN email;", []string{"customers"}},
		{"a key column and the keys to it", "ALTER TABLE customers DROP COLUMN id CASCADE;", []string{"customers", "events", "events_2026", "orders"}},
		{"a key and the keys to it", "ALTER TABLE orders DROP CONSTRAINT orders_pkey CASCADE;", []string{"lines", "orders"}},
		{"a parent's column", "ALTER TABLE people DROP COLUMN name;", []string{"people", "staff"}},
		{"a cascade undone", `DO $$ BEGIN DROP TABLE orders CASCADE; RAISE EXCEPTION 'no'; EXCEPTION WHEN OTHERS THEN NULL; END $$;`, []string{"lines", "orders"}},
		{"a column's cascade undone", `DO $$ BEGIN ALTER TABLE customers DROP COLUMN id CASCADE; RAISE EXCEPTION 'no'; EXCEPTION WHEN OTHERS THEN NULL; END $$;`, []string{"customers", "events", "events_2026", "orders"}},
		{"a table renamed", "ALTER TABLE notes RENAME TO memos;", nil},
		{"a table renamed and the keys to it", "ALTER TABLE orders RENAME TO purchases;", []string{"lines"}},
		{"a parent renamed and its partition", "ALTER TABLE events RENAME TO happenings;", []string{"events_2026"}},
		{"a key column renamed and the keys to it", "ALTER TABLE customers RENAME COLUMN id TO customer_key;", []string{"customers", "events", "events_2026", "orders"}},
		{"a parent's column renamed", "ALTER TABLE people RENAME COLUMN name TO full_name;", []string{"people", "staff"}},
		{"a constraint renamed", "ALTER TABLE orders RENAME CONSTRAINT orders_pkey TO orders_key;", []string{"orders"}},
		{"an index renamed", "ALTER INDEX customers_email_key RENAME TO customers_email_unique;", []string{"customers"}},
		{"a sequence renamed", "ALTER SEQUENCE notes_id_seq RENAME TO memo_ids;", []string{"notes"}},
		{"a rename undone", `DO $$ BEGIN ALTER TABLE orders RENAME TO purchases; RAISE EXCEPTION 'no'; EXCEPTION WHEN OTHERS THEN NULL; END $$;`, nil},
		{"a type renamed", "ALTER TYPE mood RENAME TO feeling;", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := base.Apply("m.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			var copied []string
			for q, nt := range next.tables {
				if bt := base.tables[q]; bt != nil && bt != nt {
					copied = append(copied, q.Name)
				}
			}
			slices.Sort(copied)
			want := tc.copied
			if tc.name == "a rename undone" || tc.name == "a type renamed" {
				// Reach unknown, or a block to undo it: every table copied.
				for q := range base.tables {
					want = append(want, q.Name)
				}
				slices.Sort(want)
			}
			if !slices.Equal(copied, want) {
				t.Errorf("copied %v, want %v", copied, want)
			}
			checkShared(t, base, withShared(next, base))
			if after, _ := base.MarshalJSON(); string(after) != string(before) {
				t.Fatal("Apply changed the catalog it started from")
			}
			if got, _ := next.MarshalJSON(); strings.Contains(tc.name, "undone") && string(got) != string(before) {
				t.Fatalf("the block's changes stayed:\n%s", got)
			}
		})
	}
}

// withShared is next made to share what did not change with prev, as a
// worker writes it.
func withShared(next, prev *Catalog) *Catalog {
	next.ShareWith(prev)
	return next
}

// TestReplayLeavesItsCheckpointsAlone: a replay changes one working
// catalog in place past several checkpoints, then goes back to the last
// one when a migration fails; neither the catalog it started from nor
// the checkpoint changed meanwhile.
func TestReplayLeavesItsCheckpointsAlone(t *testing.T) {
	base, err := Snapshot("shop", "base.sql", thawBase)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := base.MarshalJSON()
	r := NewReplay(base)
	seq := int64(0)
	apply := func(sql string) error {
		seq++
		return r.Apply(context.Background(), fmt.Sprintf("%d.sql", seq), sql, Applied{Seq: seq})
	}
	tables := []string{"customers", "orders", "lines", "notes", "people", "events"}
	for i := range 3*checkpointEvery + 5 {
		if err := apply(fmt.Sprintf("ALTER TABLE %s ADD COLUMN c%d int;", tables[i%len(tables)], i)); err != nil {
			t.Fatal(err)
		}
	}
	mid, _ := r.Catalog().MarshalJSON()
	// Half applied, then refused: the replay redoes from its checkpoint.
	if err := apply("ALTER TABLE orders ADD COLUMN late int; ALTER TABLE nowhere ADD COLUMN x int;"); err == nil {
		t.Fatal("a migration naming a missing table applied")
	}
	seq--
	if got, _ := r.Catalog().MarshalJSON(); string(got) != string(mid) {
		t.Fatal("the refused migration left changes behind")
	}
	if r.Catalog().Table(QualName{"public", "orders"}).Column("late") != nil {
		t.Fatal("the refused migration's first statement stayed")
	}
	if after, _ := base.MarshalJSON(); string(after) != string(before) {
		t.Fatal("the replay changed the catalog it started from")
	}
	if err := apply("ALTER TABLE orders ADD COLUMN late int;"); err != nil {
		t.Fatal(err)
	}
	added := 0
	for i := range 3*checkpointEvery + 5 {
		if tables[i%len(tables)] == "orders" {
			added++
		}
	}
	if n := len(r.Catalog().Table(QualName{"public", "orders"}).Columns); n != 3+added+1 {
		t.Fatalf("orders has %d columns, want %d", n, 3+added+1)
	}
}

// TestUndoneDropKeepsTheFunction: a DROP FUNCTION reaches only the
// functions it names, and an exception block that fails after it puts
// them back.
func TestUndoneDropKeepsTheFunction(t *testing.T) {
	c, err := New("db").Apply("m.sql", `CREATE SCHEMA s;
		CREATE FUNCTION keep() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1';
		CREATE FUNCTION s.keep() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1';
		CREATE FUNCTION other() RETURNS int LANGUAGE sql STABLE AS 'SELECT 1';
		DO $$ BEGIN DROP FUNCTION keep(); RAISE EXCEPTION 'no'; EXCEPTION WHEN OTHERS THEN NULL; END $$;
		DROP FUNCTION s.keep();`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range c.Functions() {
		names = append(names, f.QualName().String())
	}
	if want := []string{"public.keep", "public.other"}; !slices.Equal(names, want) {
		t.Fatalf("functions %v, want %v", names, want)
	}
}

// TestApplyWhileOthersRead: the catalog a worker applies to is the one
// the chunker, the encoder and the daemon read at the same time. Run
// with -race, as CI does: a write to a shared table, even of what it
// held (a partition's keys derived again), is a race with them.
func TestApplyWhileOthersRead(t *testing.T) {
	base, err := Snapshot("shop", "base.sql", thawBase)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	read := make(chan error, 2)
	for range 2 {
		go func() {
			for {
				select {
				case <-done:
					read <- nil
					return
				default:
				}
				if _, err := base.MarshalJSON(); err != nil {
					read <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		for _, sql := range []string{
			"ALTER TABLE notes ADD COLUMN c%d int;",
			"ALTER TABLE people ADD COLUMN c%d int;",
			"CREATE TABLE events_%d PARTITION OF events FOR VALUES FROM ('1990-01-01') TO ('1991-01-01');",
			"ALTER TABLE orders DROP COLUMN total CASCADE, ADD COLUMN c%d int;",
			"DROP TABLE lines; ALTER TABLE customers DROP CONSTRAINT customers_email_key; CREATE TABLE x%d (id int REFERENCES customers);",
			"ALTER TABLE customers RENAME COLUMN id TO key%d; ALTER TABLE orders RENAME TO purchases%[1]d; ALTER SEQUENCE notes_id_seq RENAME TO ids%[1]d;",
		} {
			if _, err := base.Apply("m.sql", fmt.Sprintf(sql, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 2 {
		if err := <-read; err != nil {
			t.Fatal(err)
		}
	}
}
