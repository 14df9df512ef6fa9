package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/impact"
	"github.com/schemaq/schemaq/pkg/mcpserver"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/namewords"
	"go.uber.org/zap"
)

// exitBreaks is check's exit code when the pending migrations would break
// something: a script tells it from a failure to check (1) and a wrong
// command line (2).
const exitBreaks = 3

// errBreaks is a check whose report says something breaks.
var errBreaks = errors.New("the pending migrations would break what depends on the schema")

func runCheck(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "check", "--db NAME [flags] DIR|FILE...")
	var c clientFlags
	defer func() {
		if !errors.Is(err, errBreaks) {
			err = c.jsonFailure(e, err)
		}
	}()
	c.register(fs, e)
	var plan migrate.PlanOptions
	fs.Int64Var(&plan.Positional, "from", 0, "number files by position (the first is seq 1) and check those from seq N on, whatever the catalog records")
	fs.StringVar(&plan.Baseline, "baseline", "", "the last migration (version or name) that a catalog without a recorded history already includes")
	fs.BoolVar(&plan.AcceptChanged, "accept-changed", false, "go on past applied migrations whose file changed")
	allowDrift := fs.Bool("allow-drift", false, "drift the migrations add is reported but does not fail the check")
	strict := fs.Bool("strict-catalog", false, "apply as workers started with --strict-catalog do: DDL naming objects the catalog lacks is refused, not drift")
	maxWords := fs.Int("max-words-per-database", namewords.DefaultMaxPerDatabase, "refuse, as workers with the same setting do, the migration that takes the catalog's names past this many distinct words; 0: no check")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("check: give the migration files or directories to check")
	}
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return err
	}
	defer nc.Close()
	rctx, cancel := requestCtx(ctx, *c.timeout)
	defer cancel()
	src, err := newImpactSource(nc)
	if err != nil {
		return err
	}
	pending, warnings, err := src.pending(rctx, *c.db, fs.Args(), plan)
	if err != nil {
		return err
	}
	in, err := src.input(rctx, *c.db, pending)
	if err != nil {
		return err
	}
	in.Strict, in.MaxWords = *strict, *maxWords
	rep := impact.Check(rctx, *in)
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	if *c.asJSON {
		if err := json.NewEncoder(e.stdout).Encode(struct {
			*impact.Report
			Breaks bool `json:"breaks"`
		}{rep, rep.Breaks(*allowDrift)}); err != nil {
			return err
		}
	} else {
		printImpact(e, rep)
	}
	if rep.Breaks(*allowDrift) {
		return errBreaks
	}
	return nil
}

// impactSource reads what a check needs from a running schemaq: the
// catalog from its bucket, the examples and docs from the stream.
type impactSource struct {
	js  jetstream.JetStream
	cli *client.Client
}

func newImpactSource(nc *nats.Conn) (*impactSource, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cli, err := client.New(nc)
	if err != nil {
		return nil, err
	}
	return &impactSource{js: js, cli: cli}, nil
}

// input is a check's input for pending on db.
func (s *impactSource) input(ctx context.Context, db string, pending []impact.Migration) (*impact.Input, error) {
	cat, err := catalogOf(ctx, s.js, db)
	if errors.Is(err, errNoCatalog) {
		cat, err = catalog.New(db), nil
	}
	if err != nil {
		return nil, err
	}
	return impact.Gather(ctx, s.cli, cat, pending)
}

// pending plans the migration files at paths as publish plans them.
func (s *impactSource) pending(ctx context.Context, db string, paths []string, plan migrate.PlanOptions) ([]impact.Migration, []string, error) {
	evs, warnings, err := s.cli.MigrationEvents(ctx, db, paths, plan, time.Now())
	if err != nil {
		return nil, nil, err
	}
	var out []impact.Migration
	for _, ev := range evs {
		m := ev.Migration
		sql := m.SQL
		if sql == "" && len(m.SQLGzip) > 0 {
			if sql, err = events.GunzipSQL(m.SQLGzip); err != nil {
				return nil, nil, fmt.Errorf("check: %s: %w", m.Source, err)
			}
		}
		out = append(out, impact.Migration{Seq: m.Seq, Source: m.Source, SQL: sql})
	}
	return out, warnings, nil
}

// Check is the MCP tool check_migration's: the migrations apply in
// order after the catalog's version, unplanned, under the workers'
// default bound on words.
func (s *impactSource) Check(ctx context.Context, db string, migrations []mcpserver.Migration) (*impact.Report, error) {
	in, err := s.input(ctx, db, nil)
	if err != nil {
		return nil, err
	}
	in.MaxWords = namewords.DefaultMaxPerDatabase
	for i, m := range migrations {
		in.Pending = append(in.Pending, impact.Migration{Seq: in.Catalog.Version + int64(i) + 1, Source: m.Name, SQL: m.SQL})
	}
	return impact.Check(ctx, *in), nil
}

func printImpact(e *env, r *impact.Report) {
	if len(r.Pending) == 0 {
		fmt.Fprintf(e.stdout, "%s is at version %d: no migration is pending\n", r.Database, r.Version)
		return
	}
	fmt.Fprintf(e.stdout, "%s: %d pending migration(s) would take the catalog from version %d to %d\n", r.Database, len(r.Pending), r.Version, r.After)
	if f := r.Refused; f != nil && f.Postgres {
		fmt.Fprintf(e.stdout, "refused: PostgreSQL will refuse migration %d (%s), and schemaq would dead-letter it: %s\n", f.Seq, f.Source, f.Error)
	} else if f != nil {
		fmt.Fprintf(e.stdout, "refused: migration %d (%s) would be dead-lettered: %s\n", f.Seq, f.Source, f.Error)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(e.stdout, "drops: %s\n", d)
	}
	for _, rn := range r.Renamed {
		fmt.Fprintf(e.stdout, "renames: %s\n", rn)
	}
	for _, x := range r.Examples {
		fmt.Fprintf(e.stdout, "example %s (%s) would go stale: %s\n", x.ID, clip(x.Question, 60), x.Reason)
	}
	for _, x := range r.Followed {
		fmt.Fprintf(e.stdout, "example %s (%s) %s\n", x.ID, clip(x.Question, 60), x.Reason)
	}
	for _, d := range r.Docs {
		where := d.DocID
		if d.Section != "" {
			where += " § " + d.Section
		}
		fmt.Fprintf(e.stdout, "doc %s names %s\n", where, strings.Join(d.Names, ", "))
	}
	for _, v := range r.Views {
		fmt.Fprintf(e.stdout, "view %s would not resolve: %s\n", v.View, v.Reason)
	}
	for _, d := range r.Drift {
		fmt.Fprintf(e.stdout, "drift: %s\n", d)
	}
	fmt.Fprintf(e.stdout, "%d example(s), %d doc section(s), %d view(s) affected; %d drift\n", len(r.Examples), len(r.Docs), len(r.Views), len(r.Drift))
}
