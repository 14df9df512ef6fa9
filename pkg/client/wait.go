package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/deadletter"
)

// DeadLetteredError is an event of the database a wait was for, which a
// worker gave up on.
type DeadLetteredError struct{ Letter *deadletter.Letter }

func (e *DeadLetteredError) Error() string {
	what := "an event"
	if e.Letter.Source != "" {
		what = e.Letter.Source
	}
	return fmt.Sprintf("%s was dead-lettered (dead letter %d): %s", what, e.Letter.Seq, e.Letter.Reason)
}

// WaitApplied waits until db's catalog reaches version want and a daemon
// answers from an index and a catalog at that version, until ctx ends. It
// fails as soon as an event of the database is dead-lettered after since,
// with a *DeadLetteredError. It returns how many statements of the
// history the catalog skipped or inferred (drift), as the daemon reports
// them.
func (c *Client) WaitApplied(ctx context.Context, db string, want int64, since time.Time) (int, error) {
	var version, indexed, served int64
	var indexErr error
	nextReport := time.Now().Add(waitReportEvery)
	var asked time.Time
	// The dead-letter stream and the catalog bucket are opened once, when
	// they exist; each poll is then one read of each (the version from
	// the entry's header, without decoding the catalog).
	letters := c.watchLetters(db, since)
	var cats jetstream.KeyValue
	for {
		if l := letters.last(ctx); l != nil {
			return 0, &DeadLetteredError{Letter: l}
		}
		if cats == nil {
			cats, _ = c.catalogs(ctx)
		}
		if version < want && cats != nil {
			if e, err := c.entry(ctx, cats, db); err == nil && e != nil {
				if v, err := entryVersion(e); err == nil {
					version = v
				}
			}
		}
		// The daemon is asked once the bucket shows the version, and
		// every second before that too: its catalog follows the bucket
		// by a watch, so it answers even while this client's reads of
		// the bucket fail or lag (a node of the cluster just died).
		if version >= want || time.Since(asked) > time.Second {
			asked = time.Now()
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			rep, err := c.Tables(rctx, &events.TablesRequest{Database: db, Limit: 1})
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
				version = max(version, rep.Version)
			}
		}
		if c.onWait != nil && time.Now().After(nextReport) {
			nextReport = time.Now().Add(waitReportEvery)
			c.onWait(WaitProgress{Database: db, Want: want, Catalog: version, Indexed: indexed, Unconfirmed: indexErr})
		}
		select {
		case <-ctx.Done():
			switch {
			case version < want:
				return 0, fmt.Errorf("catalog %s reached version %d, not %d: see `schemaq status` and the worker logs: %w", db, version, want, ctx.Err())
			case indexErr != nil:
				return 0, fmt.Errorf("catalog %s is at version %d, but no daemon confirmed the index: %w", db, version, indexErr)
			case indexed >= want:
				return 0, fmt.Errorf("catalog %s is at version %d and indexed, but the daemon still serves version %d: see the daemon logs: %w", db, version, served, ctx.Err())
			}
			return 0, fmt.Errorf("catalog %s is at version %d, but its index reflects version %d: see the worker logs: %w", db, version, indexed, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// letterWatch looks, once per poll of a wait, for a dead letter of db
// written since a time: in the dead-letter stream, or, for a producer in
// an account without JetStream (docs/deploy.md), by asking a daemon.
type letterWatch struct {
	c     *Client
	db    string
	since time.Time
	box   *deadletter.Box // opened once the stream answers
	// viaDaemon is set once the stream is out of this account's reach;
	// asked is when the daemon was last asked.
	viaDaemon bool
	asked     time.Time
}

func (c *Client) watchLetters(db string, since time.Time) *letterWatch {
	return &letterWatch{c: c, db: db, since: since}
}

// letterPoll bounds each read of the dead-letter stream. A wait's own
// deadline is minutes; a request lost with the server it went to (killed
// while it was in flight, or a stream leader that died before answering)
// would otherwise hold the whole wait until then, and the catalog and the
// daemons, which answer, would go unasked.
const letterPoll = 2 * time.Second

// last is the newest letter of the database since the watch began, or
// nil: none, or the stream did not answer this time (the next poll asks
// again).
func (w *letterWatch) last(ctx context.Context) *deadletter.Letter {
	ctx, cancel := context.WithTimeout(ctx, letterPoll)
	defer cancel()
	if w.viaDaemon {
		return w.fromDaemon(ctx)
	}
	if w.box == nil {
		box, err := deadletter.Open(ctx, w.c.js)
		if noJetStream(err) {
			w.viaDaemon = true
			return w.fromDaemon(ctx)
		}
		if err != nil {
			return nil
		}
		w.box = box
	}
	return w.box.Last(ctx, w.db, w.since)
}

// fromDaemon asks a daemon for the letter, once a second at most.
func (w *letterWatch) fromDaemon(ctx context.Context) *deadletter.Letter {
	if time.Since(w.asked) < time.Second {
		return nil
	}
	w.asked = time.Now()
	since := w.since
	rep, err := w.c.Tables(ctx, &events.TablesRequest{Database: w.db, Limit: 1, LettersSince: &since})
	if err != nil || rep.Letter == nil {
		return nil
	}
	l := rep.Letter
	return &deadletter.Letter{Seq: l.Seq, Database: w.db, Source: l.Source, Kind: l.Kind, Reason: l.Reason, Time: l.Time}
}

// noJetStream reports an error that says this connection's account has
// no JetStream: a producer in a team's own account reads through the
// daemons instead.
func noJetStream(err error) bool {
	return errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// WaitProgress is where a wait for a catalog version stands, for a
// caller that reports it (OnWaitProgress).
type WaitProgress struct {
	Database string
	Want     int64 // the catalog version waited for
	Catalog  int64 // the catalog's version now
	Indexed  int64 // the version a daemon last said its index reflects
	// Unconfirmed is why no daemon answered the last poll, if none did.
	Unconfirmed error
}

// waitReportEvery spaces progress reports: a wait through a failover or
// a long history says where it stands without flooding a CI log.
const waitReportEvery = 5 * time.Second

// OnWaitProgress sets fn to be told, every few seconds of a wait for a
// catalog version, where it stands. Set it before waiting.
func (c *Client) OnWaitProgress(fn func(WaitProgress)) { c.onWait = fn }

// WaitIndexed waits until every doc and example in want is indexed at
// least at the version given (the stream sequence its event was published
// at), until ctx ends. It fails as soon as an event of the database is
// dead-lettered after since, with a *DeadLetteredError. Docs and examples
// have no catalog version to wait for: this asks a daemon for the version
// their chunks are stored at.
func (c *Client) WaitIndexed(ctx context.Context, db string, want map[events.IndexedRef]int64, since time.Time) error {
	return c.waitObjects(ctx, db, want, since, false)
}

// WaitRemoved waits until none of refs is indexed any more (after a
// docs.delete or examples.delete), as WaitIndexed waits for them to be.
func (c *Client) WaitRemoved(ctx context.Context, db string, refs []events.IndexedRef, since time.Time) error {
	want := make(map[events.IndexedRef]int64, len(refs))
	for _, r := range refs {
		want[r] = 0
	}
	return c.waitObjects(ctx, db, want, since, true)
}

// waitObjects waits until every object of want is indexed at its
// version, or, when removed is set, is not indexed at all.
func (c *Client) waitObjects(ctx context.Context, db string, want map[events.IndexedRef]int64, since time.Time, removed bool) error {
	letters := c.watchLetters(db, since)
	pending := make(map[events.IndexedRef]int64, len(want))
	for ref, v := range want {
		pending[ref] = v
	}
	var lastErr error
	for len(pending) > 0 {
		if l := letters.last(ctx); l != nil {
			return &DeadLetteredError{Letter: l}
		}
		if err := c.checkIndexed(ctx, db, pending, removed); err != nil {
			lastErr = err
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			var first events.IndexedRef
			for ref := range pending {
				if first.Name == "" || ref.Name < first.Name {
					first = ref
				}
			}
			state := "indexed"
			if removed {
				state = "removed"
			}
			if lastErr != nil {
				return fmt.Errorf("%d object(s) of %s not confirmed %s (first: %s %s); no daemon answered: %v: %w", len(pending), db, state, first.Kind, first.Name, lastErr, ctx.Err())
			}
			return fmt.Errorf("%d object(s) of %s not %s yet (first: %s %s): see the worker logs: %w", len(pending), db, state, first.Kind, first.Name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// checkIndexed asks for the pending objects, a page at a time, and drops
// those indexed at their version (removed: those not indexed).
func (c *Client) checkIndexed(ctx context.Context, db string, pending map[events.IndexedRef]int64, removed bool) error {
	refs := make([]events.IndexedRef, 0, len(pending))
	for ref := range pending {
		refs = append(refs, ref)
	}
	for start := 0; start < len(refs); start += events.MaxObjectsAsked {
		page := refs[start:min(start+events.MaxObjectsAsked, len(refs))]
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rep, err := c.Tables(rctx, &events.TablesRequest{Database: db, Limit: 1, Objects: page})
		cancel()
		if err != nil {
			return err
		}
		for _, o := range rep.Objects {
			want, ok := pending[o.IndexedRef]
			if ok && ((removed && o.Version == 0) || (!removed && o.Version >= want)) {
				delete(pending, o.IndexedRef)
			}
		}
	}
	return nil
}
