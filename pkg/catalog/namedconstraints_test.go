package catalog

import (
	"slices"
	"testing"
)

// The names pg_constraint lists that no table holds are kept, from each
// statement that makes one, and survive the catalog's encoding.
func TestConstraintNamesHeld(t *testing.T) {
	const trig = "CREATE FUNCTION noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;\n"
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"a constraint trigger", trig + "CREATE CONSTRAINT TRIGGER b_audit AFTER INSERT ON b FOR EACH ROW EXECUTE FUNCTION noop();", []string{"b_audit"}},
		{"a plain trigger is no constraint", trig + "CREATE TRIGGER b_touch BEFORE UPDATE ON b FOR EACH ROW EXECUTE FUNCTION noop();", nil},
		{"a domain's named check", "CREATE DOMAIN pos AS integer CONSTRAINT pos_positive CHECK (VALUE > 0);", []string{"pos_positive"}},
		{"a domain's unnamed check, as PostgreSQL names it", "CREATE DOMAIN pos AS integer CHECK (VALUE > 0);", []string{"pos_check", "pos_check1", "pos_check9"}},
		{"a check added and a NOT NULL set", "CREATE DOMAIN pos AS integer;\nALTER DOMAIN pos ADD CONSTRAINT pos_small CHECK (VALUE < 10);\nALTER DOMAIN pos SET NOT NULL;", []string{"pos_not_null", "pos_small"}},
		{"renames keep both names", trig + "CREATE CONSTRAINT TRIGGER b_audit AFTER INSERT ON b FOR EACH ROW EXECUTE FUNCTION noop();\nALTER TRIGGER b_audit ON b RENAME TO b_audit2;\n" +
			"CREATE DOMAIN pos AS integer CONSTRAINT pos_positive CHECK (VALUE > 0);\nALTER DOMAIN pos RENAME CONSTRAINT pos_positive TO pos_gt_zero;", []string{"b_audit", "b_audit2", "pos_gt_zero", "pos_positive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", plBase+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !slices.Contains(c.otherConstraints, w) {
					t.Errorf("%q not held: %v", w, c.otherConstraints)
				}
			}
			if tc.want == nil && len(c.otherConstraints) > 0 {
				t.Errorf("held %v, want none", c.otherConstraints)
			}
			back, _ := throughJSON(t, c)
			if !slices.Equal(back.otherConstraints, c.otherConstraints) {
				t.Errorf("decoded %v, encoded %v", back.otherConstraints, c.otherConstraints)
			}
			// The next version is built on a clone: the names go with it,
			// and what it adds is its own.
			next, err := back.Apply("0002.sql", "CREATE DOMAIN later AS text CONSTRAINT later_named CHECK (VALUE <> '');")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(next.otherConstraints, "later_named") || slices.Contains(back.otherConstraints, "later_named") {
				t.Errorf("the next version holds %v and its base %v", next.otherConstraints, back.otherConstraints)
			}
		})
	}
}
