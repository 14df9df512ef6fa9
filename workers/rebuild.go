package workers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Rebuilding. A catalog entry that does not decode (a damaged value, an
// object that is gone) would fail every event of its database until a
// person replaced it. The catalog is the fold of the database's schema
// events, which the stream keeps, so the worker folds them again: in
// stream order, each snapshot resets the catalog, each migration applies
// at version+1, one that does not apply is left out (it was refused the
// first time too), and one that is early waits for its predecessor. The
// result replaces the damaged entry (compare-and-set on its revision),
// once it reaches the version the entry's header claims. A stream that
// cannot get there (events deleted, SQL kept in objects already swept)
// is reported, and the entry is left for a snapshot to replace.

// schemaEvent is one schema event read back from the stream.
type schemaEvent struct {
	ev        *events.Event
	streamSeq uint64
}

// getCatalog is cats.Get, rebuilding a corrupt entry first.
func (w *Worker) getCatalog(ctx context.Context, db string) (*catalog.Catalog, uint64, error) {
	cat, rev, err := w.cats.Get(ctx, db)
	if !errors.Is(err, catalogkv.ErrCorrupt) {
		return cat, rev, err
	}
	w.log.Error("catalog entry does not decode; rebuilding it from the stream", zap.String("db", db), zap.Error(err))
	if rerr := w.rebuildCatalog(ctx, db); rerr != nil {
		w.log.Error("catalog cannot be rebuilt from the stream; publish a snapshot to replace it",
			zap.String("db", db), zap.Error(rerr))
		return nil, 0, fmt.Errorf("%w; rebuilding it from the stream failed: %w", err, rerr)
	}
	return w.cats.Get(ctx, db)
}

// rebuildCatalog folds db's schema events into a catalog and writes it
// over the corrupt entry.
func (w *Worker) rebuildCatalog(ctx context.Context, db string) error {
	rev, want, err := w.cats.Entry(ctx, db)
	if err != nil {
		return err
	}
	f := w.newFold(db, want)
	if err := w.foldStream(ctx, f); err != nil {
		return err
	}
	cat, err := f.result()
	if err != nil {
		return err
	}
	if want >= 0 && cat.Version != want {
		return fmt.Errorf("the stream's events of %s reach version %d, the entry claims %d", db, cat.Version, want)
	}
	if _, err := w.cats.Put(ctx, cat, rev); err != nil {
		return fmt.Errorf("write the rebuilt catalog: %w", err)
	}
	w.log.Warn("catalog rebuilt from the stream", zap.String("db", db), zap.Int64("version", cat.Version), zap.Int("events", f.read))
	return nil
}

// errFolded stops the stream's read once the fold has what it needs.
var errFolded = errors.New("fold complete")

// foldStream feeds f the database's schema events in stream order, as
// they are read: a history of a thousand migrations of a MiB is never
// held at once, only those that came before their predecessor. Events
// that do not decode were dead-lettered when they came and are left out.
func (w *Worker) foldStream(ctx context.Context, f *replayFold) error {
	s, err := w.js.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	err = streams.ReadEvents(ctx, s, events.SchemaSubject(f.db), f.db, w.cfg.MaxEventBytes, func(ev *events.Event, seq uint64) error {
		f.read++
		return f.take(ctx, schemaEvent{ev: ev, streamSeq: seq})
	})
	if errors.Is(err, errFolded) {
		return nil
	}
	return err
}

// newFold starts a replay of db from an empty catalog that stops at
// version want (when not negative).
func (w *Worker) newFold(db string, want int64) *replayFold {
	var opts []catalog.ApplyOption
	if !w.cfg.StrictCatalog {
		opts = append(opts, catalog.Tolerant())
	}
	f := &replayFold{w: w, db: db, want: want, waiting: map[int64][]schemaEvent{}, replay: catalog.NewReplay(catalog.New(db), opts...)}
	f.cat = f.replay.Catalog()
	return f
}

// take folds the next event in stream order, and says errFolded once
// the fold reached the version it was asked for.
func (f *replayFold) take(ctx context.Context, e schemaEvent) error {
	if f.done() {
		return errFolded
	}
	seq := eventSeq(e.ev)
	switch {
	case seq <= f.cat.Version, f.want >= 0 && seq > f.want: // events past the entry's version come through the queue
		return nil
	case e.ev.Migration != nil && seq > f.cat.Version+1:
		f.waiting[seq] = append(f.waiting[seq], e)
		return nil
	}
	if err := f.apply(ctx, e); err != nil {
		return err
	}
	if err := f.applyWaiting(ctx); err != nil {
		return err
	}
	if f.done() {
		return errFolded
	}
	return nil
}

// result is the catalog the fold reached, or why it stopped short: a
// gap no event of the stream filled.
func (f *replayFold) result() (*catalog.Catalog, error) {
	return f.cat, f.stillWaiting()
}

// replayFold is one fold's state: the replay, the catalog it is at, and
// the migrations that came before their predecessor, by seq.
type replayFold struct {
	w       *Worker
	db      string
	want    int64
	replay  *catalog.Replay
	cat     *catalog.Catalog
	waiting map[int64][]schemaEvent
	read    int // events read, for the log
}

// done: the fold reached the version it was asked for.
func (f *replayFold) done() bool { return f.want >= 0 && f.cat.Version >= f.want }

// eventSeq is the catalog version a schema event makes.
func eventSeq(ev *events.Event) int64 {
	if m := ev.Migration; m != nil {
		return m.Seq
	}
	return ev.Snapshot.Seq
}

// apply applies one event; an event that was refused when it came is
// refused again and skipped. Only a cut or an unreadable object fails.
func (f *replayFold) apply(ctx context.Context, e schemaEvent) error {
	sql, err := f.w.eventSQL(ctx, e.ev)
	if err != nil {
		return err
	}
	if s := e.ev.Snapshot; s != nil {
		next, err := catalog.SnapshotContext(ctx, f.db, s.Source, sql)
		if err != nil {
			return nil // refused when it came, too
		}
		next.Rebase(catalog.Base{Seq: s.Seq, Source: s.Source, StreamSeq: e.streamSeq})
		f.replay.Reset(next)
		f.cat = f.replay.Catalog()
		return nil
	}
	m := e.ev.Migration
	source, id := migrationNames(e.ev)
	a := catalog.Applied{Seq: m.Seq, ID: id, Source: source, Checksum: events.Checksum(sql), StreamSeq: e.streamSeq}
	if err := f.replay.Apply(ctx, source, sql, a); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("rebuild %s: %w", f.db, ctx.Err())
		}
		return nil // refused when it came, too
	}
	f.cat = f.replay.Catalog()
	return nil
}

// applyWaiting applies the migrations that came early once their
// predecessor has, as far as they go: of several at one seq, the first
// that applies.
func (f *replayFold) applyWaiting(ctx context.Context) error {
	for {
		next := f.waiting[f.cat.Version+1]
		if len(next) == 0 || f.done() {
			return nil
		}
		delete(f.waiting, f.cat.Version+1)
		v := f.cat.Version
		for _, n := range next {
			if err := f.apply(ctx, n); err != nil {
				return err
			}
			if f.cat.Version != v {
				break
			}
		}
		if f.cat.Version == v {
			return nil
		}
	}
}

// stillWaiting names a gap the fold could not cross: migrations wait
// for one the stream does not hold.
func (f *replayFold) stillWaiting() error {
	for seq := range f.waiting {
		if seq <= f.cat.Version {
			delete(f.waiting, seq)
		}
	}
	if len(f.waiting) == 0 || f.done() {
		return nil
	}
	seqs := slices.Sorted(maps.Keys(f.waiting))
	return fmt.Errorf("migrations from %d on wait for %d, which the stream does not hold", seqs[0], f.cat.Version+1)
}

// eventSQL is the SQL of a schema event, read from the object store when
// it is kept there.
func (w *Worker) eventSQL(ctx context.Context, ev *events.Event) (string, error) {
	if ev.SQLObject() == nil {
		if ev.Migration != nil {
			return ev.Migration.SQL, nil
		}
		return ev.Snapshot.SQL, nil
	}
	sql, out := w.objectSQL(ctx, ev)
	if out != nil {
		return "", fmt.Errorf("%s %s: %s", ev.Type, ev.ID, out.reason)
	}
	return sql, nil
}
