// Package objectgc deletes what nothing will read again from the object
// store: the SQL of big events once their database's catalog has moved
// past them, and catalogs replaced since. Workers delete both as they go;
// the collector catches what they could not (a publish that failed after its
// object was written, a delete that failed, an event that aged out of the
// stream before it applied), which would otherwise stay for good.
//
// An event's object is kept while a dead letter names it (it can be
// retried) and while the event is in the stream and its database's
// catalog has not reached its seq (a worker will read it). A worker that
// meets such an event once the catalog is past it tells a duplicate from a
// conflict by the checksum the event carries, without the object.
// Objects younger than Config.Grace are left alone: their writer may not
// have published what references them yet.
package objectgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Config of a sweep.
type Config struct {
	// Every is the time between sweeps of Run (0: Run sweeps never).
	Every time.Duration
	// Grace is how old an object must be to be swept. It must cover a
	// publish: the object is written before the event that names it.
	Grace time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
}

// DefaultConfig sweeps hourly what is more than an hour old.
var DefaultConfig = Config{Every: time.Hour, Grace: time.Hour}

// Removed is one object a sweep deleted (or, dry, would delete).
type Removed struct {
	Name string `json:"name"`
	Size uint64 `json:"size"`
	// Why it is not needed.
	Why string `json:"why"`
}

// Report says what a sweep found.
type Report struct {
	// Objects and Bytes count the store before the sweep.
	Objects int    `json:"objects"`
	Bytes   uint64 `json:"bytes"`
	// Young were left for their age; Kept are needed.
	Young   int       `json:"young"`
	Kept    int       `json:"kept"`
	Removed []Removed `json:"removed"`
	// RemovedBytes is the size of Removed.
	RemovedBytes uint64 `json:"removed_bytes"`
	// Skipped names the databases whose event objects were left as they
	// were, because what references them could not be read completely.
	Skipped []string `json:"skipped,omitempty"`
	DryRun  bool     `json:"dry_run,omitempty"`
}

// Collector sweeps one object store.
type Collector struct {
	js   jetstream.JetStream
	cats *catalogkv.Store
	cfg  Config
	log  *zap.Logger
	m    *Metrics
	now  func() time.Time
	// turns, when set, is where replicas take turns to sweep; owner
	// names this one there.
	turns turnStore
	owner string
}

// turnStore is the part of a key-value bucket that turns need.
type turnStore interface {
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
}

// Option configures a Collector.
type Option func(*Collector)

// WithMetrics counts sweeps on m.
func WithMetrics(m *Metrics) Option { return func(s *Collector) { s.m = m } }

// WithClock has the sweep judge objects' age by now instead of the
// wall clock.
func WithClock(now func() time.Time) Option { return func(s *Collector) { s.now = now } }

// WithTurns has Run's sweeps take turns with the other replicas that
// share kv (streams.Sweeps), so that a deployment sweeps about once an
// interval however many workers it runs: each sweep reads every object
// and the events of every database that has one, which a hundred
// replicas need not repeat a hundred times. owner must differ between
// replicas.
func WithTurns(kv jetstream.KeyValue, owner string) Option {
	return func(s *Collector) { s.turns, s.owner = kv, owner }
}

// New returns a sweeper of the object store of js; cats reads the catalog
// bucket.
func New(js jetstream.JetStream, cats *catalogkv.Store, log *zap.Logger, cfg Config, opts ...Option) (*Collector, error) {
	if cfg.Grace <= 0 {
		return nil, fmt.Errorf("sweep: a grace of %v would delete objects whose events are being published; give at least a minute", cfg.Grace)
	}
	if cfg.Every < 0 {
		return nil, fmt.Errorf("sweep: the interval %v is negative (0 turns sweeping off)", cfg.Every)
	}
	s := &Collector{js: js, cats: cats, cfg: cfg, log: log, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Run sweeps every Config.Every until ctx ends, the first time after a
// random part of the interval, so that replicas started together do not
// sweep together. A sweep that fails is logged and tried at the next.
func (s *Collector) Run(ctx context.Context) error {
	if s.cfg.Every == 0 {
		return nil
	}
	wait := time.Duration(rand.Int64N(int64(s.cfg.Every)))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = s.cfg.Every
		sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		rep, err := s.Tick(sctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("object sweep failed; trying again at the next", zap.Error(err))
		case err == nil && rep == nil:
			s.log.Debug("another replica swept within the interval")
		case err == nil && (len(rep.Removed) > 0 || len(rep.Skipped) > 0):
			s.log.Info("object store swept", zap.Int("objects", rep.Objects), zap.Uint64("bytes", rep.Bytes),
				zap.Int("removed", len(rep.Removed)), zap.Uint64("removed_bytes", rep.RemovedBytes), zap.Strings("skipped_databases", rep.Skipped))
		}
	}
}

// turnKey holds the last turn taken in the bucket of turns.
const turnKey = "last"

// turn is who swept last, and when by their clock. The owner is not
// needed to take turns; it tells an operator reading the bucket which
// worker swept.
type turn struct {
	Owner string    `json:"owner"`
	At    time.Time `json:"at"`
}

// Tick is one of Run's sweeps. With turns (WithTurns) it sweeps only when
// no replica has for nine tenths of an interval, and returns a nil Report
// when the turn is another's. The tenth is slack for the replica that
// swept last: its next tick comes an interval (and a sweep) later, so it
// keeps the turn, and the sweeps keep its pace rather than whichever
// replica's timer fires first. When it stops, another takes over within
// about an interval.
func (s *Collector) Tick(ctx context.Context) (*Report, error) {
	if s.turns != nil {
		mine, err := s.takeTurn(ctx)
		if err != nil {
			if s.m != nil {
				s.m.sweeps.WithLabelValues("error").Inc()
			}
			return nil, fmt.Errorf("take a turn to sweep in bucket %s: %w", events.SweepBucket, err)
		}
		if !mine {
			if s.m != nil {
				s.m.sweeps.WithLabelValues("not_our_turn").Inc()
			}
			return nil, nil
		}
	}
	return s.Once(ctx)
}

// takeTurn records this replica as the last to sweep, if it may sweep.
// The write is conditional on what it read, so of two replicas that read
// the same last turn only one takes the next.
func (s *Collector) takeTurn(ctx context.Context) (bool, error) {
	now := s.now()
	val, err := json.Marshal(turn{Owner: s.owner, At: now})
	if err != nil {
		return false, err
	}
	e, err := s.turns.Get(ctx, turnKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		_, err = s.turns.Create(ctx, turnKey, val)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return false, nil
		}
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	var last turn
	// A value that does not decode is nobody's turn: it is taken over.
	if json.Unmarshal(e.Value(), &last) == nil && now.Sub(last.At) < s.cfg.Every*9/10 {
		return false, nil
	}
	if _, err := s.turns.Update(ctx, turnKey, val, e.Revision()); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Once sweeps the object store now.
func (s *Collector) Once(ctx context.Context) (*Report, error) {
	rep, err := s.once(ctx)
	if s.m != nil {
		s.m.count(rep, err)
	}
	return rep, err
}

// candidates are the objects old enough to sweep, by database.
type candidates map[string][]*jetstream.ObjectInfo

func (s *Collector) once(ctx context.Context) (*Report, error) {
	rep := &Report{DryRun: s.cfg.DryRun}
	obj, err := streams.Objects(ctx, s.js)
	if err != nil {
		return rep, err
	}
	evs, cats, err := s.candidates(ctx, obj, rep)
	if err != nil {
		return rep, err
	}
	if err := s.sweepCatalogs(ctx, obj, rep, cats); err != nil {
		return rep, err
	}
	return rep, s.sweepEvents(ctx, obj, rep, evs)
}

// candidates lists the store and sorts what is old enough to judge by
// kind and database: events/<db>/… and catalogs/<db>/…. The rest is
// counted and kept.
func (s *Collector) candidates(ctx context.Context, obj jetstream.ObjectStore, rep *Report) (evs, cats candidates, err error) {
	list, err := obj.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil, fmt.Errorf("list objects: %w", err)
	}
	evs, cats = candidates{}, candidates{}
	cutoff := s.now().Add(-s.cfg.Grace)
	for _, info := range list {
		rep.Objects++
		rep.Bytes += info.Size
		// kind/db/…: a name without two slashes is not ours either.
		kind, rest, _ := strings.Cut(info.Name, "/")
		db, _, ok := strings.Cut(rest, "/")
		if !ok || (kind != "events" && kind != "catalogs") {
			rep.Kept++ // not ours to judge
			continue
		}
		if info.ModTime.After(cutoff) {
			rep.Young++
			continue
		}
		if kind == "events" {
			evs[db] = append(evs[db], info)
		} else {
			cats[db] = append(cats[db], info)
		}
	}
	return evs, cats, nil
}

// sweepCatalogs removes each database's catalog objects but the one its
// catalog entry references.
func (s *Collector) sweepCatalogs(ctx context.Context, obj jetstream.ObjectStore, rep *Report, cats candidates) error {
	for db, infos := range cats {
		current, err := s.cats.Object(ctx, db)
		if err != nil {
			return err
		}
		for _, info := range infos {
			if info.Name == current {
				rep.Kept++
				continue
			}
			if err := s.remove(ctx, obj, rep, info, "a catalog replaced since"); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepEvents removes the event objects nothing needs any more
// (eventsNeeded). A database whose references cannot be read keeps its
// objects and is reported skipped.
func (s *Collector) sweepEvents(ctx context.Context, obj jetstream.ObjectStore, rep *Report, evs candidates) error {
	if len(evs) == 0 {
		return nil
	}
	stream, err := s.js.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	dlq, err := s.js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.DeadLetterStream, err)
	}
	for db, infos := range evs {
		needed, err := s.eventsNeeded(ctx, stream, dlq, db)
		if err != nil {
			s.log.Warn("object sweep leaves a database's event objects: what references them could not be read", zap.String("db", db), zap.Error(err))
			rep.Skipped = append(rep.Skipped, db)
			rep.Kept += len(infos)
			continue
		}
		for _, info := range infos {
			why, keep := needed(info.Name)
			if keep {
				rep.Kept++
				continue
			}
			if err := s.remove(ctx, obj, rep, info, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventsNeeded reads what references db's event objects and returns the
// judge of one: whether it is needed and, when not, why. Dead letters are
// read before and after the stream, so that an event moving between the
// two (a retry, a dead-lettering) is seen in one or the other.
func (s *Collector) eventsNeeded(ctx context.Context, stream, dlq jetstream.Stream, db string) (func(name string) (string, bool), error) {
	lettered := map[string]bool{}
	// Only a schema event's SQL is stored apart, so a letter is read
	// whole only when its headers do not say it holds a doc or an
	// example: a box of thousands of poison docs of a MiB costs a sweep
	// their headers.
	readLetters := func() error {
		_, err := streams.ReadHeaders(ctx, dlq, events.DeadLetterSubject(db), func(m jetstream.Msg) error {
			if of := m.Headers().Get(events.HeaderDLQSubject); of == events.DocsSubject(db) || of == events.ExamplesSubject(db) {
				return nil
			}
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			full, err := dlq.GetMsg(ctx, meta.Sequence.Stream)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil // deleted since the listing
			}
			if err != nil {
				return fmt.Errorf("dead letter %d: %w", meta.Sequence.Stream, err)
			}
			if name, _ := objectOf(full.Data); name != "" {
				lettered[name] = true
			}
			return nil
		})
		return err
	}
	if err := readLetters(); err != nil {
		return nil, err
	}
	// The seq of the events in the stream that name an object, by object.
	inStream := map[string]int64{}
	if _, err := streams.ReadSubject(ctx, stream, events.SchemaSubject(db), func(m jetstream.Msg) error {
		if name, seq := objectOf(m.Data()); name != "" {
			inStream[name] = max(inStream[name], seq)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := readLetters(); err != nil {
		return nil, err
	}
	version, _, err := s.cats.Version(ctx, db)
	if err != nil {
		return nil, err
	}
	return func(name string) (string, bool) {
		if lettered[name] {
			return "", true
		}
		seq, ok := inStream[name]
		switch {
		case !ok:
			return "no event in the stream or the dead letters names it", false
		case seq <= version:
			return fmt.Sprintf("its event (seq %d) is applied or passed: the catalog is at version %d", seq, version), false
		}
		return "", true
	}, nil
}

func (s *Collector) remove(ctx context.Context, obj jetstream.ObjectStore, rep *Report, info *jetstream.ObjectInfo, why string) error {
	if !s.cfg.DryRun {
		if err := obj.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return fmt.Errorf("delete object %s: %w", info.Name, err)
		}
	}
	rep.Removed = append(rep.Removed, Removed{Name: info.Name, Size: info.Size, Why: why})
	rep.RemovedBytes += info.Size
	return nil
}

// objectOf names the object of an event encoded in b, and the event's
// seq; "" when it names none. It reads only those two fields, leniently:
// an event a newer publisher wrote, with fields this release does not
// know, still keeps its object.
func objectOf(b []byte) (string, int64) {
	var ev struct {
		Data struct {
			Seq       int64 `json:"seq"`
			SQLObject *struct {
				Name string `json:"name"`
			} `json:"sql_object"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &ev) != nil || ev.Data.SQLObject == nil {
		return "", 0
	}
	return ev.Data.SQLObject.Name, ev.Data.Seq
}

// Metrics of the sweeps of a process.
type Metrics struct {
	removed *prometheus.CounterVec
	bytes   prometheus.Counter
	sweeps  *prometheus.CounterVec
	stored  prometheus.Gauge
}

// NewMetrics registers the sweep's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_objects_swept_total",
			Help: "Objects the sweep deleted from the object store, by kind (event, catalog)."}, []string{"kind"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_objects_swept_bytes_total",
			Help: "Bytes the sweep deleted from the object store."}),
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_object_sweeps_total",
			Help: "Sweeps of the object store, by result (ok, error, not_our_turn: another worker swept within the interval)."}, []string{"result"}),
		stored: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_objects_stored_bytes",
			Help: "Bytes in the object store at the last sweep, before it deleted anything."}),
	}
	reg.MustRegister(m.removed, m.bytes, m.sweeps, m.stored)
	return m
}

func (m *Metrics) count(rep *Report, err error) {
	if err != nil {
		m.sweeps.WithLabelValues("error").Inc()
	} else {
		m.sweeps.WithLabelValues("ok").Inc()
		m.stored.Set(float64(rep.Bytes))
	}
	if rep == nil || rep.DryRun {
		return
	}
	for _, r := range rep.Removed {
		kind, _, _ := strings.Cut(r.Name, "/")
		m.removed.WithLabelValues(strings.TrimSuffix(kind, "s")).Inc()
	}
	m.bytes.Add(float64(rep.RemovedBytes))
}
