package catalog

import (
	"bytes"
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// FuzzApply: whatever the script, Apply returns a catalog or an *Error;
// it never panics and never changes its receiver. Run longer with:
//
//	go test ./pkg/catalog -run '^$' -fuzz FuzzApply -fuzztime 5m
func FuzzApply(f *testing.F) {
	seeds := []string{
		"CREATE TABLE t (id int PRIMARY KEY, a text REFERENCES u);",
		"ALTER TABLE t ALTER COLUMN a TYPE int USING a::int, DROP COLUMN b CASCADE;",
		"CREATE VIEW v AS WITH x AS (SELECT * FROM t) SELECT a, count(*) FROM x GROUP BY 1;",
		"CREATE TABLE p (LIKE t INCLUDING ALL) PARTITION BY RANGE (id); CREATE TABLE p1 PARTITION OF p FOR VALUES FROM (1) TO (2);",
		"DO $$ BEGIN EXECUTE 'CREATE TABLE z (id int)'; END $$;",
		"CREATE TYPE e AS ENUM ('a'); ALTER TYPE e ADD VALUE 'b' BEFORE 'a'; ALTER TYPE e RENAME TO f;",
		"COMMENT ON COLUMN t.id IS 'x'; ALTER TABLE t RENAME TO u; ALTER TABLE u SET SCHEMA s;",
		"CREATE TABLE t AS SELECT 1 AS a, now() b, (SELECT 1) c, CASE WHEN true THEN 'x' END d, ARRAY[1] e, ROW(1,2) f;",
		"ALTER TABLE ONLY t ADD CONSTRAINT c EXCLUDE USING gist (a WITH &&), ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;",
		"CREATE SCHEMA s CREATE TABLE a (id int) CREATE VIEW b AS SELECT * FROM a;",
		"COPY t FROM stdin;\n1\n\\.\n",
		"SET search_path = ''; CREATE TABLE x (); RESET search_path; DROP SCHEMA public CASCADE;",
		"CREATE TABLE a (id int); ALTER TABLE a INHERIT a; ALTER TABLE a ADD COLUMN x int;",
		"ALTER TABLE t DROP CONSTRAINT t_pkey CASCADE; ALTER TABLE parent ADD COLUMN z int, ADD UNIQUE (x);",
		"ALTER TABLE pp ADD UNIQUE (id, k); ALTER TABLE pp DETACH PARTITION pp1; ALTER TYPE mood RENAME VALUE 'a' TO 'c';",
		"ALTER TABLE r RENAME COLUMN a TO c; ALTER TABLE t DROP COLUMN a CASCADE; DROP TABLE r CASCADE;",
		"CREATE TABLE m (id int) PARTITION BY LIST (id); CREATE TABLE m1 PARTITION OF m FOR VALUES IN (1); ALTER TABLE m1 ATTACH PARTITION m FOR VALUES IN (2); ALTER TABLE m ADD COLUMN y int;",
		"CREATE TABLE q (a int CHECK (q.a > 0), b int GENERATED ALWAYS AS (a + 1) STORED, EXCLUDE USING btree ((a + 1) WITH =) WHERE (a > 0)) PARTITION BY LIST ((a)); ALTER TABLE q RENAME COLUMN a TO c; ALTER TABLE q DROP COLUMN c CASCADE;",
		"CREATE TABLE s1 (id serial); CREATE SEQUENCE x OWNED BY s1.id; ALTER SEQUENCE s1_id_seq OWNED BY NONE; ALTER TABLE s1 SET SCHEMA s;",
		"CREATE DOMAIN d AS int; CREATE TABLE w (a d, b d[]); CREATE TEMP TABLE w (x d); ALTER DOMAIN d RENAME TO e; SELECT a INTO TEMP s FROM w; CREATE TABLE l (LIKE pp INCLUDING ALL); DROP SCHEMA public CASCADE;",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	// Tables that others reference, partitions, inheritance, a view and
	// an enum: a statement's changes spread through each of them, and
	// the result shares the tables it did not change with base.
	base, err := New("db").Apply("base.sql", `CREATE TABLE t (id int PRIMARY KEY, a text, b int); CREATE SCHEMA s;
		CREATE TABLE r (id int PRIMARY KEY, t_id int REFERENCES t, a text);
		CREATE TABLE pp (id int, k int, PRIMARY KEY (id, k), FOREIGN KEY (id) REFERENCES t) PARTITION BY LIST (k);
		CREATE TABLE pp1 PARTITION OF pp FOR VALUES IN (1);
		CREATE TABLE parent (id int PRIMARY KEY, x text); CREATE TABLE child (y int) INHERITS (parent);
		CREATE TYPE mood AS ENUM ('a', 'b'); CREATE TABLE feel (m mood DEFAULT 'a', r_id int REFERENCES r);
		CREATE VIEW v AS SELECT id, a FROM t;`)
	if err != nil {
		f.Fatal(err)
	}
	before, _ := base.MarshalJSON()
	f.Fuzz(func(t *testing.T, sql string) {
		c, err := base.Apply("fuzz.sql", sql)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a *catalog.Error: %T %v", err, err)
			}
		} else if _, err := c.MarshalJSON(); err != nil {
			t.Fatalf("result does not serialise: %v", err)
		}
		if after, _ := base.MarshalJSON(); string(after) != string(before) {
			t.Fatal("Apply changed its receiver")
		}
	})
}

// FuzzInterpret: whatever a routine's body, calling it ends (the step,
// loop and depth bounds hold), never panics inside the interpreter (which
// would be contained, and recorded as drift naming it), and never changes
// the catalog Apply was called on. Run longer with:
//
//	go test ./pkg/catalog -run '^$' -fuzz FuzzInterpret -fuzztime 5m
func FuzzInterpret(f *testing.F) {
	testenv.CapFuzzWorker(f)
	for _, s := range []string{
		"BEGIN EXECUTE format('ALTER TABLE %I ADD COLUMN %I int', x, x || n); END",
		"DECLARE r record; BEGIN FOR r IN SELECT table_name FROM information_schema.columns WHERE column_name = 'id' LOOP EXECUTE 'ALTER TABLE ' || quote_ident(r.table_name) || ' ADD COLUMN z int'; END LOOP; END",
		"DECLARE i int; BEGIN FOR i IN REVERSE n..1 BY 2 LOOP EXIT WHEN i < 0; CONTINUE; END LOOP; RETURN; END",
		"DECLARE a text[] := ARRAY['a', NULL, '{b}']; e text; BEGIN FOREACH e IN ARRAY a LOOP PERFORM f(e, n - 1); END LOOP; END",
		"BEGIN BEGIN RAISE EXCEPTION 'x'; EXCEPTION WHEN others THEN CREATE TABLE y (); END; END",
		"BEGIN IF EXISTS (SELECT 1 FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid WHERE r.relname = x) THEN DROP TABLE t CASCADE; END IF; END",
		"DECLARE v int := (SELECT count(*) FROM pg_tables); BEGIN WHILE v > 0 LOOP v := v - 1; END LOOP; END",
		"BEGIN EXECUTE format('%2$s %1$I %%', x, 'CREATE TABLE'); END",
		"BEGIN EXECUTE format('CREATE TABLE %-*2$I%*s ()', x, n, -n, x); END",
		"BEGIN CASE n WHEN 1, 3 THEN PERFORM 1; ELSE CASE WHEN x > 'a' THEN EXECUTE 'CREATE TABLE ' || greatest(n, 2) || nullif(x, 't') || ' ()'; END CASE; END CASE; IF FOUND THEN RETURN; END IF; END",
		"BEGIN IF EXISTS (SELECT 1 FROM information_schema.tables OFFSET -3 LIMIT n - 5) THEN CREATE TABLE y (); END IF; END",
		"BEGIN EXECUTE format('CREATE TABLE %I ()', lpad(x, n * 7, x) || substr(x, -n, n) || left(x, -n) || rtrim(x, 't') || array_to_string(ARRAY[x, NULL], x, x) || split_part(x, '', -n)); END",
		"DECLARE c text; BEGIN SELECT DISTINCT constraint_name INTO c FROM information_schema.table_constraints WHERE constraint_name = x OR table_name < x OR constraint_name ILIKE x || '\\_%'; IF (SELECT count(DISTINCT constraint_type) FROM information_schema.table_constraints) > n THEN EXECUTE 'CREATE TABLE ' || c || ' ()'; END IF; END",
		"BEGIN IF NOT EXISTS (SELECT 1 FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = x AND e.enumtypid = x::regtype) THEN EXECUTE format('CREATE TYPE %I AS RANGE (subtype = int4)', x); END IF; END",
		"DECLARE r record; BEGIN SELECT c.oid::regclass AS rel, c.oid AS o, x::regnamespace AS n INTO r FROM pg_class c WHERE c.relname = x; EXECUTE format('CREATE TABLE %I ()', r.rel || r.o::regclass::oid::text || r.n || x::regtype); END",
		"DECLARE n int; BEGIN SELECT count(*) INTO n FROM information_schema.key_column_usage k JOIN information_schema.schemata s ON s.schema_name = k.table_schema WHERE k.column_name = x AND position_in_unique_constraint > strpos(x, md5(x)); IF EXISTS (SELECT 1 FROM information_schema.views v, information_schema.columns c WHERE c.udt_name = x AND c.character_maximum_length > n) THEN CREATE TABLE y (); END IF; END",
		// The attacks the budgets answer (budget_test.go has each).
		"BEGIN EXECUTE 'DO $x$ BEGIN PERFORM f(''t'', 3); END $x$'; END",
		"DECLARE s text := x; BEGIN FOR i IN 1..40 LOOP s := s || s; END LOOP; IF s LIKE '%a%b%' THEN CREATE TABLE y (); END IF; END",
		"DECLARE a text[] := ARRAY[x]; BEGIN FOR i IN 1..40 LOOP a := a || a; a := ARRAY[a]; END LOOP; END",
		"BEGIN FOR i IN 1..100000 LOOP BEGIN EXECUTE 'CREATE TABLE x' || i || ' ()'; EXCEPTION WHEN others THEN NULL; END; END LOOP; END",
		"DECLARE s text := ','; BEGIN FOR i IN 1..30 LOOP s := s || s; PERFORM string_to_array(s, ','); END LOOP; END",
		// libpg_query's PL/pgSQL compiler asserts a routine has a body.
		"BEGIN EXECUTE 'CREATE FUNCTION g() LANGUAGE plpgsql'; END",
	} {
		f.Add(s)
	}
	base, err := New("db").Apply("base.sql", "CREATE TABLE t (id int PRIMARY KEY, a text, b int);")
	if err != nil {
		f.Fatal(err)
	}
	before, _ := base.MarshalJSON()
	// A runaway recursion or allocation is fatal to Go and fails the
	// run: .ci/run fuzzes under ulimit -v, and a small stack makes an
	// unbounded recursion show within seconds.
	debug.SetMaxStack(256 << 20)
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "$fz$") {
			return
		}
		script := "CREATE FUNCTION f(x text, n int) RETURNS void LANGUAGE plpgsql AS $fz$" + body + "$fz$;\n" +
			"SELECT f('t', 3);\nDO $fz$" + body + "$fz$;"
		c, err := base.Apply("fuzz.sql", script, Tolerant())
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a *catalog.Error: %T %v", err, err)
			}
			return
		}
		for _, d := range c.Drift() {
			if strings.Contains(d.Error, "broke the interpreter") {
				t.Fatalf("interpreter panicked: %s", d)
			}
		}
		if after, _ := base.MarshalJSON(); string(after) != string(before) {
			t.Fatal("Apply changed its receiver")
		}
	})
}

// FuzzDecode: whatever a catalog entry holds (every daemon decodes what
// the bucket has), decoding returns a catalog or an error and never
// panics, and what it returns can be encoded, rendered, walked as a join
// graph and migrated. Run longer with:
//
//	go test ./pkg/catalog -run '^$' -fuzz FuzzDecode -fuzztime 5m
func FuzzDecode(f *testing.F) {
	testenv.CapFuzzWorker(f)
	c, err := Snapshot("shop", "base.sql", thawBase)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := c.MarshalJSON()
	f.Add(good)
	for _, s := range []string{
		`{"database":"d","version":1,"schemas":[],"tables":[null],"views":[],"enums":[]}`,
		`{"database":"d","version":1,"tables":[{"schema":"public","name":"t","columns":[null]}]}`,
		`{"database":"d","tables":[{"schema":"public","name":"t","partition_of":{"schema":"public","name":"t"},"foreign_keys":[{"columns":["a"],"ref_table":{"schema":"public","name":"t"}}]}]}`,
		`{"database":"d","tables":[{"schema":"public","name":"a","inherits":[{"schema":"public","name":"b"}]},{"schema":"public","name":"b","inherits":[{"schema":"public","name":"a"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A daemon's Decoder has read a catalog before: it must read
		// this one as UnmarshalJSON does all the same.
		var dec Decoder
		if _, err := dec.Unmarshal(good); err != nil {
			t.Fatal(err)
		}
		viaDecoder, decErr := dec.Unmarshal(b)
		var c Catalog
		if err := c.UnmarshalJSON(b); err != nil {
			if decErr == nil {
				t.Fatalf("UnmarshalJSON refused what the Decoder read: %v", err)
			}
			return
		}
		if decErr != nil {
			t.Fatalf("the Decoder refused what UnmarshalJSON read: %v", decErr)
		}
		want, err := c.MarshalJSON()
		if err != nil {
			t.Fatalf("a decoded catalog does not encode: %v", err)
		}
		if got, _ := viaDecoder.MarshalJSON(); !bytes.Equal(got, want) {
			t.Fatalf("the Decoder read\n%s\nUnmarshalJSON\n%s", got, want)
		}
		_ = c.DDL()
		g := NewGraph(&c)
		g.Warm(true)
		for _, tb := range c.Tables() {
			_ = g.Describe(tb.QualName().Key())
		}
		if tables := c.Tables(); len(tables) > 0 {
			q := tables[0].QualName()
			_, _ = c.Apply("m.sql", "ALTER TABLE "+QuoteIdent(q.Schema)+"."+QuoteIdent(q.Name)+" ADD COLUMN fuzz_col int; DROP TABLE "+QuoteIdent(q.Schema)+"."+QuoteIdent(q.Name)+" CASCADE;")
		}
	})
}
