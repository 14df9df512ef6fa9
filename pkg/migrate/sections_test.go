package migrate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestUpSection(t *testing.T) {
	cases := []struct {
		name, sql, tool string
		keep, drop      []string
	}{
		{"dbmate", "-- migrate:up\nCREATE TABLE t (id int);\n\n-- migrate:down\nDROP TABLE t;\n", "dbmate",
			[]string{"CREATE TABLE t"}, []string{"DROP TABLE"}},
		{"dbmate without a transaction, down first", "-- migrate:down\nDROP TABLE t;\n-- migrate:up transaction:false\nCREATE INDEX CONCURRENTLY i ON t (id);\n", "dbmate",
			[]string{"CREATE INDEX CONCURRENTLY"}, []string{"DROP TABLE"}},
		{"goose with statement blocks", "-- +goose Up\n-- +goose StatementBegin\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n-- +goose StatementEnd\nCREATE TABLE t (id int);\n-- +goose Down\nDROP TABLE t;\nDROP FUNCTION f();\n", "goose",
			[]string{"CREATE FUNCTION", "CREATE TABLE t"}, []string{"DROP TABLE", "DROP FUNCTION"}},
		{"goose in lower case", "-- +goose up\nCREATE TABLE t (id int);\n-- +goose down\nDROP TABLE t;\n", "goose",
			[]string{"CREATE TABLE"}, []string{"DROP TABLE"}},
		{"a plain file", "CREATE TABLE t (id int);\n-- a comment saying migrate:down somewhere\n", "",
			[]string{"CREATE TABLE", "migrate:down"}, nil},
		{"text before the first mark is no section", "DROP TABLE everything;\n-- migrate:up\nCREATE TABLE t ();\n", "dbmate",
			[]string{"CREATE TABLE"}, []string{"DROP TABLE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, tool := UpSection(tc.sql)
			if tool != tc.tool || len(up) != len(tc.sql) || strings.Count(up, "\n") != strings.Count(tc.sql, "\n") {
				t.Fatalf("tool %q (want %q); offsets and lines must stay: %q", tool, tc.tool, up)
			}
			for _, k := range tc.keep {
				if !strings.Contains(up, k) {
					t.Errorf("lost %q: %q", k, up)
				}
			}
			for _, d := range tc.drop {
				if strings.Contains(up, d) {
					t.Errorf("kept %q: %q", d, up)
				}
			}
		})
	}
}

// TestReadAppliesOnlyTheUpSection: a dbmate directory reads as its up
// sections, named and numbered as the tool would.
func TestReadAppliesOnlyTheUpSection(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"20240101000000_users.sql":  "-- migrate:up\nCREATE TABLE users (id int);\n-- migrate:down\nDROP TABLE users;\n",
		"20240102000000_orders.sql": "-- migrate:up\nCREATE TABLE orders (id int, user_id int);\n-- migrate:down\nDROP TABLE orders;\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := Read(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].ID() != "20240101000000" || strings.Contains(steps[0].SQL, "DROP") || strings.Contains(steps[1].SQL, "DROP") {
		t.Errorf("steps %+v", steps)
	}
}

// TestDiscoverNamesWhatItLeavesOut: nothing under a migrations directory
// is passed over without a word.
func TestDiscoverNamesWhatItLeavesOut(t *testing.T) {
	root := t.TempDir()
	write(t, root, "0001_a.up.sql", "0001_a.down.sql", "0002_b.up.sql", "0002_b.down.sql", "seed.sql", "misc/up.sql", "README.md")
	found, err := DiscoverAll(root)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(found.Skipped, "\n")
	for _, want := range []string{
		"2 down migration(s) (…down.sql): not applied",
		`"seed.sql": its name carries no version`,
		strconv.Quote(filepath.Join("misc", "up.sql")) + ": an up.sql outside a directory named <version>_name",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("skipped %q\nwant %q", found.Skipped, want)
		}
	}
	if strings.Contains(got, "README.md") || len(found.Files) != 2 {
		t.Errorf("files %+v, skipped %q", found.Files, found.Skipped)
	}

	rails := t.TempDir()
	write(t, rails, "20240101000000_create_users.rb", "20240102000000_add_email.rb")
	if _, err := DiscoverAll(rails); err == nil || !strings.Contains(err.Error(), "Rails migrations in Ruby: publish db/structure.sql with `schemaq publish snapshot` instead") {
		t.Errorf("a Rails db/migrate: %v", err)
	}
}
