package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
)

// ingestReport is what `bench ingest` measures.
type ingestReport struct {
	Migrations  int     `json:"migrations"` // in all
	Databases   int     `json:"databases"`
	Workers     int     `json:"workers,omitempty"` // embedded runs only
	Concurrency int     `json:"concurrency,omitempty"`
	PublishSecs float64 `json:"publish_seconds"`
	// AppliedSecs runs from the first publish until every catalog holds
	// its last migration.
	AppliedSecs float64 `json:"applied_seconds"`
	PerSecond   float64 `json:"migrations_per_second"`
	// SearchableMS is how long after its catalog write the last migration
	// of each database was found by search (the worst database).
	SearchableMS float64 `json:"searchable_after_applied_ms"`
	// IndexedMS is the same for the index reporting the version.
	IndexedMS   float64 `json:"indexed_after_applied_ms"`
	DeadLetters uint64  `json:"dead_letters"`
}

// runBenchIngest is parse, start or reach a schemaq, run the history,
// print.
func runBenchIngest(ctx context.Context, e *env, args []string) error {
	var b benchIngestFlags
	if err := b.parse(e, args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(b.profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rep := ingestReport{Migrations: b.migrations * b.databases, Databases: b.databases}
	nc, stop, err := b.target(ctx, &rep)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	if err := benchIngest(ctx, nc, b.migrations, b.databases, &rep); err != nil {
		return err
	}
	if b.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fmt.Fprintf(e.stdout, "%d migrations into %d database(s): published in %.2fs, applied in %.2fs: %.0f/s; last migration indexed %.1f ms and searchable %.1f ms after it was applied; %d dead letter(s)\n",
		rep.Migrations, rep.Databases, rep.PublishSecs, rep.AppliedSecs, rep.PerSecond, rep.IndexedMS, rep.SearchableMS, rep.DeadLetters)
	return nil
}

// benchIngestFlags are one `bench ingest` run's flags.
type benchIngestFlags struct {
	nats                           natsFlags
	remote                         bool // --nats-url given: the run is embedded otherwise
	migrations, databases, workers int
	concurrency                    int
	yield                          float64
	timeout                        time.Duration
	asJSON                         bool
	profile                        string
}

func (b *benchIngestFlags) parse(e *env, args []string) error {
	fs := newFlags(e, "bench ingest", "[--migrations N] [--databases D] [--workers W] [--nats-url URL] [flags]")
	b.nats.register(fs, e)
	fs.IntVar(&b.migrations, "migrations", 300, "migrations per database, each creating one table")
	fs.IntVar(&b.databases, "databases", 1, "databases, published interleaved")
	fs.IntVar(&b.workers, "workers", 1, "embedded run: workers on the shared consumer (stand-ins for worker processes sharing one index)")
	fs.IntVar(&b.concurrency, "worker-concurrency", 0, "embedded run: each worker's concurrency (0: the default)")
	fs.Float64Var(&b.yield, "index-yield", 2, "embedded run: the embedded schemaq's --index-yield (0: indexing never gives way to requests)")
	fs.DurationVar(&b.timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.BoolVar(&b.asJSON, "json", false, "print one JSON object")
	fs.StringVar(&b.profile, "cpuprofile", "", "write a CPU profile of the whole run (the embedded schemaq included) to this file, for go tool pprof")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.migrations <= 0 || b.databases <= 0 || b.workers <= 0 {
		return usagef("bench ingest: --migrations, --databases and --workers must be positive")
	}
	fs.Visit(func(f *flag.Flag) { b.remote = b.remote || f.Name == "nats-url" })
	return nil
}

// target connects to the schemaq given by --nats-url, or starts an
// embedded one of its own in a temporary directory; stop closes what it
// opened.
func (b *benchIngestFlags) target(ctx context.Context, rep *ingestReport) (nc *nats.Conn, stop func(), err error) {
	if b.remote {
		if nc, err = b.nats.connect(zap.NewNop()); err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	dir, err := os.MkdirTemp("", "schemaq-ingest-")
	if err != nil {
		return nil, nil, err
	}
	var r roleFlags
	rfs := flag.NewFlagSet("bench", flag.ContinueOnError)
	if err := r.register(rfs, &env{getenv: func(string) string { return "" }}, "json", false, roleSet{worker: true, serve: true}); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	*r.dataDir = dir
	r.workers = b.workers
	r.indexYield = b.yield
	if b.concurrency > 0 {
		r.worker.Concurrency = b.concurrency
	}
	rep.Workers, rep.Concurrency = b.workers, r.worker.Concurrency
	em, err := startEmbedded(ctx, &r, zap.NewNop(), "", 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	stop = func() {
		if nc != nil {
			nc.Close()
		}
		em.shutdown() //nolint:errcheck // the report is what matters
		os.RemoveAll(dir)
	}
	if nc, err = em.connect(); err != nil {
		stop()
		return nil, nil, err
	}
	return nc, stop, nil
}

// ingestRun is one generated history on its way through a schemaq.
type ingestRun struct {
	cli   *client.Client
	js    jetstream.JetStream
	n     int      // migrations per database
	names []string // the databases
	rep   *ingestReport

	mu       sync.Mutex
	firstErr error
}

// benchIngest publishes a generated history of n one-table migrations to
// each of dbs fresh databases, interleaved, and measures it.
func benchIngest(ctx context.Context, nc *nats.Conn, n, dbs int, rep *ingestReport) error {
	cli, err := client.New(nc)
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	run := time.Now().UnixNano() % 1_000_000
	r := &ingestRun{cli: cli, js: js, n: n, names: make([]string, dbs), rep: rep}
	for d := range r.names {
		r.names[d] = fmt.Sprintf("ingest-%d-%d", run, d)
	}
	t0 := time.Now()
	if err := r.publish(ctx); err != nil {
		return err
	}
	rep.PublishSecs = time.Since(t0).Seconds()
	var wg sync.WaitGroup
	last, err := r.awaitApplied(ctx, &wg)
	if err != nil {
		return err
	}
	rep.AppliedSecs = last.Sub(t0).Seconds()
	rep.PerSecond = float64(rep.Migrations) / rep.AppliedSecs
	wg.Wait()
	if r.firstErr != nil {
		return r.firstErr
	}
	rep.DeadLetters = deadLetterCount(ctx, js, r.names)
	return nil
}

func ingestTable(i int) string { return fmt.Sprintf("ingest_table_%d", i) }

// publish sends migration i to every database before migration i+1.
func (r *ingestRun) publish(ctx context.Context) error {
	for i := 1; i <= r.n; i++ {
		sql := fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now()", ingestTable(i))
		if i > 1 {
			sql += fmt.Sprintf(", previous_id bigint REFERENCES %s", ingestTable(i-1))
		}
		sql += ");"
		for _, db := range r.names {
			ev, err := events.New(fmt.Sprintf("%s-%d", db, i), db, time.Now(),
				&events.Migration{Seq: int64(i), Source: fmt.Sprintf("%06d_%s.sql", i, ingestTable(i)), SQL: sql})
			if err != nil {
				return err
			}
			if _, err := r.cli.Publish(ctx, ev); err != nil {
				return fmt.Errorf("bench ingest: publish: %w", err)
			}
		}
	}
	return nil
}

// awaitApplied follows the catalog bucket's change feed until every
// database holds its last migration, starting a watchSearchable for each
// as it does; it returns when the last one was written. Polling the bucket
// for twenty databases took long enough to be charged to what it measured.
func (r *ingestRun) awaitApplied(ctx context.Context, wg *sync.WaitGroup) (time.Time, error) {
	var last time.Time
	kv, err := r.js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return last, fmt.Errorf("bench ingest: %w", err)
	}
	watcher, err := kv.WatchAll(ctx)
	if err != nil {
		return last, fmt.Errorf("bench ingest: %w", err)
	}
	defer watcher.Stop() //nolint:errcheck // the run is over
	letters := time.NewTicker(250 * time.Millisecond)
	defer letters.Stop()
	pending := make(map[string]bool, len(r.names))
	for _, db := range r.names {
		pending[db] = true
	}
	for len(pending) > 0 {
		select {
		case e, ok := <-watcher.Updates():
			if !ok {
				return last, fmt.Errorf("bench ingest: the catalog bucket's change feed ended")
			}
			if e == nil || !pending[e.Key()] || e.Operation() != jetstream.KeyValuePut {
				continue // nil: the feed has caught up with the bucket
			}
			if v, err := catalogkv.ValueVersion(e.Value()); err == nil && v == int64(r.n) {
				delete(pending, e.Key())
				last = later(last, e.Created())
				wg.Add(1)
				go r.watchSearchable(ctx, wg, e.Key(), e.Created())
			}
		case <-letters.C:
			if n := deadLetterCount(ctx, r.js, r.names); n > 0 {
				r.rep.DeadLetters = n
				return last, fmt.Errorf("bench ingest: %d migration(s) were dead-lettered; see `schemaq dlq list`", n)
			}
		case <-ctx.Done():
			return last, fmt.Errorf("bench ingest: %d of %d databases fully applied before the timeout", len(r.names)-len(pending), len(r.names))
		}
	}
	return last, nil
}

// watchSearchable measures when the last table of db is indexed and then
// found by search, from when its catalog was written at. Each database is
// watched from the moment its write is seen, not once all are: a database
// that finished early must not be charged the others' time.
func (r *ingestRun) watchSearchable(ctx context.Context, wg *sync.WaitGroup, db string, at time.Time) {
	defer wg.Done()
	indexed := func() bool {
		tb, err := r.cli.Tables(ctx, &events.TablesRequest{Database: db, Limit: 1})
		return err == nil && tb.Indexed >= int64(r.n)
	}
	if !poll(ctx, indexed) {
		return
	}
	r.record(&r.rep.IndexedMS, at)
	found := func() bool {
		res, err := r.cli.Search(ctx, &events.SearchRequest{Database: db, Question: ingestTable(r.n), K: 1, Kinds: []string{"table"}})
		return err == nil && len(res.Results) > 0 && res.Results[0].Name == "public."+ingestTable(r.n)
	}
	if !poll(ctx, found) {
		r.mu.Lock()
		r.firstErr = fmt.Errorf("bench ingest: %s's last migration was not searchable before the timeout", db)
		r.mu.Unlock()
		return
	}
	r.record(&r.rep.SearchableMS, at)
}

// record keeps the worst database's time since at in field.
func (r *ingestRun) record(field *float64, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*field = max(*field, float64(time.Since(at).Microseconds())/1000)
}

// poll asks done every 2 ms until it says yes (true) or ctx ends (false).
func poll(ctx context.Context, done func() bool) bool {
	for !done() {
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func deadLetterCount(ctx context.Context, js jetstream.JetStream, dbs []string) uint64 {
	s, err := js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		return 0
	}
	var total uint64
	for _, db := range dbs {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(events.DeadLetterSubject(db)))
		if err == nil {
			total += info.State.Subjects[events.DeadLetterSubject(db)]
		}
	}
	return total
}
