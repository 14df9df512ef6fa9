package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
)

func step(version int, name, sql string) Step {
	return Step{File: File{Name: name, Version: []int{version}}, SQL: sql, Checksum: events.Checksum(sql)}
}

// applied builds a catalog whose history holds steps at seqs 1…n.
func applied(steps ...Step) *catalog.Catalog {
	c := catalog.New("app")
	for i, s := range steps {
		c = c.Clone().Record(catalog.Applied{Seq: int64(i + 1), ID: s.ID(), Source: s.Name, Checksum: s.Checksum})
	}
	return c
}

func TestMakePlan(t *testing.T) {
	a, b, c, d := step(1, "1_a.sql", "CREATE TABLE a ();"), step(2, "2_b.sql", "CREATE TABLE b ();"),
		step(3, "3_c.sql", "CREATE TABLE c ();"), step(4, "4_d.sql", "CREATE TABLE d ();")
	bChanged := step(2, "2_b.sql", "CREATE TABLE b (x int);")
	snap := catalog.New("app").Rebase(catalog.Base{Seq: 7, Source: "dump.sql"})
	legacy := catalog.New("app")
	legacy.Version = 4
	tests := []struct {
		name     string
		steps    []Step
		cat      *catalog.Catalog
		opts     PlanOptions
		pending  []string
		from     int64
		warnings []string
		err      string
	}{
		{"fresh database", []Step{a, b, c}, catalog.New("app"), PlanOptions{}, []string{"1_a.sql", "2_b.sql", "3_c.sql"}, 1, nil, ""},
		{"all applied", []Step{a, b}, applied(a, b), PlanOptions{}, nil, 3, nil, ""},
		{"new at the end", []Step{a, b, c, d}, applied(a, b), PlanOptions{}, []string{"3_c.sql", "4_d.sql"}, 3, nil, ""},
		{"back-dated file is applied next, with a warning", []Step{a, b, c, d}, applied(a, c, d), PlanOptions{}, []string{"2_b.sql"}, 4,
			[]string{"2_b.sql sorts before 4_d.sql"}, ""},
		{"changed applied file is refused", []Step{a, bChanged, c}, applied(a, b), PlanOptions{}, nil, 0, nil, "2_b.sql was applied as seq 2"},
		{"changed applied file, accepted", []Step{a, bChanged, c}, applied(a, b), PlanOptions{AcceptChanged: true}, []string{"3_c.sql"}, 3,
			[]string{"kept as applied (--accept-changed)"}, ""},
		{"empty migration is a step like any other", []Step{a, step(2, "2_empty.sql", "")}, applied(a), PlanOptions{}, []string{"2_empty.sql"}, 2, nil, ""},
		{"snapshot without history needs a baseline", []Step{a, b, c}, snap, PlanOptions{}, nil, 0, nil, "built from the snapshot dump.sql"},
		{"snapshot with a baseline", []Step{a, b, c, d}, snap, PlanOptions{Baseline: "2"}, []string{"3_c.sql", "4_d.sql"}, 8, nil, ""},
		{"baseline by name", []Step{a, b, c, d}, snap, PlanOptions{Baseline: "3_c.sql"}, []string{"4_d.sql"}, 8, nil, ""},
		{"unknown baseline", []Step{a, b}, snap, PlanOptions{Baseline: "9"}, nil, 0, nil, "--baseline 9: no such migration"},
		{"after a snapshot, steps before the first recorded one are its base", []Step{a, b, c, d},
			snap.Clone().Record(catalog.Applied{Seq: 8, ID: c.ID(), Source: c.Name, Checksum: c.Checksum}), PlanOptions{}, []string{"4_d.sql"}, 9, nil, ""},
		{"legacy catalog without history", []Step{a, b}, legacy, PlanOptions{}, nil, 0, nil, "records no applied migrations"},
		{"positional numbering", []Step{a, b, c, d}, legacy, PlanOptions{Positional: 3}, []string{"3_c.sql", "4_d.sql"}, 3, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := MakePlan(tc.steps, tc.cat.Lineage(), tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range p.Pending {
				names = append(names, s.Name)
			}
			if strings.Join(names, " ") != strings.Join(tc.pending, " ") || p.From != tc.from {
				t.Errorf("pending %v from %d, want %v from %d", names, p.From, tc.pending, tc.from)
			}
			if len(p.Warnings) != len(tc.warnings) {
				t.Fatalf("warnings %q, want %d", p.Warnings, len(tc.warnings))
			}
			for i, w := range tc.warnings {
				if !strings.Contains(p.Warnings[i], w) {
					t.Errorf("warning %q should mention %q", p.Warnings[i], w)
				}
			}
		})
	}
	if _, err := MakePlan([]Step{a, bChanged}, applied(a, b).Lineage(), PlanOptions{}); !errors.Is(err, ErrChanged) {
		t.Errorf("a changed migration should match ErrChanged: %v", err)
	}
	// The history comes from a daemon's reply: one that names a base but
	// no version and no history (no daemon sends one) plans every step,
	// where it once indexed an empty history.
	odd := &events.CatalogHistory{Database: "app", Base: &events.SnapshotBase{Seq: 3, Source: "dump.sql"}}
	if p, err := MakePlan([]Step{a, b}, odd, PlanOptions{}); err != nil || len(p.Pending) != 2 {
		t.Errorf("a base without a version or history: %+v %v", p, err)
	}
}

func TestReadRefusesBinary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "3_blob.sql")
	if err := os.WriteFile(p, []byte("CREATE TABLE t ();\n\x89PNG\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read([]File{{Path: p, Name: "3_blob.sql"}})
	if err == nil || !strings.Contains(err.Error(), `migration "3_blob.sql": not UTF-8 text (invalid byte at offset 19)`) {
		t.Errorf("got %v", err)
	}
}

// A repeatable migration is applied after the versioned ones, and again
// whenever its content changes; an unchanged one is not published again,
// and a changed one is no error, as a changed versioned one is.
func TestRepeatableMigrations(t *testing.T) {
	v1 := Step{File: File{Name: "V1__t.sql", Version: []int{1}}, Checksum: "c1"}
	r := Step{File: File{Name: "R__view.sql", Repeatable: true}, Checksum: "r1"}
	rChanged := Step{File: r.File, Checksum: "r2"}
	v2 := Step{File: File{Name: "V2__u.sql", Version: []int{2}}, Checksum: "c2"}
	cat := applied(v1, r).Lineage()
	for _, tc := range []struct {
		name    string
		steps   []Step
		pending []string
	}{
		{"unchanged", []Step{v1, r}, nil},
		{"changed", []Step{v1, rChanged}, []string{"R__view.sql"}},
		// Not back-dated: it was applied after V1 and runs after V2.
		{"a new versioned one", []Step{v1, v2, r}, []string{"V2__u.sql"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := MakePlan(tc.steps, cat, PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.Pending {
				got = append(got, s.Name)
			}
			if strings.Join(got, " ") != strings.Join(tc.pending, " ") || len(p.Warnings) != 0 {
				t.Errorf("pending %v (warnings %q), want %v", got, p.Warnings, tc.pending)
			}
		})
	}
}
