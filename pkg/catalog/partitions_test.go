package catalog

import (
	"slices"
	"testing"
)

// A detached partition keeps the keys it had from its parent, its own
// now, as PostgreSQL keeps the index and constraints it built; keys the
// parent gains later do not reach it.
func TestDetachedPartitionKeepsItsKeys(t *testing.T) {
	const setup = `CREATE TABLE ref1 (id int PRIMARY KEY);
CREATE TABLE pm (id int, k int REFERENCES ref1, u int, PRIMARY KEY (id), UNIQUE (u, id)) PARTITION BY RANGE (id);
CREATE TABLE pm1 PARTITION OF pm FOR VALUES FROM (0) TO (10);
`
	const detach = "ALTER TABLE pm DETACH PARTITION pm1;\n"
	want := []string{"f pm_k_fkey", "p pm1_pkey", "u pm1_u_id_key"}
	keys := func(c *Catalog) []string {
		tb := c.Table(QualName{"public", "pm1"})
		if tb == nil {
			t.Fatal("pm1 is gone")
		}
		var out []string
		if pk := tb.PrimaryKey; pk != nil {
			out = append(out, "p "+pk.Name)
			if pk.Inherited {
				t.Errorf("%s still inherited", pk.Name)
			}
		}
		for _, k := range tb.Unique {
			out = append(out, "u "+k.Name)
		}
		for _, fk := range tb.ForeignKeys {
			out = append(out, "f "+fk.Name)
			if fk.Inherited {
				t.Errorf("%s still inherited", fk.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name    string
		scripts []string
	}{
		{"detached by a later migration", []string{setup, detach}},
		{"detached by the migration that made it", []string{setup + detach}},
		{"the parent's later key does not reach it", []string{setup, detach, "ALTER TABLE pm ADD COLUMN v int;\nALTER TABLE pm ADD UNIQUE (v, id);"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New("db")
			for i, sql := range tc.scripts {
				next, err := c.Apply("000"+string(rune('1'+i))+".sql", sql)
				if err != nil {
					t.Fatal(err)
				}
				c = next
			}
			if got := keys(c); !slices.Equal(got, want) {
				t.Errorf("keys %v, want %v", got, want)
			}
			back, _ := throughJSON(t, c)
			if got := keys(back); !slices.Equal(got, want) {
				t.Errorf("decoded keys %v, want %v", got, want)
			}
		})
	}
}

// ALTER COLUMN SET or DROP DEFAULT reaches partitions and inheritance
// children, unless ONLY keeps it to the table named.
func TestColumnDefaultsReachChildren(t *testing.T) {
	const base = `CREATE TABLE p (id int, v text) PARTITION BY LIST (id);
CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
CREATE TABLE b (id int, v text);
CREATE TABLE k () INHERITS (b);
`
	cases := []struct {
		name, sql string
		want      map[string]string // table → v's default
	}{
		{"set on a partitioned table", "ALTER TABLE p ALTER COLUMN v SET DEFAULT 'x';", map[string]string{"p": "'x'::text", "p1": "'x'::text"}},
		{"set on a parent", "ALTER TABLE b ALTER COLUMN v SET DEFAULT 'x';", map[string]string{"b": "'x'::text", "k": "'x'::text"}},
		{"ONLY", "ALTER TABLE ONLY b ALTER COLUMN v SET DEFAULT 'x';", map[string]string{"b": "'x'::text", "k": ""}},
		{"dropped", "ALTER TABLE p ALTER COLUMN v SET DEFAULT 'x';\nALTER TABLE p ALTER COLUMN v DROP DEFAULT;", map[string]string{"p": "", "p1": ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", base+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			for tb, want := range tc.want {
				if got := c.Table(QualName{"public", tb}).Column("v").Default; got != want {
					t.Errorf("%s.v default %q, want %q", tb, got, want)
				}
			}
		})
	}
}
