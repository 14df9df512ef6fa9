package catalog

import (
	"slices"
	"testing"
)

func TestSplitUserType(t *testing.T) {
	cases := []struct{ typ, base, rest string }{
		{"email", "email", ""},
		{"s3.code[]", "s3.code", "[]"},
		{`"Weird.Name"`, `"Weird.Name"`, ""},
		{"geometry(Point,4326)", "geometry", "(Point,4326)"},
		{"character varying(10)[]", "", ""},
		{"integer", "", ""},
		{"timestamp with time zone", "", ""},
		{"int4range", "", ""},
	}
	for _, tc := range cases {
		base, rest := splitUserType(tc.typ)
		if base != tc.base || rest != tc.rest {
			t.Errorf("splitUserType(%q) = %q, %q; want %q, %q", tc.typ, base, rest, tc.base, tc.rest)
		}
	}
	for name, want := range map[string]bool{"a": false, "s.a": true, `"a.b"`: false, `"s".a`: true, `"a""".b`: true, `"a"".b"`: false} {
		if got := qualifiedName(name); got != want {
			t.Errorf("qualifiedName(%q) = %v", name, got)
		}
	}
}

// Columns typed by a domain or composite type follow its renames and
// go with a DROP … CASCADE of it or of its schema; without CASCADE
// nothing goes (PostgreSQL refused such a DROP).
func TestUserTypesFollowedByName(t *testing.T) {
	const base = `CREATE SCHEMA app;
CREATE DOMAIN app.code AS varchar(10);
CREATE DOMAIN email AS text;
CREATE TABLE t (id int, c app.code, cs app.code[], e email);
CREATE VIEW v AS SELECT id, e FROM t;
`
	cases := []struct {
		name, sql string
		want      []string
		views     int
	}{
		{"a domain renamed", "ALTER DOMAIN email RENAME TO email_address;", []string{"t.id integer", "t.c app.code", "t.cs app.code[]", "t.e email_address"}, 1},
		{"a type moved", "CREATE SCHEMA other;\nALTER DOMAIN app.code SET SCHEMA other;", []string{"t.id integer", "t.c other.code", "t.cs other.code[]", "t.e email"}, 1},
		{"a schema renamed", "ALTER SCHEMA app RENAME TO core;", []string{"t.id integer", "t.c core.code", "t.cs core.code[]", "t.e email"}, 1},
		{"dropped with CASCADE", "DROP DOMAIN email CASCADE;", []string{"t.id integer", "t.c app.code", "t.cs app.code[]"}, 0},
		{"its schema dropped", "DROP SCHEMA app CASCADE;", []string{"t.id integer", "t.e email"}, 1},
		{"dropped without CASCADE", "DROP DOMAIN email;", []string{"t.id integer", "t.c app.code", "t.cs app.code[]", "t.e email"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", base+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, col := range c.Table(QualName{"public", "t"}).Columns {
				got = append(got, "t."+col.Name+" "+col.Type)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("columns %v, want %v", got, tc.want)
			}
			if n := len(c.Views()); n != tc.views {
				t.Errorf("%d views, want %d", n, tc.views)
			}
		})
	}
}
