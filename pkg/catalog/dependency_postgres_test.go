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
		// A view follows a column's rename: the renamed column is still
		// what it reads, under its new name, and its own column keeps the
		// old one.
		{"a renamed column dropped", "CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o RENAME COLUMN c TO d; ALTER TABLE o DROP COLUMN d"},
		{"a renamed qualified column retyped", "CREATE VIEW v AS SELECT o.c, o.x AS ex FROM o;", "ALTER TABLE o RENAME COLUMN c TO d; ALTER TABLE o ALTER COLUMN d TYPE bigint"},
		{"another column after a rename", "CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o RENAME COLUMN c TO d; ALTER TABLE o DROP COLUMN x"},
		{"a generated column's source dropped", "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED);", "ALTER TABLE g DROP COLUMN a"},
		{"a generated column's source dropped with CASCADE", "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED, k int);", "ALTER TABLE g DROP COLUMN a CASCADE"},
		{"a generated column's source retyped", "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED);", "ALTER TABLE g ALTER COLUMN a TYPE bigint"},
		{"a column beside a generated one dropped", "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a * 2) STORED, k int);", "ALTER TABLE g DROP COLUMN k"},
		{"a column of a two-column key dropped", "CREATE TABLE kk (a int, b int, PRIMARY KEY (a, b));", "ALTER TABLE kk DROP COLUMN a"},
		{"a column of a check dropped", "CREATE TABLE ck (a int, b int, CHECK (a < b));", "ALTER TABLE ck DROP COLUMN a"},
		// Foreign keys: a key another table references is a dependency
		// PostgreSQL guards; the referencing side's constraint goes with
		// its column.
		{"a referenced key dropped", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE o DROP COLUMN id"},
		{"a referenced key dropped with CASCADE", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE o DROP COLUMN id CASCADE"},
		{"a referencing column dropped", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE r DROP COLUMN o_id"},
		{"a referenced unique column dropped", "CREATE TABLE q (code text UNIQUE); CREATE TABLE r (code text REFERENCES q(code));", "ALTER TABLE q DROP COLUMN code"},
		{"a self-referenced key dropped", "CREATE TABLE t (id int PRIMARY KEY, parent int REFERENCES t(id));", "ALTER TABLE t DROP COLUMN id"},
		{"a referenced table dropped", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "DROP TABLE o"},
		{"a referenced table dropped with CASCADE", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "DROP TABLE o CASCADE"},
		{"a referenced key retyped alike", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE o ALTER COLUMN id TYPE bigint"},
		{"a referenced key retyped apart", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE o ALTER COLUMN id TYPE text"},
		{"a referencing column retyped apart", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o(id));", "ALTER TABLE r ALTER COLUMN o_id TYPE text"},
		{"a referenced key retyped to what it casts to", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o);", "ALTER TABLE o ALTER COLUMN id TYPE numeric(12,2)"},
		{"a referencing column retyped to a float", "CREATE TABLE r (id int PRIMARY KEY, o_id int REFERENCES o);", "ALTER TABLE r ALTER COLUMN o_id TYPE real"},
		{"a referencing uuid retyped to text", "CREATE TABLE q (id uuid PRIMARY KEY); CREATE TABLE r (q_id uuid REFERENCES q);", "ALTER TABLE r ALTER COLUMN q_id TYPE text"},
		{"a referencing date retyped to a timestamp", "CREATE TABLE q (d date PRIMARY KEY); CREATE TABLE r (d date REFERENCES q);", "ALTER TABLE r ALTER COLUMN d TYPE timestamp(3) with time zone"},
		{"a referencing text retyped to char", "CREATE TABLE q (code text PRIMARY KEY); CREATE TABLE r (code text REFERENCES q);", "ALTER TABLE r ALTER COLUMN code TYPE char(3)"},
		{"a self-referencing key retyped", "CREATE TABLE t (id int PRIMARY KEY, parent int REFERENCES t(id));", "ALTER TABLE t ALTER COLUMN id TYPE text"},
		{"a self-referencing key and its column retyped together", "CREATE TABLE t (id int PRIMARY KEY, parent int REFERENCES t(id));", "ALTER TABLE t ALTER COLUMN id TYPE text, ALTER COLUMN parent TYPE text"},
		{"a key of an enum retyped", "CREATE TYPE mood AS ENUM ('a'); CREATE TABLE q (m mood PRIMARY KEY); CREATE TABLE r (m mood REFERENCES q);", "ALTER TABLE r ALTER COLUMN m TYPE text"},
		{"a self-referenced key whose column it is dropped", "CREATE TABLE t (id int PRIMARY KEY REFERENCES t(id), k int);", "ALTER TABLE t DROP COLUMN id"},
		{"a self-referencing column dropped", "CREATE TABLE t (id int PRIMARY KEY, parent int REFERENCES t(id));", "ALTER TABLE t DROP COLUMN parent"},
		{"an indexed column dropped", "CREATE INDEX o_cx ON o (c, x);", "ALTER TABLE o DROP COLUMN c"},
		{"a column of a unique constraint dropped", "CREATE TABLE q (a int, b int, UNIQUE (a, b));", "ALTER TABLE q DROP COLUMN a"},
		{"a column named as the renamed one was", "CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o RENAME COLUMN c TO d; ALTER TABLE o ADD COLUMN c int; ALTER TABLE o DROP COLUMN c"},
		// A view holds its relations, not their names: it follows a
		// rename or a move, and a new table under the old name is not
		// what it reads.
		{"a renamed table's column dropped", "CREATE VIEW v AS SELECT o.c FROM o;", "ALTER TABLE o RENAME TO o2; ALTER TABLE o2 DROP COLUMN c"},
		{"a moved table's column dropped", "CREATE SCHEMA s; CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o SET SCHEMA s; ALTER TABLE s.o DROP COLUMN c"},
		{"a renamed table's column dropped with CASCADE", "CREATE VIEW v AS SELECT o.c, u.name FROM o JOIN u ON u.id = o.id;", "ALTER TABLE o RENAME TO o2; ALTER TABLE o2 DROP COLUMN c CASCADE"},
		{"a new table under a renamed one's name", "CREATE VIEW v AS SELECT c FROM o;", "ALTER TABLE o RENAME TO o2; CREATE TABLE o (c int); ALTER TABLE o DROP COLUMN c"},
		{"a renamed view's column over a renamed table", "CREATE VIEW v AS SELECT o.c FROM o; CREATE VIEW w AS SELECT v.c FROM v;", "ALTER VIEW v RENAME TO v2; ALTER TABLE o RENAME TO o2; ALTER TABLE o2 DROP COLUMN c CASCADE"},
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
				want := ErrDependent
				if strings.Contains(pgErr.Error(), "cannot be implemented") {
					want = ErrInvalid // a key whose types no longer compare
				}
				if !errors.Is(ourErr, want) {
					t.Errorf("the catalog refuses as %v, want %v", ourErr, want)
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

// TestPostgresSequenceRenames renames and moves sequences that column
// defaults call, in PostgreSQL 15 and in the catalog, and wants the same
// defaults.
func TestPostgresSequenceRenames(t *testing.T) {
	p := testenv.StartPostgres(t)
	tests := []struct{ name, sql string }{
		{"ALTER SEQUENCE RENAME", "CREATE TABLE a (id serial PRIMARY KEY); ALTER SEQUENCE a_id_seq RENAME TO b_id_seq;"},
		{"qualified", "CREATE TABLE a (id serial PRIMARY KEY); ALTER SEQUENCE public.a_id_seq RENAME TO b_id_seq;"},
		{"ALTER TABLE RENAME of a sequence", "CREATE TABLE a (id serial PRIMARY KEY); ALTER TABLE a_id_seq RENAME TO c_id_seq;"},
		{"a table renamed, then its sequence", "CREATE TABLE lsif_dumps (id serial PRIMARY KEY); ALTER TABLE lsif_dumps RENAME TO scip_uploads; ALTER SEQUENCE lsif_dumps_id_seq RENAME TO scip_uploads_id_seq;"},
		{"SET SCHEMA", "CREATE SCHEMA s; CREATE SEQUENCE q; CREATE TABLE a (id int DEFAULT nextval('q')); ALTER SEQUENCE q SET SCHEMA s;"},
		{"SET SCHEMA and back", "CREATE SCHEMA s; CREATE SEQUENCE q; CREATE TABLE a (id int DEFAULT nextval('q')); ALTER SEQUENCE q SET SCHEMA s; ALTER SEQUENCE s.q RENAME TO r; ALTER SEQUENCE s.r SET SCHEMA public;"},
		{"a sequence of its own", "CREATE SEQUENCE q; CREATE TABLE a (id int DEFAULT nextval('q')); ALTER SEQUENCE q RENAME TO q2;"},
		{"IF EXISTS", "CREATE TABLE a (id serial PRIMARY KEY); ALTER SEQUENCE IF EXISTS a_id_seq RENAME TO d_id_seq;"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := fmt.Sprintf("seqs%d", i)
			p.CreateDB(t, db)
			if _, err := p.Query(db, tt.sql); err != nil {
				t.Fatal(err)
			}
			c, err := New(db).Apply("0001.sql", tt.sql, Tolerant())
			if err != nil {
				t.Fatal(err)
			}
			cols, keys := describe(p, t, db)
			if d := diffCatalog(cols, keys, c); len(d) > 0 {
				t.Errorf("the catalog differs from PostgreSQL:\n%s", strings.Join(d, "\n"))
			}
		})
	}
}
