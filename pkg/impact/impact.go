// Package impact says what pending migrations would break before they
// are published: it replays them on a database's current catalog, as a
// worker would, and checks against the result what already depends on
// the schema: the worked examples (their SQL would read what is gone),
// the docs (their sections would name what is gone), the views (their
// definitions would read what is gone), and the history itself (a
// migration the catalog refuses, drift). Nothing is published.
package impact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/namewords"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// Migration is one pending migration, in the order it would apply.
type Migration struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source"`
	SQL    string `json:"-"`
}

// Example is a worked example as stored.
type Example struct {
	ID, Question, SQL, Schema string
}

// Doc is a doc as stored.
type Doc struct {
	ID, Title, Body string
}

// Input is what a check reads.
type Input struct {
	// Catalog is the database's catalog as the service holds it now; an
	// empty one (catalog.New) for a database without one.
	Catalog  *catalog.Catalog
	Pending  []Migration
	Examples []Example
	Docs     []Doc
	// Strict applies as a worker started with --strict-catalog does:
	// DDL naming objects the catalog lacks is refused, not drift.
	Strict bool
	// MaxWords refuses, as a worker with --max-words-per-database does,
	// the migration that takes the catalog's names past this many
	// distinct words (namewords); 0 checks nothing.
	MaxWords int
}

// Report is what the pending migrations would do.
type Report struct {
	Database string `json:"database"`
	// Version is the catalog's version now, After its version once the
	// pending migrations applied (up to the one refused, if any).
	Version int64       `json:"version"`
	After   int64       `json:"after"`
	Pending []Migration `json:"pending"`
	// Refused is the migration a worker would dead-letter, with why;
	// those after it would wait for it (gap letters).
	Refused *Refusal `json:"refused,omitempty"`
	// Examples that would no longer fit the catalog: they would stop
	// voting, with why.
	Examples []BrokenExample `json:"examples"`
	// Followed are the examples that read a relation the migrations
	// rename: they keep voting for it, and prompts show them rewritten
	// to the new name (not a break).
	Followed []BrokenExample `json:"followed"`
	// Docs sections that would name objects the migrations drop.
	Docs []StaleDoc `json:"docs"`
	// Views whose definitions would read what is gone.
	Views []BrokenView `json:"views"`
	// Drift the pending migrations add (statements naming objects the
	// catalog does not know, routines run in part).
	Drift []catalog.Drift `json:"drift"`
	// Dropped and Renamed list the relations and columns the migrations
	// drop and rename ("public.payments", "public.orders.note";
	// "public.categories → public.genres").
	Dropped []string `json:"dropped"`
	Renamed []string `json:"renamed"`
}

// Refusal is a migration the catalog refuses.
type Refusal struct {
	Migration
	Error string `json:"error"`
	// Postgres is set when PostgreSQL refuses the statement too (an
	// object that depends on what it drops or retypes, one that exists
	// already, an invalid definition): the migration fails there as
	// well, not only in schemaq.
	Postgres bool `json:"postgres"`
}

// BrokenExample is an example the new catalog breaks.
type BrokenExample struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	Reason   string `json:"reason"`
}

// StaleDoc is a doc section that names what the migrations drop.
type StaleDoc struct {
	DocID   string   `json:"doc_id"`
	Section string   `json:"section"`
	Names   []string `json:"names"`
}

// BrokenView is a view whose definition the new catalog no longer
// satisfies.
type BrokenView struct {
	View   string `json:"view"`
	Reason string `json:"reason"`
}

// Breaks reports whether anything would break; allowDrift leaves drift
// out of it.
func (r *Report) Breaks(allowDrift bool) bool {
	return r.Refused != nil || len(r.Examples) > 0 || len(r.Docs) > 0 || len(r.Views) > 0 || (!allowDrift && len(r.Drift) > 0)
}

// Check replays in.Pending on in.Catalog and reports what they would
// break. Only what breaks because of them counts: an example that does
// not fit the catalog as it is now is stale already, not news. A
// migration still applying when ctx ends is reported refused.
func Check(ctx context.Context, in Input) *Report {
	before := in.Catalog
	rep := &Report{Database: before.Database, Version: before.Version, Pending: in.Pending,
		Examples: []BrokenExample{}, Followed: []BrokenExample{}, Docs: []StaleDoc{}, Views: []BrokenView{}, Drift: []catalog.Drift{}, Dropped: []string{}, Renamed: []string{}}
	after := rep.apply(ctx, before, in.Pending, in.Strict)
	if in.MaxWords > 0 && rep.Refused == nil {
		after = rep.boundWords(ctx, before, after, in)
	}
	rep.After = after.Version
	gone := rep.compare(before, after)
	rep.checkExamples(before, after, in.Examples)
	rep.checkDocs(before.Database, gone, in.Docs)
	rep.checkViews(before, after)
	return rep
}

// apply replays the pending migrations as a worker would, stopping at
// the first the catalog refuses.
func (r *Report) apply(ctx context.Context, cat *catalog.Catalog, pending []Migration, strict bool) *catalog.Catalog {
	var opts []catalog.ApplyOption
	if !strict {
		opts = append(opts, catalog.Tolerant())
	}
	drifted := len(cat.Drift())
	replay := catalog.NewReplay(cat, opts...)
	for _, m := range pending {
		if err := replay.Apply(ctx, m.Source, m.SQL, catalog.Applied{Seq: m.Seq, ID: m.Source, Source: m.Source}); err != nil {
			r.Refused = &Refusal{Migration: m, Error: err.Error(),
				Postgres: errors.Is(err, catalog.ErrDependent) || errors.Is(err, catalog.ErrDuplicate) || errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrUndefined)}
			break
		}
	}
	cat = replay.Catalog()
	if d := cat.Drift(); len(d) > drifted {
		r.Drift = append(r.Drift, d[drifted:]...)
	}
	return cat
}

// boundWords refuses the migration that takes the catalog past
// in.MaxWords distinct words and adds to those it held, as a worker
// would, and returns the catalog before it. Like a worker it bisects
// the pending migrations, applying a prefix again for each probe.
func (r *Report) boundWords(ctx context.Context, before, after *catalog.Catalog, in Input) *catalog.Catalog {
	var n namewords.Counter
	n.Keep(n.Count(before))
	had := n.Words()
	over := func(c *catalog.Catalog) (int, bool) {
		w := n.Count(c).Words
		return w, w > in.MaxWords && w > had
	}
	words, past := over(after)
	if !past {
		return after
	}
	lo, hi := 0, len(in.Pending) // the catalog after lo migrations fits; after hi it does not
	fits := before
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		var probe Report
		c := probe.apply(ctx, before, in.Pending[:mid], in.Strict)
		if w, p := over(c); p {
			hi, words = mid, w
		} else {
			lo, fits = mid, c
		}
	}
	r.Refused = &Refusal{Migration: in.Pending[lo], Error: fmt.Sprintf(
		"it would give database %s %d distinct words in the names of its tables, views and columns, past the bound of %d per database (--max-words-per-database): a worker with that bound dead-letters it", before.Database, words, in.MaxWords)}
	r.Drift = r.Drift[:0]
	if d := fits.Drift(); len(d) > len(before.Drift()) {
		r.Drift = append(r.Drift, d[len(before.Drift()):]...)
	}
	return fits
}

// compare lists what the migrations drop and rename, and returns the
// dropped names as a doc would write them, lower case: a relation's
// name and schema.name, a column's table.column and schema.table.column.
func (r *Report) compare(before, after *catalog.Catalog) map[string]string {
	gone := map[string]string{}
	note := func(full string, aliases ...string) {
		r.Dropped = append(r.Dropped, full)
		for _, a := range aliases {
			gone[strings.ToLower(a)] = full
		}
	}
	for _, t := range before.Tables() {
		now := after.Table(t.QualName())
		if now == nil {
			if moved := renamedTo(after, t.QualName()); moved != "" {
				r.Renamed = append(r.Renamed, t.QualName().Key()+" → "+moved)
				continue
			}
			note(t.QualName().Key(), t.Name, t.QualName().Key())
			continue
		}
		for _, c := range t.Columns {
			if now.Column(c.Name) != nil {
				continue
			}
			full := t.QualName().Key() + "." + c.Name
			if moved := renamedColumn(now, c.Name); moved != "" {
				r.Renamed = append(r.Renamed, full+" → "+moved)
				continue
			}
			note(full, t.Name+"."+c.Name, full)
		}
	}
	for _, v := range before.Views() {
		if after.View(v.QualName()) != nil {
			continue
		}
		if moved := renamedTo(after, v.QualName()); moved != "" {
			r.Renamed = append(r.Renamed, v.QualName().Key()+" → "+moved)
			continue
		}
		note(v.QualName().Key(), v.Name, v.QualName().Key())
	}
	sort.Strings(r.Dropped)
	sort.Strings(r.Renamed)
	return gone
}

// renamedTo is the relation of after that was q before a rename, "" for
// none.
func renamedTo(after *catalog.Catalog, q catalog.QualName) string {
	for _, t := range after.Tables() {
		if slices.ContainsFunc(t.Renamed, func(rn catalog.Rename) bool { return rn.From == q.Key() }) {
			return t.QualName().Key()
		}
	}
	for _, v := range after.Views() {
		if slices.ContainsFunc(v.Renamed, func(rn catalog.Rename) bool { return rn.From == q.Key() }) {
			return v.QualName().Key()
		}
	}
	return ""
}

// renamedColumn is the column of t that was name before a rename.
func renamedColumn(t *catalog.Table, name string) string {
	for _, c := range t.Columns {
		if slices.ContainsFunc(c.Renamed, func(rn catalog.Rename) bool { return rn.From == name }) {
			return t.QualName().Key() + "." + c.Name
		}
	}
	return ""
}

// checkExamples lists the examples that fit the catalog now and would
// not after: they would stop voting for their tables.
func (r *Report) checkExamples(before, after *catalog.Catalog, examples []Example) {
	was, will := sqlguard.NewNames(before), sqlguard.NewNames(after)
	for _, ex := range examples {
		q, err := sqlguard.ParseQuery(ex.SQL)
		if err != nil {
			continue // stale already: it does not parse
		}
		before := q.Fit(was, ex.Schema)
		if before.Err() != nil {
			continue // stale already
		}
		now := q.Fit(will, ex.Schema)
		var reasons []string
		switch {
		case len(now.Missing) > 0:
			// What it read before and the new catalog lacks, less what a
			// rename it follows moved.
			for _, k := range before.Keys {
				q := qualName(k)
				moved := slices.ContainsFunc(now.Followed, func(f sqlguard.Followed) bool { return f.From == q })
				if !moved && after.Table(q) == nil && after.View(q) == nil {
					reasons = append(reasons, "reads "+k+", which the migrations drop")
				}
			}
			if len(reasons) == 0 { // still there, no longer placeable: a name made ambiguous
				reasons = append(reasons, "reads "+strings.Join(now.Missing, ", ")+", which the new catalog cannot place")
			}
		case len(now.Unknown) > 0:
			reasons = now.Unknown
		case len(now.Followed) > 0 || len(now.Columns) > 0:
			var fs []string
			for _, f := range now.Followed {
				fs = append(fs, f.From.Key()+" → "+f.To.Key())
			}
			for _, f := range now.Columns {
				fs = append(fs, "column "+f.Table.Key()+"."+f.From+" → "+f.To)
			}
			r.Followed = append(r.Followed, BrokenExample{ID: ex.ID, Question: ex.Question,
				Reason: "reads " + strings.Join(fs, ", ") + ": it follows the rename, and prompts show it rewritten"})
		}
		if len(reasons) > 0 {
			r.Examples = append(r.Examples, BrokenExample{ID: ex.ID, Question: ex.Question, Reason: strings.Join(reasons, "; ")})
		}
	}
}

func qualName(key string) catalog.QualName {
	schema, name, _ := strings.Cut(key, ".")
	return catalog.QualName{Schema: schema, Name: name}
}

// identifiers finds the names a doc writes, dotted ones whole.
var identifiers = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_$]*(?:\.[A-Za-z_][A-Za-z0-9_$]*)*`)

// checkDocs lists the doc sections that name a dropped relation (by its
// name or schema.name) or column (by table.column): a reader, or a model
// shown the section, would look for what is gone.
func (r *Report) checkDocs(db string, gone map[string]string, docs []Doc) {
	if len(gone) == 0 {
		return
	}
	for _, d := range docs {
		for _, sec := range chunk.Doc(db, d.ID, d.Title, d.Body, nil, chunk.Options{}) {
			seen := map[string]bool{}
			var names []string
			for _, w := range identifiers.FindAllString(sec.Text, -1) {
				w = strings.ToLower(w)
				// table.column.more: its table.column is what it names.
				for cut := w; cut != ""; {
					if full, ok := gone[cut]; ok && !seen[full] {
						seen[full] = true
						names = append(names, full)
					}
					i := strings.LastIndexByte(cut, '.')
					if i < 0 {
						break
					}
					cut = cut[:i]
				}
			}
			if len(names) > 0 {
				sort.Strings(names)
				r.Docs = append(r.Docs, StaleDoc{DocID: d.ID, Section: sec.Title, Names: names})
			}
		}
	}
}

// checkViews lists the views whose definitions read a relation or a
// column the new catalog lacks, that the old one had: PostgreSQL would
// refuse the migration, or the view would fail when read.
func (r *Report) checkViews(before, after *catalog.Catalog) {
	for _, v := range after.Views() {
		now := viewProblems(v, after)
		if len(now) == 0 {
			continue
		}
		var then []string
		if old := before.View(v.QualName()); old != nil {
			then = viewProblems(old, before)
		}
		for _, p := range now {
			if !slices.Contains(then, p) {
				r.Views = append(r.Views, BrokenView{View: v.QualName().Key(), Reason: "its definition " + p})
				break
			}
		}
	}
}

// viewProblems are what a view's definition reads that cat lacks: a
// relation, a qualified column, or an unqualified column none of the
// relations it reads has.
func viewProblems(v *catalog.View, cat *catalog.Catalog) []string {
	res, err := sqlguard.CheckWith(v.Definition, cat, sqlguard.Options{Schema: v.Schema})
	var rej *sqlguard.Rejection
	switch {
	case errors.As(err, &rej) && (errors.Is(err, sqlguard.ErrUnknownTable) || errors.Is(err, sqlguard.ErrUnknownColumn)):
		return []string{rej.Reason}
	case err != nil:
		return nil // a function the guard does not allow, say: not the schema's doing
	}
	var out []string
	for _, w := range res.Warnings {
		if strings.HasSuffix(w, "is in none of the tables read") {
			out = append(out, "reads "+w)
		}
	}
	return out
}

// Records is what a check reads of a database's published examples and
// docs; *client.Client reads them from the stream.
type Records interface {
	Examples(ctx context.Context, db string) ([]client.StoredExample, error)
	DocsWithBodies(ctx context.Context, db string) ([]client.StoredDoc, error)
}

// Gather is the input of a check of pending on cat: the examples and
// docs published for cat's database, read through recs.
func Gather(ctx context.Context, recs Records, cat *catalog.Catalog, pending []Migration) (*Input, error) {
	in := &Input{Catalog: cat, Pending: pending}
	exs, err := recs.Examples(ctx, cat.Database)
	if err != nil {
		return nil, fmt.Errorf("examples of %s: %w", cat.Database, err)
	}
	for _, ex := range exs {
		in.Examples = append(in.Examples, Example{ID: ex.ID, Question: ex.Question, SQL: ex.SQL, Schema: ex.Schema})
	}
	docs, err := recs.DocsWithBodies(ctx, cat.Database)
	if err != nil {
		return nil, fmt.Errorf("docs of %s: %w", cat.Database, err)
	}
	for _, d := range docs {
		in.Docs = append(in.Docs, Doc{ID: d.DocID, Title: d.Title, Body: d.Body})
	}
	return in, nil
}
