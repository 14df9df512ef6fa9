package catalog

import (
	"slices"
	"testing"
)

// The names pg_type lists that the catalog does not model are kept, from
// each statement that makes one, and survive the catalog's encoding.
func TestTypeNamesHeld(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"a domain", "CREATE DOMAIN pos AS integer CHECK (VALUE > 0);", []string{"pos"}},
		{"a composite type", "CREATE TYPE pair AS (x int, y int);", []string{"pair"}},
		{"a range and its multirange", "CREATE TYPE floatrange AS RANGE (subtype = float8);\nCREATE TYPE span AS RANGE (subtype = int4);",
			[]string{"floatmultirange", "floatrange", "span", "span_multirange"}},
		{"a multirange named", "CREATE TYPE span AS RANGE (subtype = int4, multirange_type_name = spans);", []string{"span", "spans"}},
		{"a shell type", "CREATE TYPE later;", []string{"later"}},
		{"an extension's types", "CREATE EXTENSION hstore;\nCREATE EXTENSION pgcrypto;", []string{"ghstore", "hstore"}},
		{"an extension of unknown types", "CREATE EXTENSION IF NOT EXISTS postgis;", []string{unknownTypes}},
		{"renames keep both names", "CREATE DOMAIN pos AS integer;\nALTER DOMAIN pos RENAME TO positive;\nCREATE TYPE pair AS (x int);\nALTER TYPE pair RENAME TO couple;",
			[]string{"couple", "pair", "pos", "positive"}},
		{"an enum is held, not named", "CREATE TYPE mood AS ENUM ('ok');\nALTER TYPE mood RENAME TO feeling;", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", plBase+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.otherTypes, tc.want) {
				t.Errorf("held %q, want %q", c.otherTypes, tc.want)
			}
			back, _ := throughJSON(t, c)
			if !slices.Equal(back.otherTypes, c.otherTypes) {
				t.Errorf("decoded %v, encoded %v", back.otherTypes, c.otherTypes)
			}
			next, err := back.Apply("0002.sql", "CREATE DOMAIN later_domain AS text;")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(next.otherTypes, "later_domain") || slices.Contains(back.otherTypes, "later_domain") {
				t.Errorf("the next version holds %v and its base %v", next.otherTypes, back.otherTypes)
			}
		})
	}
}
