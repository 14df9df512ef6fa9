package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index/redisearch"
	"github.com/schemaq/schemaq/pkg/memlimit"
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
	setMemoryLimit(log)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	if err := natsconn.CheckServer(ctx, nc, js); err != nil {
		return nil, err
	}
	scfg := streams.DefaultConfig
	scfg.Replicas = r.streamReplicas
	scfg.MaxEventsPerDatabase = int64(r.maxEvents)
	scfg.OnLimitKept = func(why string) { log.Warn("the event stream's default bound was not applied", zap.String("why", why)) }
	scfg.OnScale = func(asset string, from, to int) {
		log.Info("scaled a JetStream asset", zap.String("asset", asset), zap.Int("from_replicas", from), zap.Int("to_replicas", to))
	}
	kv, err := streams.Ensure(ctx, js, scfg)
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
	reg := processRegistry()
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

// setMemoryLimit gives the Go runtime a soft limit below the
// container's (package memlimit). The runtime reads GOMEMLIMIT from the
// process's own environment, so that is where an operator's setting is.
func setMemoryLimit(log *zap.Logger) {
	proc, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return // not Linux, or no cgroups: nothing to follow
	}
	set, err := memlimit.Apply(os.Getenv, "/sys/fs/cgroup", proc)
	switch {
	case err != nil:
		log.Warn("the container's memory limit cannot be read; the Go runtime has none (set GOMEMLIMIT)", zap.Error(err))
	case set > 0:
		log.Info("Go memory limit set below the container's", zap.Int64("bytes", set), zap.Float64("share", memlimit.Share))
	}
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
	if r.metrics != "" && r.metricsOptional {
		g.Background(func(ctx context.Context) {
			if err := rt.tel.Serve(ctx, r.metrics); err != nil {
				rt.log.Warn("no health or metrics endpoint: its default address is taken; set --metrics-addr (SCHEMAQ_METRICS_ADDR)", zap.String("addr", r.metrics), zap.Error(err))
			}
		})
	} else if r.metrics != "" {
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
	written := catalogkv.New(rt.kv, catalogkv.WithObjects(rt.objs), catalogkv.WithJetStream(rt.js))
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
	r.daemon.Store = "sqlite"
	if r.store.shared() {
		r.daemon.Store = "redis"
	}
	// Feedback is published as an example event, on this connection; the
	// console's examples, docs and check pages read the stream through it.
	pub, err := client.New(rt.nc)
	if err != nil {
		return nil, err
	}
	d, err := daemon.New(rt.nc, watcher, rt.store, ret, q.asker, rt.log.Named("daemon"), r.daemon,
		daemon.WithMetrics(daemon.NewMetrics(rt.reg)), daemon.WithHealth(rt.check), daemon.WithPace(gate), daemon.WithFeedback(pub), daemon.WithRecords(pub))
	if err != nil {
		return nil, usagef("%v", err)
	}
	g.Go(d.Run)
	if err := rt.serveHTTP(g, r, d); err != nil {
		return nil, err
	}
	return d, nil
}

// serveHTTP starts the HTTP API when an address is set. The port is
// bound before the daemon is published to the readiness check, so no
// probe passes while it refuses connections. Up's default address is
// optional: a port taken costs the API, with a warning.
func (rt *runtime) serveHTTP(g *group, r *roleFlags, d *daemon.Daemon) error {
	if r.http == "" {
		return nil
	}
	cfg := daemon.HTTPConfig{Token: r.httpToken, Tokens: r.httpTokens, TokensFile: r.httpTokensFile, Version: r.daemon.Version, AllowedHosts: r.httpHosts, Addr: r.http, NoConsole: r.httpNoConsole}
	ln, err := daemon.BindHTTP(r.http, cfg)
	switch {
	case err != nil && r.httpOptional:
		rt.log.Warn("no HTTP API: its default address is taken; set --http-addr (SCHEMAQ_HTTP_ADDR)", zap.String("addr", r.http), zap.Error(err))
		return nil
	case err != nil:
		return err
	}
	if r.httpOptional {
		g.Background(func(ctx context.Context) {
			if err := d.ServeHTTPOn(ctx, ln, cfg); err != nil {
				rt.log.Warn("the HTTP API stopped", zap.String("addr", r.http), zap.Error(err))
			}
		})
		return nil
	}
	g.Go(func(ctx context.Context) error { return d.ServeHTTPOn(ctx, ln, cfg) })
	return nil
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

// runRole is parse, refuse what cannot work, take the data directory,
// connect, run.
func runRole(ctx context.Context, e *env, args []string, name string, worker, serve bool) error {
	fs := newFlags(e, name, "[flags]")
	var r roleFlags
	if err := r.register(fs, e, "json", true, roleSet{worker: worker, serve: serve}); err != nil {
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
	if replica != nil {
		if err := r.asReplica(*replica); err != nil {
			return err
		}
	}
	if name == "daemon" {
		if err := r.daemonHasAWriter(); err != nil {
			return err
		}
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
	log.Info("schemaq "+name+" starting", zap.String("version", buildInfo().Version), zap.String("nats", nc.ConnectedUrlRedacted()),
		zap.String("data_dir", *r.dataDir), zap.String("embedder", rt.emb.Model()))
	return rt.run(ctx, &r, worker, serve)
}

// asReplica makes this process a serve replica named id (default: after
// its host and data directory), on a consumer of its own.
func (r *roleFlags) asReplica(id string) error {
	if r.store.shared() {
		return usagef("serve keeps an index per replica; with a shared Redis index (--redis-url, SCHEMAQ_REDIS_URL) run `schemaq worker` and `schemaq daemon` instead")
	}
	if id == "" {
		id = defaultReplicaID(*r.dataDir)
	}
	id = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, id)
	if id == "" {
		return usagef("--replica-id: give this replica a name")
	}
	r.worker.Consumer.Name = "schemaq-replica-" + id
	// A replica that is gone for a day loses its consumer; when it comes
	// back it replays the stream into a fresh index.
	r.worker.Consumer.InactiveThreshold = 24 * time.Hour
	r.replica = true
	return nil
}

// daemonHasAWriter refuses a daemon over a local index that no worker on
// this host writes: it would take its share of searches and answer them
// from an index nobody fills.
func (r *roleFlags) daemonHasAWriter() error {
	if r.store.shared() {
		return nil
	}
	if _, held := dataDirWriter(*r.dataDir); !held {
		return fmt.Errorf("daemon: no worker writes the index in %s (its lock is free), so this daemon would answer every search it takes from an empty or outdated index; run `schemaq worker --data-dir %s` on this host first, `schemaq serve` (a worker and a daemon in one process), or give workers and daemons a shared Redis index (SCHEMAQ_REDIS_URL)", *r.dataDir, *r.dataDir)
	}
	return nil
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
