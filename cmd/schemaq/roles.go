package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index/redisearch"
	"github.com/schemaq/schemaq/pkg/natsconn"
	"github.com/schemaq/schemaq/pkg/objectgc"
	"github.com/schemaq/schemaq/pkg/pace"
	"github.com/schemaq/schemaq/pkg/redact"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/telemetry"
	"github.com/schemaq/schemaq/workers"
)

// roleFlags are the settings of the long-running roles.
type roleFlags struct {
	nats    natsFlags
	embed   embedFlags
	store   storeFlags
	llm     llmFlags
	log     logFlags
	dataDir *string
	// natsConfig is up's embedded server configuration file.
	natsConfig string
	worker     workers.Config
	daemon     daemon.Config
	shutdown   time.Duration
	metrics    string
	// replica: the daemon opens only once the worker has caught up, as
	// its index is its own.
	replica bool
	// workers is how many workers the process runs on its consumer (0
	// means 1): `bench ingest --workers` stands them in for worker
	// processes sharing one index.
	workers int
	// indexYield is how long indexing rests, as a multiple of each step,
	// while a daemon in the same process answers requests.
	indexYield float64
	// tokenBudget bounds the context a reply carries and a prompt shows.
	tokenBudget int
	// exampleWeight and docWeight say how much a team's worked examples
	// and docs count for the tables they name: a wiki about neighbouring
	// systems can mislead (docs/retrieval.md), and only its team knows.
	exampleWeight, docWeight float64
	// sweep tidies the object store where a worker runs.
	sweep objectgc.Config
}

// register declares the role flags; connect adds the NATS client flags,
// which `up` does not need (it runs its own server).
func (r *roleFlags) register(fs *flag.FlagSet, e *env, defLog string, connect bool) error {
	r.dataDir = dataDirFlag(fs, e)
	if connect {
		r.nats.register(fs, e)
	}
	if err := r.embed.register(fs, e); err != nil {
		return err
	}
	if err := r.store.register(fs, e); err != nil {
		return err
	}
	if err := r.llm.register(fs, e); err != nil {
		return err
	}
	r.log.register(fs, e, defLog)
	r.worker = workers.DefaultConfig
	r.daemon = daemon.DefaultConfig
	r.daemon.Version = version
	fs.IntVar(&r.worker.Concurrency, "worker-concurrency", r.worker.Concurrency, "databases one worker applies events of at once (each database's events apply one at a time, in order)")
	fs.DurationVar(&r.worker.GapTimeout, "gap-timeout", r.worker.GapTimeout, "how long a migration waits for a missing predecessor before it is dead-lettered (re-sent by itself once the predecessor applies); must exceed --ack-wait")
	fs.DurationVar(&r.worker.Consumer.AckWait, "ack-wait", r.worker.Consumer.AckWait, "JetStream ack wait")
	fs.IntVar(&r.worker.Consumer.MaxDeliver, "max-deliver", r.worker.Consumer.MaxDeliver, "deliveries before an event is dead-lettered")
	fs.BoolVar(&r.worker.StrictCatalog, "strict-catalog", envString(e, "SCHEMAQ_STRICT_CATALOG", "") == "1", "dead-letter a migration with a statement naming an object the catalog does not know, instead of skipping the statement as drift [SCHEMAQ_STRICT_CATALOG=1]")
	fs.DurationVar(&r.worker.MessageTimeout, "message-timeout", r.worker.MessageTimeout, "time limit of one event (must be below --ack-wait)")
	yield, err := envFloat(e, "SCHEMAQ_INDEX_YIELD", 2)
	if err != nil {
		return err
	}
	fs.Float64Var(&r.indexYield, "index-yield", yield, "in a process that both indexes and answers (up, serve): while requests are in flight, indexing rests this many times as long as each step took (at most 100 ms), so searches keep most of the CPU while migrations land; 0 turns it off [SCHEMAQ_INDEX_YIELD]")
	budget, err := envInt(e, "SCHEMAQ_TOKEN_BUDGET", 0)
	if err != nil {
		return err
	}
	fs.IntVar(&r.tokenBudget, "token-budget", budget, "bound on the context of a search or ask, in estimated tokens (4 bytes each): results are kept in rank order, then the inferred joins, while they fit, and a warning says what was cut; 0: no bound. Set it to what the model's context leaves after the instructions, question and answer [SCHEMAQ_TOKEN_BUDGET]")
	exw, err := envFloat(e, "SCHEMAQ_EXAMPLE_WEIGHT", retrieve.DefaultConfig.Fuse.ExampleWeight)
	if err != nil {
		return err
	}
	fs.Float64Var(&r.exampleWeight, "example-weight", exw, "how much the worked examples most like a question count for the tables their SQL reads, as a fused list's weight (BM25's is 1); 0: examples are context only [SCHEMAQ_EXAMPLE_WEIGHT]")
	dw, err := envFloat(e, "SCHEMAQ_DOC_WEIGHT", retrieve.DefaultConfig.Fuse.DocWeight)
	if err != nil {
		return err
	}
	fs.Float64Var(&r.docWeight, "doc-weight", dw, "how much the doc sections most like a question count for the tables they name (1: a section as strong as BM25's first table counts as that table); lower it when the docs describe other systems too; 0: docs are context only [SCHEMAQ_DOC_WEIGHT]")
	r.sweep = objectgc.DefaultConfig
	if r.sweep.Every, err = envDuration(e, "SCHEMAQ_SWEEP_EVERY", r.sweep.Every); err != nil {
		return err
	}
	if r.sweep.Grace, err = envDuration(e, "SCHEMAQ_SWEEP_GRACE", r.sweep.Grace); err != nil {
		return err
	}
	fs.DurationVar(&r.sweep.Every, "sweep-every", r.sweep.Every, "where a worker runs: how often to delete from the object store what nothing will read again (the SQL of big events the catalog is past, replaced catalogs); 0: never [SCHEMAQ_SWEEP_EVERY]")
	fs.DurationVar(&r.sweep.Grace, "sweep-grace", r.sweep.Grace, "how old an object must be before a sweep may delete it; it must exceed the longest publish [SCHEMAQ_SWEEP_GRACE]")
	fs.BoolVar(&r.daemon.AllowSystemCatalogs, "allow-system-catalogs", envString(e, "SCHEMAQ_ALLOW_SYSTEM_CATALOGS", "") == "1", "let an ask that asks for it (allow_system_catalogs) have SQL that reads pg_catalog, information_schema, reg* casts and the session's identity; off, such requests are narrowed to the database's own tables [SCHEMAQ_ALLOW_SYSTEM_CATALOGS=1]")
	fs.IntVar(&r.daemon.MaxConcurrent, "max-concurrent", r.daemon.MaxConcurrent, "requests one daemon serves at once before replying busy")
	fs.DurationVar(&r.daemon.RequestTimeout, "request-timeout", r.daemon.RequestTimeout, "deadline of one search or tables request")
	fs.DurationVar(&r.daemon.AskTimeout, "ask-timeout", 0, "deadline of one ask (default: with a gateway, two --llm-timeout for a call and its repair round, plus --request-timeout)")
	fs.DurationVar(&r.shutdown, "shutdown-timeout", 25*time.Second, "grace period after SIGTERM")
	fs.StringVar(&r.metrics, "metrics-addr", envString(e, "SCHEMAQ_METRICS_ADDR", ""), "serve /metrics, /healthz and /readyz on this address, e.g. :9090 [SCHEMAQ_METRICS_ADDR]")
	return nil
}

// check refuses role settings no flag parser catches, before anything
// connects.
func (r *roleFlags) check() error {
	if r.indexYield < 0 {
		return usagef("--index-yield must be zero or more, got %v", r.indexYield)
	}
	if r.tokenBudget < 0 {
		return usagef("--token-budget must be zero or more, got %d", r.tokenBudget)
	}
	if r.exampleWeight < 0 {
		return usagef("--example-weight must be zero or more, got %v", r.exampleWeight)
	}
	if r.docWeight < 0 {
		return usagef("--doc-weight must be zero or more, got %v", r.docWeight)
	}
	if r.sweep.Every < 0 {
		return usagef("--sweep-every must be zero (never) or more, got %v", r.sweep.Every)
	}
	if r.sweep.Grace <= 0 {
		return usagef("--sweep-grace must be more than zero, got %v", r.sweep.Grace)
	}
	return nil
}

// runtime is what the roles share once connected.
type runtime struct {
	log   *zap.Logger
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	objs  jetstream.ObjectStore // big catalogs and event payloads
	store indexStore
	check func(context.Context) error // the store's readiness probe
	close func() error                // releases the store
	emb   embed.Embedder              // chunks: cached in the index file, across restarts
	qemb  embed.Embedder              // questions: cached in memory only
	reg   *prometheus.Registry
	tel   *telemetry.Server
}

// open connects the runtime; writer says whether it runs a worker, which
// may build a new version of a shared index.
func (r *roleFlags) open(ctx context.Context, log *zap.Logger, nc *nats.Conn, writer bool) (*runtime, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := natsconn.CheckServer(ctx, nc, js); err != nil {
		return nil, err
	}
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		return nil, err
	}
	objs, err := streams.Objects(ctx, js)
	if err != nil {
		return nil, err
	}
	emb, err := r.embed.build()
	if err != nil {
		return nil, err
	}
	store, check, closeStore, err := r.store.openStore(ctx, log, *r.dataDir, emb.Model(), emb.Dimensions(), writer)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if ls, ok := store.(interface{ LeaseStats() redisearch.LeaseStats }); ok {
		leaseMetrics(reg, ls)
	}
	tel := telemetry.New(reg)
	tel.AddCheck("nats", telemetry.NATSCheck(nc))
	tel.AddCheck("store", telemetry.StoreCheck(check))
	// Chunk embeddings are cached in the index file, keyed by model and
	// content, so a re-index costs nothing. Questions are cached in memory
	// only: persisting them would put a write on every query and fill the
	// file with one-off questions.
	cached := telemetry.InstrumentEmbedder(reg, embed.NewCached(emb, store))
	questions := embed.NewCached(emb, embed.NewMemoryCache(10_000))
	return &runtime{log: log, nc: nc, js: js, kv: kv, objs: objs, store: store, check: check, close: closeStore, emb: cached, qemb: questions, reg: reg, tel: tel}, nil
}

// run runs the chosen roles until ctx ends or one of them returns, then
// shuts them down in order: intake stops (worker drains, service stops),
// in-flight work finishes, the connection drains, the store closes. Every
// way out, a failure while starting included, takes that same path.
func (rt *runtime) run(ctx context.Context, r *roleFlags, worker, serve bool) (err error) {
	g := newGroup(ctx)
	defer func() { err = rt.finish(ctx, g.Stop(err)) }()
	if err := r.check(); err != nil {
		return err
	}
	// What the configuration alone decides fails before anything starts.
	var query queryParts
	if serve {
		if query, err = r.queryParts(); err != nil {
			return err
		}
	}
	if r.metrics != "" {
		g.Go(func(ctx context.Context) error { return rt.tel.Serve(ctx, r.metrics) })
	}
	var dmn atomic.Pointer[daemon.Daemon]
	if serve {
		rt.addServiceCheck(&dmn)
	}
	var gate *pace.Gate // only where a daemon and a worker share the process
	if worker && serve {
		gate = pace.New(r.indexYield)
	}
	// The workers of this process write catalogs through one store; a
	// daemon here takes what they wrote from it instead of decoding it.
	var written *catalogkv.Store
	var caughtUp <-chan struct{}
	if worker {
		if written, caughtUp, err = rt.startWorkers(g, r, gate); err != nil {
			return err
		}
	}
	if serve {
		if r.replica && !rt.catchUp(g, caughtUp) {
			return nil
		}
		d, err := rt.startDaemon(g, r, query, written, gate)
		if err != nil || d == nil {
			return err
		}
		dmn.Store(d)
	}
	g.Wait()
	return nil
}

// queryParts are the daemon's parts built from configuration alone.
type queryParts struct {
	reranker rerank.Reranker
	asker    daemon.Asker
}

func (r *roleFlags) queryParts() (queryParts, error) {
	var q queryParts
	var err error
	if q.reranker, err = r.llm.reranker(); err != nil {
		return q, err
	}
	asker, err := r.llm.asker()
	if err != nil {
		return q, err
	}
	if asker != nil { // not a typed nil in the interface
		q.asker = asker
	}
	return q, nil
}

// addServiceCheck adds the service's readiness check. It exists from the
// start, so a replica still catching up reads as not ready rather than as
// ready without it.
func (rt *runtime) addServiceCheck(dmn *atomic.Pointer[daemon.Daemon]) {
	rt.tel.AddCheck("service", func(context.Context) error {
		d := dmn.Load()
		switch {
		case d == nil:
			return errors.New("not registered")
		case !d.Ready():
			return errors.New("not in the queue group: " + d.State())
		}
		return nil
	})
}

// startWorkers starts r.workers workers on one catalog store, and the
// object-store sweeper. It returns the store they write through and a
// channel closed once the first has caught up with the stream.
func (rt *runtime) startWorkers(g *group, r *roleFlags, gate *pace.Gate) (*catalogkv.Store, <-chan struct{}, error) {
	cfg := r.worker
	cfg.ShutdownTimeout = r.shutdown
	m := workers.NewMetrics(rt.reg)
	written := catalogkv.New(rt.kv, catalogkv.WithObjects(rt.objs))
	prio := workers.NewPriority()
	turns, err := streams.Sweeps(g.Context(), rt.js)
	if err != nil {
		return nil, nil, err
	}
	var caughtUp <-chan struct{}
	for i := range max(r.workers, 1) {
		w, err := workers.New(rt.js, written, rt.store, rt.emb, rt.log.Named("worker"), cfg,
			workers.WithMetrics(m), workers.WithPace(gate), workers.WithPriority(prio))
		if err != nil {
			return nil, nil, usagef("%v", err)
		}
		if i == 0 {
			rt.tel.AddCheck("consumer", telemetry.FlagCheck("not bound", w.Ready))
			caughtUp = w.CaughtUp()
		}
		g.Go(w.Run)
	}
	host, _ := os.Hostname()
	sw, err := objectgc.New(rt.js, written, rt.log.Named("sweep"), r.sweep, objectgc.WithMetrics(objectgc.NewMetrics(rt.reg)),
		objectgc.WithTurns(turns, host+"-"+nuid.Next()))
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	// A sweep that fails is logged and tried again; none at all
	// (--sweep-every 0) is a choice. Neither stops the workers.
	g.Background(func(ctx context.Context) { _ = sw.Run(ctx) })
	return written, caughtUp, nil
}

// catchUp waits until a replica's worker has caught up with the stream,
// so that it does not answer from a partial index; false if the group
// stopped first.
func (rt *runtime) catchUp(g *group, caughtUp <-chan struct{}) bool {
	rt.log.Info("replica catching up with the stream before it answers")
	select {
	case <-caughtUp:
		return true
	case <-g.Context().Done():
		return false
	}
}

// startDaemon loads the catalogs and starts the query service over them;
// nil if the group stopped while the catalogs loaded.
func (rt *runtime) startDaemon(g *group, r *roleFlags, q queryParts, written *catalogkv.Store, gate *pace.Gate) (*daemon.Daemon, error) {
	watcher, err := catalogkv.Watch(g.Context(), rt.kv, func(key string, err error) {
		rt.log.Warn("catalog does not decode; keeping the last good one", zap.String("db", key), zap.Error(err))
	}, catalogkv.WithObjects(rt.objs), catalogkv.WithLocal(written))
	if err != nil {
		return nil, err
	}
	select {
	case <-watcher.Ready():
	case <-g.Context().Done():
		return nil, nil
	case <-time.After(30 * time.Second):
		return nil, errors.New("catalogs did not load within 30s")
	}
	rcfg := retrieve.DefaultConfig
	rcfg.TokenBudget = r.tokenBudget
	rcfg.Fuse.ExampleWeight = r.exampleWeight
	rcfg.Fuse.DocWeight = r.docWeight
	if r.embed.baseURL != "" {
		rcfg.Fuse.KNNWeight = retrieve.NeuralKNNWeight
	}
	if q.reranker != nil {
		rcfg.Reranker = q.reranker
	}
	ret, err := retrieve.New(rt.store, rt.qemb, watcher, rcfg, retrieve.WithLogger(rt.log.Named("retrieve")))
	if err != nil {
		return nil, err
	}
	watcher.OnCatalog(ret.Warm)
	if r.daemon.AskTimeout == 0 && q.asker != nil {
		// An ask waits for the model, once and for one repair round;
		// the search deadline would cut a slow model short.
		r.daemon.AskTimeout = 2*r.llm.timeout + r.daemon.RequestTimeout
	}
	if q.asker != nil {
		rt.log.Info("LLM gateway configured", zap.String("base_url", redact.URL(r.llm.baseURL)), zap.String("model", r.llm.model))
	} else {
		rt.log.Info("no LLM gateway configured: ask is retrieval only (set SCHEMAQ_LLM_BASE_URL and SCHEMAQ_LLM_MODEL)")
	}
	d, err := daemon.New(rt.nc, watcher, rt.store, ret, q.asker, rt.log.Named("daemon"), r.daemon,
		daemon.WithMetrics(daemon.NewMetrics(rt.reg)), daemon.WithHealth(rt.check), daemon.WithPace(gate))
	if err != nil {
		return nil, usagef("%v", err)
	}
	g.Go(d.Run)
	return d, nil
}

// finish drains the connection and closes the store, the last steps of
// every shutdown.
func (rt *runtime) finish(ctx context.Context, err error) error {
	if derr := rt.nc.Drain(); derr != nil && !errors.Is(derr, nats.ErrConnectionClosed) {
		rt.log.Warn("drain nats", zap.Error(derr))
	}
	if cerr := rt.close(); cerr != nil {
		rt.log.Warn("close store", zap.Error(cerr))
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil // stopped while starting: a clean shutdown
	}
	return err
}

func runWorker(ctx context.Context, e *env, args []string) error {
	return runRole(ctx, e, args, "worker", true, false)
}

func runDaemon(ctx context.Context, e *env, args []string) error {
	return runRole(ctx, e, args, "daemon", false, true)
}

// runServe is a replica with its own index: a worker on a consumer of its
// own (so it sees every event) and a daemon over its local store. The
// catalog bucket's compare-and-set and the version guards make replicas
// converge: one applies a migration, the others find it a duplicate and
// project the stored catalog. Any number of replicas share one NATS, with
// no shared index store.
func runServe(ctx context.Context, e *env, args []string) error {
	return runRole(ctx, e, args, "serve", true, true)
}

func runRole(ctx context.Context, e *env, args []string, name string, worker, serve bool) error {
	fs := newFlags(e, name, "[flags]")
	var r roleFlags
	if err := r.register(fs, e, "json", true); err != nil {
		return err
	}
	var replica *string
	if name == "serve" {
		replica = fs.String("replica-id", envString(e, "SCHEMAQ_REPLICA_ID", ""), "this replica's name; its consumer is schemaq-replica-<id> [SCHEMAQ_REPLICA_ID] (default: the host name and a hash of the data directory, so two replicas on one host never share a consumer)")
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	if replica != nil && *replica == "" {
		*replica = defaultReplicaID(*r.dataDir)
	}
	if replica != nil && r.store.shared() {
		return usagef("serve keeps an index per replica; with a shared Redis index (--redis-url, SCHEMAQ_REDIS_URL) run `schemaq worker` and `schemaq daemon` instead")
	}
	if replica != nil {
		id := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, *replica)
		if id == "" {
			return usagef("--replica-id: give this replica a name")
		}
		r.worker.Consumer.Name = "schemaq-replica-" + id
		// A replica that is gone for a day loses its consumer; when it
		// comes back it replays the stream into a fresh index.
		r.worker.Consumer.InactiveThreshold = 24 * time.Hour
		r.replica = true
	}
	if worker && !r.store.shared() {
		// The index file is this process's alone.
		release, err := lockDataDir(*r.dataDir)
		if err != nil {
			return err
		}
		defer release()
	}
	log, err := r.log.build(e)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush
	nc, err := r.nats.connect(log)
	if err != nil {
		return err
	}
	rt, err := r.open(ctx, log, nc, worker)
	if err != nil {
		nc.Close()
		return err
	}
	log.Info("schemaq "+name+" starting", zap.String("version", version), zap.String("nats", nc.ConnectedUrlRedacted()),
		zap.String("data_dir", *r.dataDir), zap.String("embedder", rt.emb.Model()))
	return rt.run(ctx, &r, worker, serve)
}

// defaultReplicaID names a replica after its host and its data directory:
// stable across restarts (the consumer remembers how far its index got),
// and different for two replicas on one host, which cannot share a data
// directory (lockDataDir).
func defaultReplicaID(dataDir string) string {
	host, _ := os.Hostname()
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return host + "-" + hex.EncodeToString(sum[:4])
}

// runUp is the embedded default: NATS, worker, daemon and the SQLite
// store in one process.
func runUp(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "up", "[flags]")
	var r roleFlags
	if err := r.register(fs, e, "console", false); err != nil {
		return err
	}
	listen := fs.String("listen", envString(e, "SCHEMAQ_LISTEN", "127.0.0.1:4222"), "address of the embedded NATS server; beyond loopback it needs authorization: SCHEMAQ_NATS_TOKEN, SCHEMAQ_NATS_USER and SCHEMAQ_NATS_PASSWORD, or --nats-config [SCHEMAQ_LISTEN]")
	fs.StringVar(&r.natsConfig, "nats-config", envString(e, "SCHEMAQ_NATS_CONFIG", ""), "nats-server configuration file for the embedded server: accounts, users, permissions, TLS (its listen address and store come from --listen and --data-dir); in-process clients use SCHEMAQ_NATS_USER/_PASSWORD, _TOKEN or _CREDS [SCHEMAQ_NATS_CONFIG]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	// The embedded server's credentials, the ones its clients are given;
	// its own in-process clients present them too.
	r.nats.user, r.nats.password, r.nats.token, r.nats.creds = e.getenv("SCHEMAQ_NATS_USER"), e.getenv("SCHEMAQ_NATS_PASSWORD"),
		e.getenv("SCHEMAQ_NATS_TOKEN"), e.getenv("SCHEMAQ_NATS_CREDS")
	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return usagef("--listen: port %q is not a number", portStr)
	}
	log, err := r.log.build(e)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush
	em, err := startEmbedded(ctx, &r, log, host, port)
	if err != nil {
		return err
	}
	log.Info("schemaq up", zap.String("version", version), zap.String("nats", em.url),
		zap.String("data_dir", *r.dataDir))
	fmt.Fprintf(e.stderr, "schemaq is up: NATS on %s, data in %s. Publish with `schemaq publish`, ask with `schemaq ask`. Ctrl-C stops.\n", em.url, *r.dataDir)
	<-ctx.Done()
	return em.shutdown()
}
