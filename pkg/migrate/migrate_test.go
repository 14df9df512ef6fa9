package migrate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

func write(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("SELECT 1;"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiscover(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"numbered", []string{"10_c.sql", "2_b.sql", "0001_a.sql", "README.md"}, []string{"0001_a.sql", "2_b.sql", "10_c.sql"}},
		// Repeatable migrations after the versioned ones, by name; undo
		// migrations are not applied (TestFlywayUndoIsNamed).
		{"flyway", []string{"V2__b.sql", "V1_1__a2.sql", "R__views.sql", "V1__a.sql", "V10__c.sql", "U2__undo.sql", "R__functions.sql"},
			[]string{"V1__a.sql", "V1_1__a2.sql", "V2__b.sql", "V10__c.sql", "R__functions.sql", "R__views.sql"}},
		{"golang-migrate", []string{"20240102000000_b.up.sql", "20240102000000_b.down.sql", "20240101120000_a.up.sql"}, []string{"20240101120000_a.up.sql", "20240102000000_b.up.sql"}},
		{"diesel", []string{"2019-02-27-170003_b/up.sql", "2019-02-27-170003_b/down.sql", "00000000000000_setup/up.sql", "2019-02-26-002946_a/up.sql"},
			[]string{"00000000000000_setup/up.sql", "2019-02-26-002946_a/up.sql", "2019-02-27-170003_b/up.sql"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, tc.files...)
			got, err := Discover(root)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range got {
				names = append(names, filepath.ToSlash(f.Name))
			}
			if strings.Join(names, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %v, want %v", names, tc.want)
			}
		})
	}
}

// Files named one by one (a shell glob over Diesel steps, say) keep the
// path they were given, so errors name the step and not a bare up.sql,
// and take their version, hence their identity, from it.
func TestExplicitFilesAndIDs(t *testing.T) {
	root := t.TempDir()
	write(t, root, "2023-01-01-000000_add_x/up.sql", "V1_1__fix.sql", "20240101120000_a.up.sql", "setup.sql")
	got, err := Discover(filepath.Join(root, "2023-01-01-000000_add_x", "up.sql"), filepath.Join(root, "V1_1__fix.sql"),
		filepath.Join(root, "20240101120000_a.up.sql"), filepath.Join(root, "setup.sql"))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ suffix, id string }{
		{"/2023-01-01-000000_add_x/up.sql", "2023.1.1.0"},
		{"/V1_1__fix.sql", "1.1"},
		{"/20240101120000_a.up.sql", "20240101120000"},
		{"/setup.sql", filepath.ToSlash(filepath.Join(root, "setup.sql"))},
	}
	for i, f := range got {
		if !strings.HasSuffix(f.Name, want[i].suffix) || f.ID() != want[i].id {
			t.Errorf("file %d: name %q id %q, want …%s and %q", i, f.Name, f.ID(), want[i].suffix, want[i].id)
		}
	}
	dir, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range dir {
		found = found || f.Name == filepath.FromSlash("2023-01-01-000000_add_x/up.sql") && f.ID() == "2023.1.1.0"
	}
	if !found {
		t.Errorf("in a directory, the Diesel step lost its name or id: %+v", dir)
	}
}

func TestDiscoverErrors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "notes.txt")
	if _, err := Discover(root); err == nil || !strings.Contains(err.Error(), "no migration files") {
		t.Errorf("empty dir: %v", err)
	}
	write(t, root, "1_a.sql", "01_b.sql")
	if _, err := Discover(root); err == nil || !strings.Contains(err.Error(), "same version") {
		t.Errorf("clash: %v", err)
	}
	if _, err := Discover(filepath.Join(root, "missing")); err == nil {
		t.Error("missing path: want error")
	}
	// A path given by mistake (a home directory, /) is not walked to the
	// end: past the bound the walk stops and names it.
	big := t.TempDir()
	for i := range 12 {
		write(t, big, filepath.Join("sub", strconv.Itoa(i)+"_m.sql"))
	}
	if _, _, err := scanDir(big, 10); err == nil || !strings.Contains(err.Error(), "more than 10 files and directories") || !strings.Contains(err.Error(), big) {
		t.Errorf("past the bound: %v", err)
	}
	if files, _, err := scanDir(big, 20); err != nil || len(files) != 12 {
		t.Errorf("within the bound: %d files, %v", len(files), err)
	}
}

// TestDiscoverLemmy checks the order against Lemmy's own ORDER.txt.
func TestDiscoverLemmy(t *testing.T) {
	dir := testenv.SharedPath(t, "corpus", "lemmy", "migrations")
	order := strings.Fields(testenv.ReadShared(t, "corpus", "lemmy", "ORDER.txt"))
	got, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(order) {
		t.Fatalf("found %d migrations, ORDER.txt has %d", len(got), len(order))
	}
	for i, f := range got {
		if want := strings.TrimPrefix(order[i], "migrations/"); filepath.ToSlash(f.Name) != want {
			t.Fatalf("migration %d: got %s, want %s", i+1, f.Name, want)
		}
	}
}

// A Flyway undo migration is not applied, and is named, not passed over.
func TestFlywayUndoIsNamed(t *testing.T) {
	root := t.TempDir()
	write(t, root, "V1__a.sql", "U1__undo_a.sql", "R__v.sql")
	found, err := DiscoverAll(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Files) != 2 || !found.Files[1].Repeatable || found.Files[1].ID() != "R__v.sql" {
		t.Errorf("files %+v", found.Files)
	}
	if len(found.Skipped) != 1 || !strings.Contains(found.Skipped[0], "U1__undo_a.sql") || !strings.Contains(found.Skipped[0], "undo") {
		t.Errorf("skipped %q", found.Skipped)
	}
}
