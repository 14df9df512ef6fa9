package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestPostgresDependencyRefusals runs statements that drop or retype a
// column views read, in PostgreSQL 15 and in the catalog: both must
// refuse the same ones, and where both apply (CASCADE among them) hold
// the same tables, views and columns.
func TestPostgresDependencyRefusals(t *testing.T) {
	p := testenv.StartPostgres(t)
	const base = `CREATE TABLE o (id int PRIMARY KEY, c int, x int);
CREATE TABLE u (id int PRIMARY KEY, name text, avatar text);
`
	tests := []struct {
		name, views, stmt string
	}{
		{"qualified column dropped", "CREATE VIEW v AS SELECT o.c FROM o;", "ALTER TABLE o DROP COLUMN c"},
		{"another column dropped", "CREATE VIEW v AS SELECT o.c FROM o;", "ALTER TABLE o DROP COLUMN x"},
		{"dropped with CASCADE", "CREATE VIEW v AS SELECT o.c FROM o; CREATE VIEW w AS SELECT c FROM v;", "ALTER TABLE o DROP COLUMN c CASCADE"},
		{"qualified column retyped", "CREATE VIEW v AS SELECT o.c FROM o;", "ALTER TABLE o ALTER COLUMN c TYPE bigint"},
		{"another column retyped", "CREATE VIEW v AS SELECT o.c FROM o;", "ALTER TABLE o ALTER COLUMN x TYPE bigint"},
		{"a star's column dropped", "CREATE VIEW v AS SELECT * FROM o;", "ALTER TABLE o DROP COLUMN x"},
		{"unqualified column dropped", "CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o DROP COLUMN c"},
		{"a subquery's column retyped", "CREATE VIEW v AS SELECT *, (SELECT name FROM u WHERE u.id = o.id) AS n FROM o;", "ALTER TABLE u ALTER COLUMN name TYPE varchar(10)"},
		{"a subquery's qualified key retyped", "CREATE VIEW v AS SELECT *, (SELECT name FROM u WHERE u.id = o.id) AS n FROM o;", "ALTER TABLE u ALTER COLUMN id TYPE bigint"},
		{"a column beside a star's subquery retyped", "CREATE VIEW v AS SELECT *, (SELECT name FROM u WHERE u.id = o.id) AS n FROM o;", "ALTER TABLE u ALTER COLUMN avatar TYPE varchar(5)"},
		{"a materialized view's column dropped", "CREATE MATERIALIZED VIEW v AS SELECT c FROM o;", "ALTER TABLE o DROP COLUMN c"},
		{"a join's key dropped", "CREATE VIEW v AS SELECT o.id, u.name FROM o JOIN u ON u.id = o.id;", "ALTER TABLE u DROP COLUMN id CASCADE"},
		{"a join's other column dropped", "CREATE VIEW v AS SELECT o.id, u.name FROM o JOIN u ON u.id = o.id;", "ALTER TABLE u DROP COLUMN avatar"},
		{"a view over a view", "CREATE VIEW v AS SELECT c, x FROM o; CREATE VIEW w AS SELECT c FROM v;", "ALTER TABLE o DROP COLUMN x"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := fmt.Sprintf("deps%d", i)
			p.CreateDB(t, db)
			if _, err := p.Query(db, base+tt.views); err != nil {
				t.Fatal(err)
			}
			_, pgErr := p.Query(db, tt.stmt+";")
			c, err := New(db).Apply("0001.sql", base+tt.views)
			if err != nil {
				t.Fatal(err)
			}
			next, ourErr := c.Apply("0002.sql", tt.stmt+";", Tolerant())
			switch {
			case pgErr != nil && ourErr == nil:
				t.Fatalf("PostgreSQL refuses (%v); the catalog applies it", pgErr)
			case pgErr == nil && ourErr != nil:
				t.Fatalf("PostgreSQL applies it; the catalog refuses: %v", ourErr)
			case pgErr != nil:
				if !errors.Is(ourErr, ErrDependent) {
					t.Errorf("the catalog refuses as %v, want a dependency", ourErr)
				}
				t.Logf("PostgreSQL: %v\ncatalog: %v", pgErr, ourErr)
				return
			}
			cols, keys := describe(p, t, db)
			if d := diffCatalog(cols, keys, next); len(d) > 0 {
				t.Errorf("after it, the catalog differs from PostgreSQL:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}
