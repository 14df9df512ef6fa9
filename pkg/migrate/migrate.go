// Package migrate finds migration files on disk and puts them in the order
// a migration tool would apply them. It understands the common layouts:
//
//   - numbered files: 0001_init.sql, 2_add_orders.sql
//   - Flyway: V1__init.sql, V1_1__fix.sql, V2.3__more.sql (undo U… and
//     repeatable R__… files are not part of the history)
//   - golang-migrate and dbmate-style: 20240101120000_init.up.sql (…down.sql
//     is skipped)
//   - directories holding up.sql: Diesel's 2019-02-26-002946_create_user/up.sql
//
// Order is by version, compared number by number, then by name.
package migrate

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// File is one migration to apply.
type File struct {
	Path string // as found on disk
	// Name is the path relative to the directory it was found under, or
	// the path as given for a file named explicitly: what errors cite.
	Name    string
	Version []int // the numbers of the version, for ordering
}

// ID is the migration's identity, as its tool knows it: the version's
// numbers joined by dots ("20240101120000", "1.1", "2019.2.26.2946"), or
// the name for a file without a version. It does not change when the
// history is published from another directory.
func (f File) ID() string {
	if len(f.Version) == 0 {
		return filepath.ToSlash(f.Name)
	}
	parts := make([]string, len(f.Version))
	for i, n := range f.Version {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ".")
}

var (
	flywayRe  = regexp.MustCompile(`^V([0-9][0-9._]*)__.*\.sql$`)
	numberRe  = regexp.MustCompile(`^([0-9][0-9_.-]*)[_-].*\.sql$|^([0-9]+)\.sql$`)
	dieselDir = regexp.MustCompile(`^([0-9][0-9_.-]*)[_-]?.*$`)
	digitsRe  = regexp.MustCompile(`[0-9]+`)
)

// Discover lists the migrations under each path, in apply order. A path
// may be a file (taken as is) or a directory (searched as described in the
// package comment). Files named explicitly keep the order they are given
// in, after the migrations of any directories before them.
func Discover(paths ...string) ([]File, error) {
	var out []File
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		if !st.IsDir() {
			out = append(out, explicitFile(p))
			continue
		}
		found, err := discoverDir(p)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func discoverDir(root string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		switch {
		case name == "up.sql":
			dir := filepath.Base(filepath.Dir(path))
			if path == filepath.Join(root, "up.sql") || !dieselDir.MatchString(dir) {
				return nil
			}
			files = append(files, File{Path: path, Name: rel, Version: versionOf(dir)})
		case strings.HasSuffix(name, ".down.sql"), name == "down.sql", !strings.HasSuffix(name, ".sql"):
		case flywayRe.MatchString(name):
			files = append(files, File{Path: path, Name: rel, Version: numbers(flywayRe.FindStringSubmatch(name)[1])})
		case strings.HasPrefix(name, "U") || strings.HasPrefix(name, "R__"):
			// Flyway undo and repeatable migrations are not history.
		case numberRe.MatchString(name):
			files = append(files, File{Path: path, Name: rel, Version: versionOf(name)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrations in %s: %w", root, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("migrations in %s: no migration files found (expected 0001_name.sql, V1__name.sql, 20240101120000_name.up.sql or <version>_name/up.sql)", root)
	}
	slices.SortStableFunc(files, func(a, b File) int {
		if c := slices.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := 1; i < len(files); i++ {
		if slices.Equal(files[i].Version, files[i-1].Version) {
			return nil, fmt.Errorf("migrations in %s: %s and %s have the same version", root, files[i-1].Name, files[i].Name)
		}
	}
	return files, nil
}

// explicitFile is a file named on the command line. A Diesel or
// golang-migrate step named by its up.sql takes its directory's version.
func explicitFile(p string) File {
	name := filepath.ToSlash(filepath.Clean(p))
	base := filepath.Base(p)
	if base == "up.sql" {
		dir := filepath.Base(filepath.Dir(p))
		if dieselDir.MatchString(dir) {
			return File{Path: p, Name: name, Version: versionOf(dir)}
		}
	}
	return File{Path: p, Name: name, Version: versionOf(base)}
}

func versionOf(name string) []int {
	if m := flywayRe.FindStringSubmatch(name); m != nil {
		return numbers(m[1])
	}
	lead := name
	if i := strings.IndexFunc(name, func(r rune) bool { return !(r >= '0' && r <= '9') && r != '-' && r != '_' && r != '.' }); i >= 0 {
		lead = name[:i]
	}
	return numbers(lead)
}

// numbers splits a version into its numbers: "2019-02-26-002946" →
// [2019 2 26 2946], "1_1" → [1 1].
func numbers(s string) []int {
	var out []int
	for _, d := range digitsRe.FindAllString(s, -1) {
		n, err := strconv.Atoi(d)
		if err != nil { // more digits than an int holds: order such names last
			n = int(^uint(0) >> 1)
		}
		out = append(out, n)
	}
	return out
}
