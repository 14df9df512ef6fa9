package catalog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

const journalBase = `CREATE SCHEMA app;
CREATE TYPE mood AS ENUM ('ok', 'sad');
CREATE TABLE app.users (id bigserial PRIMARY KEY, email text UNIQUE, m mood DEFAULT 'ok');
CREATE TABLE orders (id int PRIMARY KEY, user_id bigint REFERENCES app.users (id), total numeric);
CREATE TABLE base (id int, note text);
CREATE TABLE kid () INHERITS (base);
CREATE TABLE grandkid () INHERITS (kid);
CREATE TABLE m (id int, v text) PARTITION BY LIST (id);
CREATE TABLE m1 PARTITION OF m FOR VALUES IN (1);
CREATE TABLE loose (id int, v text);
CREATE INDEX loose_v ON loose (v);
CREATE INDEX ON m (v);
CREATE VIEW order_totals AS SELECT user_id, sum(total) AS total FROM orders GROUP BY user_id;
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql AS $b$ BEGIN CREATE TABLE from_g (id int); ALTER TABLE base ADD COLUMN from_g int; END $b$;
COMMENT ON TABLE orders IS 'orders';
COMMENT ON SCHEMA app IS 'the app';
`

// journalStatements each change the catalog in their own way, or fail
// half way through.
var journalStatements = []string{
	"CREATE TABLE new_t (id int REFERENCES orders (id))",
	"CREATE TABLE newschema.t (id int)",
	"CREATE TABLE kid2 () INHERITS (base)",
	"CREATE TABLE m2 PARTITION OF m FOR VALUES IN (2)",
	"CREATE TABLE orders (id int)",
	"CREATE TABLE t AS SELECT * FROM orders",
	"CREATE MATERIALIZED VIEW mv AS SELECT * FROM orders",
	"CREATE VIEW v2 AS SELECT 1 AS one",
	"CREATE OR REPLACE VIEW order_totals AS SELECT user_id FROM orders",
	"ALTER TABLE base ADD COLUMN extra int",
	"ALTER TABLE ONLY base ADD COLUMN extra int",
	"ALTER TABLE base ALTER COLUMN note TYPE varchar(10)",
	"ALTER TABLE base ALTER COLUMN note SET NOT NULL",
	"ALTER TABLE orders ALTER COLUMN total SET DEFAULT 0",
	"ALTER TABLE orders ADD CONSTRAINT pos CHECK (total > 0)",
	"ALTER TABLE loose ADD CONSTRAINT lfk FOREIGN KEY (id) REFERENCES orders (id)",
	"ALTER TABLE loose ADD PRIMARY KEY (id)",
	"ALTER TABLE m ATTACH PARTITION loose FOR VALUES IN (3)",
	"ALTER TABLE m DETACH PARTITION m1",
	"ALTER TABLE loose INHERIT base",
	"ALTER TABLE kid NO INHERIT base",
	"ALTER TABLE orders ADD COLUMN a int, ADD COLUMN total int",
	"ALTER TABLE orders ALTER COLUMN total SET NOT NULL, ALTER COLUMN ghost SET NOT NULL",
	"ALTER TABLE orders DROP COLUMN total",
	"ALTER TABLE app.users DROP COLUMN id CASCADE",
	"ALTER TABLE app.users DROP CONSTRAINT users_pkey CASCADE",
	"ALTER TABLE orders RENAME TO purchases",
	"ALTER TABLE orders RENAME COLUMN total TO amount",
	"ALTER TABLE base RENAME COLUMN note TO remark",
	"ALTER TABLE orders SET SCHEMA app",
	"DROP TABLE orders CASCADE",
	"DROP TABLE base CASCADE",
	"DROP VIEW order_totals",
	"DROP TYPE mood CASCADE",
	"DROP SCHEMA app CASCADE",
	"DROP FUNCTION f()",
	"DROP INDEX IF EXISTS whatever",
	"COMMENT ON TABLE orders IS 'changed'",
	"COMMENT ON COLUMN orders.total IS 'money'",
	"COMMENT ON COLUMN order_totals.user_id IS 'u'",
	"COMMENT ON TYPE mood IS 'feelings'",
	"COMMENT ON SCHEMA app IS 'changed'",
	"COMMENT ON SCHEMA public IS 'changed'",
	"CREATE TYPE mood2 AS ENUM ('x')",
	// Names held by name only (namedconstraints.go, namedtypes.go).
	"CREATE TYPE shell",
	"CREATE DOMAIN posint AS int CONSTRAINT posint_positive CHECK (VALUE > 0)",
	"CREATE EXTENSION postgis",
	"CREATE TEMP TABLE staged AS SELECT * FROM orders",
	"CREATE TYPE elsewhere.mood3 AS ENUM ('x')",
	"ALTER TYPE mood ADD VALUE 'glad'",
	"ALTER TYPE mood ADD VALUE 'glad' BEFORE 'ok'",
	"ALTER TYPE mood RENAME VALUE 'ok' TO 'fine'",
	"CREATE SCHEMA s2",
	"CREATE SCHEMA s3 CREATE TABLE inner_t (id int)",
	"CREATE OR REPLACE FUNCTION f() RETURNS text LANGUAGE sql AS 'SELECT 1'",
	"CREATE OR REPLACE FUNCTION g() RETURNS void LANGUAGE plpgsql AS $b$ BEGIN CREATE TABLE from_g2 (id int); END $b$",
	"CREATE FUNCTION h() RETURNS void LANGUAGE plpgsql AS $b$ BEGIN CREATE TABLE from_h (id int); END $b$",
	"CREATE AGGREGATE agg (int) (sfunc = int4pl, stype = int)",
	"SET search_path TO app",
	"PERFORM g()",
	"EXECUTE 'CREATE TABLE exec_t (id int)'",
	"EXECUTE 'ALTER TABLE kid ADD COLUMN from_exec int'",
	"CREATE INDEX ON orders (total)",
	"CREATE UNIQUE INDEX orders_total_u ON orders (total)",
	"CREATE INDEX ON m (id)",
	"CREATE UNIQUE INDEX loose_id ON loose (id); ALTER TABLE loose ADD PRIMARY KEY USING INDEX loose_id",
	"ALTER INDEX loose_v RENAME TO loose_v2",
	"ALTER TABLE loose_v RENAME TO loose_v3",
	"DROP INDEX loose_v",
	"DROP INDEX m_v_idx",
	"ALTER TABLE loose DROP COLUMN v",
	"CREATE TABLE like_loose (LIKE loose INCLUDING INDEXES)",
	"ALTER TABLE loose ADD CONSTRAINT loose_v_check CHECK (v <> ''); ALTER TABLE loose RENAME COLUMN v TO w",
	"ALTER TABLE m RENAME COLUMN v TO w",
	"ALTER TABLE loose ADD EXCLUDE USING btree ((lower(v)) WITH =); ALTER TABLE loose RENAME COLUMN v TO w",
	"ALTER SEQUENCE app.users_id_seq OWNED BY NONE",
	"CREATE SEQUENCE s OWNED BY loose.id",
	"ALTER TABLE app.users SET SCHEMA public",
	"ALTER TABLE loose ADD CHECK (v::mood <> 'sad'::mood); ALTER TYPE mood RENAME TO feeling",
}

// TestExceptionBlockUndoesExactly runs each statement in an exception
// block in several shapes, and wants the catalog a block undid to be the
// catalog before it, byte for byte, history of each table included.
func TestExceptionBlockUndoesExactly(t *testing.T) {
	base, err := New("db").Apply("0001.sql", journalBase)
	if err != nil {
		t.Fatal(err)
	}
	base = base.Record(Applied{Seq: 1, ID: "0001.sql", Source: "0001.sql"})
	after := func(t *testing.T, body string) []byte {
		t.Helper()
		next, err := base.Apply("0002.sql", "DO $do$ BEGIN\n"+body+"\nEND $do$;")
		if err != nil {
			t.Fatal(err)
		}
		if d := next.Drift(); len(d) > 0 {
			t.Fatalf("drift: %v", d[0])
		}
		b, _ := next.Record(Applied{Seq: 2, ID: "0002.sql", Source: "0002.sql"}).MarshalJSON()
		return b
	}
	want := after(t, "PERFORM 1;")
	undo := "RAISE EXCEPTION 'undo';"
	catch := "EXCEPTION WHEN others THEN NULL; END;"
	for _, s := range journalStatements {
		shapes := []struct{ name, body string }{
			{"undone", fmt.Sprintf("BEGIN %s; %s %s", s, undo, catch)},
			{"kept inside, undone outside", fmt.Sprintf("BEGIN BEGIN %s; %s %s %s", s, catch, undo, catch)},
			{"undone inside, after a change outside", fmt.Sprintf("BEGIN ALTER TABLE loose ADD COLUMN outer_c int; BEGIN %s; %s %s %s %s", s, undo, catch, undo, catch)},
			{"undone with a rename after it", fmt.Sprintf("BEGIN %s; ALTER TABLE loose RENAME TO loose2; %s %s", s, undo, catch)},
			{"undone with a rename before it", fmt.Sprintf("BEGIN ALTER TABLE loose RENAME TO loose2; %s; %s %s", s, undo, catch)},
			{"undone twice in a loop", fmt.Sprintf("FOR i IN 1..2 LOOP BEGIN %s; %s %s END LOOP;", s, undo, catch)},
		}
		for _, sh := range shapes {
			t.Run(strings.Fields(s)[0]+" "+sh.name+": "+s, func(t *testing.T) {
				if got := after(t, sh.body); !bytes.Equal(got, want) {
					t.Fatalf("the block did not undo %q:\n got  %.2000s\n want %.2000s", s, diffFrom(got, want), diffFrom(want, got))
				}
			})
		}
	}
}

// diffFrom returns a from shortly before where it stops matching b.
func diffFrom(a, b []byte) []byte {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[max(0, i-200):]
}

// TestExceptionBlockKeepsWhatWorked checks that a block that ends well
// leaves what its statements did, as they would have done without it.
func TestExceptionBlockKeepsWhatWorked(t *testing.T) {
	base, err := New("db").Apply("0001.sql", journalBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range journalStatements {
		t.Run(s, func(t *testing.T) {
			plain, err := base.Apply("0002.sql", "DO $do$ BEGIN\n"+s+";\nEND $do$;")
			if err != nil || len(plain.Drift()) > 0 {
				t.Skipf("the statement alone does not apply: %v", err)
			}
			blocked, err := base.Apply("0002.sql", "DO $do$ BEGIN\nBEGIN "+s+"; EXCEPTION WHEN others THEN NULL; END;\nEND $do$;")
			if err != nil {
				t.Fatal(err)
			}
			a := Applied{Seq: 2, ID: "0002.sql", Source: "0002.sql"}
			want, _ := plain.Record(a).MarshalJSON()
			got, _ := blocked.Record(a).MarshalJSON()
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %.2000s\nwant %.2000s", diffFrom(got, want), diffFrom(want, got))
			}
		})
	}
}

// FuzzExceptionBlockUndo wants any statement an exception block undoes
// to leave the catalog as it was.
func FuzzExceptionBlockUndo(f *testing.F) {
	testenv.CapFuzzWorker(f)
	for _, s := range journalStatements {
		f.Add(s)
	}
	base, err := New("db").Apply("0001.sql", journalBase)
	if err != nil {
		f.Fatal(err)
	}
	a := Applied{Seq: 2, ID: "0002.sql", Source: "0002.sql"}
	wantCat, err := base.Apply("0002.sql", "DO $do$ BEGIN PERFORM 1; END $do$;")
	if err != nil {
		f.Fatal(err)
	}
	want, _ := wantCat.Record(a).MarshalJSON()
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Contains(s, "$do$") {
			return
		}
		next, err := base.Apply("0002.sql", "DO $do$ BEGIN\nBEGIN "+s+"; RAISE EXCEPTION 'undo'; EXCEPTION WHEN others THEN NULL; END;\nEND $do$;", WithLimits(Limits{Steps: 100_000}))
		if err != nil || len(next.Drift()) > 0 {
			return // not a block that ran to its end
		}
		if got, _ := next.Record(a).MarshalJSON(); !bytes.Equal(got, want) {
			t.Fatalf("the block did not undo %q:\n got  %.2000s\n want %.2000s", s, diffFrom(got, want), diffFrom(want, got))
		}
	})
}
