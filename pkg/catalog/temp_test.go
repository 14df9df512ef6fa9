package catalog

import (
	"slices"
	"testing"
)

// Temporary relations live until the script ends, shadow permanent ones
// of their names meanwhile, and leave nothing behind.
func TestTemporaryRelationsEndWithTheScript(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string // columns after the script
	}{
		{"a staging table and a view over it", `CREATE TEMP TABLE stage AS SELECT id FROM a;
ALTER TABLE stage ADD COLUMN seen boolean;
CREATE VIEW stage_view AS SELECT id FROM stage;`, []string{"a.id integer", "b.id integer", "b.note text"}},
		{"a temporary table shadows a permanent one", `CREATE TEMPORARY TABLE b (x int);
ALTER TABLE b ADD COLUMN y int;
ALTER TABLE public.b ADD COLUMN z int;`, []string{"a.id integer", "b.id integer", "b.note text", "b.z integer"}},
		{"pg_temp named", `CREATE TABLE pg_temp.c (id int);
CREATE TABLE d (c_id int);`, []string{"a.id integer", "b.id integer", "b.note text", "d.c_id integer"}},
		{"made by a routine", `DO $$ BEGIN EXECUTE 'CREATE TEMP TABLE e (id int)'; EXECUTE 'ALTER TABLE e ADD COLUMN f int'; END $$;`,
			[]string{"a.id integer", "b.id integer", "b.note text"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", plBase+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			if got := columnsOf(c); !slices.Equal(got, tc.want) {
				t.Errorf("columns %v, want %v", got, tc.want)
			}
			if _, ok := c.schemas[tempSchema]; ok {
				t.Errorf("the catalog holds schema %s", tempSchema)
			}
			if len(c.Views()) > 0 {
				t.Errorf("views %v stayed", c.Views())
			}
		})
	}
}
