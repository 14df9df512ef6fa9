package workers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
)

// markReader is the part of the store the compactor checks an event
// against.
type markReader interface {
	Marks(ctx context.Context, db, kind string, names []string) (map[string]int64, error)
}

// compactor deletes superseded events from the event stream, outside
// the apply path.
type compactor struct {
	stream   func(ctx context.Context) (jetstream.Stream, error)
	marks    markReader
	maxBytes int
	log      *zap.Logger
	m        *Metrics
	mu       sync.Mutex
	pending  []supersededEvent
	wake     chan struct{}
	// lastFull is when a full queue was last logged.
	lastFull time.Time
}

func newCompactor(stream func(ctx context.Context) (jetstream.Stream, error), marks markReader, maxBytes int, log *zap.Logger, m *Metrics) *compactor {
	return &compactor{stream: stream, marks: marks, maxBytes: maxBytes, log: log, m: m, wake: make(chan struct{}, 1)}
}

// add queues events without waiting: past maxSuperseded they stay in
// the stream, counted.
func (c *compactor) add(evs []supersededEvent) {
	if len(evs) == 0 {
		return
	}
	c.mu.Lock()
	room := min(len(evs), maxSuperseded-len(c.pending))
	c.pending = append(c.pending, evs[:room]...)
	left := len(evs) - room
	logFull := left > 0 && time.Since(c.lastFull) > time.Minute
	if logFull {
		c.lastFull = time.Now()
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if left > 0 {
		c.count(supersededSkipped, left)
	}
	if logFull {
		c.log.Warn("superseded events left in the stream: the queue of deletions is full", zap.Int("events", left), zap.Int("queued", maxSuperseded))
	}
}

// next takes the queued events.
func (c *compactor) next() []supersededEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.pending
	c.pending = nil
	return out
}

// Outcomes of a superseded event, as schemaq_worker_superseded_events_total
// counts them.
const (
	supersededDeleted = "deleted" // deleted from the stream
	supersededGone    = "gone"    // deleted already (another replica)
	supersededLive    = "live"    // holds an object no newer event replaced: left
	supersededKept    = "kept"    // the mark or history names events the stream does not hold as it says: left
	supersededFailed  = "failed"  // the stream or the store did not answer: left
	supersededSkipped = "skipped" // the queue was full: left
)

func (c *compactor) count(outcome string, n int) {
	if c.m != nil {
		c.m.superseded.WithLabelValues(outcome).Add(float64(n))
	}
}

// run deletes queued events until ctx ends; what is queued then stays.
func (c *compactor) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
			c.drain(ctx, c.next(), func(outcome string) { c.count(outcome, 1) })
		}
	}
}

// compactBatch is how many events one read of marks checks.
const compactBatch = 64

// drain removes evs in batches until ctx ends, telling tally what became
// of each as each batch ends.
func (c *compactor) drain(ctx context.Context, evs []supersededEvent, tally func(outcome string)) {
	for start := 0; start < len(evs) && ctx.Err() == nil; start += compactBatch {
		for _, o := range c.removeBatch(ctx, evs[start:min(start+compactBatch, len(evs))]) {
			tally(o)
		}
	}
}

// candidate is a superseded event read back, with the objects it holds.
type candidate struct {
	e     supersededEvent
	names []string
}

// removeBatch deletes each of evs from the stream once it has read it
// back as an event of its object whose every object a newer event
// replaced, and returns what became of each.
func (c *compactor) removeBatch(ctx context.Context, evs []supersededEvent) []string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := make([]string, 0, len(evs))
	s, err := c.stream(ctx)
	if err != nil {
		for _, e := range evs {
			out = append(out, c.failed(e, err))
		}
		return out
	}
	var cands []candidate
	for _, e := range evs {
		cand, outcome := c.readBack(ctx, s, e)
		if outcome != "" {
			out = append(out, outcome)
			continue
		}
		cands = append(cands, cand)
	}
	v := &batchView{c: c, s: s, marks: c.readMarks(ctx, cands), held: map[uint64]*heldObjects{}}
	for _, cand := range cands {
		out = append(out, v.removeIfReplaced(ctx, cand))
	}
	return out
}

// readBack reads e's event; an outcome when it goes no further.
func (c *compactor) readBack(ctx context.Context, s jetstream.Stream, e supersededEvent) (candidate, string) {
	msg, err := s.GetMsg(ctx, e.seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return candidate{}, supersededGone
	}
	if err != nil {
		return candidate{}, c.failed(e, err)
	}
	names, err := objectsOf(msg, e, c.maxBytes)
	if err != nil {
		c.warnForeign(e, err)
		return candidate{}, supersededKept
	}
	return candidate{e: e, names: names}, ""
}

// markKey is a database's objects of one kind.
type markKey struct{ db, kind string }

// readMarks reads the marks of the candidates' objects, one read per
// database and kind; a read that fails leaves its objects unmarked, so
// their events stay.
func (c *compactor) readMarks(ctx context.Context, cands []candidate) map[markKey]map[string]int64 {
	names := map[markKey][]string{}
	for _, cand := range cands {
		if cand.e.kind == kindSchema {
			continue
		}
		k := markKey{cand.e.db, cand.e.kind}
		names[k] = append(names[k], cand.names...)
	}
	out := make(map[markKey]map[string]int64, len(names))
	for k, ns := range names {
		slices.Sort(ns)
		m, err := c.marks.Marks(ctx, k.db, k.kind, slices.Compact(ns))
		if err != nil {
			c.log.Debug("marks unread; superseded events stay in the stream", zap.String("db", k.db), zap.Error(err))
			continue
		}
		out[k] = m
	}
	return out
}

// batchView is what one batch has read: the marks, and the objects
// held by the events the marks name.
type batchView struct {
	c     *compactor
	s     jetstream.Stream
	marks map[markKey]map[string]int64
	held  map[uint64]*heldObjects // by stream sequence; nil: no message there
	last  uint64                  // the stream's last sequence, once read
}

// removeIfReplaced deletes cand's event when newer events in the stream
// replaced every object it holds.
func (v *batchView) removeIfReplaced(ctx context.Context, cand candidate) string {
	e := cand.e
	if outcome := v.replaced(ctx, cand); outcome != "" {
		return outcome
	}
	if err := v.s.DeleteMsg(ctx, e.seq); err != nil {
		// The server says only in words that the message was gone (another
		// replica deleted it first): ask again.
		if _, gerr := v.s.GetMsg(ctx, e.seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return supersededGone
		}
		return v.c.failed(e, err)
	}
	return supersededDeleted
}

// replaced is "" when every object cand holds has a newer event in the
// stream, and otherwise what becomes of cand. A snapshot replaced a
// schema event when it comes after it. A doc or example's mark must be
// newer and name an event in the stream that holds the object: marks
// of an index built from another stream (one deleted and made again
// numbers from 1) name events that do not, and an index that holds a
// newer version than the stream does must not take the stream's events
// away.
func (v *batchView) replaced(ctx context.Context, cand candidate) string {
	e := cand.e
	if e.kind == kindSchema && e.id != "" {
		// The history applied the seq from e.by: it must be there, a
		// schema event of the database; the catalog then no longer
		// needs e.
		held, err := v.heldBy(ctx, e, e.by)
		if err != nil {
			return v.c.failed(e, fmt.Errorf("the event the history applied instead, at %d, is not read (%w)", e.by, err))
		}
		if held == nil {
			return v.replacementGone(ctx, e)
		}
		if len(held.names) == 0 {
			v.c.warnForeign(e, fmt.Errorf("the history applied its seq from stream event %d, which is no schema event of the database", e.by))
			return supersededKept
		}
		return ""
	}
	if e.kind == kindSchema {
		if e.by <= e.seq {
			v.c.warnForeign(e, fmt.Errorf("the snapshot that replaced it sits before it, at %d", e.by))
			return supersededKept
		}
		return ""
	}
	m, ok := v.marks[markKey{e.db, e.kind}]
	if !ok {
		return v.c.failed(e, errors.New("marks unread"))
	}
	for _, n := range cand.names {
		mark := uint64(m[n])
		if mark <= e.seq {
			return supersededLive
		}
		held, err := v.heldBy(ctx, e, mark)
		if err != nil {
			return v.c.failed(e, err)
		}
		if held == nil {
			// Deleted since: superseded in turn, and this index has not
			// applied what replaced it yet (a replica behind another).
			// Left for now.
			if last, err := v.lastSeq(ctx); err != nil || mark <= last {
				return v.c.failed(e, fmt.Errorf("the newer event of %s %q, at %d, is no longer in the stream", e.kind, n, mark))
			}
			v.c.warnForeign(e, fmt.Errorf("the mark of %s %q names stream event %d, past the stream's last", e.kind, n, mark))
			return supersededKept
		}
		if !slices.Contains(held.names, n) {
			v.c.warnForeign(e, fmt.Errorf("the mark of %s %q names stream event %d, which does not hold it", e.kind, n, mark))
			return supersededKept
		}
	}
	return ""
}

// replacementGone decides a set-aside schema event whose replacement,
// the event the history applied its seq from, the stream no longer
// holds. A snapshot after the replacement superseded it, and the
// compactor took it first: e, older still, is superseded as much, and
// stays for good if left now, as the dead-letter sweep that handed it on
// has dropped its letter (CI saw the snapshot win that race about once
// in fifteen runs). Retention takes the oldest first, so it could not
// have taken the replacement and left e. A replacement past the
// stream's last sequence is one this stream never held: e is kept.
func (v *batchView) replacementGone(ctx context.Context, e supersededEvent) string {
	last, err := v.lastSeq(ctx)
	if err != nil {
		return v.c.failed(e, err)
	}
	if e.by > last || e.by <= e.seq {
		v.c.warnForeign(e, fmt.Errorf("the history applied its seq from stream event %d, which this stream never held after it", e.by))
		return supersededKept
	}
	return ""
}

// heldObjects are the objects an event holds; an event that holds none
// of the kind asked for holds an empty list.
type heldObjects struct{ names []string }

// heldBy returns the objects of e's kind in e's database that the event
// at seq holds, read once per batch; nil when the stream holds no
// message there.
func (v *batchView) heldBy(ctx context.Context, e supersededEvent, seq uint64) (*heldObjects, error) {
	if held, ok := v.held[seq]; ok {
		return held, nil
	}
	msg, err := v.s.GetMsg(ctx, seq)
	if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, err
	}
	var held *heldObjects
	if err == nil {
		names, _ := objectsHeld(msg, e.db, e.kind, v.c.maxBytes)
		held = &heldObjects{names: names}
	}
	v.held[seq] = held
	return held, nil
}

// lastSeq is the stream's last sequence, read once per batch: a mark
// past it names an event this stream never held.
func (v *batchView) lastSeq(ctx context.Context) (uint64, error) {
	if v.last == 0 {
		info, err := v.s.Info(ctx)
		if err != nil {
			return 0, err
		}
		v.last = info.State.LastSeq
	}
	return v.last, nil
}

// warnForeign logs an event left because the index or the catalog
// names events the stream does not hold as it says.
func (c *compactor) warnForeign(e supersededEvent, err error) {
	c.log.Warn("an index mark or a catalog's history names stream events that are not its objects': left in the stream. "+
		"An index or catalog kept across a stream made again does; rebuild the index", zap.String("db", e.db),
		zap.String("kind", e.kind), zap.String("name", e.name), zap.Uint64("stream_seq", e.seq), zap.Error(err))
}

func (c *compactor) failed(e supersededEvent, err error) string {
	c.log.Debug("a superseded event stays in the stream", zap.String("db", e.db), zap.String("kind", e.kind), zap.String("name", e.name),
		zap.Uint64("stream_seq", e.seq), zap.Error(err))
	return supersededFailed
}

// objectsOf returns the names of the objects of e's kind that msg, an
// event of e's database published on its own subject, holds, once it
// has checked that e's object is one of them.
func objectsOf(msg *jetstream.RawStreamMsg, e supersededEvent, maxBytes int) ([]string, error) {
	if e.id != "" {
		return setAsideOf(msg, e, maxBytes)
	}
	names, err := objectsHeld(msg, e.db, e.kind, maxBytes)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(names, e.name) {
		return nil, fmt.Errorf("an event of %s %q", e.kind, names)
	}
	return names, nil
}

// setAsideOf checks that msg is the set-aside schema event e names: of
// its database, on its subject, with the id and seq its dead letter
// recorded (a stream made again numbers other events there, and a
// letter is only what its headers say: one naming a pending migration's
// event under the seq of an applied one must not take it away).
func setAsideOf(msg *jetstream.RawStreamMsg, e supersededEvent, maxBytes int) ([]string, error) {
	ev, err := events.DecodeCompressed(msg.Data, maxBytes)
	if err != nil {
		return nil, err
	}
	if ev.Database != e.db || ev.Subject() != msg.Subject || ev.ID != e.id {
		return nil, fmt.Errorf("event %q of database %q on %s, where its dead letter named event %q", ev.ID, ev.Database, msg.Subject, e.id)
	}
	kind, names := eventObjects(ev)
	if kind != kindSchema || !slices.Contains(names, schemaName(ev.Type, e.at)) {
		return nil, fmt.Errorf("%s %v, where its dead letter named seq %d", ev.Type, names, e.at)
	}
	return names, nil
}

// objectsHeld returns the names of the objects of kind that msg holds,
// once it has checked that msg is an event of db on its own subject.
func objectsHeld(msg *jetstream.RawStreamMsg, db, kind string, maxBytes int) ([]string, error) {
	ev, err := events.DecodeCompressed(msg.Data, maxBytes)
	if err != nil {
		return nil, err
	}
	if ev.Database != db || ev.Subject() != msg.Subject {
		return nil, fmt.Errorf("an event of database %q on %s", ev.Database, msg.Subject)
	}
	k, names := eventObjects(ev)
	if k != kind {
		return nil, fmt.Errorf("a %s event", ev.Type)
	}
	return names, nil
}
