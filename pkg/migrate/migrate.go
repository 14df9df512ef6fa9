// Package migrate finds migration files on disk and puts them in the order
// a migration tool would apply them. It understands the common layouts:
//
//   - numbered files: 0001_init.sql, 2_add_orders.sql
//   - Flyway: V1__init.sql, V1_1__fix.sql, V2.3__more.sql; repeatable
//     R__views.sql, applied after the versioned ones in name order and
//     again whenever their content changes; undo U2__undo.sql, not
//     applied (schemaq follows the forward history) and named in Skipped
//   - golang-migrate: 20240101120000_init.up.sql (…down.sql is not
//     applied, and counted in Skipped)
//   - dbmate and goose: 20240101120000_init.sql with `-- migrate:up` /
//     `-- migrate:down` or `-- +goose Up` / `-- +goose Down` sections;
//     only the up section is applied (UpSection)
//   - directories holding up.sql: Diesel's 2019-02-26-002946_create_user/up.sql
//
// Order is by version, compared number by number, then by name;
// repeatable migrations follow, by name.
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
	// Repeatable is a Flyway R__ migration: it has no version, runs after
	// the versioned ones, and runs again whenever its content changes.
	Repeatable bool
	// Root is the directory the file was found under (its own for one
	// named explicitly): a symlink is read only if it stays inside.
	Root string
}

// ID is the migration's identity, as its tool knows it: the version's
// numbers joined by dots ("20240101120000", "1.1", "2019.2.26.2946"), or
// the name for a file without a version. It does not change when the
// history is published from another directory.
func (f File) ID() string {
	if f.Repeatable {
		return filepath.Base(f.Name)
	}
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
	flywayRe     = regexp.MustCompile(`^V([0-9][0-9._]*)__.*\.sql$`)
	flywayUndoRe = regexp.MustCompile(`^U([0-9][0-9._]*)__.*\.sql$`)
	numberRe     = regexp.MustCompile(`^([0-9][0-9_.-]*)[_-].*\.sql$|^([0-9]+)\.sql$`)
	dieselDir    = regexp.MustCompile(`^([0-9][0-9_.-]*)[_-]?.*$`)
	digitsRe     = regexp.MustCompile(`[0-9]+`)
)

// Discover lists the migrations under each path, in apply order. A path
// may be a file (taken as is) or a directory (searched as described in the
// package comment). Files named explicitly keep the order they are given
// in, after the migrations of any directories before them.
func Discover(paths ...string) ([]File, error) {
	found, err := DiscoverAll(paths...)
	if err != nil {
		return nil, err
	}
	return found.Files, nil
}

// Found is what DiscoverAll found.
type Found struct {
	Files []File
	// Skipped are files under the directories that are not applied, with
	// why: Flyway undo migrations, down migrations (counted), SQL files
	// whose names carry no version, Rails' Ruby migrations.
	Skipped []string
}

// DiscoverAll is Discover that also says which migration files it left
// out, so that a caller can name them instead of passing over them.
func DiscoverAll(paths ...string) (Found, error) {
	var out Found
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return Found{}, fmt.Errorf("migrations: %w", err)
		}
		if !st.IsDir() {
			out.Files = append(out.Files, explicitFile(p))
			continue
		}
		files, skipped, err := discoverDir(p)
		if err != nil {
			return Found{}, err
		}
		out.Files = append(out.Files, files...)
		out.Skipped = append(out.Skipped, skipped...)
	}
	return out, nil
}

// maxWalked bounds the files and directories one migrations directory
// may hold: a history of thousands of files is far below it, and a path
// given by mistake (a home directory, /) is refused with its name rather
// than walked to the end.
const maxWalked = 200_000

func discoverDir(root string) ([]File, []string, error) {
	return scanDir(root, maxWalked)
}

func scanDir(root string, limit int) ([]File, []string, error) {
	d := &dirScan{root: root, limit: limit}
	if err := filepath.WalkDir(root, d.visit); err != nil {
		return nil, nil, fmt.Errorf("migrations in %s: %w", strconv.Quote(root), err)
	}
	return d.result()
}

// dirScan is one walk of a migrations directory: the versioned and
// repeatable files it found, and what it passed over and why.
type dirScan struct {
	root              string
	limit, walked     int
	files, repeatable []File
	skipped           []string
	downs, ruby       int
}

func (d *dirScan) visit(path string, e fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if d.walked++; d.walked > d.limit {
		return fmt.Errorf("more than %d files and directories: name the directory that holds the migrations, or the files", d.limit)
	}
	if e.IsDir() {
		if path != d.root && strings.HasPrefix(e.Name(), ".") {
			return filepath.SkipDir
		}
		return nil
	}
	rel, _ := filepath.Rel(d.root, path)
	name := e.Name()
	switch {
	case name == "up.sql":
		dir := filepath.Base(filepath.Dir(path))
		if path == filepath.Join(d.root, "up.sql") || !dieselDir.MatchString(dir) {
			d.skipped = append(d.skipped, strconv.Quote(rel)+": an up.sql outside a directory named <version>_name, so it has no version")
			return nil
		}
		d.files = append(d.files, File{Path: path, Name: rel, Version: versionOf(dir)})
	case strings.HasSuffix(name, ".down.sql"), name == "down.sql":
		d.downs++
	case strings.HasSuffix(name, ".rb") && numberRe.MatchString(strings.TrimSuffix(name, ".rb")+".sql"):
		d.ruby++
	case !strings.HasSuffix(name, ".sql"):
	case flywayRe.MatchString(name):
		d.files = append(d.files, File{Path: path, Name: rel, Version: numbers(flywayRe.FindStringSubmatch(name)[1])})
	case strings.HasPrefix(name, "R__"):
		d.repeatable = append(d.repeatable, File{Path: path, Name: rel, Repeatable: true})
	case flywayUndoRe.MatchString(name):
		d.skipped = append(d.skipped, strconv.Quote(rel)+": a Flyway undo migration, not applied (schemaq follows the forward history)")
	case numberRe.MatchString(name):
		d.files = append(d.files, File{Path: path, Name: rel, Version: versionOf(name)})
	default:
		d.skipped = append(d.skipped, strconv.Quote(rel)+": its name carries no version (0001_name.sql, V1__name.sql, 20240101120000_name.up.sql), so its place in the history is unknown; name it on the command line to apply it")
	}
	return nil
}

// result orders what the walk found: the versioned files by version
// (two of one version are an error), then the repeatable ones by name,
// as Flyway applies them.
func (d *dirScan) result() ([]File, []string, error) {
	for i := range d.files {
		d.files[i].Root = d.root
	}
	for i := range d.repeatable {
		d.repeatable[i].Root = d.root
	}
	skipped := d.skipped
	if d.downs > 0 {
		skipped = append(skipped, fmt.Sprintf("%d down migration(s) (…down.sql): not applied, as schemaq follows the forward history", d.downs))
	}
	if d.ruby > 0 {
		skipped = append(skipped, fmt.Sprintf("%d Rails migration(s) (….rb): Ruby, which schemaq does not run; publish db/structure.sql as a snapshot (schemaq publish snapshot) instead", d.ruby))
	}
	if len(d.files)+len(d.repeatable) == 0 {
		hint := ""
		if d.ruby > 0 {
			hint = "; these are Rails migrations in Ruby: publish db/structure.sql with `schemaq publish snapshot` instead"
		}
		return nil, nil, fmt.Errorf("migrations in %s: no migration files found (expected 0001_name.sql, V1__name.sql, R__name.sql, 20240101120000_name.up.sql or <version>_name/up.sql)%s", d.root, hint)
	}
	files := d.files
	slices.SortStableFunc(files, func(a, b File) int {
		if c := slices.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for i := 1; i < len(files); i++ {
		if slices.Equal(files[i].Version, files[i-1].Version) {
			return nil, nil, fmt.Errorf("migrations in %s: %s and %s have the same version", strconv.Quote(d.root), strconv.Quote(files[i-1].Name), strconv.Quote(files[i].Name))
		}
	}
	slices.SortFunc(d.repeatable, func(a, b File) int { return strings.Compare(filepath.Base(a.Name), filepath.Base(b.Name)) })
	return append(files, d.repeatable...), skipped, nil
}

// explicitFile is a file named on the command line. A Diesel or
// golang-migrate step named by its up.sql takes its directory's version.
func explicitFile(p string) File {
	f := explicitVersion(p)
	f.Root = filepath.Dir(p)
	return f
}

func explicitVersion(p string) File {
	name := filepath.ToSlash(filepath.Clean(p))
	base := filepath.Base(p)
	if strings.HasPrefix(base, "R__") {
		return File{Path: p, Name: name, Repeatable: true}
	}
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
