package catalog

import (
	"slices"
	"strings"
	"testing"
)

// A CREATE TABLE that declares a key twice over the same columns gets
// one, as PostgreSQL builds one index: the primary key before a unique
// key, else the first, named by the duplicate when its own name was a
// default. ALTER TABLE adds a second.
func TestDuplicateKeysOfACreateTable(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"PRIMARY KEY UNIQUE", "CREATE TABLE a1 (id int PRIMARY KEY UNIQUE);", []string{"p a1_pkey: id"}},
		{"UNIQUE PRIMARY KEY", "CREATE TABLE a1 (id int UNIQUE PRIMARY KEY);", []string{"p a1_pkey: id"}},
		{"the named duplicate names it", "CREATE TABLE a1 (id int UNIQUE, CONSTRAINT a1_named UNIQUE (id));", []string{"u a1_named: id"}},
		{"the first name stays", "CREATE TABLE a1 (id int CONSTRAINT first UNIQUE, CONSTRAINT second UNIQUE (id));", []string{"u first: id"}},
		{"another order is another key", "CREATE TABLE a1 (a int, b int, UNIQUE (a, b), UNIQUE (b, a), PRIMARY KEY (a, b));", []string{"p a1_pkey: a,b", "u a1_b_a_key: b,a"}},
		{"ALTER TABLE adds a second", "CREATE TABLE a1 (id int UNIQUE);\nALTER TABLE a1 ADD UNIQUE (id);", []string{"u a1_id_key1: id", "u a1_id_key: id"}},
		{"LIKE's keys come after the table's own", "CREATE TABLE s (a int, b int, UNIQUE (a, b));\nCREATE TABLE a1 (LIKE s INCLUDING INDEXES, UNIQUE (a, b));", []string{"u a1_a_b_key1: a,b", "u a1_a_b_key: a,b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			tb := c.Table(QualName{"public", "a1"})
			var got []string
			if pk := tb.PrimaryKey; pk != nil {
				got = append(got, "p "+pk.Name+": "+strings.Join(pk.Columns, ","))
			}
			for _, k := range tb.Unique {
				got = append(got, "u "+k.Name+": "+strings.Join(k.Columns, ","))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("keys %q, want %q", got, tc.want)
			}
		})
	}
}
