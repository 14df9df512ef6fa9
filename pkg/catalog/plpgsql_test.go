package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// columnsOf lists "table.column type" for every column, for compact
// expectations.
func columnsOf(c *Catalog) []string {
	var out []string
	for _, t := range c.Tables() {
		for _, col := range t.Columns {
			out = append(out, fmt.Sprintf("%s.%s %s", t.Name, col.Name, col.Type))
		}
	}
	for _, v := range c.Views() {
		out = append(out, "view "+v.Name)
	}
	return out
}

const plBase = `CREATE TABLE a (id int PRIMARY KEY);
CREATE TABLE b (id int PRIMARY KEY, note text);
`

func TestInterpretRoutines(t *testing.T) {
	cases := []struct {
		name string
		sql  string
		// want must all be among the catalog's columns and views;
		// absent must not be.
		want, absent []string
		// drift lists substrings of the drift entries, in order.
		drift []string
	}{
		{
			name: "format with %I, %L, %s, %% and positions",
			sql: `CREATE FUNCTION add(tbl text, col text, typ text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('ALTER TABLE %I ADD COLUMN %I %s DEFAULT %L', tbl, col, typ, 'x''y');
  EXECUTE format('ALTER TABLE %1$I ADD COLUMN %2$I integer CHECK (%2$I > 0 AND %2$I < 100) -- 100%%', tbl, col || '_pct');
END $$;
SELECT add('a', 'Label', 'text'), add('b', 'kind', 'varchar(10)');`,
			want: []string{`a.Label text`, "a.Label_pct integer", "b.kind character varying(10)", "b.kind_pct integer"},
		},
		{
			name: "concatenation and quote_ident",
			sql: `CREATE FUNCTION mk(n text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'CREATE TABLE ' || quote_ident(n || '_log') || ' (id bigint, at timestamptz)';
END $$;
SELECT mk('Orders');`,
			want: []string{"Orders_log.id bigint", "Orders_log.at timestamp with time zone"},
		},
		{
			name: "IF EXISTS over information_schema decides the branch",
			sql: `CREATE FUNCTION ensure(tbl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = tbl) THEN
    EXECUTE format('ALTER TABLE %I ADD COLUMN seen boolean', tbl);
  ELSIF tbl = 'c' THEN
    EXECUTE format('CREATE TABLE %I (seen boolean)', tbl);
  ELSE
    RAISE NOTICE 'nothing to do for %', tbl;
  END IF;
END $$;
SELECT ensure('a'); SELECT ensure('c'); SELECT ensure('zzz');`,
			want:   []string{"a.seen boolean", "c.seen boolean"},
			absent: []string{"b.seen boolean", "zzz.seen boolean"},
		},
		{
			name: "FOR over ranges, REVERSE and BY, FOREACH over arrays, EXIT and CONTINUE",
			sql: `DO $$
DECLARE
  i int;
  n text;
  names text[] := ARRAY['x', 'skip', 'y', 'stop', 'z'];
BEGIN
  FOR i IN 1..3 LOOP
    EXECUTE format('CREATE TABLE t%s (id int)', i);
  END LOOP;
  FOR i IN REVERSE 10..6 BY 2 LOOP
    EXECUTE 'CREATE TABLE r' || i || ' (id int)';
  END LOOP;
  FOREACH n IN ARRAY names LOOP
    CONTINUE WHEN n = 'skip';
    EXIT WHEN n = 'stop';
    EXECUTE format('CREATE TABLE %I (id int)', 'e_' || n);
  END LOOP;
END $$;`,
			want:   []string{"t1.id integer", "t3.id integer", "r10.id integer", "r8.id integer", "r6.id integer", "e_x.id integer", "e_y.id integer"},
			absent: []string{"t4.id integer", "r9.id integer", "r4.id integer", "e_skip.id integer", "e_z.id integer"},
		},
		{
			name: "FOR over a query of the catalog, and SELECT INTO",
			sql: `DO $$
DECLARE
  r record;
  n int;
  first text;
BEGIN
  FOR r IN SELECT table_name, column_name FROM information_schema.columns
           WHERE table_schema = 'public' AND column_name = 'id' ORDER BY table_name DESC LOOP
    EXECUTE format('ALTER TABLE %I ADD COLUMN %I int', r.table_name, r.column_name || '_copy');
  END LOOP;
  SELECT count(*) INTO n FROM information_schema.tables WHERE table_schema = 'public';
  SELECT table_name INTO first FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name LIMIT 1;
  EXECUTE format('CREATE TABLE counted_%s_%s (id int)', n, first);
END $$;`,
			want: []string{"a.id_copy integer", "b.id_copy integer", "counted_2_a.id integer"},
		},
		{
			name: "PERFORM and CALL of routines, named arguments, defaults, VARIADIC, RETURN values",
			sql: `CREATE FUNCTION col(tbl text, name text DEFAULT 'extra', typ text DEFAULT 'int') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('ALTER TABLE %I ADD COLUMN %I %s', tbl, name, typ);
  RETURN tbl || '.' || name;
END $$;
CREATE PROCEDURE many(prefix text, VARIADIC tbls text[]) LANGUAGE plpgsql AS $$
DECLARE t text; made text;
BEGIN
  FOREACH t IN ARRAY tbls LOOP
    made := col(t, prefix || '_flag', typ => 'boolean');
    EXECUTE format('COMMENT ON TABLE %I IS %L', t, made);
  END LOOP;
  PERFORM col('a');
END $$;
CALL many('p', 'a', 'b');`,
			want: []string{"a.p_flag boolean", "b.p_flag boolean", "a.extra integer"},
		},
		{
			name: "exception handlers undo their block and catch by condition",
			sql: `DO $$
BEGIN
  BEGIN
    CREATE TABLE inner_made (id int);
    ALTER TABLE a ADD COLUMN id int;
  EXCEPTION WHEN duplicate_column THEN
    CREATE TABLE handled (id int);
  END;
  BEGIN
    RAISE EXCEPTION 'boom';
  EXCEPTION WHEN OTHERS THEN
    CREATE TABLE caught (id int);
  END;
END $$;`,
			want:   []string{"handled.id integer", "caught.id integer"},
			absent: []string{"inner_made.id integer"},
		},
		{
			name: "a loop over table data stops the call, and what ran before it stands",
			sql: `CREATE TABLE tenant_tables (name text);
CREATE FUNCTION add_all() RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  ALTER TABLE a ADD COLUMN before_loop int;
  FOR r IN SELECT name FROM tenant_tables LOOP
    EXECUTE format('ALTER TABLE %I ADD COLUMN tenant_id int', r.name);
  END LOOP;
END $$;
SELECT add_all();`,
			want:  []string{"a.before_loop integer"},
			drift: []string{`statement 5 (line 12, column 1): evaluated in part: a query over the rows of tenant_tables (data a replay does not have) (line 5 of public.add_all) is not evaluated in "SELECT add_all()"`},
		},
		{
			name: "a value only the database held stops where it decides",
			sql: `CREATE FUNCTION by_setting() RETURNS void LANGUAGE plpgsql AS $$
DECLARE tbl text := current_setting('app.table');
BEGIN
  EXECUTE format('ALTER TABLE %I ADD COLUMN x int', tbl);
END $$;
SELECT by_setting();`,
			drift: []string{`the text of EXECUTE "format('ALTER TABLE %I ADD COLUMN x int', tbl)", which depends on a value only the database held (line 4 of public.by_setting) is not evaluated`},
		},
		{
			// A table's indexes are held (a key's too), so both guards
			// are answered.
			name: "pg_indexes over keys and indexes",
			sql: `CREATE FUNCTION idx() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'a_pkey') THEN
    ALTER TABLE a ADD COLUMN found_pkey int;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'b_note_idx') THEN
    CREATE INDEX b_note_idx ON b (note);
    ALTER TABLE b ADD COLUMN made_index int;
  END IF;
END $$;
SELECT idx();`,
			want: []string{"a.found_pkey integer", "b.made_index integer"},
		},
		{
			name: "an error the history did not raise stops the call",
			sql: `CREATE FUNCTION twice() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  ALTER TABLE a ADD COLUMN x int;
  ALTER TABLE a ADD COLUMN x int;
END $$;
SELECT twice();`,
			want:  []string{"a.x integer"},
			drift: []string{`evaluated in part: ALTER TABLE a ADD COLUMN x int: duplicate object`},
		},
		{
			name: "unbounded loops, recursion and huge ranges are cut off",
			sql: `CREATE FUNCTION forever() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WHILE true LOOP
    PERFORM 1;
  END LOOP;
END $$;
CREATE FUNCTION recurse(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE IF NOT EXISTS depth_%s ()', n);
  PERFORM recurse(n + 1);
END $$;
CREATE FUNCTION huge() RETURNS void LANGUAGE plpgsql AS $$
DECLARE i int;
BEGIN
  FOR i IN 1..1000000000 LOOP
    EXECUTE 'SELECT 1';
  END LOOP;
END $$;
SELECT forever(); SELECT recurse(1); SELECT huge();`,
			drift: []string{"a loop of more than 100000 iterations", "nested more than 16 deep (the depth budget)", "a loop of more than 100000 iterations"},
		},
		{
			name: "a dropped or replaced helper is not run",
			sql: `CREATE FUNCTION h(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('ALTER TABLE %I ADD COLUMN h1 int', t); END $$;
SELECT h('a');
CREATE OR REPLACE FUNCTION h(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE '%', t; END $$;
SELECT h('b');
CREATE FUNCTION g(t text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE format('ALTER TABLE %I ADD COLUMN g1 int', t); END $$;
DROP FUNCTION g(text);
SELECT g('b');`,
			want:   []string{"a.h1 integer"},
			absent: []string{"b.h1 integer", "b.g1 integer"},
		},
		{
			name: "a DO block it cannot decide falls back to applying its statements leniently",
			sql: `DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'mood_ok') THEN
    CREATE TYPE mood AS ENUM ('ok');
  END IF;
  CREATE TABLE moods (m mood);
END $$;`,
			want: []string{"moods.m mood"},
			// The fallback may apply what a condition skipped: the stop
			// says so.
			drift: []string{`reference to "proname"`},
		},
		{
			name: "a routine's name qualifies its parameters",
			sql: `CREATE FUNCTION qual(table_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables t WHERE t.table_name = qual.table_name) THEN
    EXECUTE format('ALTER TABLE %I ADD COLUMN q int', table_name);
  END IF;
END $$;
SELECT qual('a'), qual('nope');`,
			want: []string{"a.q integer"},
		},
		{
			name: "pg_attribute answers column checks, system columns and dropped ones aside",
			sql: `CREATE FUNCTION att(tbl text, col text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT true FROM pg_attribute WHERE attrelid = quote_ident(tbl)::regclass AND attname = col AND NOT attisdropped) THEN
    EXECUTE format('ALTER TABLE %I ADD COLUMN %I int', tbl, col);
  END IF;
END $$;
SELECT att('a', 'id'), att('a', 'made'), att('b', 'made');`,
			want: []string{"a.made integer", "b.made integer"},
		},
		{
			name: "a variable that is also a column is ambiguous, as in PostgreSQL",
			sql: `CREATE FUNCTION amb(table_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables WHERE table_name = table_name) THEN
    EXECUTE 'CREATE TABLE amb_made ()';
  END IF;
END $$;
SELECT amb('a');`,
			drift: []string{`reference "table_name", both a column and a variable`},
		},
		{
			name: "renames through pg_constraint and regclass, and views over the new name",
			sql: `CREATE FUNCTION rn(old text, new text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF to_regclass(old) IS NOT NULL THEN
    EXECUTE format('ALTER TABLE %I RENAME TO %I', old, new);
    EXECUTE format('CREATE VIEW %I AS SELECT * FROM %I', old, new);
  END IF;
  IF EXISTS (SELECT FROM pg_constraint WHERE conrelid = new::regclass AND conname = old || '_pkey') THEN
    EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', new, old || '_pkey', new || '_pkey');
  END IF;
END $$;
SELECT rn('b', 'bee');`,
			want:   []string{"bee.note text", "view b"},
			absent: []string{"b.note text"},
		},
		{
			// The C locale leaves À as it is, a UTF-8 one makes it à:
			// only ASCII letters fold for certain.
			name: "lower() of letters beyond ASCII",
			sql: `CREATE FUNCTION fold(n text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', lower(n));
END $$;
SELECT fold('Plain_ASCII'); SELECT fold('Ärzte');`,
			want:   []string{"plain_ascii.id integer"},
			absent: []string{"ärzte.id integer", "Ärzte.id integer"},
			drift:  []string{"whose letters beyond ASCII the database's locale folds"},
		},
		{
			name: "substr() of a negative length, as PostgreSQL refuses it",
			sql: `CREATE FUNCTION sub(n int) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', substr('abcdef', 2, n));
END $$;
SELECT sub(3); SELECT sub(-1);`,
			want:  []string{"bcd.id integer"},
			drift: []string{"negative substring length not allowed"},
		},
		{
			// Keywords quote (x_"int"); json_object is one only from
			// PostgreSQL 16, so the name depends on the server.
			name: "quote_ident of keywords, and of one newer than some servers",
			sql: `CREATE FUNCTION qi(w text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', 'x_' || quote_ident(w));
END $$;
SELECT qi('int'); SELECT qi('name'); SELECT qi('json_object');`,
			want:   []string{`x_"int".id integer`, "x_name.id integer"},
			absent: []string{"x_json_object.id integer", `x_"json_object".id integer`},
			drift:  []string{"PostgreSQL 16 and later quote"},
		},
		{
			// pg_constraint also lists constraint triggers and domain
			// checks: by the names the catalog keeps of them, a guard on
			// another name is answered, and one on theirs is not.
			name: "guards on a constraint's name alone",
			sql: `CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER b_audit AFTER INSERT ON b FOR EACH ROW EXECUTE FUNCTION noop();
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE FUNCTION once(con text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = con) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
SELECT once('b_note_key', 'free_name'); SELECT once('b_audit', 'trigger_name'); SELECT once('posint_check', 'domain_name');`,
			want:   []string{"free_name.id integer"},
			absent: []string{"trigger_name.id integer", "domain_name.id integer"},
			drift:  []string{"depends on a value only the database held", "depends on a value only the database held"},
		},
		{
			// information_schema.table_constraints lists each NOT NULL
			// column as a CHECK named <oid>_<oid>_<n>_not_null, and
			// the system catalogs' keys as pg_…: a guard on any other
			// name is answered, one on a name of their shapes is not,
			// and the rows of a table count its NOT NULL columns.
			name: "guards on table_constraints by name alone",
			sql: `ALTER TABLE b ADD COLUMN code text NOT NULL, ADD CONSTRAINT b_code_key UNIQUE (code);
CREATE FUNCTION once(con text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.table_constraints WHERE constraint_name = con) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
CREATE FUNCTION checks(tbl text) RETURNS void LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT count(*) INTO n FROM information_schema.table_constraints WHERE table_name = tbl AND constraint_type = 'CHECK';
  EXECUTE format('CREATE TABLE %I (id int)', tbl || '_checks_' || n);
END $$;
CREATE FUNCTION named(tbl text) RETURNS void LANGUAGE plpgsql AS $$ DECLARE c text; BEGIN
  SELECT constraint_name INTO c FROM information_schema.table_constraints WHERE table_name = tbl AND constraint_type = 'CHECK';
  EXECUTE format('CREATE TABLE %I (id int)', c || '_seen');
END $$;
SELECT once('b_code_fkey', 'free_name'); SELECT once('b_code_key', 'taken_name');
SELECT once('2200_16384_1_not_null', 'not_null_shape'); SELECT once('pg_class_oid_index', 'system_shape');
SELECT checks('b'); SELECT checks('a'); SELECT named('a');`,
			want:   []string{"free_name.id integer", "b_checks_2.id integer", "a_checks_1.id integer"},
			absent: []string{"taken_name.id integer", "not_null_shape.id integer", "system_shape.id integer"},
			drift:  []string{"depends on a value only the database held", "depends on a value only the database held", "depends on a value only the database held"},
		},
		{
			// pg_type lists the enums and row types, held, and the
			// domains, composite and range types and extensions' types,
			// held by name: a guard on another name is answered, on
			// theirs not. pg_enum lists the enums' labels.
			name: "guards on pg_type and pg_enum",
			sql: `CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE TYPE pair AS (x int, y int);
CREATE TYPE floatrange AS RANGE (subtype = float8);
CREATE EXTENSION citext;
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE FUNCTION type_once(typ text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = typ) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
CREATE FUNCTION label_once(label text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_enum WHERE enumtypid = 'mood'::regtype AND enumlabel = label) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
SELECT type_once('feeling', 'free_type'); SELECT type_once('mood', 'taken_enum'); SELECT type_once('b', 'taken_row_type');
SELECT type_once('int4', 'taken_builtin'); SELECT type_once('_mood', 'taken_array');
SELECT type_once('posint', 'held_domain'); SELECT type_once('floatmultirange', 'held_multirange'); SELECT type_once('citext', 'held_extension');
SELECT label_once('happy', 'free_label'); SELECT label_once('ok', 'taken_label');
CREATE EXTENSION postgis;
SELECT type_once('feeling', 'after_postgis');`,
			want:   []string{"free_type.id integer", "free_label.id integer"},
			absent: []string{"taken_enum.id integer", "taken_row_type.id integer", "taken_builtin.id integer", "taken_array.id integer", "held_domain.id integer", "held_multirange.id integer", "held_extension.id integer", "taken_label.id integer", "after_postgis.id integer"},
			drift:  []string{"type_once('_mood'", "type_once('posint'", "type_once('floatmultirange'", "type_once('citext'", "type_once('feeling', 'after_postgis')"},
		},
		{
			// ::regclass prints a relation's name, qualified when the
			// search path would not find it; a plain oid prints as a
			// number only the database knows.
			name: "regclass prints names, an oid its number",
			sql: `CREATE SCHEMA app;
CREATE TABLE app.b (id int);
CREATE TABLE app.c (id int);
CREATE FUNCTION names() RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', 'n_' || 'b'::regclass || '_' || 'app.b'::regclass || '_' || 'app.c'::regclass::text);
END $$;
CREATE FUNCTION number() RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', 'o_' || (SELECT oid FROM pg_class WHERE relname = 'b' AND relnamespace = 'public'::regnamespace));
END $$;
SELECT names(); SELECT number();`,
			want:   []string{"n_b_app.b_app.c.id integer"},
			absent: []string{"o_public.b.id integer", "o_b.id integer"},
			drift:  []string{"depends on a value only the database held"},
		},
		{
			// key_column_usage lists each key's columns; a key added
			// USING INDEX has columns the catalog does not hold.
			// A key over an index the catalog never saw (the history
			// starts after it was made) has columns it does not know.
			name: "key_column_usage, and a key over an unseen index",
			sql: `ALTER TABLE b ADD COLUMN a_id int REFERENCES a (id);
CREATE FUNCTION keycols(tbl text) RETURNS void LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT count(*) INTO n FROM information_schema.key_column_usage WHERE table_name = tbl;
  EXECUTE format('CREATE TABLE %I (id int)', tbl || '_key_columns_' || n);
END $$;
SELECT keycols('b');
ALTER TABLE a ADD CONSTRAINT a_code_key UNIQUE USING INDEX a_code_idx;
SELECT keycols('a');`,
			want:   []string{"b_key_columns_2.id integer"},
			absent: []string{"a_key_columns_1.id integer", "a_key_columns_2.id integer"},
			drift:  []string{"depends on a value only the database held"},
		},
		{
			name: "key_column_usage over a key that took an index",
			sql: `CREATE FUNCTION keycols(tbl text) RETURNS void LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT count(*) INTO n FROM information_schema.key_column_usage WHERE table_name = tbl;
  EXECUTE format('CREATE TABLE %I (id int)', tbl || '_key_columns_' || n);
END $$;
CREATE UNIQUE INDEX a_code_idx ON a (id);
ALTER TABLE a ADD CONSTRAINT a_code_key UNIQUE USING INDEX a_code_idx;
SELECT keycols('a');`,
			want: []string{"a_key_columns_2.id integer"},
		},
		{
			// The usual guard of a migration that builds an index once.
			name: "pg_indexes finds an index the catalog holds",
			sql: `CREATE INDEX a_id_idx ON a (id);
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_indexes WHERE tablename = 'a' AND indexname = 'a_id_idx') THEN
    CREATE TABLE has_index (id int);
  END IF;
  IF EXISTS (SELECT 1 FROM pg_class WHERE relname = 'a_id_idx' AND relkind = 'i') THEN
    CREATE TABLE has_class (id int);
  END IF;
END $$;`,
			want: []string{"has_index.id integer", "has_class.id integer"},
		},
		{
			// A table's indexes are held as its columns are, so the
			// guard of an index made once is answered when absent too.
			name: "pg_indexes says an index is not there",
			sql: `DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'a_id_idx') THEN
    CREATE INDEX a_id_idx ON a (id);
    CREATE TABLE made_index (id int);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = 'a_id_idx' AND relkind = 'i') THEN
    CREATE TABLE made_twice (id int);
  END IF;
END $$;
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'pg_class_oid_index') THEN
    CREATE TABLE system_index (id int);
  END IF;
END $$;`,
			want:   []string{"made_index.id integer"},
			absent: []string{"made_twice.id integer"},
			drift:  []string{"depends on a value only the database held"}, // the system catalogs' indexes are not held
		},
		{
			// A materialized view's indexes are not held.
			name: "pg_indexes beside a materialized view",
			sql: `CREATE MATERIALIZED VIEW mv AS SELECT id FROM a;
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'mv_id_idx') THEN
    CREATE TABLE after_mv (id int);
  END IF;
END $$;`,
			drift: []string{"depends on a value only the database held"},
		},
		{
			// table_catalog is the server's database name, not schemaq's
			// ("db" here): it equals current_database() and is not
			// known to equal anything else.
			name: "table_catalog is current_database()",
			sql: `CREATE FUNCTION in_db(cat text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables WHERE table_catalog = coalesce(cat, current_database()) AND table_name = 'a') THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
SELECT in_db(NULL, 'same_database'); SELECT in_db('db', 'named_db');`,
			want:   []string{"same_database.id integer"},
			absent: []string{"named_db.id integer"},
			drift:  []string{"depends on a value only the database held"},
		},
		{
			// SELECT INTO that finds no row sets a variable to NULL and
			// a record to a row of NULLs, * naming its fields.
			name: "SELECT INTO of no row",
			sql: `DO $$ DECLARE c text := 'set'; r record; BEGIN
  SELECT table_name INTO c FROM information_schema.tables WHERE table_name = 'nope';
  SELECT * INTO r FROM information_schema.tables WHERE table_name = 'nope';
  EXECUTE format('CREATE TABLE %I (id int)', 'into_' || coalesce(c || 'x', 'null') || '_' || coalesce(r.table_type, 'null'));
END $$;`,
			want: []string{"into_null_null.id integer"},
		},
		{
			// Rows whose values the catalog does not hold (an owner, a
			// NOT NULL column's constraint name) may be one row or
			// several: DISTINCT over them is not counted, over names
			// it holds it is.
			name: "DISTINCT over values not held",
			sql: `CREATE FUNCTION owners() RETURNS void LANGUAGE plpgsql AS $$ DECLARE r record; BEGIN
  FOR r IN SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'public' LOOP
    EXECUTE 'CREATE TABLE one_owner (id int)';
  END LOOP;
END $$;
CREATE FUNCTION kinds(tbl text) RETURNS void LANGUAGE plpgsql AS $$ DECLARE n int; BEGIN
  SELECT count(DISTINCT constraint_type) INTO n FROM information_schema.table_constraints WHERE table_name = tbl;
  EXECUTE format('CREATE TABLE %I (id int)', tbl || '_kinds_' || n);
  SELECT count(DISTINCT constraint_name) INTO n FROM information_schema.table_constraints WHERE table_name = tbl;
  EXECUTE format('CREATE TABLE %I (id int)', tbl || '_names_' || n);
END $$;
SELECT owners(); SELECT kinds('b');`,
			want:   []string{"b_kinds_2.id integer"},
			absent: []string{"one_owner.id integer", "b_names_2.id integer", "b_names_1.id integer"},
			drift:  []string{"DISTINCT over a value only the database held", "depends on a value only the database held"},
		},
		{
			// The system relations' names are not held: a pattern may
			// match them (PostgreSQL has pg_class, information_schema
			// has tables), unless the schema rules them out.
			name: "LIKE and < over the names of system relations",
			sql: `CREATE FUNCTION seen(pattern text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_tables WHERE tablename LIKE pattern) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
CREATE FUNCTION seen_public(pattern text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE pattern) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
CREATE FUNCTION before_b(made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables WHERE table_name >= 'ap' AND table_name < 'aq') THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
CREATE FUNCTION fk_like(pattern text, made text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.table_constraints WHERE constraint_name LIKE pattern) THEN
    EXECUTE format('CREATE TABLE %I (id int)', made);
  END IF;
END $$;
SELECT seen('pg_%', 'saw_pg'); SELECT seen_public('zz%', 'no_zz_in_public'); SELECT before_b('saw_before_b');
SELECT fk_like('fk\_%', 'no_fk'); SELECT fk_like('2200%', 'no_digits'); SELECT fk_like('b\_pk%', 'no_b_pk');`,
			want:   []string{"no_zz_in_public.id integer", "no_fk.id integer"},
			absent: []string{"saw_pg.id integer", "saw_before_b.id integer", "no_digits.id integer", "no_b_pk.id integer"},
			drift:  []string{"depends on a value only the database held", "depends on a value only the database held", "fk_like('2200%'"},
		},
		{
			// PERFORM sets FOUND by its rows; an UPDATE by the rows it
			// changed, which only the database knows.
			name: "FOUND after PERFORM and after an UPDATE",
			sql: `CREATE FUNCTION found_it() RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  PERFORM 1 FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'a';
  IF FOUND THEN
    EXECUTE 'CREATE TABLE performed (id int)';
  END IF;
  -- Indexes made by CREATE INDEX are not held, but b's key's is: a row
  -- found is certain.
  PERFORM 1 FROM pg_indexes WHERE tablename = 'b';
  IF FOUND THEN
    EXECUTE 'CREATE TABLE b_has_an_index (id int)';
  END IF;
  UPDATE b SET note = 'x' WHERE id = 1;
  IF NOT FOUND THEN
    EXECUTE 'CREATE TABLE no_row_updated (id int)';
  END IF;
END $$;
SELECT found_it();`,
			want:   []string{"performed.id integer", "b_has_an_index.id integer"},
			absent: []string{"no_row_updated.id integer"},
			drift:  []string{"depends on a value only the database held"},
		},
		{
			// Integers order alike everywhere; text as the database's
			// collation says.
			name: "GREATEST, LEAST and NULLIF",
			sql: `CREATE FUNCTION pick(a text, b text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', 'pick_' || greatest(a, b));
END $$;
DO $$ BEGIN
  EXECUTE format('CREATE TABLE %I (id int)', 'mm_' || greatest(2, NULL, 7) || '_' || least(NULL, 5, -1) || '_' || coalesce(greatest(NULL, NULL)::text, 'none') || '_' || coalesce(nullif('x', 'x'), 'gone') || '_' || nullif('y', 'x'));
END $$;
SELECT pick('B', 'a'); SELECT pick('10', '9');`,
			want:   []string{"mm_7_-1_none_gone_y.id integer"},
			absent: []string{"pick_a.id integer", "pick_B.id integer", "pick_10.id integer", "pick_9.id integer"},
			drift:  []string{"which the database's collation orders", "which the database's collation orders"},
		},
		{
			name: "signs, and arithmetic out of bigint's range",
			sql: `CREATE FUNCTION signed(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF -n < 0 THEN
    EXECUTE format('CREATE TABLE signed_%s (id int)', -(-n) + +1);
  END IF;
END $$;
CREATE FUNCTION big(n bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE big_%s (id int)', n * 4611686018427387904);
END $$;
SELECT signed(2); SELECT big(2);`,
			want:   []string{"signed_3.id integer"},
			absent: []string{"big_0.id integer", "big_-9223372036854775808.id integer"},
			drift:  []string{"bigint out of range"},
		},
		{
			// PostgreSQL refuses both; the interpreter stops with its
			// words, and the catalog says where it may differ.
			name: "a negative LIMIT or OFFSET",
			sql: `CREATE FUNCTION lim(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables LIMIT n) THEN
    EXECUTE 'CREATE TABLE lim_made (id int)';
  END IF;
END $$;
CREATE FUNCTION off(n int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM information_schema.tables ORDER BY table_name OFFSET n) THEN
    EXECUTE 'CREATE TABLE off_made (id int)';
  END IF;
END $$;
SELECT lim(-1); SELECT off(-3); SELECT off(NULL);`,
			want:   []string{"off_made.id integer"},
			absent: []string{"lim_made.id integer"},
			drift:  []string{"LIMIT must not be negative", "OFFSET must not be negative"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", plBase+tc.sql, Tolerant())
			if err != nil {
				t.Fatal(err)
			}
			cols := columnsOf(c)
			for _, w := range tc.want {
				if w != "" && !slices.Contains(cols, w) {
					t.Errorf("missing %q; catalog has %v", w, cols)
				}
			}
			for _, w := range tc.absent {
				if slices.Contains(cols, w) {
					t.Errorf("has %q, which the routine did not make", w)
				}
			}
			d := c.Drift()
			if len(d) != len(tc.drift) {
				t.Fatalf("drift %v, want %d entries", d, len(tc.drift))
			}
			for i, want := range tc.drift {
				if !d[i].Stopped || !strings.Contains(d[i].String(), want) {
					t.Errorf("drift %d: %s\nwant it stopped, naming %q", i, d[i], want)
				}
			}
		})
	}
}

// TestInterpretNeedsTolerance: without Tolerant, a call that stops is
// no refusal either (the history ran), but the stop is drift all the
// same, so the catalog says where it may differ.
func TestInterpretNeedsTolerance(t *testing.T) {
	c, err := New("db").Apply("0001.sql", plBase+`CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  ALTER TABLE a ADD COLUMN x int;
  EXECUTE current_setting('app.ddl');
END $$;
SELECT f();`)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Drift()
	if len(d) != 1 || !d[0].Stopped || !strings.Contains(d[0].Error, "EXECUTE") || c.Table(QualName{"public", "a"}).Column("x") == nil {
		t.Fatalf("drift %v, columns %v", d, columnsOf(c))
	}
}

// TestRoutinesSurviveEncoding: a helper created in one migration is
// called in a later one, by a worker that decoded the catalog between.
func TestRoutinesSurviveEncoding(t *testing.T) {
	c, err := New("db").Apply("0001.sql", plBase+`CREATE FUNCTION add_flag(t text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN EXECUTE format('ALTER TABLE %I ADD COLUMN flag boolean', t); END $$;
CREATE FUNCTION plain(x int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN x + 1; END $$;`)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Routines(); len(got) != 1 || got[0].Name != "add_flag" {
		t.Fatalf("routines %v: want only the one that changes the schema", got)
	}
	back, _ := throughJSON(t, c)
	next, err := back.Apply("0002.sql", "SELECT add_flag('b');")
	if err != nil {
		t.Fatal(err)
	}
	if next.Table(QualName{"public", "b"}).Column("flag") == nil {
		t.Fatalf("columns %v: the decoded catalog lost the helper", columnsOf(next))
	}
	if err := json.Unmarshal([]byte(`{"database":"x","version":1,"schemas":[],"tables":[],"views":[],"enums":[],"routines":[{"schema":"public","name":"f","sources":[]}]}`), back); err == nil {
		t.Fatal("a routine without source decoded")
	}
}

// TestInterpretAtScale calls a tenant helper once per table of a
// ten-thousand-table schema, each guarded by information_schema: the
// WHERE's pinned names keep each query to one table.
func TestInterpretAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("ten thousand calls")
	}
	var b strings.Builder
	const n = 10_000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "CREATE TABLE t%d (id int PRIMARY KEY, name text);\n", i)
	}
	c, err := New("db").Apply("0001.sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.WriteString(`CREATE FUNCTION add_tenant(tbl text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = tbl AND column_name = 'tenant_id') THEN
    EXECUTE format('ALTER TABLE %I ADD COLUMN tenant_id integer NOT NULL DEFAULT 1', tbl);
  END IF;
END $$;
`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "SELECT add_tenant('t%d');\n", i)
	}
	start := time.Now()
	next, err := c.Apply("0002.sql", b.String(), Tolerant())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d calls over %d tables in %v", n, n, time.Since(start))
	for _, tb := range next.Tables() {
		if tb.Column("tenant_id") == nil {
			t.Fatalf("%s has no tenant_id", tb.Name)
		}
	}
	if len(next.Drift()) != 0 {
		t.Fatalf("drift: %v", next.Drift()[0])
	}
}
