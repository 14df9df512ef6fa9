package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

func runPublish(ctx context.Context, e *env, args []string) (err error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(e.stderr, "Usage: schemaq publish migrations|snapshot|docs|examples --db NAME [flags] PATH...")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return nil
		}
		return usagef("publish: say what to publish: migrations, snapshot, docs or examples")
	}
	kind, args := args[0], args[1:]
	var closeAfter []func()
	fs := newFlags(e, "publish "+kind, "--db NAME [flags] PATH...")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	var plan migrate.PlanOptions
	fs.Int64Var(&plan.Positional, "from", 0, "migrations: number files by position (the first is seq 1) and publish those from seq N on, whatever the catalog records")
	fs.StringVar(&plan.Baseline, "baseline", "", "migrations: the last migration (version or name) that a catalog without a recorded history already includes, e.g. one built from a snapshot")
	fs.BoolVar(&plan.AcceptChanged, "accept-changed", false, "migrations: go on past applied migrations whose file changed (they are not applied again)")
	seq := fs.Int64("seq", 0, "snapshot: the version the snapshot sets (default: the catalog's version + 1)")
	wait := fs.Duration("wait", 0, "wait up to this long until what was published is applied and searchable (the last migration or snapshot; every doc and example); fail at once if one is dead-lettered (0: do not wait)")
	var tags tagFlags
	fs.Var(&tags, "tag", "docs: a tag KEY=VALUE for every doc (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("publish %s: give the files or directories to publish", kind)
	}
	// One connection, made when first needed: planning migrations and
	// numbering a snapshot read the catalog; docs and examples are read
	// from their files first.
	var cli *client.Client
	connect := func() error {
		if cli != nil {
			return nil
		}
		var closeConn func()
		var err error
		if cli, closeConn, err = c.client(); err == nil {
			closeAfter = append(closeAfter, closeConn)
		}
		return err
	}
	defer func() {
		for _, f := range closeAfter {
			f()
		}
	}()
	var evs []*events.Event
	now := time.Now()
	pctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	switch kind {
	case "migrations":
		var warnings []string
		if err = connect(); err == nil {
			evs, warnings, err = cli.MigrationEvents(pctx, *c.db, fs.Args(), plan, now)
		}
		for _, w := range warnings {
			fmt.Fprintln(e.stderr, "warning:", w)
		}
	case "snapshot":
		if err = connect(); err == nil {
			evs, err = snapshotEvent(pctx, cli, *c.db, fs.Args(), *seq, now)
		}
	case "docs":
		evs, err = docEvents(*c.db, fs.Args(), tags, now)
	case "examples":
		evs, err = exampleEvents(*c.db, fs.Args(), now)
	default:
		return usagef("publish: unknown kind %q (migrations, snapshot, docs, examples)", kind)
	}
	if err != nil {
		return err
	}
	if err := connect(); err != nil {
		return err
	}
	cli.OnPublishRetry(func(attempt int, err error) {
		fmt.Fprintf(e.stderr, "publish: JetStream did not answer (%v); retrying (attempt %d): a cluster electing a new leader takes seconds\n", err, attempt)
	})
	cli.OnWaitProgress(func(p client.WaitProgress) {
		switch {
		case p.Catalog < p.Want:
			fmt.Fprintf(e.stderr, "publish: waiting: catalog %s at version %d of %d\n", p.Database, p.Catalog, p.Want)
		case p.Unconfirmed != nil:
			fmt.Fprintf(e.stderr, "publish: waiting: catalog %s at version %d; no daemon confirms the index yet (%v)\n", p.Database, p.Catalog, p.Unconfirmed)
		default:
			fmt.Fprintf(e.stderr, "publish: waiting: catalog %s at version %d, the index at %d\n", p.Database, p.Catalog, p.Indexed)
		}
	})
	type result struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Seq       int64  `json:"seq,omitempty"`
		Source    string `json:"source,omitempty"`
		Stream    uint64 `json:"stream_seq"`
		Duplicate bool   `json:"duplicate"`
	}
	results := []result{} // [] in JSON when nothing was published, never null
	dups := 0
	var last int64
	// Docs and examples have no catalog version: each is searchable once
	// its chunks are indexed at the stream sequence it was published at
	// (a duplicate's is the original's).
	indexed := map[events.IndexedRef]int64{}
	for _, ev := range evs {
		p, err := cli.Publish(pctx, ev)
		if err != nil {
			return err
		}
		r := result{ID: ev.ID, Type: ev.Type, Stream: p.Sequence, Duplicate: p.Duplicate}
		if m := ev.Migration; m != nil {
			r.Seq, r.Source, last = m.Seq, m.Source, m.Seq
		}
		if s := ev.Snapshot; s != nil {
			r.Seq, r.Source, last = s.Seq, s.Source, s.Seq
		}
		if p.Duplicate {
			dups++
		}
		results = append(results, r)
		for _, ref := range searchableObjects(ev) {
			indexed[ref] = int64(p.Sequence)
		}
	}
	// Publishing is done: say what was published before waiting, so a
	// failed wait still shows it.
	var waitErr error
	drift := 0
	switch {
	case *wait > 0 && last > 0:
		drift, waitErr = waitApplied(ctx, cli, *c.db, last, now, *wait)
	case *wait > 0 && len(indexed) > 0:
		waitErr = waitIndexed(ctx, cli, *c.db, indexed, now, *wait)
	}
	if *c.asJSON {
		out := map[string]any{"database": *c.db, "published": results, "duplicates": dups}
		if waitErr != nil {
			out["error"] = jsonError(waitErr)
		}
		if drift > 0 {
			out["drift"] = drift
		}
		if err := json.NewEncoder(e.stdout).Encode(out); err != nil {
			return err
		}
		if waitErr != nil {
			return &reportedError{waitErr} // said in the JSON above
		}
		return nil
	}
	for _, r := range results {
		status := "ok"
		if r.Duplicate {
			status = "duplicate (already published)"
		}
		label := r.ID
		if r.Source != "" {
			label = fmt.Sprintf("%d %s", r.Seq, r.Source)
		}
		fmt.Fprintf(e.stdout, "%-10s %s: %s\n", strings.TrimPrefix(r.Type, "schema."), label, status)
	}
	fmt.Fprintf(e.stdout, "published %d event(s) to %s, %d duplicate(s)\n", len(results), *c.db, dups)
	if kind == "migrations" && len(evs) == 0 {
		fmt.Fprintf(e.stdout, "nothing to publish: every migration is applied to %s\n", *c.db)
	}
	if waitErr != nil {
		return waitErr
	}
	switch {
	case *wait > 0 && last > 0:
		fmt.Fprintf(e.stdout, "catalog %s is at version %d and searchable\n", *c.db, last)
	case *wait > 0 && len(indexed) > 0:
		fmt.Fprintf(e.stdout, "%d %s of %s indexed and searchable\n", len(indexed), kind, *c.db)
	}
	if drift > 0 {
		fmt.Fprintf(e.stderr, "warning: the catalog of %s has drift: %d statement(s) were skipped, inferred or evaluated in part; `schemaq tables --db %s` lists them\n", *c.db, drift, *c.db)
	}
	return nil
}

// eventID is stable for the same content, so publishing the same docs
// twice is dropped by the stream's duplicate window, while an edited file
// makes a new event.
func eventID(db, kind, key, content string) string {
	sum := sha256.Sum256([]byte(content))
	return fmt.Sprintf("%s-%s-%s-%s", db, kind, key, hex.EncodeToString(sum[:6]))
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
	ev, err := events.New(eventID(db, "s", fmt.Sprint(seq), string(sql)), db, now, snap)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", paths[0], err)
	}
	return []*events.Event{ev}, nil
}

// waitApplied is client.WaitApplied for up to limit, with the way out of
// a dead letter.
func waitApplied(ctx context.Context, cli *client.Client, db string, want int64, since time.Time, limit time.Duration) (int, error) {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	drift, err := cli.WaitApplied(wctx, db, want, since)
	var dl *client.DeadLetteredError
	switch {
	case errors.As(err, &dl):
		return 0, fmt.Errorf("%w\nsee `schemaq dlq list --db %s`; docs/events.md#recovery says what to do", err, db)
	case err != nil && ctx.Err() == nil:
		return 0, fmt.Errorf("after %v: %w", limit, err)
	}
	return drift, err
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

func docEvents(db string, paths []string, tags tagFlags, now time.Time) ([]*events.Event, error) {
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
			ev, err := events.New(eventID(db, "d", strings.NewReplacer("/", "_", " ", "_").Replace(id), string(body)), db, now,
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

func exampleEvents(db string, paths []string, now time.Time) ([]*events.Event, error) {
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
		ev, err := events.New(eventID(db, "x", fmt.Sprint(start/examplesPerEvent+1), string(b)), db, now, &events.ExamplesUpsert{Examples: batch})
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
