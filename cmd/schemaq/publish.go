package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/migrate"
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
	from := fs.Int64("from", 1, "migrations: publish only those with seq ≥ N")
	seq := fs.Int64("seq", 0, "snapshot: the version the snapshot sets (default: the catalog's version + 1)")
	wait := fs.Duration("wait", 0, "migrations and snapshot: wait up to this long until the catalog reaches the last seq (0: do not wait)")
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
		evs, err = migrationEvents(*c.db, fs.Args(), *from, now)
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
	if *wait > 0 && last > 0 {
		if err := waitForVersion(ctx, &c, last, *wait); err != nil {
			return err
		}
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"database": *c.db, "published": results, "duplicates": dups})
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
	if *wait > 0 && last > 0 {
		fmt.Fprintf(e.stdout, "catalog %s is at version %d\n", *c.db, last)
	}
	return nil
}

// eventID is stable for the same content, so publishing the same history
// twice is dropped by the stream's duplicate window, while an edited file
// makes a new event.
func eventID(db, kind, key, content string) string {
	sum := sha256.Sum256([]byte(content))
	return fmt.Sprintf("%s-%s-%s-%s", db, kind, key, hex.EncodeToString(sum[:6]))
}

func migrationEvents(db string, paths []string, from int64, now time.Time) ([]*events.Event, error) {
	files, err := migrate.Discover(paths...)
	if err != nil {
		return nil, err
	}
	var out []*events.Event
	for i, f := range files {
		seq := int64(i + 1)
		if seq < from {
			continue
		}
		sql, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("read migration: %w", err)
		}
		m := &events.Migration{Seq: seq, Source: filepath.ToSlash(f.Name)}
		m.SQL, m.SQLGzip = sqlPayload(string(sql))
		ev, err := events.New(eventID(db, "m", fmt.Sprint(seq), string(sql)), db, now, m)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", f.Name, err)
		}
		out = append(out, ev)
	}
	return out, nil
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

func catalogVersion(ctx context.Context, c *clientFlags) (int64, error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return 0, nil // no bucket yet: no catalog
	}
	cat, _, err := catalogkv.New(kv).Get(ctx, *c.db)
	if err != nil {
		return 0, err
	}
	return cat.Version, nil
}

func waitForVersion(ctx context.Context, c *clientFlags, want int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		v, err := catalogVersion(ctx, c)
		if err == nil && v >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("catalog %s reached version %d, not %d, within %v: see `schemaq dlq list --db %s` and the worker logs", *c.db, v, want, limit, *c.db)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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
