package catalog

import (
	"slices"
	"testing"
)

// CREATE TABLE … (LIKE src INCLUDING INDEXES) builds src's primary key,
// unique keys and exclusion constraints anew under the new table's
// default names, as PostgreSQL names them; without INDEXES none come.
func TestLikeIncludingIndexes(t *testing.T) {
	const src = `CREATE TABLE ref (id int PRIMARY KEY);
CREATE TABLE src (id bigint PRIMARY KEY, a int, b int, r int REFERENCES ref, c int CHECK (c > 0), UNIQUE (a, b), CONSTRAINT src_b_named UNIQUE (b));
CREATE TABLE rooms (room int, during tsrange, EXCLUDE USING gist (room WITH =, during WITH &&));
`
	cases := []struct {
		name, sql string
		table     string
		want      []string
	}{
		{"INCLUDING ALL", "CREATE TABLE l_all (LIKE src INCLUDING ALL);", "l_all", []string{"c src_c_check", "p l_all_pkey", "u l_all_a_b_key", "u l_all_b_key"}},
		{"INCLUDING INDEXES", "CREATE TABLE l_idx (LIKE src INCLUDING INDEXES, extra int);", "l_idx", []string{"p l_idx_pkey", "u l_idx_a_b_key", "u l_idx_b_key"}},
		{"no INCLUDING", "CREATE TABLE l_none (LIKE src);", "l_none", nil},
		{"an exclusion constraint", "CREATE TABLE l_rooms (LIKE rooms INCLUDING ALL);", "l_rooms", []string{"x l_rooms_room_during_excl"}},
		{"the table's own key stays", "CREATE TABLE l_own (x int PRIMARY KEY, LIKE src INCLUDING CONSTRAINTS);", "l_own", []string{"c src_c_check", "p l_own_pkey"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", src+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			tb := c.Table(QualName{"public", tc.table})
			var got []string
			if tb.PrimaryKey != nil {
				got = append(got, "p "+tb.PrimaryKey.Name)
			}
			for _, k := range tb.Unique {
				got = append(got, "u "+k.Name)
			}
			for _, ch := range tb.Checks {
				kind := "c "
				if ch.Exclude {
					kind = "x "
				}
				got = append(got, kind+ch.Name)
			}
			if len(tb.ForeignKeys) > 0 {
				t.Errorf("foreign keys %v: LIKE never copies them", tb.ForeignKeys)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("constraints %v, want %v", got, tc.want)
			}
		})
	}
}
