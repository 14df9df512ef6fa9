package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/safefile"
)

// publishKinds are what `publish` takes, in the order usage names them.
var publishKinds = []string{"migrations", "snapshot", "docs", "examples"}

// runPublish is parse, make the events, publish them, wait, report: one
// method of publishCmd a stage.
func runPublish(ctx context.Context, e *env, args []string) (err error) {
	kind, args, err := publishKind(e, args)
	if err != nil || kind == "" {
		return err
	}
	p := &publishCmd{e: e, kind: kind}
	defer func() { err = p.c.jsonFailure(e, err) }()
	if err := p.parse(args); err != nil {
		return err
	}
	defer p.close()
	now := time.Now()
	pctx, cancel := context.WithTimeout(ctx, *p.c.timeout)
	defer cancel()
	evs, err := p.events(pctx, now)
	if err != nil {
		return err
	}
	if err := p.connect(); err != nil {
		return err
	}
	p.narrate()
	out, err := p.publish(pctx, evs)
	if err != nil {
		return err
	}
	// Publishing is done: the report says what was published even when
	// the wait fails.
	p.wait(ctx, out, now)
	return p.report(out)
}

// publishKind takes the first argument, the kind; "" with no error is a
// help request already answered.
func publishKind(e *env, args []string) (string, []string, error) {
	e.declareVerbs(publishKinds)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(e.stderr, "Usage: schemaq publish %s --db NAME [flags] PATH...\n", strings.Join(publishKinds, "|"))
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return "", nil, nil
		}
		return "", nil, usagef("publish: say what to publish: migrations, snapshot, docs or examples")
	}
	for _, k := range publishKinds {
		if args[0] == k {
			return k, args[1:], nil
		}
	}
	return "", nil, usagef("publish: unknown kind %q (migrations, snapshot, docs, examples)", args[0])
}

// publishCmd is one `schemaq publish KIND` run.
type publishCmd struct {
	e         *env
	kind      string
	c         clientFlags
	plan      migrate.PlanOptions
	seq       int64
	waitLimit time.Duration
	tags      tagFlags
	paths     []string

	// One connection, made when first needed: planning migrations and
	// numbering a snapshot read the catalog; docs and examples are read
	// from their files first.
	cli       *client.Client
	closeConn func()
}

func (p *publishCmd) parse(args []string) error {
	fs := newFlags(p.e, "publish "+p.kind, "--db NAME [flags] PATH...")
	p.c.register(fs, p.e)
	p.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := p.c.requireDB(); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("publish %s: give the files or directories to publish", p.kind)
	}
	p.paths = fs.Args()
	return nil
}

func (p *publishCmd) register(fs *flag.FlagSet) {
	fs.Int64Var(&p.plan.Positional, "from", 0, "migrations: number files by position (the first is seq 1) and publish those from seq N on, whatever the catalog records")
	fs.StringVar(&p.plan.Baseline, "baseline", "", "migrations: the last migration (version or name) that a catalog without a recorded history already includes, e.g. one built from a snapshot")
	fs.BoolVar(&p.plan.AcceptChanged, "accept-changed", false, "migrations: go on past applied migrations whose file changed (they are not applied again)")
	fs.Int64Var(&p.seq, "seq", 0, "snapshot: the version the snapshot sets (default: the catalog's version + 1)")
	fs.DurationVar(&p.waitLimit, "wait", 0, "wait up to this long until what was published is applied and searchable (the last migration or snapshot; every doc and example); fail at once if one is dead-lettered (0: do not wait)")
	fs.Var(&p.tags, "tag", "docs: a tag KEY=VALUE for every doc (repeatable)")
}

func (p *publishCmd) connect() error {
	if p.cli != nil {
		return nil
	}
	cli, closeConn, err := p.c.client()
	if err != nil {
		return err
	}
	p.cli, p.closeConn = cli, closeConn
	return nil
}

func (p *publishCmd) close() {
	if p.closeConn != nil {
		p.closeConn()
	}
}

// events reads the files into the events to publish.
func (p *publishCmd) events(ctx context.Context, now time.Time) ([]*events.Event, error) {
	db := *p.c.db
	switch p.kind {
	case "migrations":
		if err := p.connect(); err != nil {
			return nil, err
		}
		evs, warnings, err := p.cli.MigrationEvents(ctx, db, p.paths, p.plan, now)
		for _, w := range warnings {
			fmt.Fprintln(p.e.stderr, "warning:", w)
		}
		return evs, err
	case "snapshot":
		if err := p.connect(); err != nil {
			return nil, err
		}
		return snapshotEvent(ctx, p.cli, db, p.paths, p.seq, now)
	case "docs":
		return docEvents(db, p.paths, p.tags, client.RunToken(), now)
	default:
		return exampleEvents(db, p.paths, client.RunToken(), now)
	}
}

// narrate says on stderr why a publish or a wait takes long.
func (p *publishCmd) narrate() {
	stderr := p.e.stderr
	p.cli.OnPublishRetry(func(attempt int, err error) {
		fmt.Fprintf(stderr, "publish: JetStream did not answer (%v); retrying (attempt %d): a cluster electing a new leader takes seconds\n", err, attempt)
	})
	p.cli.OnWaitProgress(func(w client.WaitProgress) {
		switch {
		case w.Catalog < w.Want:
			fmt.Fprintf(stderr, "publish: waiting: catalog %s at version %d of %d\n", w.Database, w.Catalog, w.Want)
		case w.Unconfirmed != nil:
			fmt.Fprintf(stderr, "publish: waiting: catalog %s at version %d; no daemon confirms the index yet (%v)\n", w.Database, w.Catalog, w.Unconfirmed)
		default:
			fmt.Fprintf(stderr, "publish: waiting: catalog %s at version %d, the index at %d\n", w.Database, w.Catalog, w.Indexed)
		}
	})
}

// published is one event's line in the report.
type published struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Seq       int64  `json:"seq,omitempty"`
	Source    string `json:"source,omitempty"`
	Stream    uint64 `json:"stream_seq"`
	Duplicate bool   `json:"duplicate"`
}

// publishOutcome is what a run did, for the report.
type publishOutcome struct {
	results []published // [] in JSON when nothing was published, never null
	dups    int
	// last is the catalog version the last migration or snapshot sets.
	last int64
	// indexed: docs and examples have no catalog version; each is
	// searchable once its chunks are indexed at the stream sequence it
	// was published at (a duplicate's is the original's).
	indexed map[events.IndexedRef]int64
	drift   int
	waitErr error
}

func (p *publishCmd) publish(ctx context.Context, evs []*events.Event) (*publishOutcome, error) {
	out := &publishOutcome{results: []published{}, indexed: map[events.IndexedRef]int64{}}
	for _, ev := range evs {
		ack, err := p.cli.Publish(ctx, ev)
		if err != nil && len(out.results) > 0 {
			return nil, fmt.Errorf("%w (%d of the %d events were published before it)", err, len(out.results), len(evs))
		}
		if err != nil {
			return nil, err
		}
		r := published{ID: ev.ID, Type: ev.Type, Stream: ack.Sequence, Duplicate: ack.Duplicate}
		if m := ev.Migration; m != nil {
			r.Seq, r.Source, out.last = m.Seq, m.Source, m.Seq
		}
		if s := ev.Snapshot; s != nil {
			r.Seq, r.Source, out.last = s.Seq, s.Source, s.Seq
		}
		if ack.Duplicate {
			out.dups++
		}
		out.results = append(out.results, r)
		for _, ref := range searchableObjects(ev) {
			out.indexed[ref] = int64(ack.Sequence)
		}
	}
	return out, nil
}

// wait waits, when asked to, for what was published to be searchable.
func (p *publishCmd) wait(ctx context.Context, out *publishOutcome, since time.Time) {
	db := *p.c.db
	switch {
	case p.waitLimit > 0 && out.last > 0:
		out.waitErr = waitFor(ctx, db, p.waitLimit, func(ctx context.Context) (err error) {
			out.drift, err = p.cli.WaitApplied(ctx, db, out.last, since)
			return err
		})
	case p.waitLimit > 0 && len(out.indexed) > 0:
		out.waitErr = waitFor(ctx, db, p.waitLimit, func(ctx context.Context) error {
			return p.cli.WaitIndexed(ctx, db, out.indexed, since)
		})
	}
}

func (p *publishCmd) report(out *publishOutcome) error {
	if *p.c.asJSON {
		return p.reportJSON(out)
	}
	db, stdout := *p.c.db, p.e.stdout
	for _, r := range out.results {
		status := "ok"
		if r.Duplicate {
			status = "duplicate (already published)"
		}
		label := r.ID
		if r.Source != "" {
			label = fmt.Sprintf("%d %s", r.Seq, r.Source)
		}
		fmt.Fprintf(stdout, "%-10s %s: %s\n", strings.TrimPrefix(r.Type, "schema."), label, status)
	}
	fmt.Fprintf(stdout, "published %d event(s) to %s, %d duplicate(s)\n", len(out.results), db, out.dups)
	if p.kind == "migrations" && len(out.results) == 0 {
		fmt.Fprintf(stdout, "nothing to publish: every migration is applied to %s\n", db)
	}
	if out.waitErr != nil {
		return out.waitErr
	}
	switch {
	case p.waitLimit > 0 && out.last > 0:
		fmt.Fprintf(stdout, "catalog %s is at version %d and searchable\n", db, out.last)
	case p.waitLimit > 0 && len(out.indexed) > 0:
		fmt.Fprintf(stdout, "%d %s of %s indexed and searchable\n", len(out.indexed), p.kind, db)
	}
	if out.drift > 0 {
		fmt.Fprintf(p.e.stderr, "warning: the catalog of %s has drift: %d statement(s) were skipped, inferred or evaluated in part; `schemaq tables --db %s` lists them\n", db, out.drift, db)
	}
	return nil
}

func (p *publishCmd) reportJSON(out *publishOutcome) error {
	doc := map[string]any{"database": *p.c.db, "published": out.results, "duplicates": out.dups}
	if out.waitErr != nil {
		doc["error"] = jsonError(out.waitErr)
	}
	if out.drift > 0 {
		doc["drift"] = out.drift
	}
	if err := json.NewEncoder(p.e.stdout).Encode(doc); err != nil {
		return err
	}
	if out.waitErr != nil {
		return &reportedError{out.waitErr} // said in the JSON above
	}
	return nil
}

// eventID names an event by its content and, for docs and examples, the
// run that publishes it (run): a publish retried within the run is
// dropped by the stream's duplicate window. Across runs the same content
// is published again, as migrations are: with ids by content alone, a
// doc edited and then reverted within the window (v1, v2, v1 again) was
// dropped as a duplicate of the first v1, and the index kept v2 while
// publish said "indexed and searchable". The stream keeps only each
// doc's newest event, so publishing again costs the apply, not disk.
func eventID(db, kind, key, content, run string) string {
	sum := sha256.Sum256([]byte(content))
	id := fmt.Sprintf("%s-%s-%s-%s", db, kind, key, hex.EncodeToString(sum[:6]))
	if run != "" {
		id += "-" + run
	}
	return id
}

func snapshotEvent(ctx context.Context, cli *client.Client, db string, paths []string, seq int64, now time.Time) ([]*events.Event, error) {
	if len(paths) != 1 {
		return nil, usagef("publish snapshot: give exactly one schema file")
	}
	sql, err := safefile.Read(filepath.Dir(paths[0]), paths[0], events.MaxSQLBytes)
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	if seq == 0 {
		// From the entry's header: a snapshot replaces the catalog, so
		// one whose body is damaged does not stop it.
		cur, err := cli.CatalogVersion(ctx, db)
		if err != nil {
			return nil, err
		}
		seq = cur + 1
	}
	snap := &events.Snapshot{Seq: seq, Source: filepath.Base(paths[0])}
	snap.SQL, snap.SQLGzip = client.SQLPayload(string(sql))
	ev, err := events.New(eventID(db, "s", fmt.Sprint(seq), string(sql), ""), db, now, snap)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", paths[0], err)
	}
	return []*events.Event{ev}, nil
}

// searchableObjects lists the docs and examples an event makes
// searchable; a doc with no text makes no chunk to wait for.
func searchableObjects(ev *events.Event) []events.IndexedRef {
	var out []events.IndexedRef
	if d := ev.DocUpsert; d != nil && len(chunk.Doc(ev.Database, d.DocID, d.Title, d.Body, nil, chunk.Options{})) > 0 {
		out = append(out, events.IndexedRef{Kind: chunk.KindDoc, Name: d.DocID})
	}
	if x := ev.Examples; x != nil {
		for _, ex := range x.Examples {
			// An example without an id is named as the worker names it.
			out = append(out, events.IndexedRef{Kind: chunk.KindExample, Name: chunk.Example(ev.Database, ex.Schema, ex.ID, ex.Question, ex.SQL).Name})
		}
	}
	return out
}

// waitIndexed is client.WaitIndexed for up to limit, with the way out of
// a dead letter.
func waitIndexed(ctx context.Context, cli *client.Client, db string, want map[events.IndexedRef]int64, since time.Time, limit time.Duration) error {
	return waitFor(ctx, db, limit, func(ctx context.Context) error { return cli.WaitIndexed(ctx, db, want, since) })
}

// waitFor runs a wait of the client's on db for up to limit, with the way
// out of a dead letter.
func waitFor(ctx context.Context, db string, limit time.Duration, wait func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := wait(wctx)
	var dl *client.DeadLetteredError
	switch {
	case errors.As(err, &dl):
		return fmt.Errorf("%w\nsee `schemaq dlq list --db %s`; docs/events.md#recovery says what to do", err, db)
	case err != nil && ctx.Err() == nil:
		return fmt.Errorf("after %v: %w", limit, err)
	}
	return err
}

type tagFlags map[string]string

func (t *tagFlags) String() string { return fmt.Sprint(map[string]string(*t)) }
func (t *tagFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	if *t == nil {
		*t = map[string]string{}
	}
	(*t)[k] = val
	return nil
}

func docEvents(db string, paths []string, tags tagFlags, run string, now time.Time) ([]*events.Event, error) {
	var out []*events.Event
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("docs: %w", err)
		}
		base := root
		if !st.IsDir() {
			base = filepath.Dir(root)
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".md") {
				return err
			}
			body, err := safefile.Read(base, p, events.MaxSQLBytes)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(base, p)
			id := filepath.ToSlash(rel)
			ev, err := events.New(eventID(db, "d", strings.NewReplacer("/", "_", " ", "_").Replace(id), string(body), run), db, now,
				&events.DocUpsert{DocID: id, Body: string(body), Tags: tags})
			if err != nil {
				return fmt.Errorf("doc %s: %w", p, err)
			}
			out = append(out, ev)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("docs: %w", err)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("docs: no markdown (.md) files under %s", strings.Join(paths, ", "))
	}
	return out, nil
}

// examplesPerEvent keeps an examples event well under the size limit.
const examplesPerEvent = 100

func exampleEvents(db string, paths []string, run string, now time.Time) ([]*events.Event, error) {
	var all []events.Example
	for _, p := range paths {
		f, err := safefile.Open(filepath.Dir(p), p, events.MaxSQLBytes)
		if err != nil {
			return nil, fmt.Errorf("examples: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			s := strings.TrimSpace(sc.Text())
			if s == "" {
				continue
			}
			var ex events.Example
			dec := json.NewDecoder(strings.NewReader(s))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ex); err != nil {
				f.Close()
				return nil, fmt.Errorf("examples %s line %d: %w", p, line, err)
			}
			all = append(all, ex)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("examples %s: %w", p, err)
		}
	}
	var out []*events.Event
	for start := 0; start < len(all); start += examplesPerEvent {
		batch := all[start:min(start+examplesPerEvent, len(all))]
		b, _ := json.Marshal(batch)
		ev, err := events.New(eventID(db, "x", fmt.Sprint(start/examplesPerEvent+1), string(b), run), db, now, &events.ExamplesUpsert{Examples: batch})
		if err != nil {
			return nil, fmt.Errorf("examples: %w", err)
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("examples: no examples in %s", strings.Join(paths, ", "))
	}
	return out, nil
}
