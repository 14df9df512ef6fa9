package main

import (
	"bufio"
	"context"
	"crypto/rand"
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

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/streams"
)

// clientFlags are shared by the commands that talk to a running schemaq.
type clientFlags struct {
	nats    natsFlags
	db      *string
	asJSON  *bool
	timeout *time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet, e *env) {
	c.nats.register(fs, e)
	c.db = fs.String("db", envString(e, "SCHEMAQ_DB", ""), "database name [SCHEMAQ_DB]")
	c.asJSON = fs.Bool("json", false, "print JSON")
	c.timeout = fs.Duration("timeout", 30*time.Second, "how long to wait for replies")
}

func (c *clientFlags) requireDB() error {
	if *c.db == "" {
		return usagef("--db is required")
	}
	if err := events.ValidateDatabase(*c.db); err != nil {
		return usagef("--db: %v", err)
	}
	return nil
}

func (c *clientFlags) client() (*client.Client, func(), error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return nil, nil, err
	}
	cli, err := client.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return cli, nc.Close, nil
}

func runPublish(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(e.stderr, "Usage: schemaq publish migrations|snapshot|docs|examples --db NAME [flags] PATH...")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return nil
		}
		return usagef("publish: say what to publish: migrations, snapshot, docs or examples")
	}
	kind, args := args[0], args[1:]
	fs := newFlags(e, "publish "+kind, "--db NAME [flags] PATH...")
	var c clientFlags
	c.register(fs, e)
	var plan migrate.PlanOptions
	fs.Int64Var(&plan.Positional, "from", 0, "migrations: number files by position (the first is seq 1) and publish those from seq N on, whatever the catalog records")
	fs.StringVar(&plan.Baseline, "baseline", "", "migrations: the last migration (version or name) that a catalog without a recorded history already includes, e.g. one built from a snapshot")
	fs.BoolVar(&plan.AcceptChanged, "accept-changed", false, "migrations: go on past applied migrations whose file changed (they are not applied again)")
	seq := fs.Int64("seq", 0, "snapshot: the version the snapshot sets (default: the catalog's version + 1)")
	wait := fs.Duration("wait", 0, "migrations and snapshot: wait up to this long until the last one is applied and searchable; fail at once if one is dead-lettered (0: do not wait)")
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
	var evs []*events.Event
	var err error
	now := time.Now()
	switch kind {
	case "migrations":
		var warnings []string
		evs, warnings, err = migrationEvents(ctx, &c, fs.Args(), plan, now)
		for _, w := range warnings {
			fmt.Fprintln(e.stderr, "warning:", w)
		}
	case "snapshot":
		evs, err = snapshotEvent(ctx, &c, fs.Args(), *seq, now)
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
	cli, closeConn, err := c.client()
	if err != nil {
		return err
	}
	defer closeConn()
	pctx, cancel := context.WithTimeout(ctx, *c.timeout)
	defer cancel()
	type result struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		Seq       int64  `json:"seq,omitempty"`
		Source    string `json:"source,omitempty"`
		Stream    uint64 `json:"stream_seq"`
		Duplicate bool   `json:"duplicate"`
	}
	var results []result
	dups := 0
	var last int64
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
	}
	// Publishing is done: say what was published before waiting, so a
	// failed wait still shows it.
	var waitErr error
	drift := 0
	if *wait > 0 && last > 0 {
		drift, waitErr = waitApplied(ctx, &c, last, now, *wait)
	}
	if *c.asJSON {
		out := map[string]any{"database": *c.db, "published": results, "duplicates": dups}
		if waitErr != nil {
			out["error"] = waitErr.Error()
		}
		if drift > 0 {
			out["drift"] = drift
		}
		if err := json.NewEncoder(e.stdout).Encode(out); err != nil {
			return err
		}
		return waitErr
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
	if *wait > 0 && last > 0 {
		fmt.Fprintf(e.stdout, "catalog %s is at version %d and searchable\n", *c.db, last)
	}
	if drift > 0 {
		fmt.Fprintf(e.stderr, "warning: the catalog of %s has drift: %d statement(s) name objects it does not know and were skipped or inferred; `schemaq tables --db %s` lists them\n", *c.db, drift, *c.db)
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

// migrationEvents publishes what the catalog has not applied, numbered
// after what it has (migrate.MakePlan). A migration event's id carries a
// token of this run: the duplicate window still drops a retried publish
// of the same event, while running publish again re-sends what is still
// pending (say, after a refused migration was fixed) instead of having it
// dropped as a duplicate. Workers apply a seq once whatever the copies.
func migrationEvents(ctx context.Context, c *clientFlags, paths []string, opts migrate.PlanOptions, now time.Time) ([]*events.Event, []string, error) {
	files, err := migrate.Discover(paths...)
	if err != nil {
		return nil, nil, err
	}
	steps, err := migrate.Read(files)
	if err != nil {
		return nil, nil, err
	}
	cat := catalog.New(*c.db)
	if opts.Positional == 0 {
		if cat, err = currentCatalog(ctx, c); err != nil {
			return nil, nil, err
		}
	}
	plan, err := migrate.MakePlan(steps, cat, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("publish migrations to %s: %w", *c.db, err)
	}
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	run := hex.EncodeToString(tok[:])
	var out []*events.Event
	for i, s := range plan.Pending {
		seq := plan.From + int64(i)
		m := &events.Migration{Seq: seq, Source: filepath.ToSlash(s.Name), MigrationID: s.ID()}
		m.SQL, m.SQLGzip = sqlPayload(s.SQL)
		ev, err := events.New(fmt.Sprintf("%s-m-%d-%s-%s", *c.db, seq, s.Checksum[:12], run), *c.db, now, m)
		if err != nil {
			return nil, nil, fmt.Errorf("migration %s: %w", s.Name, err)
		}
		out = append(out, ev)
	}
	return out, plan.Warnings, nil
}

// compressAbove is the script size from which events carry the SQL
// gzip-compressed: schema dumps of large applications exceed the 1 MiB
// event limit as text, but compress tenfold.
const compressAbove = 256 << 10

func sqlPayload(sql string) (string, []byte) {
	if len(sql) > compressAbove {
		return "", events.GzipSQL(sql)
	}
	return sql, nil
}

func snapshotEvent(ctx context.Context, c *clientFlags, paths []string, seq int64, now time.Time) ([]*events.Event, error) {
	if len(paths) != 1 {
		return nil, usagef("publish snapshot: give exactly one schema file")
	}
	sql, err := os.ReadFile(paths[0])
	if err != nil {
		return nil, fmt.Errorf("read snapshot: %w", err)
	}
	if seq == 0 {
		cur, err := catalogVersion(ctx, c)
		if err != nil {
			return nil, err
		}
		seq = cur + 1
	}
	snap := &events.Snapshot{Seq: seq, Source: filepath.Base(paths[0])}
	snap.SQL, snap.SQLGzip = sqlPayload(string(sql))
	ev, err := events.New(eventID(*c.db, "s", fmt.Sprint(seq), string(sql)), *c.db, now, snap)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", paths[0], err)
	}
	return []*events.Event{ev}, nil
}

// catalogVersion is the database's catalog version, read from its
// entry's header: a snapshot replaces the catalog, so one whose body is
// damaged does not stop it.
func catalogVersion(ctx context.Context, c *clientFlags) (int64, error) {
	var v int64
	err := withCatalogs(ctx, c, func(s *catalogkv.Store) error {
		rev, hv, err := s.Entry(ctx, *c.db)
		if err != nil || rev == 0 || hv >= 0 {
			v = max(hv, 0)
			return err
		}
		v, _, err = s.Version(ctx, *c.db) // an entry written without a header
		return err
	})
	return v, err
}

// currentCatalog reads the database's catalog from the bucket; a database
// without one (or a server without the bucket yet) has an empty catalog.
func currentCatalog(ctx context.Context, c *clientFlags) (*catalog.Catalog, error) {
	cat := catalog.New(*c.db)
	err := withCatalogs(ctx, c, func(s *catalogkv.Store) error {
		var err error
		cat, _, err = s.Get(ctx, *c.db)
		return err
	})
	return cat, err
}

// withCatalogs calls fn with the server's catalog store; not at all when
// the server has no catalog bucket yet.
func withCatalogs(ctx context.Context, c *clientFlags, fn func(*catalogkv.Store) error) error {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read catalog %s: %w", *c.db, err)
	}
	var opts []catalogkv.Option
	if obj, err := streams.Objects(ctx, js); err == nil {
		opts = append(opts, catalogkv.WithObjects(obj))
	}
	return fn(catalogkv.New(kv, opts...))
}

// waitApplied waits until the catalog reaches version want and the index
// answers for it, and fails as soon as an event of the database is
// dead-lettered after since, with the letter's reason.
//
// It returns how many statements of the history the catalog skipped or
// inferred (drift), as the answering daemon reports them.
func waitApplied(ctx context.Context, c *clientFlags, want int64, since time.Time, limit time.Duration) (int, error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cli, err := client.New(nc)
	if err != nil {
		return 0, err
	}
	db := *c.db
	deadline := time.Now().Add(limit)
	var version, indexed, served int64
	var indexErr error
	// The bucket and the dead-letter stream are opened once, on this one
	// connection; each poll is then one read of each (the catalog's
	// version comes from the entry's header, without decoding it).
	var cats *catalogkv.Store
	var letters *deadletter.Box
	for {
		if letters == nil {
			letters, _ = deadletter.Open(ctx, js)
		}
		if letter := lastLetter(ctx, letters, db, since); letter != nil {
			what := "an event"
			if letter.Source != "" {
				what = letter.Source
			}
			return 0, fmt.Errorf("%s was dead-lettered (dead letter %d): %s\nsee `schemaq dlq list --db %s`; docs/events.md#recovery says what to do",
				what, letter.Seq, letter.Reason, db)
		}
		if cats == nil {
			if kv, err := js.KeyValue(ctx, events.CatalogBucket); err == nil {
				cats = catalogkv.New(kv)
			}
		}
		if version < want && cats != nil {
			if v, _, err := cats.Version(ctx, db); err == nil {
				version = v
			}
		}
		if version >= want {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			rep, err := cli.Tables(rctx, &events.TablesRequest{Database: db, Limit: 1})
			cancel()
			indexErr = err
			// The daemon's copy of the catalog follows the bucket by a
			// watch, so it can lag the index it reads: the drift it
			// reports (and the catalog an ask reads) is only this
			// version's once its copy has caught up too.
			if err == nil && rep.Indexed >= want && rep.Version >= want {
				return rep.DriftTotal, nil
			}
			if err == nil {
				indexed, served = rep.Indexed, rep.Version
			}
		}
		if time.Now().After(deadline) {
			switch {
			case version < want:
				return 0, fmt.Errorf("catalog %s reached version %d, not %d, within %v: see `schemaq status` and the worker logs", db, version, want, limit)
			case indexErr != nil:
				return 0, fmt.Errorf("catalog %s is at version %d, but no daemon confirmed the index within %v: %w", db, version, limit, indexErr)
			}
			if indexed >= want {
				return 0, fmt.Errorf("catalog %s is at version %d and indexed, but the daemon still serves version %d after %v: see the daemon logs", db, version, served, limit)
			}
			return 0, fmt.Errorf("catalog %s is at version %d, but its index reflects version %d after %v: see the worker logs", db, version, indexed, limit)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastLetter is db's newest dead letter if it is newer than since; nil
// without one, or without a dead-letter stream yet.
func lastLetter(ctx context.Context, b *deadletter.Box, db string, since time.Time) *deadletter.Letter {
	if b == nil {
		return nil
	}
	return b.Last(ctx, db, since)
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
			body, err := os.ReadFile(p)
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
		f, err := os.Open(p)
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
