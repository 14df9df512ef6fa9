package catalog

import (
	"slices"
	"testing"
)

// TestRecursiveAlterFindsEveryChild runs an ALTER TABLE that recurses
// after the links it must follow were made, moved and undone, each after
// an earlier recursive ALTER had already indexed them.
func TestRecursiveAlterFindsEveryChild(t *testing.T) {
	const start = `CREATE TABLE p (id int);
CREATE TABLE c () INHERITS (p);
ALTER TABLE p ADD COLUMN indexed int;
`
	tests := []struct {
		name  string
		sql   string
		alone bool // sql is the whole script, without start
		want  []string
	}{
		{"an inheritance child", "", false, []string{"c", "p"}},
		{"a grandchild", "CREATE TABLE g () INHERITS (c);", false, []string{"c", "g", "p"}},
		{"a partition attached later", `CREATE TABLE p (id int, indexed int) PARTITION BY LIST (id);
CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
ALTER TABLE p ADD COLUMN more int;
CREATE TABLE p2 (id int, indexed int, more int);
ALTER TABLE p ATTACH PARTITION p2 FOR VALUES IN (2);`, true, []string{"p", "p1", "p2"}},
		{"a child made by INHERIT", "CREATE TABLE d (id int, indexed int);\nALTER TABLE d INHERIT p;", false, []string{"c", "d", "p"}},
		{"a child that left", "ALTER TABLE c NO INHERIT p;", false, []string{"p"}},
		{"a renamed child", "ALTER TABLE c RENAME TO c2;", false, []string{"c2", "p"}},
		{"a renamed parent", "ALTER TABLE p RENAME TO p2;\nALTER TABLE p2 RENAME TO p;", false, []string{"c", "p"}},
		{"a child dropped and its name taken", "DROP TABLE c;\nCREATE TABLE c (id int);", false, []string{"p"}},
		{"a leaving undone by an exception block", `DO $$ BEGIN
  BEGIN
    ALTER TABLE c NO INHERIT p;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;`, false, []string{"c", "p"}},
		{"a joining undone by an exception block", `CREATE TABLE d (id int, indexed int);
DO $$ BEGIN
  BEGIN
    ALTER TABLE d INHERIT p;
    ALTER TABLE p ADD COLUMN inside int;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;`, false, []string{"c", "p"}},
		{"a leaving undone after the index was made without it", `CREATE TABLE p (id int);
CREATE TABLE c () INHERITS (p);
DO $$ BEGIN
  BEGIN
    ALTER TABLE c NO INHERIT p;
    ALTER TABLE p ADD COLUMN inside int;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;`, true, []string{"c", "p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sql := start + tt.sql
			if tt.alone {
				sql = tt.sql
			}
			sql += "\nALTER TABLE p ADD COLUMN z int;"
			c, err := New("db").Apply("0001.sql", sql)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tb := range c.Tables() {
				if tb.Column("z") != nil {
					got = append(got, tb.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("z reached %v, want %v", got, tt.want)
			}
		})
	}
}
