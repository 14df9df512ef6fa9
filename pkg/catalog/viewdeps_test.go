package catalog

import (
	"strings"
	"testing"
)

// A view's definition names its relations as they are now, as
// pg_get_viewdef shows them: renamed under the old name as an alias,
// qualified when moved off the search path; a CTE of the old name is
// left alone.
func TestViewDefinitionsFollowRelations(t *testing.T) {
	const base = `CREATE TABLE o (id int, c int);
CREATE VIEW v AS SELECT o.c FROM o;
CREATE VIEW w AS WITH o AS (SELECT 1 AS c) SELECT c FROM o;
`
	cases := []struct{ name, sql, view, want, not string }{
		{"renamed", "ALTER TABLE o RENAME TO o2;", "v", "FROM o2 o", "FROM o "},
		{"moved", "CREATE SCHEMA s;\nALTER TABLE o SET SCHEMA s;", "v", "FROM s.o", "FROM o "},
		{"a CTE of its name", "ALTER TABLE o RENAME TO o2;", "w", "FROM o", "o2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", base+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			def := c.View(QualName{"public", tc.view}).Definition
			if !strings.Contains(def, tc.want) || strings.Contains(def+" ", tc.not) {
				t.Errorf("definition %q: want %q in it and not %q", def, tc.want, tc.not)
			}
		})
	}
}
