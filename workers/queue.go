package workers

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/schemaq/schemaq/pkg/tracing"

	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/indexer"
)

// Ordering. Each database has one queue and, while it holds events, one
// goroutine that applies them: docs and examples in arrival order, schema
// events lowest seq first. A migration whose predecessor is not applied
// yet stays in the queue, kept in progress so JetStream neither redelivers
// it nor counts a delivery, until the predecessor arrives here or is
// applied by another worker (the catalog bucket's change feed wakes the
// queue). Only a predecessor that does not come within GapTimeout of the
// database's last progress dead-letters the waiting events, as gap
// letters, which a worker re-sends by itself once the catalog reaches
// them. Databases run in parallel, at most Concurrency at once.

// item is one delivered event on its way through its database's queue.
type item struct {
	msg    jetstream.Msg
	meta   *jetstream.MsgMetadata
	ev     *events.Event // nil when it did not decode
	err    error         // why it did not decode
	schema bool          // a migration or snapshot
	// interprets: applying it may run PL/pgSQL (mayInterpret), read once
	// on arrival, since runs are planned over the queue again and again.
	interprets bool
	seq        int64  // schema events: their seq
	stop       func() // stops the in-progress heartbeat
	arrived    time.Time
	// span follows the event from its delivery to its settling: the
	// publisher's trace (traceparent) continues in it.
	span trace.Span
}

// queue holds one database's delivered, unsettled events.
type queue struct {
	db    string
	items []*item // decoded; guarded by Worker.qmu, as are incoming and running
	// incoming are delivered and not yet decoded: the queue's goroutine
	// decodes them (admit), so that a database whose events are costly
	// to read pays for it in its own time, not in the consumer's
	// handler, which every database's events pass through.
	incoming []*item
	running  bool
	// bytes are the bytes of the events q holds (hold), for its share
	// of MaxHeldBytes.
	bytes atomic.Int64
	wake  chan struct{}

	// Owned by the queue's goroutine:
	version  int64     // the catalog version last seen
	progress time.Time // when version last moved
	// swept is the version at the last dead-letter sweep; sweeping is set
	// while one runs (beside the queue: sweepIfMoved).
	swept    atomic.Int64
	sweeping atomic.Bool
	pauses   int // tries since the queue paused (pause.go); 0 when running
	// pend holds the applied events whose catalog is written but not yet
	// projected into the index (flush).
	pend *projection
}

// projection is the newest catalog a queue wrote, and the events it
// applied, waiting to be projected and acked together.
type projection struct {
	cat   *catalog.Catalog
	rev   uint64
	items []*item
	outs  []outcome
	t0    time.Time
}

// hold counts items as held by q (sign 1) or no longer (-1): events for
// the metric, bytes for q's share and the worker's budget.
func (w *Worker) hold(q *queue, sign int, items ...*item) {
	var n int64
	for _, it := range items {
		n += int64(len(it.msg.Data()))
	}
	n *= int64(sign)
	q.bytes.Add(n)
	w.held.add(n)
	if w.m != nil {
		w.m.held.Add(float64(sign * len(items)))
		w.m.heldBytes.Add(float64(n))
	}
}

func (q *queue) nudge() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// enqueue hands a delivered message to its database's queue, starting the
// queue's goroutine when it has none. It waits first while the worker
// holds MaxHeldBytes/part or more (heldBytes), keeping the message in
// progress; if intake stops meanwhile, the message is left to be
// redelivered.
func (w *Worker) enqueue(intake, work context.Context, msg jetstream.Msg, part int64) {
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error("message without jetstream metadata", zap.String("subject", msg.Subject()), zap.Error(err))
		_ = msg.Term()
		return
	}
	stop := keepInProgress(work, msg, w.cfg.Consumer.AckWait/3)
	if !w.held.wait(intake, part) {
		stop()
		return
	}
	it := rawItem(msg, meta)
	it.stop = stop
	w.trace(it)
	db := subjectDB(msg.Subject())
	w.qmu.Lock()
	defer w.qmu.Unlock()
	q := w.queues[db]
	if q == nil {
		q = &queue{db: db, wake: make(chan struct{}, 1), progress: time.Now(), version: -1}
		w.queues[db] = q
	}
	q.incoming = append(q.incoming, it)
	w.hold(q, 1, it)
	if q.running {
		q.nudge()
		return
	}
	q.running = true
	w.drains.Add(1)
	go w.drain(intake, work, q)
}

// catalogChanged wakes db's queue: another worker may have applied what
// its first event waits for.
func (w *Worker) catalogChanged(db string) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if q := w.queues[db]; q != nil {
		q.nudge()
	}
}

// project brings the index to cat, turning a panic into an error.
func (w *Worker) project(ctx context.Context, cat *catalog.Catalog) (panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Error("panic while indexing a catalog", zap.String("db", cat.Database), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			panicked, err = true, fmt.Errorf("internal error while applying the event: %v", p)
		}
	}()
	_, err = indexer.Catalog(ctx, w.store, w.emb, cat, w.chunker)
	return false, err
}

// admit decodes the events delivered to q since it last looked, in
// arrival order, and adds them to its items.
func (w *Worker) admit(q *queue) {
	w.qmu.Lock()
	in := q.incoming
	q.incoming = nil
	w.qmu.Unlock()
	if len(in) == 0 {
		return
	}
	for _, it := range in {
		w.decode(it)
		w.traced(it)
	}
	w.qmu.Lock()
	q.items = append(q.items, in...)
	w.qmu.Unlock()
}

// peek picks the event to handle: the oldest non-schema event, else the
// schema event with the lowest seq (the oldest of equal ones); nil when
// the queue is empty.
func (w *Worker) peek(q *queue) *item {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	var best *item
	for _, it := range q.items {
		if !it.schema {
			return it
		}
		if best == nil || it.seq < best.seq {
			best = it
		}
	}
	return best
}

// retire ends q's goroutine when q is still empty; an event that arrived
// meanwhile keeps it going.
func (w *Worker) retire(q *queue) bool {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if len(q.items) > 0 || len(q.incoming) > 0 {
		return false
	}
	q.running = false
	delete(w.queues, q.db)
	return true
}

func (w *Worker) remove(q *queue, it *item) {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	if i := slices.Index(q.items, it); i >= 0 {
		q.items = slices.Delete(q.items, i, i+1)
		w.hold(q, -1, it)
	}
}

// waiting returns the queue's schema events in seq order.
func (w *Worker) waiting(q *queue) []*item {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	var out []*item
	for _, it := range q.items {
		if it.schema {
			out = append(out, it)
		}
	}
	slices.SortStableFunc(out, func(a, b *item) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// drain applies q's events until it is empty, or until intake stops; then
// what it still holds is handed back to JetStream for redelivery.
func (w *Worker) drain(intake, work context.Context, q *queue) {
	defer w.drains.Done()
	// unrested is when the apply began whose rest (see pace) is put off
	// until its projection: resting between the two would only delay
	// the moment the apply becomes searchable.
	var unrested time.Time
	for {
		w.admit(q)
		it := w.peek(q)
		continues := q.pend != nil && it != nil && it.schema && it.seq == q.pend.cat.Version+1
		if q.pend != nil && (!continues || len(q.pend.items) >= maxPending) {
			// Nothing here continues the history (or enough waits for
			// its projection): project what was applied. When events
			// wait here for a later seq, another worker likely holds the
			// next ones and is about to write a newer catalog, whose
			// projection will cover this one.
			t0 := time.Now()
			if !unrested.IsZero() {
				t0, unrested = unrested, time.Time{}
			}
			if reason := w.flush(work, q, !continues && it != nil && it.schema); reason != "" {
				if !w.pause(intake, q, reason) {
					w.release(q)
					return
				}
				continue
			}
			w.unpause(q)
			w.rest(work, t0)
			continue
		}
		if !unrested.IsZero() { // the history goes on: rest for the apply now
			w.rest(work, unrested)
			unrested = time.Time{}
		}
		if it == nil {
			if w.retire(q) {
				w.sweepIfMoved(work, q)
				return
			}
			continue
		}
		if intake.Err() != nil {
			w.release(q)
			return
		}
		t0 := time.Now()
		out := w.process(work, q, it)
		if out.act == actPause {
			if !w.pause(intake, q, out.reason) {
				w.release(q)
				return
			}
			continue
		}
		w.unpause(q)
		if q.pend != nil && out.act != actWait {
			unrested = t0
		} else {
			w.rest(work, t0)
		}
		if out.act != actWait {
			continue
		}
		// The lowest schema event waits, so every schema event here does.
		if !w.await(intake, work, q, it, out) {
			w.release(q)
			return
		}
	}
}

// maxPending bounds the events applied but not yet projected, so that the
// projection that makes the last of a long history searchable is short.
const maxPending = 64

// handOff is how long a queue with waiting events gives another worker
// to write a newer catalog before it projects its own.
const handOff = 100 * time.Millisecond

// flush projects the catalog q wrote last into the index and acks the
// events it applied. A newer catalog already written by another worker
// makes the projection unnecessary: that worker projects its own, which
// includes this one, and acks only after; should it die first, its
// events come back as duplicates, which project the newest catalog.
func (w *Worker) flush(work context.Context, q *queue, others bool) (pause string) {
	p := q.pend
	q.pend = nil
	ctx, cancel := context.WithTimeout(work, w.cfg.MessageTimeout)
	defer cancel()
	newer := func() bool {
		rev, err := w.cats.Revision(ctx, q.db)
		return err == nil && rev > p.rev
	}
	superseded := newer()
	if others && !superseded {
		// Wait a moment for another worker's write; the change feed
		// wakes us on every write, our own included.
		deadline := time.NewTimer(handOff)
	wait:
		for !superseded {
			select {
			case <-q.wake:
				superseded = newer()
			case <-deadline.C:
				break wait
			case <-work.Done():
				break wait
			}
		}
		deadline.Stop()
		q.nudge() // the drain loop looks again either way
	}
	if !superseded {
		done := w.prio.project()
		w.sem <- struct{}{}
		mu := w.lock(q.db)
		mu.Lock()
		panicked, err := w.project(ctx, p.cat)
		mu.Unlock()
		<-w.sem
		done()
		if !panicked && outOfSpace(err) {
			// The events stay held, unacked, until the projection fits.
			q.pend = p
			return err.Error()
		}
		for i := range p.outs {
			switch {
			case panicked:
				// A bug, say in chunking an unusual table: the events are
				// dead-lettered with it rather than retried forever; the
				// next event of the database retries the projection.
				p.outs[i].act, p.outs[i].kind, p.outs[i].reason = actDeadLetter, events.DLQKindFailed, err.Error()
			case err != nil:
				// The catalog moved on; redeliveries are duplicates that
				// repair the index through ensureProjected.
				p.outs[i].act, p.outs[i].reason = actRetry, err.Error()
			}
		}
	}
	w.hold(q, -1, p.items...)
	for i, it := range p.items {
		it.stop()
		if p.outs[i].act == actAck {
			it.span.AddEvent("projected")
		}
		out := p.outs[i]
		log := w.log.With(zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream),
			zap.Uint64("delivery", it.meta.NumDelivered))
		act := w.settle(it.msg, it.meta, out, log)
		w.settled(out.typ, act, it, time.Since(p.t0).Seconds()/float64(len(p.items)))
		if act == actAck {
			w.resentApplied(p.cat, it)
		}
	}
	return ""
}

// release naks everything q holds (shutdown) and retires the queue.
func (w *Worker) release(q *queue) {
	w.qmu.Lock()
	items := slices.Concat(q.items, q.incoming)
	q.items, q.incoming, q.running = nil, nil, false
	delete(w.queues, q.db)
	w.hold(q, -1, items...)
	w.qmu.Unlock()
	if q.pend != nil {
		// Their catalog is written: redelivered, they are duplicates
		// that project it.
		items = append(items, q.pend.items...)
		w.hold(q, -1, q.pend.items...)
		q.pend = nil
	}
	for _, it := range items {
		it.stop()
		_ = it.msg.Nak()
	}
}

// maxRun bounds how many consecutive migrations one catalog write covers.
const maxRun = 200

// process handles one event and settles it, unless it waits for its
// predecessor; it returns the outcome. A migration that applies takes the
// migrations with the next seqs that the queue holds along: a published
// history arrives as such a run, and one catalog write and one index
// projection for the run cost what they cost for one migration.
func (w *Worker) process(work context.Context, q *queue, it *item) outcome {
	if d := w.prio.awaitApply(work); d > 0 && w.m != nil {
		w.m.heldForProjections.Add(d.Seconds())
	}
	w.sem <- struct{}{}
	defer func() { <-w.sem }()
	mu := w.lock(q.db)
	mu.Lock()
	defer mu.Unlock()
	ctx, cancel := context.WithTimeout(work, w.cfg.MessageTimeout)
	defer cancel()
	t0 := time.Now()
	items := w.run(q, it)
	outs := w.handleItems(ctx, items)
	last := outs[len(outs)-1]
	if it.schema && last.version != q.version {
		q.version, q.progress = last.version, time.Now()
	}
	if outs[0].act == actWait {
		return outs[0]
	}
	for i, out := range outs {
		it := items[i]
		if out.act != actWait && out.act != actPause {
			it.span.AddEvent("applied")
		}
		// What cannot be written now stays held, and so does what comes
		// after it: the queue pauses (pause.go).
		if pauseFor(out) {
			return outcome{act: actPause, reason: out.reason}
		}
		if out = w.final(it.meta, out); out.act == actDeadLetter {
			if err := w.deadLetter(it.msg, it.meta, out); err != nil {
				return outcome{act: actPause, reason: "the dead letter of " + it.msg.Subject() + " could not be published: " + err.Error()}
			}
			out.lettered = true
		}
		w.remove(q, it)
		if out.wrote != nil && out.act == actAck {
			// Acked once the index reflects it: see flush.
			if q.pend == nil {
				q.pend = &projection{t0: t0}
			}
			q.pend.cat, q.pend.rev = out.wrote, out.wroteRev
			q.pend.items = append(q.pend.items, it)
			w.hold(q, 1, it) // still held, out of the queue
			q.pend.outs = append(q.pend.outs, out)
			continue
		}
		it.stop()
		log := w.log.With(zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream),
			zap.Uint64("delivery", it.meta.NumDelivered))
		act := w.settle(it.msg, it.meta, out, log)
		if act == actDeadLetter && out.kind == events.DLQKindRefused && it.ev.Migration != nil {
			w.qmu.Lock()
			w.refused[q.db] = out
			w.qmu.Unlock()
		}
		typ := out.typ
		if typ == "" {
			typ = "invalid"
		}
		w.settled(typ, act, it, time.Since(t0).Seconds()/float64(len(outs)))
	}
	return last
}

// handleItems handles what run gave: a run of migrations, a run of
// docs, or one event, which is marked as being handled (attempt.go).
// The outcomes are of the first items, in order; those of a run that
// failed part way may be fewer than the items.
func (w *Worker) handleItems(ctx context.Context, items []*item) []outcome {
	switch {
	case len(items) > 1 && items[0].schema:
		return w.handleRun(ctx, items)
	case len(items) > 1:
		return w.handleDocs(ctx, items)
	}
	poisoned, done := w.attempt(ctx, items[0])
	if poisoned != nil {
		return []outcome{*poisoned}
	}
	defer done()
	return []outcome{w.handle(ctx, items[0])}
}

// run returns it and, when it is a migration, the well-formed migrations
// of the queue with the seqs that follow it, in order.
func (w *Worker) run(q *queue, it *item) []*item {
	// A redelivered event is handled alone, so that one that ends the
	// process is told apart from its neighbours (attempt.go); so is one
	// that may run PL/pgSQL, which is marked from its first delivery.
	if it.meta.NumDelivered > 1 || it.interprets {
		return []*item{it}
	}
	if wellFormedDoc(it) {
		return w.docRun(q, it)
	}
	if !wellFormedMigration(it) {
		return []*item{it}
	}
	w.qmu.Lock()
	defer w.qmu.Unlock()
	bySeq := map[int64]*item{}
	for _, o := range q.items {
		if o != it && wellFormedMigration(o) && o.meta.NumDelivered == 1 && !o.interprets && o.seq > it.seq && o.seq <= it.seq+maxRun {
			if _, dup := bySeq[o.seq]; !dup {
				bySeq[o.seq] = o
			}
		}
	}
	out := []*item{it}
	for next := bySeq[it.seq+1]; next != nil; next = bySeq[next.seq+1] {
		out = append(out, next)
	}
	return out
}

// maxDocRun bounds how many docs one index write covers.
const maxDocRun = 64

// docRun returns it, a doc's upsert, and the upserts of other docs that
// follow it among the queue's docs and examples events, up to the first
// event that is not one or a doc already in the run: they are written
// to the index together (handleDocs). Docs are applied in arrival
// order, so a run stops where that order would matter.
func (w *Worker) docRun(q *queue, it *item) []*item {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	out := []*item{it}
	seen := map[string]bool{it.ev.DocUpsert.DocID: true}
	at := slices.Index(q.items, it)
	if at < 0 {
		return out
	}
	for _, o := range q.items[at+1:] {
		if len(out) == maxDocRun {
			break
		}
		if o.schema {
			continue // schema events keep their own order
		}
		if !wellFormedDoc(o) || o.meta.NumDelivered > 1 || seen[o.ev.DocUpsert.DocID] {
			break
		}
		seen[o.ev.DocUpsert.DocID] = true
		out = append(out, o)
	}
	return out
}

func wellFormedDoc(it *item) bool {
	return it.ev != nil && it.ev.DocUpsert != nil && it.ev.Subject() == it.msg.Subject()
}

// handleDocs writes a run of docs' sections as one index write. A
// failure, or a panic, has the first doc handled alone, so that the one
// that fails is retried or dead-lettered by itself.
func (w *Worker) handleDocs(ctx context.Context, items []*item) (outs []outcome) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Warn("a run of docs failed; the first is indexed alone, the rest after it", zap.Any("panic", p))
			outs = []outcome{w.handle(ctx, items[0])}
		}
	}()
	db := items[0].ev.Database
	edits := make([]indexer.DocEdit, len(items))
	docs := make([]objectVersion, len(items))
	for i, it := range items {
		edits[i] = w.docEdit(it)
		docs[i] = objectVersion{name: edits[i].ID, seq: it.meta.Sequence.Stream}
	}
	s := w.supersede(ctx, db, chunk.KindDoc, docs)
	if _, err := indexer.Docs(ctx, w.store, w.emb, db, edits); err != nil {
		w.log.Warn("a run of docs failed; the first is indexed alone, the rest after it", zap.String("db", db), zap.Int("docs", len(items)), zap.Error(err))
		return []outcome{w.handle(ctx, items[0])}
	}
	s.done(ctx)
	outs = make([]outcome, len(items))
	for i, it := range items {
		outs[i] = outcome{act: actAck, db: db, typ: it.ev.Type}
	}
	return outs
}

// docEdit is a doc upsert's sections, at its event's stream sequence,
// which orders the edits of one doc.
func (w *Worker) docEdit(it *item) indexer.DocEdit {
	d := it.ev.DocUpsert
	return indexer.DocEdit{ID: d.DocID, Sections: chunk.Doc(it.ev.Database, d.DocID, d.Title, d.Body, d.Tags, w.cfg.Chunk),
		Version: int64(it.meta.Sequence.Stream)}
}

// streamSeqs are the items' places in the event stream.
func streamSeqs(items []*item) []uint64 {
	out := make([]uint64, len(items))
	for i, it := range items {
		out[i] = it.meta.Sequence.Stream
	}
	return out
}

func wellFormedMigration(it *item) bool {
	return it.ev != nil && it.ev.Migration != nil && it.ev.Subject() == it.msg.Subject()
}

// handleRun applies consecutive migrations as one catalog write (schema).
// A panic in it has the first item handled alone, so that the one that
// panics is dead-lettered by itself.
func (w *Worker) handleRun(ctx context.Context, items []*item) (outs []outcome) {
	defer func() {
		if p := recover(); p != nil {
			w.log.Warn("a run of migrations failed; applying them one by one", zap.Any("panic", p))
			outs = []outcome{w.handle(ctx, items[0])}
		}
	}()
	evs := make([]*events.Event, len(items))
	for i, it := range items {
		evs[i] = it.ev
	}
	outs = w.schema(ctx, evs, streamSeqs(items))
	for i := range outs {
		outs[i].db, outs[i].typ = evs[i].Database, evs[i].Type
	}
	return outs
}

// await holds q's waiting schema events until something may let the first
// one apply: a new event in the queue, a change of the catalog, or a
// periodic re-check. When the predecessor was refused here, or has not
// come within GapTimeout of the database's last progress, the waiting
// events are dead-lettered as gap letters. It returns false when intake
// stopped.
func (w *Worker) await(intake, work context.Context, q *queue, first *item, out outcome) bool {
	need := out.version + 1
	w.qmu.Lock()
	r, refused := w.refused[q.db]
	if refused && r.seq < need {
		delete(w.refused, q.db) // the history moved past it
		refused = false
	}
	w.qmu.Unlock()
	if refused && r.seq == need {
		w.gapLetters(q, func(it *item) string {
			return fmt.Sprintf("gap: migration %d waits for migration %d (%s) of %s, which was refused: %s; "+
				"fix it and publish again (`schemaq publish migrations`): this one is then re-sent by itself", it.seq, need, r.source, q.db, r.reason)
		})
		return true
	}
	w.sweepIfMoved(work, q)
	since := later(first.arrived, q.progress)
	wait, full := w.cfg.GapTimeout, w.heldFull(q)
	if full {
		wait = min(wait/4, fullGapWait)
	}
	left := time.Until(since.Add(wait))
	if left <= 0 {
		w.gapLetters(q, func(it *item) string {
			if full {
				return fmt.Sprintf("gap: migration %d waited %v for migration %d of %s (the catalog is at version %d), and its waiting migrations fill "+
					"what this worker may hold (--max-held-mib), so that one cannot come in behind them: this one is re-sent by itself once it applies",
					it.seq, time.Since(later(it.arrived, q.progress)).Round(time.Second), need, q.db, out.version)
			}
			return fmt.Sprintf("gap: migration %d waited %v for migration %d of %s, which never arrived (the catalog is at version %d); "+
				"publish the missing migration (`schemaq publish migrations`): this one is then re-sent by itself",
				it.seq, time.Since(later(it.arrived, q.progress)).Round(time.Second), need, q.db, out.version)
		})
		return true
	}
	// The change feed wakes us when another worker applies; the tick is
	// for a feed that missed it (a reconnect), and for the bytes held.
	t := time.NewTimer(min(left, time.Second))
	defer t.Stop()
	select {
	case <-intake.Done():
		return false
	case <-q.wake:
	case <-t.C:
	}
	return true
}

// fullGapWait is how long migrations wait for their predecessor when
// they fill what the worker may hold (heldFull), or a quarter of
// GapTimeout if that is shorter: the predecessor, if it was published
// after them, cannot be taken until they go.
const fullGapWait = 5 * time.Second

// heldFull reports whether q holds its share of MaxHeldBytes while the
// worker holds so much that its lanes take nothing more.
func (w *Worker) heldFull(q *queue) bool {
	return w.cfg.MaxHeldBytes > 0 && q.bytes.Load() >= w.cfg.MaxHeldBytes/8 && !w.held.below(2)
}

// gapLetters dead-letters every schema event q holds.
func (w *Worker) gapLetters(q *queue, reason func(*item) string) {
	for _, it := range w.waiting(q) {
		w.remove(q, it)
		it.stop()
		src := ""
		if m := it.ev.Migration; m != nil {
			src = m.Source
		}
		out := outcome{typ: it.ev.Type, act: actDeadLetter, kind: events.DLQKindGap, db: q.db, seq: it.seq, source: src, reason: reason(it)}
		log := w.log.With(zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream))
		act := w.settle(it.msg, it.meta, out, log)
		w.settled(it.ev.Type, act, it, -1)
	}
}

// sweepIfMoved tidies the database's dead letters once the catalog has
// moved since the last sweep: letters of migrations it has moved past are
// obsolete and deleted; gap letters beyond it are re-sent, so a history
// that was stuck behind a missing or refused migration resumes by itself
// once that one is published. The sweep runs beside the queue, one at a
// time: a dead-letter stream that does not answer (its leader just died)
// held the database's events for the sweep's whole deadline when it ran
// in line.
func (w *Worker) sweepIfMoved(ctx context.Context, q *queue) {
	v := q.version
	if v <= q.swept.Load() || q.db == "" || !q.sweeping.CompareAndSwap(false, true) {
		return
	}
	// The queue's goroutine counts in drains, so the count is above zero.
	w.drains.Add(1)
	go func() {
		defer w.drains.Done()
		defer q.sweeping.Store(false)
		if err := w.sweep(ctx, q.db, v); err != nil {
			w.log.Warn("dead-letter sweep failed; the next one retries", zap.String("db", q.db), zap.Error(err))
			return
		}
		q.swept.Store(v)
	}()
}

func (w *Worker) sweep(ctx context.Context, db string, version int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	box, err := deadletter.Open(ctx, w.js)
	if err != nil {
		return err
	}
	sw, err := box.Sweep(ctx, db, version)
	w.setAside(ctx, db, sw.Obsolete)
	for _, r := range sw.Refused {
		// Not a letter a worker wrote: left for a person to read (dlq
		// show) and delete.
		w.log.Warn("dead letter refused for re-send", zap.String("db", db), zap.Error(r))
	}
	if sw.Resent+sw.Dropped > 0 {
		w.log.Info("dead letters swept", zap.String("db", db), zap.Int64("catalog_version", version),
			zap.Int("resent", sw.Resent), zap.Int("obsolete_dropped", sw.Dropped))
	}
	return err
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// trace starts the event's span, continuing the publisher's trace.
func (w *Worker) trace(it *item) {
	_, it.span = tracing.Tracer().Start(tracing.Extract(context.Background(), it.msg.Headers()), "schemaq.event",
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("schemaq.database", subjectDB(it.msg.Subject())),
			attribute.Int64("schemaq.stream_seq", int64(it.meta.Sequence.Stream)),
			attribute.Int64("schemaq.delivery", int64(it.meta.NumDelivered))))
}

// traced names the event's span by its type once it is decoded.
func (w *Worker) traced(it *item) {
	typ := "invalid"
	if it.ev != nil {
		typ = it.ev.Type
	}
	it.span.SetName("schemaq.event " + typ)
	it.span.SetAttributes(attribute.Int64("schemaq.seq", it.seq))
}

// settled counts a settled event and ends its span: acknowledged means
// applied, indexed and searchable.
func (w *Worker) settled(typ string, act action, it *item, seconds float64) {
	w.m.settled(typ, act, it, seconds)
	if it.span == nil {
		return
	}
	it.span.SetAttributes(attribute.String("schemaq.outcome", act.String()))
	if act == actDeadLetter {
		it.span.SetStatus(codes.Error, "dead-lettered")
	}
	it.span.End()
}
