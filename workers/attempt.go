package workers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Poison pills. Some failures cannot be caught: a crash in C code (cgo),
// an out-of-memory kill. The event that caused it comes back after the
// restart and, tried again, ends the process again, on every replica it
// reaches, until its deliveries run out (and then it is gone without a
// letter). So an event is marked, in a bucket every worker and serve
// replica shares, while it is handled: the mark names the process
// (owner) and its delivery, under the event's stream sequence, the one
// name every consumer gives it. A worker that finds another process's
// mark older than any handling can last (staleMark) knows that process
// ended while handling the event, and dead-letters it before trying it;
// one that finds a fresh mark leaves the event to that process and tries
// again later. One crash anywhere is what a poison event costs.
//
// A first delivery of plain DDL is not marked (it costs nothing where
// nothing went wrong), so its crash is forgiven once: it may have been a
// kill that had nothing to do with the event. An event whose apply may
// run PL/pgSQL (mayInterpret) is marked from its first delivery and
// handled alone: the interpreter runs on budgets, but it is the one part
// of handling that evaluates what a publisher wrote.

// attemptKey is an event's key in the attempts bucket: its stream
// sequence. (Marks once were keyed by consumer too; those expire with the
// bucket's TTL.)
func attemptKey(it *item) string {
	return "ev." + strconv.FormatUint(it.meta.Sequence.Stream, 10)
}

// staleMark is how old another process's mark must be to say that the
// process ended while it handled the event: handling lasts at most the
// message timeout, and the bucket's clock may be this far from ours.
func (w *Worker) staleMark() time.Duration { return w.cfg.MessageTimeout + markClockSkew }

const markClockSkew = 5 * time.Second

// bindAttempts opens the attempts bucket; without it (a server set up by
// an older schemaq) events are tried as before, with a warning.
func (w *Worker) bindAttempts(ctx context.Context) {
	kv, err := streams.Attempts(ctx, w.js)
	if err != nil {
		w.log.Warn("no attempts bucket: an event that ends the process is not recognised", zap.Error(err))
		return
	}
	w.attempts = kv
}

// mark is what the bucket holds for an event being handled.
type mark struct {
	owner    string // the process (Worker.owner)
	consumer string
	delivery uint64
}

func (m mark) String() string {
	return m.owner + " " + m.consumer + " " + strconv.FormatUint(m.delivery, 10)
}

func parseMark(v []byte) (mark, bool) {
	f := strings.Fields(string(v))
	if len(f) != 3 {
		return mark{}, false
	}
	n, err := strconv.ParseUint(f[2], 10, 64)
	return mark{owner: f[0], consumer: f[1], delivery: n}, err == nil
}

// attempt reports whether another process ended while it handled this
// event (poisoned), or is handling it now (an outcome to retry later),
// and marks this handling otherwise; done removes the mark once handling
// returns.
func (w *Worker) attempt(ctx context.Context, it *item) (settled *outcome, done func()) {
	done = func() {}
	if w.attempts == nil || (it.meta.NumDelivered < 2 && !it.interprets) {
		return nil, done
	}
	key := attemptKey(it)
	// The mark is worth one bounded try of each request: an event is
	// tried unmarked rather than wait out a bucket that does not answer
	// (a request lost with its server would hold the event, and every
	// one of its database behind it, for its whole deadline).
	e, err := streams.Bounded(ctx, streams.ReadAttempt, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return w.attempts.Get(ctx, key) })
	switch {
	case err == nil:
		if out := w.judgeMark(ctx, it, key, e); out != nil {
			return out, done
		}
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		w.log.Warn("attempts bucket unreadable; trying the event unmarked", zap.Error(err))
		return nil, done
	}
	m := mark{owner: w.owner, consumer: it.meta.Consumer, delivery: it.meta.NumDelivered}
	if _, err := streams.Bounded(ctx, streams.WriteAttempt, func(ctx context.Context) (uint64, error) { return w.attempts.Put(ctx, key, []byte(m.String())) }); err != nil {
		w.log.Warn("attempt not marked; trying the event unmarked", zap.Error(err))
	}
	// Unmarked even when the event's deadline is what ended its handling,
	// and when the mark's write went unanswered: it may have landed.
	return nil, func() { w.unmark(context.Background(), key) }
}

// judgeMark decides what a mark found on an event means: nothing (this
// process's own, left by a handling whose unmark failed), another
// process at work on it now (retry later), or one that ended while it
// handled it (dead-letter).
func (w *Worker) judgeMark(ctx context.Context, it *item, key string, e jetstream.KeyValueEntry) *outcome {
	m, ok := parseMark(e.Value())
	if !ok || m.owner == w.owner {
		return nil
	}
	db := subjectDB(it.msg.Subject())
	if age := time.Since(e.Created()); age < w.staleMark() {
		if w.markGone(ctx, key) {
			return nil // that handling ended: this one may start
		}
		// Tried again once the mark is stale, if it is still there:
		// retries against it would only spend deliveries.
		age = time.Since(e.Created())
		return &outcome{act: actRetry, db: db, seq: it.seq, typ: eventType(it), after: max(w.staleMark()-age, 0) + 100*time.Millisecond, reason: fmt.Sprintf(
			"another process is handling this event (marked %v ago, by its delivery %d); tried again later", age.Round(time.Millisecond), m.delivery)}
	}
	w.log.Error("event ended the process that handled it; dead-lettering it before it is tried again",
		zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream), zap.Uint64("delivery", m.delivery),
		zap.String("consumer", m.consumer))
	w.unmark(ctx, key)
	why := ""
	if m.delivery == 1 {
		why = " (it may run PL/pgSQL, so its first delivery was marked)"
	}
	return &outcome{act: actDeadLetter, kind: events.DLQKindFailed, db: db, seq: it.seq, typ: eventType(it), reason: fmt.Sprintf(
		"handling this event ended the process that handled it: delivery %d of it (consumer %s) never finished%s; "+
			"dead-lettered before it is tried again (`schemaq dlq retry` once the cause is fixed)", m.delivery, m.consumer, why)}
}

// markWait bounds how long a handling waits for another process's fresh
// mark to go before it leaves the event for later. Serve replicas read
// every event on consumers of their own, so replicas catching up
// together meet on each event for the milliseconds one takes to apply
// it; leaving the event at once cost each of them staleMark (25 s by
// default) and a delivery, per replica behind the first.
const markWait = 3 * time.Second

// markGone waits, up to markWait, for the mark at key to be removed, and
// reports whether it was.
func (w *Worker) markGone(ctx context.Context, key string) bool {
	ctx, cancel := context.WithTimeout(ctx, markWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		_, err := streams.Bounded(ctx, streams.ReadAttempt, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return w.attempts.Get(ctx, key) })
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return true
		}
	}
}

// unmark removes an event's mark. A mark left behind would have the
// event's next delivery, after a passing failure, taken for one whose
// process died, and dead-lettered: so each attempt is bounded and
// retried while the bucket does not answer, up to unmarkFor.
func (w *Worker) unmark(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(ctx, unmarkFor)
	defer cancel()
	_, err := streams.Retried(ctx, streams.WriteAttempt, func(ctx context.Context) (struct{}, error) { return struct{}{}, w.attempts.Delete(ctx, key) })
	if err != nil {
		w.log.Warn("attempt mark not removed: a redelivery of the event will be taken for one that ended the process", zap.String("key", key), zap.Error(err))
	}
}

// unmarkFor bounds an unmark: an election takes seconds.
const unmarkFor = 30 * time.Second

// interpreting matches what makes an apply run PL/pgSQL: a DO block, a
// CALL, a routine's body, or a top-level SELECT of a function. It errs
// towards marking (a view's SELECT count( matches too): a mark costs two
// bounded requests.
var interpreting = regexp.MustCompile(`(?i)\bdo\b|\bcall\b|plpgsql|\bselect\s+[a-z_."]+\s*\(`)

// mayInterpret reports whether applying ev may run PL/pgSQL. A payload
// compressed or in the object store is not read to tell: it is marked.
func mayInterpret(ev *events.Event) bool {
	switch {
	case ev.Migration != nil:
		return ev.Migration.SQL == "" || interpreting.MatchString(ev.Migration.SQL)
	case ev.Snapshot != nil:
		return ev.Snapshot.SQL == "" || interpreting.MatchString(ev.Snapshot.SQL)
	}
	return false
}

func eventType(it *item) string {
	if it.ev != nil {
		return it.ev.Type
	}
	return ""
}
