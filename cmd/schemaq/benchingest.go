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

func runBenchIngest(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench ingest", "[--migrations N] [--databases D] [--workers W] [--nats-url URL] [flags]")
	var nf natsFlags
	nf.register(fs, e) // used only when --nats-url is given: the run is embedded otherwise
	n := fs.Int("migrations", 300, "migrations per database, each creating one table")
	dbs := fs.Int("databases", 1, "databases, published interleaved")
	nworkers := fs.Int("workers", 1, "embedded run: workers on the shared consumer (stand-ins for worker processes sharing one index)")
	concurrency := fs.Int("worker-concurrency", 0, "embedded run: each worker's concurrency (0: the default)")
	yield := fs.Float64("index-yield", 2, "embedded run: the embedded schemaq's --index-yield (0: indexing never gives way to requests)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print one JSON object")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (the embedded schemaq included) to this file, for go tool pprof")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(*profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	if *n <= 0 || *dbs <= 0 || *nworkers <= 0 {
		return usagef("bench ingest: --migrations, --databases and --workers must be positive")
	}
	rep := ingestReport{Migrations: *n * *dbs, Databases: *dbs}
	remote := false
	fs.Visit(func(f *flag.Flag) { remote = remote || f.Name == "nats-url" })
	var nc *nats.Conn
	if !remote {
		// An embedded schemaq of its own, in a temporary directory.
		dir, err := os.MkdirTemp("", "schemaq-ingest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		var r roleFlags
		rfs := flag.NewFlagSet("bench", flag.ContinueOnError)
		if err := r.register(rfs, &env{getenv: func(string) string { return "" }}, "json", false, roleSet{worker: true, serve: true}); err != nil {
			return err
		}
		*r.dataDir = dir
		r.workers = *nworkers
		r.indexYield = *yield
		if *concurrency > 0 {
			r.worker.Concurrency = *concurrency
		}
		rep.Workers, rep.Concurrency = *nworkers, r.worker.Concurrency
		em, err := startEmbedded(ctx, &r, zap.NewNop(), "", 0)
		if err != nil {
			return err
		}
		defer em.shutdown() //nolint:errcheck // the report is what matters
		if nc, err = em.connect(); err != nil {
			return err
		}
	} else {
		var err error
		if nc, err = nf.connect(zap.NewNop()); err != nil {
			return err
		}
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := benchIngest(ctx, nc, *n, *dbs, &rep); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fmt.Fprintf(e.stdout, "%d migrations into %d database(s): published in %.2fs, applied in %.2fs: %.0f/s; last migration indexed %.1f ms and searchable %.1f ms after it was applied; %d dead letter(s)\n",
		rep.Migrations, rep.Databases, rep.PublishSecs, rep.AppliedSecs, rep.PerSecond, rep.IndexedMS, rep.SearchableMS, rep.DeadLetters)
	return nil
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
	names := make([]string, dbs)
	for d := range names {
		names[d] = fmt.Sprintf("ingest-%d-%d", run, d)
	}
	table := func(i int) string { return fmt.Sprintf("ingest_table_%d", i) }
	t0 := time.Now()
	for i := 1; i <= n; i++ {
		sql := fmt.Sprintf("CREATE TABLE %s (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now()", table(i))
		if i > 1 {
			sql += fmt.Sprintf(", previous_id bigint REFERENCES %s", table(i-1))
		}
		sql += ");"
		for _, db := range names {
			ev, err := events.New(fmt.Sprintf("%s-%d", db, i), db, time.Now(),
				&events.Migration{Seq: int64(i), Source: fmt.Sprintf("%06d_%s.sql", i, table(i)), SQL: sql})
			if err != nil {
				return err
			}
			if _, err := cli.Publish(ctx, ev); err != nil {
				return fmt.Errorf("bench ingest: publish: %w", err)
			}
		}
	}
	rep.PublishSecs = time.Since(t0).Seconds()
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return fmt.Errorf("bench ingest: %w", err)
	}
	applied := make(map[string]time.Time, dbs)
	// Searchable: the last table of each database is found by search,
	// measured from when its catalog was written. Each database is
	// watched from the moment its write is seen, not once all are: a
	// database that finished early must not be charged the others' time.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	watch := func(db string, at time.Time) {
		defer wg.Done()
		for {
			tb, err := cli.Tables(ctx, &events.TablesRequest{Database: db, Limit: 1})
			if err == nil && tb.Indexed >= int64(n) {
				break
			}
			if ctx.Err() != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		mu.Lock()
		rep.IndexedMS = max(rep.IndexedMS, float64(time.Since(at).Microseconds())/1000)
		mu.Unlock()
		for {
			r, err := cli.Search(ctx, &events.SearchRequest{Database: db, Question: table(n), K: 1, Kinds: []string{"table"}})
			if err == nil && len(r.Results) > 0 && r.Results[0].Name == "public."+table(n) {
				break
			}
			if ctx.Err() != nil {
				mu.Lock()
				firstErr = fmt.Errorf("bench ingest: %s's last migration was not searchable before the timeout", db)
				mu.Unlock()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		mu.Lock()
		rep.SearchableMS = max(rep.SearchableMS, float64(time.Since(at).Microseconds())/1000)
		mu.Unlock()
	}
	// The catalog bucket's change feed says when each database's last
	// migration is written, as it happens: polling the bucket for twenty
	// databases took long enough to be charged to what it measured.
	watcher, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("bench ingest: %w", err)
	}
	defer watcher.Stop() //nolint:errcheck // the run is over
	letters := time.NewTicker(250 * time.Millisecond)
	defer letters.Stop()
	want := make(map[string]bool, dbs)
	for _, db := range names {
		want[db] = true
	}
	for len(applied) < dbs {
		select {
		case e, ok := <-watcher.Updates():
			if !ok {
				return fmt.Errorf("bench ingest: the catalog bucket's change feed ended")
			}
			if e == nil || !want[e.Key()] || e.Operation() != jetstream.KeyValuePut {
				continue // nil: the feed has caught up with the bucket
			}
			if _, seen := applied[e.Key()]; seen {
				continue
			}
			if v, err := catalogkv.ValueVersion(e.Value()); err == nil && v == int64(n) {
				applied[e.Key()] = e.Created()
				wg.Add(1)
				go watch(e.Key(), e.Created())
			}
		case <-letters.C:
			if letters := deadLetterCount(ctx, js, names); letters > 0 {
				rep.DeadLetters = letters
				return fmt.Errorf("bench ingest: %d migration(s) were dead-lettered; see `schemaq dlq list`", letters)
			}
		case <-ctx.Done():
			return fmt.Errorf("bench ingest: %d of %d databases fully applied before the timeout", len(applied), dbs)
		}
	}
	var last time.Time
	for _, at := range applied {
		last = later(last, at)
	}
	rep.AppliedSecs = last.Sub(t0).Seconds()
	rep.PerSecond = float64(rep.Migrations) / rep.AppliedSecs
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	rep.DeadLetters = deadLetterCount(ctx, js, names)
	return nil
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
