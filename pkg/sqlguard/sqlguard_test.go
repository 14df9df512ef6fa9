package sqlguard

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

const shopDDL = `
CREATE TABLE customers (id bigint PRIMARY KEY, email text, name text);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, total numeric, placed_at timestamptz);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id bigint, order_id bigint, amount numeric);
CREATE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 100;
CREATE FUNCTION order_total(id bigint) RETURNS numeric LANGUAGE sql STABLE AS $$ SELECT total FROM orders WHERE orders.id = order_total.id $$;
CREATE FUNCTION slugify(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT lower(t) $$;
CREATE FUNCTION purge_everything() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DELETE FROM orders; END $$;
`

func shop(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Snapshot("shop", "shop.sql", shopDDL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkCases are statements a model may return, with what the guard
// must say; TestCheckInPostgres runs them through a real server too.
var checkCases = []struct {
	sql    string
	want   error    // nil: allowed
	tables []string // for allowed statements
	reason string   // substring of the rejection
}{
	// Allowed.
	{"SELECT 1", nil, nil, ""},
	{"SELECT count(*) FROM orders", nil, []string{"public.orders"}, ""},
	{"select c.name, sum(o.total) from customers c join orders o on o.customer_id = c.id group by c.name", nil, []string{"public.customers", "public.orders"}, ""},
	{"WITH recent AS (SELECT * FROM orders WHERE placed_at > now() - interval '7 days') SELECT count(*) FROM recent", nil, []string{"public.orders"}, ""},
	{"SELECT * FROM billing.invoices", nil, []string{"billing.invoices"}, ""},
	{"SELECT * FROM invoices", nil, []string{"billing.invoices"}, ""}, // the only invoices
	{"SELECT * FROM big_orders", nil, []string{"public.big_orders"}, ""},
	{"VALUES (1, 'a'), (2, 'b')", nil, nil, ""},
	{"SELECT id FROM orders UNION SELECT id FROM customers", nil, []string{"public.customers", "public.orders"}, ""},
	{"SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE email LIKE '%@x.com')", nil, []string{"public.customers", "public.orders"}, ""},
	{"SELECT 'DELETE FROM orders; DROP TABLE x' AS text_not_sql", nil, nil, ""},
	{"SELECT id -- ; DROP TABLE orders\nFROM orders", nil, []string{"public.orders"}, ""},
	{"SELECT generate_series(1, 10)", nil, nil, ""},
	{"SELECT * FROM orders ORDER BY total DESC LIMIT 5", nil, []string{"public.orders"}, ""},
	{"SELECT lower(name) AS n FROM customers ORDER BY n", nil, []string{"public.customers"}, ""},
	{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT i FROM n", nil, nil, ""},
	{"SELECT * FROM orders;", nil, []string{"public.orders"}, ""},
	// What reports call: the allowlist's families.
	{"SELECT date_trunc('month', placed_at) AS m, count(*), round(avg(total), 2), string_agg(DISTINCT customer_id::text, ',') FROM orders GROUP BY 1", nil, []string{"public.orders"}, ""},
	{"SELECT customer_id, rank() OVER (ORDER BY sum(total) DESC), lag(sum(total)) OVER (ORDER BY customer_id) FROM orders GROUP BY customer_id", nil, []string{"public.orders"}, ""},
	{"SELECT extract(year FROM placed_at), coalesce(nullif(total, 0), 1), greatest(total, 0), to_char(placed_at, 'YYYY-MM') FROM orders", nil, []string{"public.orders"}, ""},
	{"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total) FROM orders", nil, []string{"public.orders"}, ""},
	{"SELECT upper(substring(name from 1 for 3)), length(trim(name)), jsonb_build_object('n', name) ->> 'n' FROM customers", nil, []string{"public.customers"}, ""},
	{"SELECT * FROM customers ORDER BY random() LIMIT 10", nil, []string{"public.customers"}, ""},
	{"SELECT pg_catalog.lower(name), date(now()) FROM customers", nil, []string{"public.customers"}, ""},

	// Not SQL, or more than one statement.
	{"SELEC 1", ErrInvalid, nil, "syntax error"},
	{"", ErrInvalid, nil, "no statement"},
	// A model's answer deep enough to overflow libpg_query's C stack.
	{"SELECT 1" + strings.Repeat("+1", 25000), ErrInvalid, nil, "nested more than 1000 levels deep"},
	{"SELECT 1; SELECT 2", ErrUnsafe, nil, "2 statements"},
	{"SELECT 1; /* hidden */ DELETE FROM orders", ErrUnsafe, nil, "2 statements"},
	{"SELECT * FROM orders; DROP TABLE orders --", ErrUnsafe, nil, "2 statements"},

	// Writes and DDL.
	{"INSERT INTO orders (id) VALUES (1)", ErrUnsafe, nil, "INSERT"},
	{"UPDATE orders SET total = 0", ErrUnsafe, nil, "UPDATE"},
	{"DELETE FROM orders", ErrUnsafe, nil, "DELETE"},
	{"MERGE INTO orders o USING customers c ON o.customer_id = c.id WHEN MATCHED THEN DELETE", ErrUnsafe, nil, "MERGE"},
	{"DROP TABLE orders", ErrUnsafe, nil, "DROP"},
	{"TRUNCATE orders", ErrUnsafe, nil, "TRUNCATE"},
	{"CREATE TABLE x AS SELECT * FROM orders", ErrUnsafe, nil, "CREATE TABLE AS is not"},
	{"ALTER TABLE orders ADD COLUMN x int", ErrUnsafe, nil, "ALTER TABLE is not"},
	{"GRANT SELECT ON orders TO public", ErrUnsafe, nil, "GRANT"},
	{"COPY orders TO '/tmp/x'", ErrUnsafe, nil, "COPY"},
	{"COPY (SELECT * FROM orders) TO PROGRAM 'curl x'", ErrUnsafe, nil, "COPY"},
	{"CALL refresh_everything()", ErrUnsafe, nil, "CALL"},
	{"DO $$ BEGIN DELETE FROM orders; END $$", ErrUnsafe, nil, "DO"},
	{"SET search_path = evil", ErrUnsafe, nil, "SET is not"},
	{"BEGIN", ErrUnsafe, nil, "transaction control is not"},
	{"EXPLAIN ANALYZE DELETE FROM orders", ErrUnsafe, nil, "EXPLAIN"},
	{"PREPARE p AS SELECT 1", ErrUnsafe, nil, "PREPARE"},
	{"LISTEN orders", ErrUnsafe, nil, "LISTEN"},
	{"VACUUM orders", ErrUnsafe, nil, "VACUUM"},

	// Writes hidden inside a SELECT.
	{"WITH gone AS (DELETE FROM orders RETURNING id) SELECT count(*) FROM gone", ErrUnsafe, nil, "data-modifying"},
	{"WITH x AS (UPDATE orders SET total = 0 RETURNING *) SELECT * FROM x", ErrUnsafe, nil, "data-modifying"},
	{"WITH x AS (INSERT INTO orders (id) VALUES (1) RETURNING id) SELECT 1", ErrUnsafe, nil, "data-modifying"},
	{"SELECT * INTO backup FROM orders", ErrUnsafe, nil, "SELECT … INTO"},
	{"SELECT * FROM orders FOR UPDATE", ErrUnsafe, nil, "FOR UPDATE"},
	{"SELECT * FROM orders o FOR SHARE OF o", ErrUnsafe, nil, "FOR UPDATE/SHARE"},

	// Functions with side effects, anywhere.
	{"SELECT pg_sleep(10)", ErrUnsafe, nil, "pg_sleep"},
	{"SELECT * FROM orders WHERE pg_sleep(1) IS NOT NULL", ErrUnsafe, nil, "pg_sleep"},
	{"SELECT pg_catalog.pg_sleep_for('1 minute')", ErrUnsafe, nil, "pg_sleep_for"},
	{"SELECT * FROM dblink('host=x', 'DELETE FROM t') AS t(a int)", ErrUnsafe, nil, "dblink"},
	{"SELECT dblink_exec('host=x', 'DROP TABLE t')", ErrUnsafe, nil, "dblink_exec"},
	{"SELECT lo_import('/etc/passwd')", ErrUnsafe, nil, "lo_import"},
	{"SELECT lo_export(1, '/tmp/x')", ErrUnsafe, nil, "lo_export"},
	{"SELECT pg_read_file('/etc/passwd')", ErrUnsafe, nil, "pg_read_file"},
	{"SELECT set_config('statement_timeout', '0', false)", ErrUnsafe, nil, "set_config"},
	{"SELECT nextval('orders_id_seq')", ErrUnsafe, nil, "nextval"},
	{"SELECT pg_terminate_backend(pid) FROM pg_stat_activity", ErrUnsafe, nil, "pg_terminate_backend"},
	{"SELECT query_to_xml('DELETE FROM orders RETURNING 1', true, false, '')", ErrUnsafe, nil, "query_to_xml"},
	{"SELECT * FROM generate_series(1, 3) g, LATERAL (SELECT pg_advisory_lock(g)) l", ErrUnsafe, nil, "pg_advisory_lock"},
	{"SELECT (SELECT pg_notify('ch', 'x'))", ErrUnsafe, nil, "pg_notify"},

	// The hostile suite: functions that lock, dump other objects,
	// reach server state or run user code. An allowlist refuses them
	// all, whatever names a later release adds.
	{"SELECT pg_try_advisory_xact_lock(42)", ErrUnsafe, nil, "pg_try_advisory_xact_lock() is not a known read-only built-in"},
	{"SELECT pg_advisory_unlock_shared(1)", ErrUnsafe, nil, "pg_advisory_unlock_shared"},
	{"SELECT database_to_xml(true, true, '')", ErrUnsafe, nil, "database_to_xml"},
	{"SELECT schema_to_xml('public', true, true, '')", ErrUnsafe, nil, "schema_to_xml"},
	{"SELECT * FROM pg_logical_slot_get_changes('slot', NULL, NULL)", ErrUnsafe, nil, "pg_logical_slot_get_changes"},
	{"SELECT pg_stat_reset_single_table_counters(16384)", ErrUnsafe, nil, "pg_stat_reset_single_table_counters"},
	{"SELECT pg_start_backup('x')", ErrUnsafe, nil, "pg_start_backup"},
	{"SELECT * FROM pg_ls_waldir()", ErrUnsafe, nil, "pg_ls_waldir"},
	{"SELECT pg_log_backend_memory_contexts(1)", ErrUnsafe, nil, "pg_log_backend_memory_contexts"},
	{"SELECT purge_everything()", ErrUnsafe, nil, "purge_everything() is VOLATILE in the catalog"},
	{"SELECT never_declared()", ErrUnsafe, nil, "never_declared() is not a known read-only built-in"},
	{"SELECT public.lower(name) FROM customers", ErrUnsafe, nil, "public.lower() is not a known read-only built-in"},
	{"SELECT pg_catalog.order_total(id) FROM orders", ErrUnsafe, nil, "pg_catalog.order_total()"},
	// User functions the catalog records as STABLE or IMMUTABLE.
	{"SELECT id, order_total(id), public.slugify(name) FROM orders JOIN customers USING (id)", nil, []string{"public.customers", "public.orders"}, ""},
	{"SELECT current_setting('data_directory')", ErrUnsafe, nil, "current_setting"},
	{"SELECT version()", ErrUnsafe, nil, "version"},
	{"SELECT count(*) FROM orders WHERE total > (SELECT max(x) FROM unnest(ARRAY[pg_backend_pid()]) x)", ErrUnsafe, nil, "pg_backend_pid"},
	{"SELECT * FROM pg_catalog.pg_authid", ErrUnsafe, nil, "system catalog pg_catalog.pg_authid"},
	{"SELECT * FROM pg_catalog.pg_stat_activity", ErrUnsafe, nil, "system catalog pg_catalog.pg_stat_activity"},
	{"SELECT table_name FROM information_schema.tables", ErrUnsafe, nil, "system catalog information_schema.tables"},
	{"SELECT relname FROM pg_catalog.pg_class", ErrUnsafe, nil, "system catalog"},
	{"SELECT * FROM pg_stat_activity", ErrUnknownTable, nil, "pg_stat_activity"},

	// Columns a known relation does not have: the stale-schema case,
	// refused so the model repairs it, with the nearest names.
	{"SELECT o.totl FROM orders o", ErrUnknownColumn, nil, "column o.totl does not exist in public.orders (did you mean total?)"},
	{"SELECT c.full_name FROM customers c JOIN orders o ON o.customer_id = c.id", ErrUnknownColumn, nil, "column c.full_name does not exist in public.customers (did you mean name?)"},
	{"SELECT customers.nick FROM customers", ErrUnknownColumn, nil, "column customers.nick does not exist in public.customers"},
	{"SELECT o.ctid, o.xmin FROM orders o", nil, []string{"public.orders"}, ""},
	{"SELECT s.n FROM (SELECT count(*) AS n FROM orders) s", nil, []string{"public.orders"}, ""},

	// Relations the catalog does not have.
	{"SELECT * FROM payments", ErrUnknownTable, nil, "relation payments is not in database shop"},
	{"SELECT * FROM orders o JOIN refunds r ON r.order_id = o.id JOIN ghosts g ON true", ErrUnknownTable, nil, "relations refunds, ghosts are"},
	{"SELECT * FROM public.invoices", ErrUnknownTable, nil, "public.invoices"},
	{"WITH orders AS (SELECT 1 AS id) SELECT * FROM orders, missing", ErrUnknownTable, nil, "relation missing"},

	// What a reader role in a READ ONLY transaction still sees: names
	// through reg* casts, the session's identity, XML with a DTD.
	{"SELECT 10::regrole::text", ErrUnsafe, nil, "cast to regrole looks names up in the system catalogs"},
	{"SELECT 'pg_catalog.pg_authid'::regclass::oid", ErrUnsafe, nil, "cast to regclass"},
	{"SELECT CAST('orders' AS pg_catalog.regclass)", ErrUnsafe, nil, "cast to regclass"},
	{"SELECT g::regrole::text FROM generate_series(1, 20000) g WHERE g::regrole::text <> g::text", ErrUnsafe, nil, "regrole"},
	{"SELECT 'int4'::regtype, 'public'::regnamespace", ErrUnsafe, nil, "cast to regtype"},
	{"SELECT current_user", ErrUnsafe, nil, "current_user says who or where the query runs"},
	{"SELECT session_user", ErrUnsafe, nil, "session_user"},
	{"SELECT name FROM customers WHERE name = current_role", ErrUnsafe, nil, "current_role"},
	{"SELECT current_schema", ErrUnsafe, nil, "current_schema"},
	{"SELECT xmlparse(document '<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>')", ErrUnsafe, nil, "xmlparse of a document with a DTD"},
	{"SELECT '<!DOCTYPE x><x/>'::xml", ErrUnsafe, nil, "a cast to xml of a document with a DTD"},
	{"SELECT xmlparse(content name) FROM customers", ErrUnsafe, nil, "text that is not a constant"},
	{"SELECT current_date, current_timestamp, localtime", nil, nil, ""},
	{"SELECT xmlparse(content '<a>1</a>')", nil, nil, ""},
}

func TestCheck(t *testing.T) {
	cat := shop(t)
	tests := checkCases
	if len(tests) < 40 {
		t.Fatalf("the table has %d statements; keep at least 40", len(tests))
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			res, err := Check(tc.sql, cat)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("rejected a safe statement: %v", err)
				}
				if !slices.Equal(res.Tables, tc.tables) {
					t.Errorf("tables %v, want %v", res.Tables, tc.tables)
				}
				return
			}
			var r *Rejection
			if !errors.Is(err, tc.want) || !errors.As(err, &r) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("reason %q should mention %q", r.Reason, tc.reason)
			}
		})
	}
}

// TestResourceBombWarnings: queries whose text shows they may run for
// very long pass, with a warning naming the risk.
func TestResourceBombWarnings(t *testing.T) {
	cat := shop(t)
	tests := []struct {
		sql, want string // want: a substring of one warning; "" for none
	}{
		{"SELECT count(*) FROM generate_series(1, 1e12)", "generate_series makes about 999999999999 rows"},
		{"SELECT g FROM generate_series(-5000000, 6000000) g", "about 11000000 rows"},
		{"SELECT g FROM generate_series(1, 100) g", ""},
		{"SELECT repeat('x', 1000000000)", "repeat() builds a string of 1000000000 characters"},
		{"SELECT repeat(name, 3) FROM customers", ""},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n", "a recursive query without LIMIT"},
		{"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n LIMIT 10", ""},
		{"SELECT * FROM customers WHERE email ~ '^(a+)+$'", "nests quantifiers"},
		{"SELECT regexp_replace(name, '(.*)*x', '') FROM customers", "nests quantifiers"},
		{"SELECT * FROM customers WHERE email ~* '^[a-z]+@x\\.com$'", ""},
	}
	for _, tc := range tests {
		t.Run(tc.sql, func(t *testing.T) {
			res, err := Check(tc.sql, cat)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			got := strings.Join(res.Warnings, " | ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("warnings %q, want one with %q", got, tc.want)
			}
		})
	}
}

// TestSystemCatalogsWhenAllowed: a request may allow system catalogs;
// they are then read with a warning, and nothing else is relaxed.
func TestSystemCatalogsWhenAllowed(t *testing.T) {
	cat := shop(t)
	res, err := CheckWith("SELECT relname FROM pg_catalog.pg_class", cat, Options{SystemCatalogs: true})
	if err != nil || len(res.Warnings) != 1 || res.Warnings[0] != "reads the system catalog pg_catalog.pg_class" {
		t.Errorf("allowed: %+v %v", res, err)
	}
	if _, err := CheckWith("SELECT pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity", cat, Options{SystemCatalogs: true}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("allowing system catalogs must not allow their functions: %v", err)
	}
	if _, err := Check("SELECT relname FROM pg_catalog.pg_class", cat); !errors.Is(err, ErrUnsafe) {
		t.Errorf("not allowed: %v", err)
	}
	res, err = CheckWith("SELECT 10::regrole::text, current_user", cat, Options{SystemCatalogs: true})
	if err != nil || strings.Join(res.Warnings, " | ") != "casts to regrole, which reads the system catalogs | reads the session's current_user" {
		t.Errorf("allowed reg* casts and session values: %+v %v", res, err)
	}
}

func TestColumnWarnings(t *testing.T) {
	cat := shop(t)
	tests := []struct {
		sql  string
		want []string
	}{
		{"SELECT nickname FROM customers", []string{"column nickname is in none of the tables read"}},
		{"SELECT name AS n, count(*) AS c FROM customers GROUP BY n ORDER BY c", nil},
		{"WITH t(x) AS (SELECT id FROM orders) SELECT x FROM t", nil},
	}
	for _, tc := range tests {
		res, err := Check(tc.sql, cat)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if !slices.Equal(res.Warnings, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.sql, res.Warnings, tc.want)
		}
	}
}

// TestCheckOnSearchPath: SQL written in a schema finds its unqualified
// names there before public, as PostgreSQL with that search_path would.
func TestCheckOnSearchPath(t *testing.T) {
	cat, err := catalog.Snapshot("shop", "shop.sql", shopDDL+`
CREATE TABLE billing.orders (id bigint, invoice_id bigint);`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		schema, sql string
		tables      []string
		want        error
	}{
		{"", "SELECT id FROM orders", []string{"public.orders"}, nil},
		{"billing", "SELECT id FROM orders", []string{"billing.orders"}, nil},
		{"billing", "SELECT o.invoice_id FROM orders o", []string{"billing.orders"}, nil},
		{"", "SELECT o.invoice_id FROM orders o", nil, ErrUnknownColumn},
		{"billing", "SELECT id FROM customers", []string{"public.customers"}, nil},
		{"billing", "SELECT id FROM public.orders", []string{"public.orders"}, nil},
		{"nowhere", "SELECT id FROM orders", []string{"public.orders"}, nil},
	}
	for _, c := range cases {
		res, err := CheckWith(c.sql, cat, Options{Schema: c.schema})
		if !errors.Is(err, c.want) || (err == nil && !slices.Equal(res.Tables, c.tables)) {
			t.Errorf("%q in schema %q: %+v, %v; want %v, %v", c.sql, c.schema, res, err, c.tables, c.want)
		}
	}
}
