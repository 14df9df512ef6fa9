package migrate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/safefile"
)

// Step is a migration file read for publishing.
type Step struct {
	File
	SQL      string
	Checksum string // events.Checksum of SQL
}

// Read reads each file. A file that is not UTF-8 text (a binary committed
// by mistake, a file in another encoding) is refused here, naming it,
// rather than reaching the parser as garbage.
func Read(files []File) ([]Step, error) {
	out := make([]Step, 0, len(files))
	for _, f := range files {
		root := f.Root
		if root == "" {
			root = filepath.Dir(f.Path)
		}
		b, err := safefile.Read(root, f.Path, events.MaxSQLBytes)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", strconv.Quote(f.Name), err)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("migration %s: not UTF-8 text (invalid byte at offset %d)", strconv.Quote(f.Name), events.InvalidUTF8Offset(b))
		}
		// dbmate and goose keep the down steps in the file: only the up
		// section is the migration (its checksum too, so an edit of the
		// down steps alone changes nothing applied).
		sql, _ := UpSection(string(b))
		out = append(out, Step{File: f, SQL: sql, Checksum: events.Checksum(sql)})
	}
	return out, nil
}

// PlanOptions change how a plan treats the catalog's history.
type PlanOptions struct {
	// AcceptChanged keeps going past applied migrations whose content
	// changed: they are not applied again, and the catalog keeps what
	// their first content did.
	AcceptChanged bool
	// Baseline names the last migration (by ID or name) that a catalog
	// without a recorded history already includes: a catalog built from a
	// snapshot, or by a schemaq that did not record histories.
	Baseline string
	// Positional numbers files by position (the first is seq 1) and
	// publishes those from this seq on, whatever the catalog records.
	Positional int64
}

// Plan is what to publish: the pending migrations, in the order to apply
// them, numbered from From.
type Plan struct {
	Pending  []Step
	From     int64
	Applied  int      // files the catalog has already applied
	Warnings []string // back-dated migrations, accepted changes
}

// ErrChanged: an applied migration's content changed.
var ErrChanged = errors.New("applied migration changed")

// MakePlan decides which steps are pending against cat, as migration
// tools do against their schema_migrations table: a step whose ID the
// history records is applied (and must not have changed); the others are
// pending and are applied next, in file order, whatever that order says
// of their versions. A pending step that sorts before an applied one is
// back-dated (a branch merged with an older timestamp): it is applied
// after them, with a warning.
func MakePlan(steps []Step, cat *events.CatalogHistory, opts PlanOptions) (*Plan, error) {
	if opts.Positional > 0 {
		return positionalPlan(steps, opts.Positional), nil
	}
	applied := map[string]events.AppliedMigration{}
	for _, a := range cat.History {
		applied[a.ID] = a
	}
	baseEnd, err := baseSteps(steps, cat, len(applied), opts)
	if err != nil {
		return nil, err
	}
	p := &Plan{From: cat.Version + 1, Applied: baseEnd}
	var changed []string
	lastApplied := baseEnd - 1
	for i, s := range steps[baseEnd:] {
		i += baseEnd
		a, ok := applied[s.ID()]
		switch {
		case s.Repeatable:
			// Applied again whenever its content changes, as Flyway
			// does; the history's last application of it is the one
			// that counts.
			if ok && a.Checksum == s.Checksum {
				p.Applied++
			} else {
				p.Pending = append(p.Pending, s)
			}
		case !ok:
			p.Pending = append(p.Pending, s)
		default:
			p.Applied++
			lastApplied = i
			if a.Checksum == s.Checksum {
				continue
			}
			msg := fmt.Sprintf("migration %s was applied as seq %d (%s) with other content (checksum %s, now %s)", s.Name, a.Seq, a.Source, a.Checksum, s.Checksum)
			if opts.AcceptChanged {
				p.Warnings = append(p.Warnings, msg+"; kept as applied (--accept-changed): publish a snapshot to bring the catalog in line")
			} else {
				changed = append(changed, msg)
			}
		}
	}
	if len(changed) > 0 {
		return nil, fmt.Errorf("%w: %s. An applied migration must not change: revert the file, publish a snapshot to re-baseline the catalog, or pass --accept-changed to go on without it",
			ErrChanged, strings.Join(changed, "; "))
	}
	p.warnBackDated(steps, lastApplied)
	return p, nil
}

// positionalPlan numbers the steps by their position: those from the
// from-th on are pending.
func positionalPlan(steps []Step, from int64) *Plan {
	p := &Plan{From: from}
	for i, s := range steps {
		if int64(i+1) >= from {
			p.Pending = append(p.Pending, s)
		} else {
			p.Applied++
		}
	}
	return p
}

// baseSteps is how many of the first steps the catalog's base includes:
// a catalog without (or before) its recorded history already has them.
// recorded is how many migrations the history records.
func baseSteps(steps []Step, cat *events.CatalogHistory, recorded int, opts PlanOptions) (int, error) {
	switch {
	case opts.Baseline != "":
		i := indexOf(steps, opts.Baseline)
		if i < 0 {
			return 0, fmt.Errorf("--baseline %s: no such migration among the %d given", opts.Baseline, len(steps))
		}
		return i + 1, nil
	case cat.Version > 0 && recorded == 0:
		from := "migrations applied before schemaq recorded histories"
		if b := cat.Base; b != nil {
			from = "the snapshot " + b.Source
		}
		return 0, fmt.Errorf("catalog %s is at version %d, built from %s, and records no applied migrations, so which of these files it includes is unknown: "+
			"give --baseline MIGRATION (the last one it includes) or --from N (number files by position)", cat.Database, cat.Version, from)
	case len(cat.History) > 0 && (cat.Base != nil || cat.History[0].Seq > 1):
		// Steps before the first recorded one belong to the base. (A
		// base with no history at all was answered above when the
		// version says so; a reply that says otherwise has no base
		// steps, rather than an index out of range.)
		if i := indexOf(steps, cat.History[0].ID); i >= 0 {
			return i, nil
		}
	}
	return 0, nil
}

// warnBackDated warns of each pending step that sorts before the last
// applied one: a branch merged with an older timestamp, applied after it.
func (p *Plan) warnBackDated(steps []Step, lastApplied int) {
	for _, s := range p.Pending {
		if i := indexOf(steps, s.ID()); i < lastApplied && !s.Repeatable {
			p.Warnings = append(p.Warnings, fmt.Sprintf("migration %s sorts before %s, which is applied: it is back-dated (merged with an older version) and is applied next, after it",
				s.Name, steps[lastApplied].Name))
		}
	}
}

func indexOf(steps []Step, id string) int {
	for i, s := range steps {
		if s.ID() == id || s.Name == id {
			return i
		}
	}
	return -1
}
