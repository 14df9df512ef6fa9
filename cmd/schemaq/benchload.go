package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/benchmark"
	"github.com/schemaq/schemaq/pkg/client"
)

// benchSystem is a running schemaq to load: embedded from a schema file
// in a temporary directory, or the one at --nats-url.
type benchSystem struct {
	cli   *client.Client
	db    string
	close func()
}

type benchSystemFlags struct {
	nats    natsFlags
	schema  *string
	db      *string
	profile *string
	tables  *int
	// llm configures the embedded daemon's gateway (bench ask).
	llm   *llmFlags
	yield *float64
}

func (b *benchSystemFlags) register(fs *flag.FlagSet, e *env) {
	b.nats.register(fs, e)
	b.schema = fs.String("schema", "", "schema SQL: run an embedded schemaq in a temporary directory with it as a snapshot (otherwise use --nats-url and --db)")
	b.db = fs.String("db", "bench", "database name")
	b.tables = fs.Int("tables", 0, "with --schema: copy the schema into renamed schemas until it has at least this many tables, to measure at sizes no fixture has")
	b.profile = fs.String("cpuprofile", "", "write a CPU profile of the whole run (the embedded schemaq included) to this file, for go tool pprof")
	b.yield = fs.Float64("index-yield", 2, "with --schema: the embedded schemaq's --index-yield (0: indexing never gives way to searches)")
}

func (b *benchSystemFlags) start(ctx context.Context, e *env) (*benchSystem, error) {
	if err := events.ValidateDatabase(*b.db); err != nil {
		return nil, usagef("--db: %v", err)
	}
	stopProfile, err := startCPUProfile(*b.profile)
	if err != nil {
		return nil, err
	}
	sys, err := b.startSystem(ctx, e)
	if err != nil {
		stopProfile()
		return nil, err
	}
	closeSys := sys.close
	sys.close = func() { stopProfile(); closeSys() }
	return sys, nil
}

func (b *benchSystemFlags) startSystem(ctx context.Context, e *env) (*benchSystem, error) {
	if *b.tables > 0 && *b.schema == "" {
		return nil, usagef("--tables copies the --schema file: give one")
	}
	if *b.schema == "" {
		nc, err := b.nats.connect(zap.NewNop())
		if err != nil {
			return nil, err
		}
		cli, err := client.New(nc)
		if err != nil {
			nc.Close()
			return nil, err
		}
		return &benchSystem{cli: cli, db: *b.db, close: nc.Close}, nil
	}
	raw, err := os.ReadFile(*b.schema)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	sql := string(raw)
	if *b.tables > 0 {
		copies, err := benchmark.Replicate(sql, *b.tables)
		if err != nil {
			return nil, fmt.Errorf("bench: --tables: %w", err)
		}
		sql = strings.Join(copies.Scripts, "\n")
	}
	dir, err := os.MkdirTemp("", "schemaq-bench-")
	if err != nil {
		return nil, err
	}
	var r roleFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	if err := r.register(fs, &env{getenv: func(string) string { return "" }}, "json", false, roleSet{worker: true, serve: true}); err != nil {
		return nil, err
	}
	*r.dataDir = dir
	r.daemon.MaxConcurrent = 256
	r.indexYield = *b.yield
	if b.llm != nil {
		r.llm = *b.llm
	}
	em, err := startEmbedded(ctx, &r, zap.NewNop(), "", 0)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cleanup := func() { _ = em.shutdown(); os.RemoveAll(dir) }
	nc, err := em.connect()
	if err != nil {
		cleanup()
		return nil, err
	}
	cli, _ := client.New(nc)
	ev, err := events.New("bench-snapshot", *b.db, time.Now(), &events.Snapshot{Seq: 1, Source: *b.schema, SQL: sql})
	if err != nil {
		cleanup()
		return nil, err
	}
	if _, err := cli.Publish(ctx, ev); err != nil {
		cleanup()
		return nil, err
	}
	fmt.Fprintf(e.stderr, "indexing %s … ", *b.schema)
	t0 := time.Now()
	for {
		tb, err := cli.Tables(ctx, &events.TablesRequest{Database: *b.db, Limit: 1})
		if err == nil && tb.Version == 1 && tb.Indexed >= 1 {
			if s, err := cli.Search(ctx, &events.SearchRequest{Database: *b.db, Question: "x y z", K: 1}); err == nil && s != nil {
				break
			}
		}
		if time.Since(t0) > 10*time.Minute {
			cleanup()
			return nil, fmt.Errorf("bench: the snapshot was not indexed within 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(e.stderr, "%.2fs\n", time.Since(t0).Seconds())
	return &benchSystem{cli: cli, db: *b.db, close: func() { nc.Close(); cleanup() }}, nil
}

// loadFlags are the flags of a load run.
type loadFlags struct {
	questions   *string
	concurrency *int
	duration    *time.Duration
	timeout     *time.Duration
	k           *int
	asJSON      *bool
}

func (l *loadFlags) register(fs *flag.FlagSet, timeout time.Duration) {
	l.questions = fs.String("questions", "", "questions JSONL in the benchmark format: question and gold_tables (required)")
	l.concurrency = fs.Int("concurrency", 8, "requests in flight")
	l.duration = fs.Duration("duration", 10*time.Second, "how long to issue requests; those in flight at the end are waited for and counted")
	l.timeout = fs.Duration("timeout", timeout, "deadline of one request: one without a reply by then counts as timed out")
	l.k = fs.Int("k", 10, "results per request")
	l.asJSON = fs.Bool("json", false, "print one JSON object")
}

func (l *loadFlags) read(name string) ([]benchmark.Question, error) {
	if *l.questions == "" || *l.concurrency <= 0 || *l.duration <= 0 || *l.timeout <= 0 {
		return nil, usagef("%s: --questions and a positive --concurrency, --duration and --timeout are required", name)
	}
	return readQuestions(name, *l.questions)
}

// readQuestions reads a questions JSONL file.
func readQuestions(name, path string) ([]benchmark.Question, error) {
	qf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer qf.Close()
	return benchmark.ReadQuestions(qf)
}

// run loads s with call and prints the report.
func (l *loadFlags) run(ctx context.Context, e *env, what string, call func(ctx context.Context, i int) error) error {
	rep := benchmark.Load(ctx, benchmark.LoadConfig{Concurrency: *l.concurrency, Duration: *l.duration, Timeout: *l.timeout, Code: errorCode}, call)
	if *l.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fmt.Fprintf(e.stdout, "%d %s in %.1fs at concurrency %d: %d answered (%.0f/s), %d failed, %d timed out (deadline %v)\nlatency ms of answered: p50 %.2f  p95 %.2f  p99 %.2f\n",
		rep.Requests, what, rep.Seconds, rep.Concurrency, rep.Answered, rep.Throughput, rep.Failed, rep.TimedOut, *l.timeout,
		rep.LatencyMS["p50"], rep.LatencyMS["p95"], rep.LatencyMS["p99"])
	if len(rep.FailedBy) > 0 {
		fmt.Fprintf(e.stdout, "failed by code: %v\n", rep.FailedBy)
	}
	if rep.FirstError != "" {
		fmt.Fprintf(e.stdout, "first error: %s\n", rep.FirstError)
	}
	return nil
}

// errorCode names a failed request by its wire error code.
func errorCode(err error) string {
	var we *events.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}

// runBenchSearch loads the search endpoint: the retrieval the daemon
// serves for ask, measurable without a paid gateway.
func runBenchSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench search", "(--schema FILE.sql | --nats-url URL --db NAME) --questions FILE.jsonl [flags]")
	var sys benchSystemFlags
	sys.register(fs, e)
	var lf loadFlags
	lf.register(fs, 5*time.Second)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	qs, err := lf.read("bench search")
	if err != nil {
		return err
	}
	s, err := sys.start(ctx, e)
	if err != nil {
		return err
	}
	defer s.close()
	return lf.run(ctx, e, "searches", func(ctx context.Context, i int) error {
		_, err := s.cli.Search(ctx, &events.SearchRequest{Database: s.db, Question: qs[i%len(qs)].Question, K: *lf.k})
		return err
	})
}

// errRetrievalOnly fails an ask that came back without SQL: the daemon
// has no gateway, so it measured retrieval, not ask.
var errRetrievalOnly = &events.Error{Code: "retrieval_only", Message: "the daemon has no LLM gateway: the reply carries context, not SQL"}

// runBenchAsk loads the ask endpoint with a real gateway: the embedded
// daemon's (--gateway) or the running daemon's (--nats-url). Without one
// it stands for `bench search`, its old meaning.
func runBenchAsk(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "bench ask", "(--schema FILE.sql --gateway URL --model NAME | --nats-url URL --db NAME) --questions FILE.jsonl [flags]")
	var sys benchSystemFlags
	sys.register(fs, e)
	var lf loadFlags
	lf.register(fs, 2*time.Minute)
	var llm llmFlags
	if err := llm.register(flag.NewFlagSet("llm", flag.ContinueOnError), e); err != nil {
		return err
	}
	fs.StringVar(&llm.baseURL, "gateway", "", "OpenAI-compatible endpoint the embedded daemon asks (key: SCHEMAQ_LLM_API_KEY); with --nats-url the running daemon's gateway is used")
	fs.StringVar(&llm.model, "model", envString(e, "SCHEMAQ_LLM_MODEL", ""), "chat model of --gateway [SCHEMAQ_LLM_MODEL]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *sys.schema != "" && llm.baseURL == "" {
		fmt.Fprintln(e.stderr, "bench ask: no --gateway, so this measures search (`bench search`); give --gateway URL --model NAME to measure asks")
		return runBenchSearch(ctx, e, args)
	}
	if llm.baseURL != "" {
		if *sys.schema == "" {
			return usagef("bench ask: --gateway configures the embedded daemon of --schema; a daemon at --nats-url asks its own gateway")
		}
		if llm.model == "" {
			return usagef("bench ask: --gateway needs --model")
		}
		sys.llm = &llm
	}
	qs, err := lf.read("bench ask")
	if err != nil {
		return err
	}
	s, err := sys.start(ctx, e)
	if err != nil {
		return err
	}
	defer s.close()
	return lf.run(ctx, e, "asks", func(ctx context.Context, i int) error {
		r, err := s.cli.Ask(ctx, &events.AskRequest{Database: s.db, Question: qs[i%len(qs)].Question, K: *lf.k})
		if err == nil && (r.RetrievalOnly || r.SQL == "") {
			return errRetrievalOnly
		}
		return err
	})
}

// runBenchFreshness is parse, start or reach a schemaq, publish probe
// migrations (under a search load when asked), print.
func runBenchFreshness(ctx context.Context, e *env, args []string) error {
	var f freshnessFlags
	if err := f.parse(e, args); err != nil {
		return err
	}
	s, err := f.sys.start(ctx, e)
	if err != nil {
		return err
	}
	defer s.close()
	tb, err := s.cli.Tables(ctx, &events.TablesRequest{Database: s.db, Limit: 1})
	if err != nil {
		return fmt.Errorf("bench freshness: %w", err)
	}
	r := &freshnessRun{s: s, f: &f}
	if f.flood > 0 {
		if err := r.startFlood(ctx); err != nil {
			return err
		}
	}
	if f.searchC > 0 {
		err = r.underLoad(ctx, tb.Version)
	} else {
		r.lat, err = r.ingest(ctx, tb.Version, f.n)
	}
	if err != nil {
		return err
	}
	if err := r.floodState(ctx); err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(e.stdout).Encode(r.json())
	}
	r.print(e)
	return nil
}

// freshnessFlags are one `bench freshness` run's flags.
type freshnessFlags struct {
	sys     benchSystemFlags
	n       int
	asJSON  bool
	searchC int
	timeout time.Duration
	qs      []benchmark.Question
	// flood is how many migrations another database publishes at once
	// before the probes: their freshness then says whether one team's
	// flood holds another's migrations back.
	flood int
}

func (f *freshnessFlags) parse(e *env, args []string) error {
	fs := newFlags(e, "bench freshness", "[--schema FILE.sql | --nats-url URL --db NAME] [flags]")
	f.sys.register(fs, e)
	fs.IntVar(&f.n, "migrations", 50, "how many migrations to publish, one at a time")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fs.IntVar(&f.searchC, "search-concurrency", 0, "also run searches at this concurrency while the migrations land, and before them for as long (idle), to measure search under ingest (needs --questions)")
	questions := fs.String("questions", "", "questions JSONL (field question) for --search-concurrency")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "deadline of one search of --search-concurrency")
	fs.IntVar(&f.flood, "flood", 0, "first have another database (NAME-flood) publish this many migrations at once, to measure the probes' freshness behind another team's flood")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.n <= 0 {
		return usagef("--migrations must be positive")
	}
	if f.flood < 0 {
		return usagef("--flood must be zero or more, got %d", f.flood)
	}
	if *f.sys.schema == "" && f.sys.nats.url == "" {
		return usagef("bench freshness: give --schema or --nats-url")
	}
	if f.searchC <= 0 {
		return nil
	}
	if *questions == "" {
		return usagef("bench freshness: --search-concurrency needs --questions")
	}
	if f.timeout <= 0 {
		return usagef("bench freshness: --timeout must be positive")
	}
	var err error
	f.qs, err = readQuestions("bench freshness", *questions)
	return err
}

// freshnessRun is one run's system and measurements.
type freshnessRun struct {
	s           *benchSystem
	f           *freshnessFlags
	lat         []time.Duration
	idle, under *benchmark.LoadReport
	// floodFrom is the flood database's version before its flood;
	// floodAt, after the probes.
	floodFrom, floodAt int64
}

// floodDB is the database that floods.
func (r *freshnessRun) floodDB() string { return r.s.db + "-flood" }

// startFlood publishes --flood migrations to the flood database, as fast
// as the stream takes them, and returns without waiting for them.
func (r *freshnessRun) startFlood(ctx context.Context) error {
	db := r.floodDB()
	if tb, err := r.s.cli.Tables(ctx, &events.TablesRequest{Database: db, Limit: 1}); err == nil {
		r.floodFrom = tb.Version // a database the last run flooded
	}
	run := time.Now().UnixNano()
	for i := 1; i <= r.f.flood; i++ {
		seq := r.floodFrom + int64(i)
		ev, err := events.New(fmt.Sprintf("flood-%d-%d", run, i), db, time.Now(),
			&events.Migration{Seq: seq, Source: fmt.Sprintf("flood_%d.sql", seq), SQL: fmt.Sprintf("CREATE TABLE flood_%d (id int PRIMARY KEY, note text);", seq)})
		if err != nil {
			return fmt.Errorf("bench freshness: flood: %w", err)
		}
		if _, err := r.s.cli.Publish(ctx, ev); err != nil {
			return fmt.Errorf("bench freshness: flood: %w", err)
		}
	}
	return nil
}

// floodState reads how far the flood had got when the probes ended.
func (r *freshnessRun) floodState(ctx context.Context) error {
	if r.f.flood == 0 {
		return nil
	}
	tb, err := r.s.cli.Tables(ctx, &events.TablesRequest{Database: r.floodDB(), Limit: 1})
	if err != nil && !errors.Is(err, &events.Error{Code: events.CodeUnknownDatabase}) {
		return fmt.Errorf("bench freshness: flood: %w", err)
	}
	if err == nil {
		r.floodAt = tb.Version
	}
	return nil
}

// ingest publishes count probe migrations after version first, one at a
// time, each timed until a search finds its table.
func (r *freshnessRun) ingest(ctx context.Context, first int64, count int) ([]time.Duration, error) {
	run := time.Now().UnixNano()
	var lat []time.Duration
	for i := 1; i <= count; i++ {
		seq := first + int64(i)
		table := fmt.Sprintf("freshness_probe_%d_%d", run%100000, i)
		ev, err := events.New(fmt.Sprintf("fresh-%d-%d", run, i), r.s.db, time.Now(),
			&events.Migration{Seq: seq, Source: table + ".sql", SQL: "CREATE TABLE " + table + " (probe_id int, observed_at timestamptz);"})
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if _, err := r.s.cli.Publish(ctx, ev); err != nil {
			return nil, err
		}
		if err := r.awaitSearchable(ctx, seq, table, t0); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// awaitSearchable polls with the tables listing, which says what the
// index reflects at a fraction of a search's cost, and confirms with a
// search: polled by searches alone, the probe was a search load of its
// own on the ingest it measures.
func (r *freshnessRun) awaitSearchable(ctx context.Context, seq int64, table string, since time.Time) error {
	for {
		tb, err := r.s.cli.Tables(ctx, &events.TablesRequest{Database: r.s.db, Limit: 1})
		if err == nil && tb.Indexed >= seq {
			res, err := r.s.cli.Search(ctx, &events.SearchRequest{Database: r.s.db, Question: table, K: 1, Kinds: []string{"table"}})
			if err == nil && len(res.Results) > 0 && res.Results[0].Name == "public."+table {
				return nil
			}
		}
		if time.Since(since) > 30*time.Second {
			return fmt.Errorf("bench freshness: migration %d was not searchable within 30s", seq)
		}
		time.Sleep(time.Millisecond)
	}
}

// underLoad runs the search load first idle, for as long as the ingest
// took the first time round (a quick calibration run), then during the
// ingest.
func (r *freshnessRun) underLoad(ctx context.Context, version int64) error {
	search := func(ctx context.Context, i int) error {
		_, err := r.s.cli.Search(ctx, &events.SearchRequest{Database: r.s.db, Question: r.f.qs[i%len(r.f.qs)].Question, K: 10})
		return err
	}
	loadCfg := benchmark.LoadConfig{Concurrency: r.f.searchC, Timeout: r.f.timeout, Code: errorCode}
	t0 := time.Now()
	if _, err := r.ingest(ctx, version, 3); err != nil {
		return err
	}
	loadCfg.Duration = max(time.Since(t0)/3*time.Duration(r.f.n), 2*time.Second)
	idle := benchmark.Load(ctx, loadCfg, search)
	r.idle = &idle
	stop := make(chan struct{})
	loadCfg.Duration, loadCfg.Stop = time.Hour, stop
	done := make(chan benchmark.LoadReport, 1)
	go func() { done <- benchmark.Load(ctx, loadCfg, search) }()
	var err error
	r.lat, err = r.ingest(ctx, version+3, r.f.n)
	close(stop)
	under := <-done
	r.under = &under
	return err
}

func (r *freshnessRun) json() map[string]any {
	out := map[string]any{"migrations": r.f.n, "freshness_ms": benchmark.Percentiles(r.lat)}
	if r.f.flood > 0 {
		out["flood"] = map[string]any{"migrations": r.f.flood, "applied_when_probes_ended": r.floodAt - r.floodFrom}
	}
	if r.under != nil {
		out["search_idle"], out["search_during_ingest"] = r.idle, r.under
		out["search_kept"] = keptShare(r.idle, r.under)
	}
	return out
}

func (r *freshnessRun) print(e *env) {
	p := benchmark.Percentiles(r.lat)
	fmt.Fprintf(e.stdout, "%d migrations, publish → searchable ms: p50 %.1f  p95 %.1f  p99 %.1f  max %.1f\n", r.f.n, p["p50"], p["p95"], p["p99"], p["max"])
	if r.f.flood > 0 {
		fmt.Fprintf(e.stdout, "behind a flood of %d migrations to %s, %d of them applied when the probes ended\n", r.f.flood, r.floodDB(), r.floodAt-r.floodFrom)
	}
	if r.under == nil {
		return
	}
	for _, l := range []struct {
		what string
		rep  *benchmark.LoadReport
	}{{"idle", r.idle}, {"during ingest", r.under}} {
		fmt.Fprintf(e.stdout, "search %s at concurrency %d: %.0f/s, p50 %.2f  p99 %.2f ms, %d failed, %d timed out\n",
			l.what, l.rep.Concurrency, l.rep.Throughput, l.rep.LatencyMS["p50"], l.rep.LatencyMS["p99"], l.rep.Failed, l.rep.TimedOut)
	}
	fmt.Fprintf(e.stdout, "search kept %.0f%% of its idle throughput during the ingest\n", 100*keptShare(r.idle, r.under))
}

// keptShare is the throughput under ingest as a share of idle.
func keptShare(idle, under *benchmark.LoadReport) float64 {
	if idle.Throughput == 0 {
		return 0
	}
	return float64(int(1000*under.Throughput/idle.Throughput)) / 1000
}

// startCPUProfile writes a CPU profile to path until stop ("": none).
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
