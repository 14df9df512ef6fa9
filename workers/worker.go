// Package workers is the indexing worker: a durable JetStream pull
// consumer shared by any number of replicas. Per event it decodes, applies
// schema changes to the catalog (compare-and-set in the key-value bucket),
// chunks, embeds and writes the index, and only then acks.
//
// Ordering and idempotency follow DESIGN.md: events of one database are
// applied by one goroutine at a time, schema events in seq order (see
// queue.go). A migration whose seq is at or below the catalog's version is
// a duplicate (acked, after repairing the index if it lags the catalog);
// seq = version+1 is applied and recorded in the catalog's history; a
// higher seq is held, without spending deliveries, until its predecessor
// is applied here or by another worker, and dead-lettered as a gap letter
// when it never comes. Unparseable DDL and invalid events are dead-lettered
// at once with the reason. Nothing is dropped silently.
package workers

import (
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/indexer"
	"github.com/schemaq/schemaq/pkg/namewords"
	"github.com/schemaq/schemaq/pkg/pace"
	"github.com/schemaq/schemaq/pkg/pgtree"
	"github.com/schemaq/schemaq/pkg/sqlguard"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Store is what the worker needs of the index.
type Store interface {
	indexer.Writer
	Upsert(ctx context.Context, recs []index.Record) (int, error)
	// DeleteDatabase drops a retired database's chunks (forget).
	DeleteDatabase(ctx context.Context, db string) error
	Projected(ctx context.Context, db string) (int64, error)
	// Marks are the stream sequences of docs' and examples' newest events
	// applied, which name the events newer ones superseded (supersede.go).
	Marks(ctx context.Context, db, kind string, names []string) (map[string]int64, error)
}

// Config of a worker. Start from DefaultConfig.
type Config struct {
	Consumer streams.ConsumerConfig
	// Concurrency is how many databases one worker applies events of at
	// once; events of one database are applied one at a time, in order.
	Concurrency int
	// GapTimeout is how long a migration waits for its predecessor, from
	// the database's last progress, before it is dead-lettered as a gap
	// letter. It must exceed AckWait, so that events held by a worker that
	// died are redelivered to the others before they give up.
	GapTimeout time.Duration
	// MessageTimeout bounds the processing of one event; it must be
	// shorter than the consumer's AckWait.
	MessageTimeout time.Duration
	// RetryDelay is the first redelivery delay of an event that failed
	// for a passing reason; it doubles per delivery up to MaxRetryDelay.
	RetryDelay, MaxRetryDelay time.Duration
	// ShutdownTimeout bounds how long Run waits for in-flight events after
	// its context ends; what is unfinished then is naked for redelivery.
	ShutdownTimeout time.Duration
	MaxEventBytes   int
	Chunk           chunk.Options
	// AuditInterval is how often the worker compares every database's
	// projected version in the store with its catalog's and re-projects
	// the ones that lag (audit); 0 only at start. A store that lost writes
	// it had acknowledged (a Redis failover: replication is
	// asynchronous) is then repaired without waiting for the database's
	// next event.
	AuditInterval time.Duration
	// LaneAt is how many events one database's queue holds on a worker
	// before its later events of that kind move to a lane of their own,
	// out of the other databases' way (lanes.go); 0 opens none (lanes
	// that exist are still consumed and retired). MaxLanes bounds the
	// lanes beside each consumer; LaneQuiet is how long a lane has
	// nothing pending before it is retired.
	LaneAt, MaxLanes int
	LaneQuiet        time.Duration
	// MaxHeldBytes bounds the bytes of the events a worker holds (see
	// heldBytes); 0: no bound. One database's queue holding an eighth of
	// it moves to a lane, as LaneAt events do; lanes take no more while
	// the worker holds half, the worker consumers none while it holds
	// all.
	MaxHeldBytes int64
	// MaxWordsPerDatabase bounds the distinct words in the names of one
	// database's tables, views and columns (words.go); 0: no bound. A
	// migration or snapshot past it is refused.
	MaxWordsPerDatabase int
	// StrictCatalog refuses (dead-letters) a migration with a statement
	// naming an object the catalog does not know. By default such a
	// statement is skipped and recorded as drift on the catalog (see
	// catalog.Tolerant), so that DDL a replay cannot see does not stop a
	// history.
	StrictCatalog bool
	// KeepSuperseded keeps every event in the stream. By default an
	// event whose every doc or example a newer event replaced or
	// deleted, or a schema event an applied snapshot replaced, is
	// deleted from the stream (supersede.go).
	KeepSuperseded bool
}

// DefaultConfig suits most deployments.
var DefaultConfig = Config{
	Consumer: streams.DefaultConsumer, Concurrency: 8, GapTimeout: 2 * time.Minute, MessageTimeout: 20 * time.Second,
	RetryDelay: 100 * time.Millisecond, MaxRetryDelay: 5 * time.Second, ShutdownTimeout: 20 * time.Second,
	MaxEventBytes: events.DefaultMaxEventBytes, AuditInterval: time.Minute,
	LaneAt: 128, MaxLanes: 8, LaneQuiet: 30 * time.Second, MaxHeldBytes: 64 << 20,
	MaxWordsPerDatabase: DefaultMaxWordsPerDatabase,
}

// Validate checks the config, naming every problem.
func (c Config) Validate() error {
	var errs []error
	if c.Concurrency <= 0 {
		errs = append(errs, fmt.Errorf("worker concurrency must be positive, got %d", c.Concurrency))
	}
	if c.Consumer.MaxDeliver < 2 {
		errs = append(errs, fmt.Errorf("max deliver must be at least 2, got %d", c.Consumer.MaxDeliver))
	}
	if c.MessageTimeout <= 0 || c.MessageTimeout >= c.Consumer.AckWait {
		errs = append(errs, fmt.Errorf("message timeout (%v) must be positive and shorter than ack wait (%v)", c.MessageTimeout, c.Consumer.AckWait))
	}
	if c.GapTimeout <= c.Consumer.AckWait {
		errs = append(errs, fmt.Errorf("gap timeout (%v) must be longer than ack wait (%v)", c.GapTimeout, c.Consumer.AckWait))
	}
	if c.RetryDelay <= 0 || c.MaxRetryDelay < c.RetryDelay {
		errs = append(errs, fmt.Errorf("retry delays must be positive with max ≥ first, got %v and %v", c.RetryDelay, c.MaxRetryDelay))
	}
	if c.LaneAt < 0 || c.MaxLanes < 0 {
		errs = append(errs, fmt.Errorf("lane-at (%d) and max lanes (%d) must not be negative", c.LaneAt, c.MaxLanes))
	}
	if c.MaxHeldBytes != 0 && c.MaxHeldBytes < 8*int64(c.eventBytes()) {
		errs = append(errs, fmt.Errorf("max held bytes (%d) must be 0 or at least eight events of the largest size (%d)", c.MaxHeldBytes, 8*c.eventBytes()))
	}
	if c.MaxWordsPerDatabase < 0 {
		errs = append(errs, fmt.Errorf("max words per database must be 0 (no bound) or more, got %d", c.MaxWordsPerDatabase))
	}
	if c.LaneAt > 0 && c.LaneQuiet <= 0 {
		errs = append(errs, fmt.Errorf("lane quiet must be positive with lanes on, got %v", c.LaneQuiet))
	}
	return errors.Join(errs...)
}

// Worker consumes and applies events.
type Worker struct {
	js    jetstream.JetStream
	cats  *catalogkv.Store
	store Store
	emb   embed.Embedder
	// chunker renders catalogs, reusing the chunks of unchanged tables.
	chunker *chunk.Chunker
	// attempts marks redelivered events while they are handled (attempt.go);
	// nil when the bucket is missing. owner names this process in the
	// marks.
	attempts jetstream.KeyValue
	owner    string
	// intake is Run's context, which SIGTERM ends (interruptible).
	intake context.Context
	// pace makes indexing rest while a daemon in this process answers.
	pace *pace.Gate
	// prio has this process's projections go before its applies.
	prio  *Priority
	log   *zap.Logger
	cfg   Config
	locks sync.Map // database → *sync.Mutex
	m     *Metrics
	// Per-database queues (queue.go) and what bounds them.
	qmu    sync.Mutex
	queues map[string]*queue
	// refused holds each database's last migration this worker refused,
	// beyond its queue's life: events that arrive later and wait behind it
	// are dead-lettered at once, not after GapTimeout.
	refused map[string]outcome
	drains  sync.WaitGroup
	sem     chan struct{}
	ready   atomic.Bool
	// caughtUp closes once the index holds everything the stream held
	// when the worker started, so a replica opens for queries only then.
	caughtUp chan struct{}
	// lanes take a flooding database's events out of the others' way
	// (lanes.go).
	lanes     *lanes
	laneTimes laneTimes
	held      *heldBytes
	// words counts each database's words, for MaxWordsPerDatabase.
	words nameWords
	// objs is the object store of big payloads, bound on first use.
	objMu sync.Mutex
	objs  jetstream.ObjectStore
	// stream is the event stream, bound on first use: the lanes are
	// listed on it every second, and binding it reads its info.
	streamMu sync.Mutex
	stream   jetstream.Stream
	// compact deletes superseded events; nil with KeepSuperseded.
	compact *compactor
}

// Option configures a Worker.
type Option func(*Worker)

// WithMetrics records the worker's metrics in m.
func WithMetrics(m *Metrics) Option { return func(w *Worker) { w.m = m } }

// WithPace makes the worker rest after each apply and projection while
// requests are in flight on g: a daemon in the same process keeps most
// of the CPU for searches while migrations land (see package pace).
func WithPace(g *pace.Gate) Option { return func(w *Worker) { w.pace = g } }

// WithPriority shares p with the other workers of the process, so that a
// projection of any of them goes before an apply of any (see Priority).
func WithPriority(p *Priority) Option { return func(w *Worker) { w.prio = p } }

// rest gives way to foreground requests after a step that began at t0.
func (w *Worker) rest(ctx context.Context, t0 time.Time) {
	if d := w.pace.Rest(ctx, time.Since(t0)); d > 0 && w.m != nil {
		w.m.rested.Add(d.Seconds())
	}
}

// Ready reports whether the worker's consumer is bound and consuming.
func (w *Worker) Ready() bool { return w.ready.Load() }

// CaughtUp is closed once the stored catalogs are projected and the
// consumer has no undelivered events and none being applied. Events that
// wait for a gap to fill do not hold it shut for more than stuckWait: a
// shared index would not have them either.
func (w *Worker) CaughtUp() <-chan struct{} { return w.caughtUp }

const stuckWait = 30 * time.Second

// New builds a worker; it does not touch the network.
func New(js jetstream.JetStream, cats *catalogkv.Store, store Store, emb embed.Embedder, log *zap.Logger, cfg Config, opts ...Option) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil || cats == nil || store == nil || emb == nil || log == nil {
		return nil, errors.New("worker: jetstream, catalogs, store, embedder and logger are required")
	}
	w := &Worker{js: js, cats: cats, store: store, emb: emb, chunker: chunk.NewChunker(cfg.Chunk), log: log, cfg: cfg, caughtUp: make(chan struct{}),
		queues: map[string]*queue{}, refused: map[string]outcome{}, words: nameWords{dbs: map[string]*namewords.Counter{}, words: map[string]int{}}, sem: make(chan struct{}, cfg.Concurrency), owner: nuid.Next(),
		lanes: newLanes(), laneTimes: defaultLaneTimes, held: newHeldBytes(cfg.MaxHeldBytes)}
	for _, o := range opts {
		o(w)
	}
	if w.prio == nil {
		w.prio = NewPriority()
	}
	if !cfg.KeepSuperseded {
		w.compact = newCompactor(w.eventStream, store, cfg.eventBytes(), log, w.m)
	}
	return w, nil
}

// action is what to tell JetStream about a message.
type action int

const (
	actAck action = iota
	// actWait: the event is not applicable yet: its predecessor has not
	// been applied. It stays in its database's queue.
	actWait
	// actRetry: a transient failure (store, gateway, a concurrent write).
	actRetry
	// actDeadLetter: the event can never be applied.
	actDeadLetter
	// actPause: the event stays held, unsettled, and its database's
	// queue pauses before trying it again (pause.go).
	actPause
)

func (a action) String() string {
	return [...]string{"ack", "wait", "retry", "dead_letter", "pause"}[a]
}

// outcome is the result of handling one event.
type outcome struct {
	typ  string // the event type, once decoded
	act  action
	kind string // dead letters: one of the events.DLQKind constants
	// lettered: the dead letter is published already; settling only
	// terminates the message.
	lettered bool
	reason   string // why, for waits, retries and dead letters
	source   string // the migration source, when there is one
	db       string
	// Schema events: the event's seq, the catalog version it found (or,
	// when it wrote one, that one).
	seq, version int64
	// wrote is the catalog an applied schema event wrote; the queue
	// projects it into the index before the event is acked (queue.go).
	wrote    *catalog.Catalog
	wroteRev uint64 // its entry revision
	// conflict: the catalog write found another worker's write first.
	conflict bool
	// after, for a retry, is the least time before the next try: a mark
	// of another process is waited out, not retried against.
	after time.Duration
}

// Run consumes until ctx ends, then stops fetching, lets in-flight events
// finish within ShutdownTimeout and naks the rest. It returns nil after a
// clean shutdown.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := streams.EnsureConsumers(ctx, w.js, w.cfg.Consumer)
	if err != nil {
		return err
	}
	w.bindAttempts(ctx)
	w.intake = ctx
	// Processing gets its own context: SIGTERM stops intake, not the
	// events already being applied; they are cut only after the grace
	// period (an apply, which is all in memory, is cut at once: see
	// interruptible).
	workCtx, cancelWork := context.WithCancel(context.Background())
	defer cancelWork()
	if err := w.cats.Changes(ctx, w.catalogChanged); err != nil {
		return err
	}
	if err := w.cats.Retired(ctx, func(db string) { go w.forget(workCtx, db) }); err != nil {
		return err
	}
	intake, err := w.consume(ctx, workCtx, cons)
	if err != nil {
		return err
	}
	w.log.Info("worker started", zap.String("consumer", w.cfg.Consumer.SchemaName()), zap.String("docs_consumer", w.cfg.Consumer.DocsName()),
		zap.Int("concurrency", w.cfg.Concurrency))
	w.ready.Store(true)
	defer w.ready.Store(false)
	if w.compact != nil {
		go w.compact.run(ctx)
	}
	go func() {
		failed := w.reproject(workCtx)
		w.awaitCaughtUp(ctx, cons)
		w.promote(ctx, failed)
		w.auditEvery(ctx, w.cfg.AuditInterval)
	}()
	if w.m != nil {
		go w.watchConsumers(ctx, cons)
		go w.watchBound(ctx)
	}
	go w.watchLanes(ctx, workCtx)
	<-ctx.Done()
	// Drain: stop fetching; each queue finishes the event it is applying
	// and hands the rest back for redelivery, within the grace period.
	intake = append(intake, w.lanes.stop()...)
	for _, cc := range intake {
		cc.Drain()
	}
	done := make(chan struct{})
	go func() {
		for _, cc := range intake {
			<-cc.Closed()
		}
		w.drains.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(w.cfg.ShutdownTimeout):
		w.log.Warn("shutdown timeout: cancelling in-flight events; they will be redelivered")
		cancelWork()
		<-done
	}
	w.log.Info("worker stopped")
	return nil
}

// consume starts both consumers' deliveries into the databases'
// queues. The handler never blocks: events go to their database's
// queue, and each consumer's MaxAckPending bounds how many are held.
func (w *Worker) consume(ctx, workCtx context.Context, cons streams.Consumers) ([]jetstream.ConsumeContext, error) {
	var out []jetstream.ConsumeContext
	for _, c := range cons.All() {
		name := c.CachedInfo().Name
		cc, err := c.Consume(func(msg jetstream.Msg) { w.arrive(ctx, workCtx, msg) },
			w.pullLimit(max(256, w.cfg.Concurrency*32)), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if !errors.Is(err, jetstream.ErrNoHeartbeat) || ctx.Err() == nil {
					w.log.Warn("consume error", zap.String("consumer", name), zap.Error(err))
				}
			}))
		if err != nil {
			for _, cc := range out {
				cc.Stop()
			}
			return nil, fmt.Errorf("consume %s: %w", name, err)
		}
		out = append(out, cc)
	}
	return out, nil
}

// pullLimit bounds what a consumer's client buffers beyond what its
// handler took: by bytes when the worker bounds what it holds (a handler
// waiting for bytes leaves the rest of a pull in the buffer), else by
// messages.
func (w *Worker) pullLimit(messages int) jetstream.PullConsumeOpt {
	if w.cfg.MaxHeldBytes > 0 {
		return jetstream.PullMaxBytes(4 * w.cfg.eventBytes())
	}
	return jetstream.PullMaxMessages(messages)
}

// eventBytes is the largest event the worker takes: MaxEventBytes, or
// the default that decoding applies when it is 0.
func (c Config) eventBytes() int {
	if c.MaxEventBytes > 0 {
		return c.MaxEventBytes
	}
	return events.DefaultMaxEventBytes
}

// checker is a store with a readiness check that also repairs what it
// can (redisearch.Store).
type checker interface{ Check(context.Context) error }

// auditEvery audits the projections every interval until ctx ends.
func (w *Worker) auditEvery(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.audit(ctx)
		}
	}
}

// audit re-projects each database whose projected version in the store
// is below its catalog's. It reads versions only (an entry's header, the
// store's marker) and decodes a catalog only for a database that lags.
// The cause is a store that lost acknowledged writes: after a Redis
// failover the new primary may lack the old one's last projections, and
// its projected marker says so. Docs and examples lost that way are not
// found here; they come back with their next event or a rebuild.
func (w *Worker) audit(ctx context.Context) (fixed int) {
	// A store that lost everything, its record of the index version
	// included, gets that back first (the shared store's Check restores
	// it), so that the databases re-projected below are served.
	if c, ok := w.store.(checker); ok {
		_ = c.Check(ctx)
	}
	keys, err := w.cats.Keys(ctx)
	if err != nil {
		return 0
	}
	for _, db := range keys {
		v, _, err := w.cats.Version(ctx, db)
		if err != nil || v == 0 {
			continue
		}
		p, err := w.store.Projected(ctx, db)
		if err != nil || p >= v {
			continue
		}
		mu := w.lock(db)
		mu.Lock()
		cat, _, err := w.getCatalog(ctx, db)
		if err == nil {
			err = w.ensureProjected(ctx, cat)
		}
		mu.Unlock()
		if err != nil {
			w.log.Warn("audit: the index lags the catalog and could not be re-projected; the next audit retries",
				zap.String("db", db), zap.Int64("catalog_version", v), zap.Int64("projected_version", p), zap.Error(err))
			continue
		}
		fixed++
		w.log.Warn("audit: the index lagged its catalog (a store that lost acknowledged writes, as a Redis failover can); re-projected",
			zap.String("db", db), zap.Int64("catalog_version", v), zap.Int64("projected_version", p))
		if w.m != nil {
			w.m.repaired.Inc()
		}
	}
	return fixed
}

// reproject brings the index up to the stored state at start: every
// catalog in the bucket whose index lags is re-indexed, and after the
// store was rebuilt (a new layout or embedding model) docs and examples
// are replayed from the stream, in order, with their stream sequences as
// versions, so nothing has to be published again.
//
// It returns how many catalogs failed to project (-1: none could be
// listed), so that a rebuilt index is not promoted with gaps.
func (w *Worker) reproject(ctx context.Context) int {
	keys, err := w.cats.Keys(ctx)
	if err != nil {
		w.log.Warn("re-projection: cannot list catalogs", zap.Error(err))
		return -1
	}
	fixed, failed := 0, 0
	for _, db := range keys {
		mu := w.lock(db)
		mu.Lock()
		cat, _, err := w.getCatalog(ctx, db)
		if err == nil {
			var p int64
			if p, err = w.store.Projected(ctx, db); err == nil && p < cat.Version {
				err = w.ensureProjected(ctx, cat)
				fixed++
			}
		}
		mu.Unlock()
		if err != nil {
			failed++
			w.log.Warn("re-projection failed; the next event of the database retries it", zap.String("db", db), zap.Error(err))
		}
	}
	rebuilt, ok := w.store.(interface{ Rebuilt() bool })
	replayed := 0
	if ok && rebuilt.Rebuilt() {
		if replayed, err = w.replayDocs(ctx); err != nil {
			failed++
			w.log.Error("the rebuilt index misses docs or examples; the old index keeps serving, restart the worker to retry", zap.Int("replayed", replayed), zap.Error(err))
		}
	}
	if fixed > 0 || replayed > 0 {
		w.log.Info("index re-projected from stored state", zap.Int("catalogs", fixed), zap.Int("doc_and_example_events", replayed))
	}
	return failed
}

// promoter is a store that builds a new index version beside the one
// being served and switches to it when told (the shared Redis index).
type promoter interface {
	Rebuilt() bool
	Promote(ctx context.Context) (bool, error)
}

// promote switches a rebuilt shared index to serving once every catalog
// is projected and the stream is drained; until then asks keep the old
// version. A build with failures is left for the next start to finish.
func (w *Worker) promote(ctx context.Context, failed int) {
	p, ok := w.store.(promoter)
	if !ok || !p.Rebuilt() {
		return
	}
	select {
	case <-w.caughtUp:
	default:
		return // stopped before catching up
	}
	if failed != 0 {
		w.log.Warn("the rebuilt index is not switched on: some catalogs or docs failed to project; restart the worker to retry", zap.Int("failed", failed))
		return
	}
	switched, err := p.Promote(ctx)
	if err != nil {
		w.log.Error("switching to the rebuilt index failed; restart the worker to retry", zap.Error(err))
		return
	}
	if switched {
		w.log.Info("rebuilt index switched on: asks now read it")
	}
}

// awaitCaughtUp closes caughtUp when both consumers have drained.
func (w *Worker) awaitCaughtUp(ctx context.Context, cons streams.Consumers) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	var drained time.Time // when NumPending first read 0 on both
	for {
		tot, err := w.totals(ctx, cons)
		if err == nil && tot.pending == 0 {
			if drained.IsZero() {
				drained = time.Now()
			}
			if tot.ackPending == 0 || time.Since(drained) > stuckWait {
				w.log.Info("caught up with the stream", zap.Uint64("stream_seq", tot.delivered), zap.Int("waiting", tot.ackPending))
				close(w.caughtUp)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// totals are the worker's consumers' state, summed with their lanes'.
type totals struct {
	pending                 uint64 // not delivered yet
	ackPending, redelivered int    // delivered and not acknowledged; of those, delivered again
	delivered               uint64 // the last stream sequence either delivered
}

// totals sums the worker's consumers and their lanes.
func (w *Worker) totals(ctx context.Context, cons streams.Consumers) (totals, error) {
	var t totals
	for _, c := range cons.All() {
		info, err := c.Info(ctx)
		if err != nil {
			return totals{}, err
		}
		t.add(info)
	}
	lanes, err := w.laneInfos(ctx)
	if err != nil {
		return totals{}, err
	}
	for _, l := range lanes {
		if !l.lane.Closing { // what a closing lane holds, the consumers hold too
			t.add(l.info)
		}
	}
	return t, nil
}

func (t *totals) add(info *jetstream.ConsumerInfo) {
	t.pending += info.NumPending
	t.ackPending += info.NumAckPending
	t.redelivered += info.NumRedelivered
	t.delivered = max(t.delivered, info.Delivered.Stream)
}

// replayDocs re-applies every docs and examples event still in the
// stream. An event that cannot be read or fails for a passing reason
// fails the replay: a rebuilt index missing docs must not be switched on.
// Events that can never apply (they were dead-lettered when they first
// came) are skipped, as they were then.
func (w *Worker) replayDocs(ctx context.Context) (int, error) {
	s, err := w.js.Stream(ctx, events.Stream)
	if err != nil {
		return 0, fmt.Errorf("replay docs: cannot read the stream: %w", err)
	}
	// streams' read, not a loop of its own: the compactor deletes
	// superseded docs beside it, and only the subjects' last messages
	// say when the replay has read them all.
	return streams.ReadSubjects(ctx, s, []string{events.StreamSubjectDocs, events.StreamSubjectExamples}, func(msg jetstream.Msg) error {
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("replay docs: %w", err)
		}
		switch out := w.handle(ctx, w.newItem(msg, meta)); out.act {
		case actAck:
		case actDeadLetter:
			w.log.Warn("replay: event skipped, it can never apply", zap.Uint64("stream_seq", meta.Sequence.Stream), zap.String("reason", out.reason))
		default:
			return fmt.Errorf("replay docs: event at stream sequence %d: %s", meta.Sequence.Stream, out.reason)
		}
		return nil
	})
}

// watchConsumers exports the consumers' lag every few seconds, summed:
// the metrics predate the docs consumer, and scaling reads the sum.
func (w *Worker) watchConsumers(ctx context.Context, cons streams.Consumers) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if tot, err := w.totals(ctx, cons); err == nil {
			w.m.pending.Set(float64(tot.pending))
			w.m.ackPending.Set(float64(tot.ackPending))
			w.m.redelivered.Set(float64(tot.redelivered))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// newItem is a delivered message, decoded.
func (w *Worker) newItem(msg jetstream.Msg, meta *jetstream.MsgMetadata) *item {
	it := rawItem(msg, meta)
	w.decode(it)
	return it
}

// rawItem is a delivered message not decoded yet: what a consumer's
// handler makes of it, whatever its size (see admit).
func rawItem(msg jetstream.Msg, meta *jetstream.MsgMetadata) *item {
	return &item{msg: msg, meta: meta, arrived: time.Now(), stop: func() {}, span: trace.SpanFromContext(context.Background())}
}

// decode reads the item's event once, for its queue to order schema
// events by seq. Compressed SQL stays compressed until it is applied
// (schemaOnce): expanded, one event may hold 64 MiB.
func (w *Worker) decode(it *item) {
	it.ev, it.err = events.DecodeCompressed(it.msg.Data(), w.cfg.MaxEventBytes)
	if it.ev != nil {
		// The message keeps the event as delivered (a dead letter carries
		// it); the envelope's copy of its data would be a third one.
		it.ev.Data = nil
		switch {
		case it.ev.Migration != nil:
			it.schema, it.seq = true, it.ev.Migration.Seq
		case it.ev.Snapshot != nil:
			it.schema, it.seq = true, it.ev.Snapshot.Seq
		}
		it.interprets = mayInterpret(it.ev)
	}
}

func keepInProgress(ctx context.Context, msg jetstream.Msg, every time.Duration) func() {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var once sync.Once
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { once.Do(func() { close(done) }) }
}

// handle decides the outcome of one event; it does not ack. A panic while
// handling (a bug, say in walking an unusual parse tree) dead-letters the
// event with the panic as the reason instead of crashing the worker; the
// stack goes to the log.
func (w *Worker) handle(ctx context.Context, it *item) (out outcome) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("panic while handling an event", zap.String("subject", it.msg.Subject()), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			out = outcome{act: actDeadLetter, kind: events.DLQKindFailed, db: subjectDB(it.msg.Subject()), seq: it.seq,
				reason: fmt.Sprintf("internal error while applying the event: %v", p)}
		}
	}()
	return w.handleEvent(ctx, it)
}

func (w *Worker) handleEvent(ctx context.Context, it *item) outcome {
	msg, ev := it.msg, it.ev
	if it.err != nil {
		return outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: "invalid event: " + it.err.Error(), db: subjectDB(msg.Subject())}
	}
	if want := subjectDB(msg.Subject()); want != ev.Database || ev.Subject() != msg.Subject() {
		return outcome{act: actDeadLetter, kind: events.DLQKindInvalid, db: ev.Database, reason: fmt.Sprintf(
			"invalid event: %s for database %q was published on %s, expected %s", ev.Type, ev.Database, msg.Subject(), ev.Subject())}
	}
	var out outcome
	switch ev.Type {
	case events.TypeMigration, events.TypeSnapshot:
		out = w.schema(ctx, []*events.Event{ev}, streamSeqs([]*item{it}))[0]
	case events.TypeDocUpsert, events.TypeDocDelete, events.TypeExamplesUpsert, events.TypeExamplesDelete:
		kind, objs := objectVersions(ev, it.meta.Sequence.Stream)
		s := w.supersede(ctx, ev.Database, kind, objs)
		if out = w.applyObjects(ctx, it); out.act == actAck {
			s.done(ctx)
		}
	}
	out.db, out.typ = ev.Database, ev.Type
	return out
}

// applyObjects applies an event of docs or examples.
func (w *Worker) applyObjects(ctx context.Context, it *item) (out outcome) {
	ev := it.ev
	switch ev.Type {
	case events.TypeDocUpsert:
		out = transient(indexer.Docs(ctx, w.store, w.emb, ev.Database, []indexer.DocEdit{w.docEdit(it)}))
	case events.TypeDocDelete:
		// Only what came before the delete: an edit published after it,
		// applied first (by another worker, or through a lane), stays.
		_, err := w.store.DeleteStale(ctx, index.Stale{Database: ev.Database, Kinds: []string{chunk.KindDoc}, Name: ev.DocDelete.DocID,
			Below: int64(it.meta.Sequence.Stream)})
		out = transientErr(err)
	case events.TypeExamplesUpsert:
		if out, bad := deepExample(ev); bad {
			return out
		}
		var chunks []chunk.Chunk
		for _, ex := range ev.Examples.Examples {
			c := chunk.Example(ev.Database, ex.Schema, ex.ID, ex.Question, ex.SQL)
			// An approved feedback example is the team's own: it is
			// indexed as a published one is, so it votes in full and
			// leaves the feedback cap.
			if ex.Origin != "" && ex.ApprovedBy == "" {
				c.Tags = map[string]string{chunk.TagOrigin: ex.Origin}
			}
			c.Version = int64(it.meta.Sequence.Stream)
			chunks = append(chunks, c)
		}
		if out = transient(indexer.Chunks(ctx, w.store, w.emb, chunks)); out.act == actAck {
			w.checkExamples(ctx, ev, chunks)
		}
	case events.TypeExamplesDelete:
		out = transientErr(w.deleteExamples(ctx, ev, it.meta.Sequence.Stream))
	}
	return out
}

// forget drops a retired database's chunks from this worker's store:
// `schemaq databases retire` deleted its catalog entry, and every store
// that indexed it (a replica's own, or the shared one) must let it go. A
// database published again since has an entry again and is left alone.
func (w *Worker) forget(ctx context.Context, db string) {
	if events.ValidateDatabase(db) != nil {
		return
	}
	mu := w.lock(db)
	mu.Lock()
	defer mu.Unlock()
	v, rev, err := w.cats.Version(ctx, db)
	switch {
	case err != nil:
		w.log.Warn("retired database: its catalog entry cannot be read; its index is kept until the next start", zap.String("database", db), zap.Error(err))
		return
	case rev != 0:
		w.log.Info("retired database was published again; its index stays", zap.String("database", db), zap.Int64("version", v))
		return
	}
	w.exportWords(w.words.forget(db))
	if err := w.store.DeleteDatabase(ctx, db); err != nil {
		w.log.Warn("retired database: its index could not be dropped; it is tried again at the next start", zap.String("database", db), zap.Error(err))
		return
	}
	w.log.Info("retired database: its index is dropped", zap.String("database", db))
}

// deleteExamples removes the examples an examples.delete event names, as
// they were before it (at stream sequence seq): one published again
// after it and applied first stays. One that is not indexed is no error,
// so a redelivery is harmless.
func (w *Worker) deleteExamples(ctx context.Context, ev *events.Event, seq uint64) error {
	names := make(map[string]int64, len(ev.ExamplesDelete.IDs))
	for _, id := range ev.ExamplesDelete.IDs {
		names[id] = int64(seq)
	}
	if _, err := w.store.DeleteStale(ctx, index.Stale{Database: ev.Database, Kinds: []string{chunk.KindExample}, Names: names}); err != nil {
		return fmt.Errorf("delete examples %s of %s: %w", strings.Join(ev.ExamplesDelete.IDs, ", "), ev.Database, err)
	}
	w.log.Info("examples deleted", zap.String("database", ev.Database), zap.String("event", ev.ID), zap.Int("examples", len(ev.ExamplesDelete.IDs)))
	return nil
}

// deepExample refuses an examples event whose SQL nests too deeply to be
// parsed safely. Such SQL is hostile rather than inexact: indexed, it
// would be refused by every search that read it.
func deepExample(ev *events.Event) (outcome, bool) {
	for i, ex := range ev.Examples.Examples {
		if err := pgtree.CheckDepth(ex.SQL, pgtree.MaxDepth); err != nil {
			return outcome{act: actDeadLetter, kind: events.DLQKindRefused, db: ev.Database,
				reason: fmt.Sprintf("field data.examples[%d].sql: %v, at byte %d", i, err, err.(*pgtree.DepthError).Offset+1)}, true
		}
	}
	return outcome{}, false
}

// checkExamples warns of the examples whose SQL cannot count as evidence
// for retrieval in the database's catalog as it stands: SQL that does not
// parse, or that does not fit it (sqlguard.Fit). They are indexed all the same (a few-shot example need not
// be exact), but they vote for no table, and the producer should know.
// A database with no catalog yet is not checked: its schema may follow.
func (w *Worker) checkExamples(ctx context.Context, ev *events.Event, chunks []chunk.Chunk) {
	cat, _, err := w.cats.Get(ctx, ev.Database)
	if err != nil || cat == nil || cat.Version == 0 {
		return
	}
	names := sqlguard.NewNames(cat)
	for i, ex := range ev.Examples.Examples {
		if err := sqlguard.CheckExample(ex.SQL, ex.Schema, names); err != nil {
			w.log.Warn("example counts for no table", zap.String("database", ev.Database), zap.String("event", ev.ID),
				zap.String("example", chunks[i].Name), zap.String("field", fmt.Sprintf("data.examples[%d].sql", i)), zap.Error(err))
			if w.m != nil {
				w.m.unplaced.Inc()
			}
		}
	}
}

func transient(_ indexer.Stats, err error) outcome { return transientErr(err) }

func transientErr(err error) outcome {
	if err != nil {
		return outcome{act: actRetry, reason: err.Error()}
	}
	return outcome{act: actAck}
}

func (w *Worker) lock(db string) *sync.Mutex {
	m, _ := w.locks.LoadOrStore(db, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// subjectDB is the database token of an event subject.
func subjectDB(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) != 3 {
		return ""
	}
	return parts[2]
}

// schema applies a migration or snapshot, or says why it cannot yet,
// reading the catalog again when its write lost the race to another
// worker's: serve replicas each apply every event to the one catalog, so
// one of them loses on nearly every event, and a nak and a redelivery
// for each was a warning in its log and a round trip through the
// cluster for what a second read settles (the event is then a
// duplicate, or applies on top of the other's write).
func (w *Worker) schema(ctx context.Context, evs []*events.Event, streamSeqs []uint64) []outcome {
	for attempt := 1; ; attempt++ {
		outs := w.schemaOnce(ctx, evs, streamSeqs)
		if !outs[0].conflict || attempt == conflictReads || ctx.Err() != nil {
			return outs
		}
	}
}

// conflictReads bounds how often one handling reads the catalog again
// after losing a write race; past it the event is retried as any
// passing failure is.
const conflictReads = 3

// schemaOnce applies a migration or snapshot, or says why it cannot yet. A
// migration that applies takes the migrations after it in evs along
// (consecutive seqs, see handleRun): they are applied in memory and
// written as one catalog. It returns an outcome for a prefix of evs: those
// applied, then the one refused, if any; the rest are left for later.
func (w *Worker) schemaOnce(ctx context.Context, evs []*events.Event, streamSeqs []uint64) []outcome {
	if o := w.migrationWaits(ctx, evs[0]); o != nil {
		return []outcome{*o}
	}
	evs, bad := expanded(evs)
	if len(evs) == 0 {
		return []outcome{bad}
	}
	ev := evs[0]
	cat, rev, err := w.getCatalog(ctx, ev.Database)
	if err != nil {
		return []outcome{{act: actRetry, reason: err.Error()}}
	}
	ch := changeOf(ev)
	with := func(o outcome) []outcome {
		o.source, o.seq, o.version = ch.source, ch.seq, cat.Version
		return []outcome{o}
	}
	switch {
	case ch.seq <= cat.Version:
		return with(w.appliedAlready(ctx, ev, cat, ch, streamSeqs[0]))
	case ev.Snapshot != nil:
		o := w.applySnapshot(ctx, evs, ch, cat, rev, streamSeqs[0])
		if o.wrote == nil {
			return with(o)
		}
		w.supersedeSchema(cat, streamSeqs[0])
		return []outcome{o}
	case ch.seq > cat.Version+1: // another worker wrote since the version was read
		return with(outcome{act: actWait, reason: fmt.Sprintf(
			"catalog %s is at version %d, so migration %d waits for %d", ev.Database, cat.Version, ch.seq, cat.Version+1)})
	}
	return w.applyMigrations(ctx, cat, rev, evs, streamSeqs)
}

// expanded returns the events with their compressed SQL expanded, for
// as long as they expand: a run stops before an event whose SQL does not
// (it is handled alone after), and an event alone that does not is an
// invalid event, the outcome returned with no events.
func expanded(evs []*events.Event) ([]*events.Event, outcome) {
	out := make([]*events.Event, 0, len(evs))
	for i, ev := range evs {
		x, err := ev.Expanded()
		if err != nil {
			if i == 0 {
				return nil, outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: "invalid event: " + err.Error()}
			}
			break
		}
		out = append(out, x)
	}
	return out, outcome{}
}

// migrationWaits tells a migration that waits for earlier ones so without
// decoding the catalog: it is looked at again on every change of it.
// Nil: go on.
func (w *Worker) migrationWaits(ctx context.Context, ev *events.Event) *outcome {
	m := ev.Migration
	if m == nil {
		return nil
	}
	v, _, err := w.cats.Version(ctx, ev.Database)
	if err != nil && !errors.Is(err, catalogkv.ErrCorrupt) { // a corrupt one is rebuilt by getCatalog
		return &outcome{act: actRetry, reason: err.Error()}
	}
	if err == nil && m.Seq > v+1 {
		return &outcome{act: actWait, source: m.Source, seq: m.Seq, version: v, reason: fmt.Sprintf(
			"catalog %s is at version %d, so migration %d waits for %d", ev.Database, v, m.Seq, v+1)}
	}
	return nil
}

// schemaChange is what a migration or snapshot event asks of the
// catalog: the version it makes, its source, and its SQL (empty when
// the SQL is in the object store).
type schemaChange struct {
	seq         int64
	source, sql string
}

func changeOf(ev *events.Event) schemaChange {
	if m := ev.Migration; m != nil {
		source, _ := migrationNames(ev)
		return schemaChange{seq: m.Seq, source: source, sql: m.SQL}
	}
	ch := schemaChange{seq: ev.Snapshot.Seq, source: ev.Snapshot.Source, sql: ev.Snapshot.SQL}
	if ch.source == "" {
		ch.source = ev.ID
	}
	return ch
}

// appliedAlready settles an event the catalog is at or past already (a
// redelivery, or a publisher that re-sent it). A recorded migration at
// this seq with other content is a conflict, not a duplicate: two
// histories disagree. An event whose SQL is in the object store names
// its checksum, so the object (deleted once applied) is not needed to
// tell.
func (w *Worker) appliedAlready(ctx context.Context, ev *events.Event, cat *catalog.Catalog, ch schemaChange, streamSeq uint64) outcome {
	sum := ""
	if ref := ev.SQLObject(); ref != nil {
		sum = ref.Checksum
	} else {
		sum = events.Checksum(ch.sql)
	}
	if ev.Migration != nil {
		if a := cat.AppliedSeq(ch.seq); a != nil && a.Checksum != sum && !superseded(a, streamSeq) {
			return outcome{act: actDeadLetter, kind: events.DLQKindConflict, reason: fmt.Sprintf(
				"migration %d (%s) conflicts with the applied history of %s: seq %d is %s (checksum %s), this event carries other SQL (checksum %s); "+
					"publish with `schemaq publish migrations`, which numbers pending migrations after the applied ones",
				ch.seq, ch.source, ev.Database, ch.seq, a.Source, a.Checksum, sum)}
		}
	}
	// The index may still lag the catalog if a worker stopped between
	// the two writes: repair it first.
	if err := w.ensureProjected(ctx, cat); err != nil {
		return outcome{act: actRetry, reason: err.Error()}
	}
	return outcome{act: actAck}
}

// applySnapshot replaces the catalog, cat at rev, with the snapshot's.
// An outcome that wrote the catalog carries its new version; any other
// is the caller's to label with the catalog's.
func (w *Worker) applySnapshot(ctx context.Context, evs []*events.Event, ch schemaChange, cat *catalog.Catalog, rev uint64, streamSeq uint64) outcome {
	ev := evs[0]
	sql := ch.sql
	if ev.Snapshot.SQLObject != nil {
		text, out := w.objectSQL(ctx, ev)
		if out != nil {
			return *out
		}
		sql = text
	}
	actx, cut := w.interruptible(ctx)
	next, err := catalog.SnapshotContext(actx, ev.Database, ch.source, sql)
	wasCut := actx.Err() != nil
	cut()
	if wasCut {
		return outcome{act: actRetry, reason: fmt.Sprintf("%s %d was cut while it applied (the worker is stopping, or the message timeout passed); tried again", ev.Type, ch.seq)}
	}
	if err != nil {
		return outcome{act: actDeadLetter, kind: events.DLQKindRefused, reason: fmt.Sprintf("%s %d does not apply: %v", ev.Type, ch.seq, err)}
	}
	next.Rebase(catalog.Base{Seq: ch.seq, Source: ch.source, StreamSeq: streamSeq})
	words, fits := w.words.count(w.cfg.MaxWordsPerDatabase, cat, next)
	if !fits {
		return outcome{act: actDeadLetter, kind: events.DLQKindRefused, reason: w.wordsRefusal(ev.Type, ch.seq, ev.Database, words.tally.Words)}
	}
	if rev, err = w.cats.Put(ctx, next, rev); err != nil {
		return outcome{act: actRetry, reason: err.Error(), conflict: errors.Is(err, catalogkv.ErrConflict)}
	}
	w.wroteWords(words)
	w.dropObjects(evs[:1])
	return outcome{act: actAck, source: ch.source, seq: ch.seq, version: ch.seq, wrote: next, wroteRev: rev}
}

// interruptible is ctx, ended too when the worker is asked to stop. An
// apply is all in memory until the catalog write, so cutting it costs
// only a redelivery, where waiting for it costs the grace period: a
// routine may run for its whole time budget.
func (w *Worker) interruptible(ctx context.Context) (context.Context, func()) {
	actx, cancel := context.WithCancel(ctx)
	if w.intake == nil {
		return actx, cancel
	}
	stop := context.AfterFunc(w.intake, cancel)
	return actx, func() { stop(); cancel() }
}

// superseded reports whether an event at stream sequence at, carrying a
// migration at a's seq with other SQL, was published before a: a version
// that was refused and then fixed, which a worker replaying the stream
// (a new replica) meets before the fix. Only one published after the
// applied migration disagrees with the history.
func superseded(a *catalog.Applied, at uint64) bool {
	return a.StreamSeq > 0 && at < a.StreamSeq
}

// reportDrift logs and counts the statements one migration's apply
// skipped or inferred. Only once the catalog is written do they show to
// users (status, tables, search and ask warnings); a retried write logs
// them again, which errs on the side of being seen.
func (w *Worker) reportDrift(db string, seq int64, drift []catalog.Drift) {
	for _, d := range drift {
		if w.m != nil {
			w.m.drift.Inc()
		}
		w.log.Warn("catalog drift: a statement names an object the catalog does not know",
			zap.String("database", db), zap.Int64("seq", seq), zap.String("source", d.Source),
			zap.Int("statement", d.Statement), zap.Int("line", d.Line), zap.String("inferred", d.Inferred),
			zap.Bool("stopped", d.Stopped), zap.String("error", d.Error))
	}
}

// migrationNames are a migration's source, for errors (the event id
// without one), and its identity in the history (the source without one).
func migrationNames(ev *events.Event) (source, id string) {
	source, id = ev.Migration.Source, ev.Migration.ID()
	if source == "" {
		source = ev.ID
	}
	if id == "" {
		id = source
	}
	return source, id
}

// applyMigrations applies evs, consecutive migrations of which the first
// follows cat, in memory, and writes the result as one catalog
// (compare-and-set on rev). It stops at the first one refused.
func (w *Worker) applyMigrations(ctx context.Context, cat *catalog.Catalog, rev uint64, evs []*events.Event, streamSeqs []uint64) []outcome {
	replay, applied := w.startReplay(cat)
	var outs []outcome
	for i, ev := range evs {
		out := w.applyMigration(ctx, replay, applied, ev, streamSeqs[i])
		outs = append(outs, out)
		if out.act != actAck {
			break
		}
	}
	n := len(outs)
	if outs[n-1].act != actAck {
		// The refused one (or one whose object could not be read now, to
		// be tried again), judged against the catalog written below.
		n--
	}
	if n == 0 {
		return outs
	}
	next := replay.Catalog()
	// What the run did not change stays the objects of the catalog before
	// it, so the chunker, the daemon and the word count redo only what
	// did change.
	next.ShareWith(cat)
	words, fits := w.words.count(w.cfg.MaxWordsPerDatabase, cat, next)
	if !fits {
		return w.pastWordBound(ctx, cat, rev, evs[:n], streamSeqs[:n], words.tally.Words)
	}
	if !w.writeApplied(ctx, cat, rev, next, outs[:n], evs[:n]) {
		// Nothing was written: the applied ones are tried again, and
		// what follows them is judged then.
		return outs[:n]
	}
	w.wroteWords(words)
	return outs
}

// startReplay is a replay of migrations from cat, and cat's history by
// migration id, to which applyMigration adds each it applies.
func (w *Worker) startReplay(cat *catalog.Catalog) (*catalog.Replay, map[string]catalog.Applied) {
	applied := make(map[string]catalog.Applied, len(cat.History()))
	for _, a := range cat.History() {
		applied[a.ID] = a
	}
	var opts []catalog.ApplyOption
	if !w.cfg.StrictCatalog {
		opts = append(opts, catalog.Tolerant())
	}
	// One replay for the batch: a hundred migrations do not copy the
	// catalog a hundred times.
	return catalog.NewReplay(cat, opts...), applied
}

// applyMigration applies one migration to the batch's replay; applied
// holds the catalog's history and the batch's migrations so far, by id.
func (w *Worker) applyMigration(ctx context.Context, replay *catalog.Replay, applied map[string]catalog.Applied, ev *events.Event, streamSeq uint64) outcome {
	m := ev.Migration
	source, id := migrationNames(ev)
	next := replay.Catalog()
	out := outcome{source: source, seq: m.Seq, version: next.Version}
	if a, ok := applied[id]; ok && !m.Repeatable {
		out.act, out.kind = actDeadLetter, events.DLQKindConflict
		out.reason = fmt.Sprintf("migration %d (%s) is already applied to %s as seq %d (%s); publish with `schemaq publish migrations`, which sends only pending migrations",
			m.Seq, source, ev.Database, a.Seq, a.Source)
		return out
	}
	if m.SQLObject != nil {
		text, failed := w.objectSQL(ctx, ev)
		if failed != nil {
			failed.source, failed.seq, failed.version = source, m.Seq, next.Version
			return *failed
		}
		m.SQL = text
	}
	a := catalog.Applied{Seq: m.Seq, ID: id, Source: source, Checksum: events.Checksum(m.SQL), StreamSeq: streamSeq}
	drifted := len(next.Drift())
	actx, cut := w.interruptible(ctx)
	err := replay.Apply(actx, source, m.SQL, a)
	wasCut := actx.Err() != nil
	cut()
	switch {
	case wasCut:
		// Cut while it applied: what it recorded (a stop for the
		// cancellation) is not the migration's, and the replay left it
		// out. Nothing is written for it; it is tried again.
		out.act, out.reason = actRetry, fmt.Sprintf("%s %d was cut while it applied (the worker is stopping, or the message timeout passed); tried again", ev.Type, m.Seq)
	case err != nil:
		out.act, out.kind = actDeadLetter, events.DLQKindRefused
		out.reason = fmt.Sprintf("%s %d does not apply: %v", ev.Type, m.Seq, err)
	default:
		w.reportDrift(ev.Database, m.Seq, replay.Catalog().Drift()[drifted:])
		applied[id] = a
		out.act, out.version = actAck, m.Seq
	}
	return out
}

// writeApplied writes next, the catalog after the applied migrations of
// evs, in place of cat at rev, and marks their outcomes (done) written,
// or to be tried again when the write fails (false).
func (w *Worker) writeApplied(ctx context.Context, cat *catalog.Catalog, rev uint64, next *catalog.Catalog, done []outcome, evs []*events.Event) bool {
	rev, err := w.cats.Put(ctx, next, rev)
	if err != nil {
		for i := range done {
			done[i].act, done[i].version, done[i].reason = actRetry, cat.Version, err.Error()
			done[i].conflict = errors.Is(err, catalogkv.ErrConflict)
		}
		return false
	}
	for i := range done {
		done[i].wrote, done[i].wroteRev = next, rev
	}
	w.dropObjects(evs)
	return true
}

// objects binds the object store of big payloads, once.
func (w *Worker) objects(ctx context.Context) (jetstream.ObjectStore, error) {
	w.objMu.Lock()
	defer w.objMu.Unlock()
	if w.objs == nil {
		obj, err := streams.Objects(ctx, w.js)
		if err != nil {
			return nil, err
		}
		w.objs = obj
	}
	return w.objs, nil
}

// eventStream is the event stream's handle, bound once.
func (w *Worker) eventStream(ctx context.Context) (jetstream.Stream, error) {
	w.streamMu.Lock()
	defer w.streamMu.Unlock()
	if w.stream == nil {
		s, err := w.js.Stream(ctx, events.Stream)
		if err != nil {
			return nil, err
		}
		w.stream = s
	}
	return w.stream, nil
}

// objectSQL reads the SQL an event keeps in the object store. A missing
// or altered object can never apply (dead letter); a store that does not
// answer is a passing failure (retry).
func (w *Worker) objectSQL(ctx context.Context, ev *events.Event) (string, *outcome) {
	ref := ev.SQLObject()
	obj, err := w.objects(ctx)
	if err != nil {
		return "", &outcome{act: actRetry, reason: err.Error()}
	}
	b, err := streams.Retried(ctx, streams.ObjectAttempt(ref.Size), func(ctx context.Context) ([]byte, error) { return obj.GetBytes(ctx, ref.Name) })
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return "", &outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: fmt.Sprintf(
			"%s %s names object %s in bucket %s, which is not there (deleted, or never written): publish the event again", ev.Type, ev.ID, ref.Name, events.ObjectBucket)}
	case err != nil:
		return "", &outcome{act: actRetry, reason: fmt.Sprintf("read object %s: %v", ref.Name, err)}
	}
	sql := string(b)
	if ref.Gzip {
		if sql, err = events.GunzipSQL(b); err != nil {
			return "", &outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: fmt.Sprintf("object %s of %s %s: %v", ref.Name, ev.Type, ev.ID, err)}
		}
	} else if off := events.InvalidUTF8Offset(b); off >= 0 {
		return "", &outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: fmt.Sprintf("object %s of %s %s: the SQL is not valid UTF-8 (at byte %d)", ref.Name, ev.Type, ev.ID, off)}
	}
	if sum := events.Checksum(sql); sum != ref.Checksum {
		return "", &outcome{act: actDeadLetter, kind: events.DLQKindInvalid, reason: fmt.Sprintf(
			"object %s holds other SQL than %s %s names: checksum %s, the event says %s", ref.Name, ev.Type, ev.ID, sum, ref.Checksum)}
	}
	return sql, nil
}

// dropObjects deletes the objects of events the catalog now holds. Best
// effort: a redelivered event is recognised by its checksum without its
// object, and an orphan costs storage only.
func (w *Worker) dropObjects(evs []*events.Event) {
	for _, ev := range evs {
		ref := ev.SQLObject()
		if ref == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		obj, err := w.objects(ctx)
		if err == nil {
			err = obj.Delete(ctx, ref.Name)
		}
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			w.log.Warn("could not delete an applied event's SQL object", zap.String("object", ref.Name), zap.Error(err))
		}
	}
}

func (w *Worker) ensureProjected(ctx context.Context, cat *catalog.Catalog) error {
	if cat.Version == 0 {
		return nil
	}
	p, err := w.store.Projected(ctx, cat.Database)
	if err != nil {
		return err
	}
	if p >= cat.Version {
		return nil
	}
	w.log.Info("index behind catalog: re-projecting", zap.String("db", cat.Database),
		zap.Int64("catalog_version", cat.Version), zap.Int64("projected_version", p))
	_, err = indexer.Catalog(ctx, w.store, w.emb, cat, w.chunker)
	return err
}

// settle turns an outcome into the JetStream action and returns what it
// did. It is the one place that acks.
// final is what settling out does with the message: a retry on the last
// delivery becomes a failed dead letter.
func (w *Worker) final(meta *jetstream.MsgMetadata, out outcome) outcome {
	last := meta.NumDelivered >= uint64(w.cfg.Consumer.MaxDeliver)
	if out.act != actAck && out.act != actDeadLetter && (out.act != actRetry || last) {
		out.act, out.kind = actDeadLetter, events.DLQKindFailed
		out.reason = fmt.Sprintf("gave up after %d deliveries: %s", meta.NumDelivered, out.reason)
	}
	return out
}

func (w *Worker) settle(msg jetstream.Msg, meta *jetstream.MsgMetadata, out outcome, log *zap.Logger) action {
	out = w.final(meta, out)
	switch out.act {
	case actAck:
		if err := msg.Ack(); err != nil {
			log.Warn("ack failed; the event will be redelivered and found a duplicate", zap.Error(err))
		}
		return actAck
	case actRetry:
		delay := max(w.delay(meta.NumDelivered), out.after)
		log.Warn("event failed; retrying", zap.String("db", out.db), zap.String("reason", out.reason), zap.Duration("delay", delay))
		w.retryAfter(msg, delay, log)
		return out.act
	}
	if !out.lettered {
		if err := w.deadLetter(msg, meta, out); err != nil {
			log.Error("dead-letter publish failed; naking instead", zap.Error(err))
			w.retryAfter(msg, w.cfg.MaxRetryDelay, log)
			return actRetry
		}
	}
	log.Warn("event dead-lettered", zap.String("db", out.db), zap.String("reason", out.reason))
	_ = msg.TermWithReason(events.OneLine(out.reason, 200))
	return actDeadLetter
}

func (w *Worker) delay(delivered uint64) time.Duration {
	d := w.cfg.RetryDelay << min(delivered-1, 16)
	return min(d, w.cfg.MaxRetryDelay)
}

func (w *Worker) deadLetter(msg jetstream.Msg, meta *jetstream.MsgMetadata, out outcome) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return deadletter.Publish(ctx, w.js, deadletter.Letter{Database: out.db, Subject: msg.Subject(), Source: out.source, Kind: out.kind,
		Reason: out.reason, Deliveries: strconv.FormatUint(meta.NumDelivered, 10), EventSeq: out.seq,
		EventID: msg.Headers().Get(events.HeaderMsgID), StreamSeq: meta.Sequence.Stream, Data: msg.Data()})
}
