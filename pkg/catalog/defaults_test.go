package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// typeCases are column definitions with the type and default PostgreSQL
// 15 reports for them (format_type, pg_get_expr), checked against a live
// server by TestPostgresTypeCases where one is installed.
var typeCases = []struct {
	def, typ, dflt string
}{
	{"integer DEFAULT 0", "integer", "0"},
	{"integer DEFAULT -1", "integer", "'-1'::integer"},
	{"bigint DEFAULT 0", "bigint", "0"},
	{"bigint DEFAULT -1", "bigint", "'-1'::integer"},
	{"bigint DEFAULT '0'", "bigint", "'0'::bigint"},
	{"bigint DEFAULT 9999999999", "bigint", "'9999999999'::bigint"},
	{"smallint DEFAULT '5'", "smallint", "'5'::smallint"},
	{"numeric DEFAULT 0", "numeric", "0"},
	{"numeric(12,2) DEFAULT 1.5", "numeric(12,2)", "1.5"},
	{"numeric DEFAULT '1.50'", "numeric", "1.50"},
	{"numeric(5) DEFAULT 2", "numeric(5,0)", "2"},
	{"real DEFAULT 1.5", "real", "1.5"},
	{"float DEFAULT '1e3'", "double precision", "'1000'::double precision"},
	{"text DEFAULT 'x'", "text", "'x'::text"},
	{"text DEFAULT 'it''s'", "text", "'it''s'::text"},
	{"text DEFAULT ('')", "text", "''::text"},
	{"varchar(20) DEFAULT 'y'", "character varying(20)", "'y'::character varying"},
	{"varchar DEFAULT ''::character varying", "character varying", "''::character varying"},
	{"char(3) DEFAULT 'z'", "character(3)", "'z'::bpchar"},
	{"boolean DEFAULT 'f'", "boolean", "false"},
	{"boolean DEFAULT 'yes'", "boolean", "true"},
	{"boolean DEFAULT true", "boolean", "true"},
	{"bool DEFAULT 1::boolean", "boolean", "(1)::boolean"},
	{"text DEFAULT NULL", "text", ""},
	{"integer DEFAULT NULL::integer", "integer", ""},
	// A NULL cast to another type than the column's needs a conversion
	// at insert, so PostgreSQL keeps it (a dump's
	// payment_dispute_lost_at timestamptz DEFAULT NULL::timestamp).
	{"timestamptz DEFAULT NULL::timestamp", "timestamp with time zone", "NULL::timestamp without time zone"},
	{"text DEFAULT NULL::varchar", "text", "NULL::character varying"},
	{"bigint DEFAULT NULL::integer", "bigint", "NULL::integer"},
	{"varchar(5) DEFAULT NULL::varchar(5)", "character varying(5)", "NULL::character varying(5)"},
	{"numeric(12,2) DEFAULT NULL::numeric", "numeric(12,2)", "NULL::numeric"},
	{"text DEFAULT NULL::text", "text", ""},
	{"timestamp DEFAULT NULL::timestamp", "timestamp without time zone", ""},
	{"jsonb DEFAULT '{}'", "jsonb", "'{}'::jsonb"},
	{"json DEFAULT '[]'::json", "json", "'[]'::json"},
	{"text[] DEFAULT '{}'", "text[]", "'{}'::text[]"},
	{"text[] DEFAULT ARRAY[]::text[]", "text[]", "ARRAY[]::text[]"},
	{"integer[] DEFAULT ARRAY[]::integer[]", "integer[]", "ARRAY[]::integer[]"},
	{"int[] DEFAULT ARRAY[]::int4[]", "integer[]", "ARRAY[]::integer[]"},
	{"varchar(5)[] DEFAULT ARRAY[]::varchar[]", "character varying(5)[]", "ARRAY[]::character varying[]"},
	{"bigint[] DEFAULT ARRAY[1, 2]::bigint[]", "bigint[]", "ARRAY[(1)::bigint, (2)::bigint]"},
	{"text[] DEFAULT ARRAY['x']::text[]", "text[]", "ARRAY['x'::text]"},
	{"text[] DEFAULT ARRAY['a', 'b']", "text[]", "ARRAY['a'::text, 'b'::text]"},
	{"int[] DEFAULT ARRAY[1, 2]", "integer[]", "ARRAY[1, 2]"},
	{"timestamp DEFAULT (now() AT TIME ZONE 'utc')", "timestamp without time zone", "(now() AT TIME ZONE 'utc'::text)"},
	{`"char" DEFAULT 'a'`, `"char"`, `'a'::"char"`},
	{"integer[] DEFAULT '{1,2}'", "integer[]", "'{1,2}'::integer[]"},
	{"varchar(10)[] DEFAULT '{}'::varchar[]", "character varying(10)[]", "'{}'::character varying[]"},
	{"timestamptz DEFAULT now()", "timestamp with time zone", "now()"},
	{"timestamp DEFAULT current_timestamp", "timestamp without time zone", "CURRENT_TIMESTAMP"},
	{"date DEFAULT current_date", "date", "CURRENT_DATE"},
	{"timestamp DEFAULT '2020-01-01'", "timestamp without time zone", "'2020-01-01 00:00:00'::timestamp without time zone"},
	{"date DEFAULT '2020-01-01'", "date", "'2020-01-01'::date"},
	{"time DEFAULT '12:00'", "time without time zone", "'12:00:00'::time without time zone"},
	{"interval DEFAULT '1 day'", "interval", "'1 day'::interval"},
	{"interval DEFAULT '24 hours'", "interval", "'24:00:00'::interval"},
	{"interval DEFAULT '12 months'", "interval", "'1 year'::interval"},
	{"timestamptz DEFAULT (now() + '1 day'::interval)", "timestamp with time zone", "(now() + '1 day'::interval)"},
	{"timestamp(0) DEFAULT timezone('utc', now())", "timestamp(0) without time zone", "timezone('utc'::text, now())"},
	{"uuid DEFAULT gen_random_uuid()", "uuid", "gen_random_uuid()"},
	{"bigint DEFAULT 0::bigint", "bigint", "(0)::bigint"},
	{"integer DEFAULT (1 + 2)", "integer", "(1 + 2)"},
	{"text DEFAULT lower('X')", "text", "lower('X'::text)"},
	{"inet DEFAULT '127.0.0.1'", "inet", "'127.0.0.1'::inet"},
	{"mood DEFAULT 'ok'", "mood", "'ok'::mood"},
	{"public.mood DEFAULT 'ok'", "mood", "'ok'::mood"},
	{"serial", "integer", "nextval('d_c%d_seq'::regclass)"},
	{"bigserial", "bigint", "nextval('d_c%d_seq'::regclass)"},
	{"smallserial", "smallint", "nextval('d_c%d_seq'::regclass)"},
}

func typeCasesSQL() string {
	var b strings.Builder
	b.WriteString("CREATE TYPE mood AS ENUM ('ok', 'sad');\nCREATE TABLE d (\n")
	for i, tc := range typeCases {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    c%d %s", i, tc.def)
	}
	b.WriteString("\n);\n")
	return b.String()
}

func caseDefault(i int) string {
	if strings.Contains(typeCases[i].dflt, "%d") {
		return fmt.Sprintf(typeCases[i].dflt, i)
	}
	return typeCases[i].dflt
}

func TestTypesAndDefaultsAsPostgresPrintsThem(t *testing.T) {
	c, err := New("db").Apply("defaults.sql", typeCasesSQL())
	if err != nil {
		t.Fatal(err)
	}
	d := c.Table(QualName{"public", "d"})
	for i, tc := range typeCases {
		col := d.Column(fmt.Sprintf("c%d", i))
		if col.Type != tc.typ || col.Default != caseDefault(i) {
			t.Errorf("%s: got type %q default %q, want %q and %q", tc.def, col.Type, col.Default, tc.typ, caseDefault(i))
		}
	}
	if col := d.Column(fmt.Sprintf("c%d", len(typeCases)-1)); !col.NotNull {
		t.Error("a serial column is NOT NULL")
	}
}

// TestPostgresTypeCases holds typeCases against a live PostgreSQL, so the
// expectations above are PostgreSQL's and not ours.
func TestPostgresTypeCases(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "types")
	if _, err := p.Query("types", typeCasesSQL()); err != nil {
		t.Fatal(err)
	}
	cols, _ := describe(p, t, "types")
	for i, tc := range typeCases {
		got := cols[fmt.Sprintf("public.d.c%d", i)]
		if got.typ != tc.typ || got.def != caseDefault(i) {
			t.Errorf("%s: PostgreSQL says type %q default %q, the case says %q and %q", tc.def, got.typ, got.def, tc.typ, caseDefault(i))
		}
	}
}

// viewCases are view column expressions over viewBase with the type
// PostgreSQL 15 gives the column, checked live by TestPostgresViewCases.
var viewCases = []struct{ expr, typ string }{
	{"doc ->> 'a'", "text"},
	{"doc -> 'a'", "jsonb"},
	{"doc #>> '{a,b}'", "text"},
	{"js -> 'a'", "json"},
	{"doc || doc", "jsonb"},
	{"tags || tags", "text[]"},
	{"name || 'x'", "text"},
	{"code || '-' || id", "text"},
	{"price + price", "numeric"},
	{"price * 2", "numeric"},
	{"qty + 1", "integer"},
	{"qty + big", "bigint"},
	{"qty / 2.0", "numeric"},
	{"ratio * qty", "double precision"},
	{"-price", "numeric"},
	{"qty > 1", "boolean"},
	{"name LIKE 'a%'", "boolean"},
	{"qty IN (1, 2)", "boolean"},
	{"doc ? 'a'", "boolean"},
	{"doc @> '{}'", "boolean"},
	{"day - day", "integer"},
	{"day + 1", "date"},
	{"at - at", "interval"},
	{"at + interval '1 day'", "timestamp with time zone"},
	{"coalesce(price, 0)", "numeric"},
	{"coalesce(price, price)", "numeric(40,15)"},
	{"round(price, 2)", "numeric"},
	{"(SELECT max(b.price) FROM base b WHERE b.id = base.id)", "numeric"},
	{"(SELECT count(*) FROM base b)", "bigint"},
	{"(SELECT json_agg(b.name) FROM base b)", "json"},
	{"(SELECT jsonb_object_agg(b.name, b.qty) FROM base b)", "jsonb"},
	{"(SELECT string_agg(b.name, ',') FROM base b)", "text"},
	{"(SELECT array_agg(b.code) FROM base b)", "character varying[]"},
	{"(SELECT sum(b.qty) FROM base b)", "bigint"},
	{"(SELECT sum(b.big) FROM base b)", "numeric"},
	{"(SELECT avg(b.qty) FROM base b)", "numeric"},
	{"(SELECT avg(b.ratio) FROM base b)", "double precision"},
	{"(SELECT max(b.code) FROM base b)", "text"},
	{"(SELECT sum(b.price) FROM base b)", "numeric"},
	{"id::text", "text"},
	{"CASE WHEN qty > 1 THEN name ELSE 'none' END", "text"},
	{"upper(name)", "text"},
	{"now()", "timestamp with time zone"},
	{"tags[1]", "text"},
	{"tags[1:2]", "text[]"},
	{"greatest(qty, big)", "bigint"},
	{"greatest(small, 1)", "integer"},
	{"rate * 2", "double precision"},
	{"rate + rate", "real"},
	{"small + rate", "double precision"},
	{"NULL", "text"},
	{"CASE WHEN qty > 1 THEN NULL END", "text"},
	{"coalesce(code, 'x')", "character varying"},
	{"coalesce('x', code)", "character varying"},
	{"CASE WHEN qty > 1 THEN small ELSE big END", "bigint"},
	{"coalesce(rate, price)", "real"},
	{"substr(name, 1, 2)", "text"},
	{"ARRAY[code]", "character varying(10)[]"},
	{"ARRAY[code, 'x']", "character varying[]"},
	{"ARRAY(SELECT b.code FROM base b)", "character varying(10)[]"},
	{"ARRAY[ARRAY[1, 2], ARRAY[3, 4]]", "integer[]"},
	{"ARRAY['a', 'b']", "text[]"},
	{"ARRAY[qty, 1.5]", "numeric[]"},
}

const viewBase = `CREATE TABLE base (id serial PRIMARY KEY, name text, code varchar(10), doc jsonb, js json, tags text[],
    price numeric(40,15), qty integer, big bigint, ratio double precision, day date, at timestamptz,
    rate real, small smallint);
`

func viewCasesSQL() string {
	var b strings.Builder
	b.WriteString(viewBase)
	b.WriteString("CREATE VIEW v AS SELECT\n")
	for i, vc := range viewCases {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    %s AS c%d", vc.expr, i)
	}
	b.WriteString("\nFROM base;\n")
	return b.String()
}

func TestViewColumnTypes(t *testing.T) {
	c, err := New("db").Apply("views.sql", viewCasesSQL())
	if err != nil {
		t.Fatal(err)
	}
	v := c.View(QualName{"public", "v"})
	for i, vc := range viewCases {
		if got := v.Columns[i].Type; got != vc.typ {
			t.Errorf("%s: got %q, want %q", vc.expr, got, vc.typ)
		}
	}
}

func TestPostgresViewCases(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "views")
	if _, err := p.Query("views", viewCasesSQL()); err != nil {
		t.Fatal(err)
	}
	cols, _ := describe(p, t, "views")
	for i, vc := range viewCases {
		if got := cols[fmt.Sprintf("public.v.c%d", i)].typ; got != vc.typ {
			t.Errorf("%s: PostgreSQL says %q, the case says %q", vc.expr, got, vc.typ)
		}
	}
}

// A join USING (or NATURAL) columns makes each one column, of the two
// sides' common type, first in *; a function in FROM has its columns.
func TestViewColumnsOfJoinsAndFunctions(t *testing.T) {
	const base = `CREATE TABLE o (id bigint, cust int, note text);
CREATE TABLE c (id int, cust int, name text);
`
	cases := []struct{ view, want string }{
		{"SELECT * FROM o JOIN c USING (cust, id)", "cust integer, id bigint, note text, name text"},
		{"SELECT * FROM o NATURAL JOIN c", "id bigint, cust integer, note text, name text"},
		{"SELECT id, o.id AS oid, c.id AS cid FROM o JOIN c USING (id)", "id bigint, oid bigint, cid integer"},
		{"SELECT * FROM generate_series(1, 10) g", "g integer"},
		{"SELECT * FROM generate_series(1, 10) AS g(n)", "n integer"},
		{"SELECT x FROM unnest(ARRAY['a', 'b']::text[]) x", "x text"},
		{"SELECT 1 AS a UNION ALL SELECT 2.5", "a numeric"},
		{"SELECT NULL AS a UNION SELECT 1", "a integer"},
		{"SELECT NULL AS a UNION SELECT NULL", "a text"},
		{"SELECT NULL AS a, 1 AS b UNION SELECT id, NULL FROM o UNION SELECT NULL, cust FROM c", "a bigint, b integer"},
	}
	for _, tc := range cases {
		c, err := New("db").Apply("v.sql", base+"CREATE VIEW v AS "+tc.view+";")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, col := range c.View(QualName{"public", "v"}).Columns {
			got = append(got, col.Name+" "+col.Type)
		}
		if s := strings.Join(got, ", "); s != tc.want {
			t.Errorf("%s: columns %s, want %s", tc.view, s, tc.want)
		}
	}
}
