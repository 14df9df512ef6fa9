package workers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
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
// letter). JetStream's delivery count survives restarts, so a redelivered
// event (delivery 2 and on) is handled alone and marked, in a bucket all
// workers share, while it is handled: one that arrives to find the mark
// of an earlier delivery still there ended the process that handled it,
// and is dead-lettered before it is tried again. A first delivery is not
// marked (it costs nothing where nothing went wrong), so one crash is
// forgiven: it may have been a kill that had nothing to do with the
// event. An event whose apply may run PL/pgSQL (mayInterpret) is marked
// from its first delivery, and handled alone: the interpreter runs on
// budgets, but it is the one part of handling that evaluates what a
// publisher wrote, so a crash it causes costs one process, not two.

// attemptKey is an event's key in the attempts bucket: its stream
// sequence, under the consumer that delivered it. Deliveries are counted
// per consumer, and serve replicas each have their own: keyed by the
// sequence alone, one replica's mark was taken by the other's next
// delivery for a process that died, and a healthy event was
// dead-lettered (two replicas retrying through a node's loss did that).
func attemptKey(it *item) string {
	return it.meta.Consumer + "." + strconv.FormatUint(it.meta.Sequence.Stream, 10)
}

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

// attempt reports, for a redelivered event, whether an earlier delivery
// ended the process that handled it, and marks this delivery otherwise;
// done removes the mark once handling returns.
func (w *Worker) attempt(ctx context.Context, it *item) (poisoned *outcome, done func()) {
	done = func() {}
	if w.attempts == nil || (it.meta.NumDelivered < 2 && !mayInterpret(it)) {
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
		prev, _ := strconv.ParseUint(string(e.Value()), 10, 64)
		if prev < it.meta.NumDelivered {
			db := subjectDB(it.msg.Subject())
			w.log.Error("event ended the process that handled it; dead-lettering it before it is tried again",
				zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream), zap.Uint64("delivery", prev))
			w.unmark(ctx, key)
			before := ", nor did the one before"
			if prev == 1 {
				before = " (it may run PL/pgSQL, so its first delivery was marked)"
			}
			return &outcome{act: actDeadLetter, kind: events.DLQKindFailed, db: db, seq: it.seq, typ: eventType(it), reason: fmt.Sprintf(
				"handling this event ended the process that handled it: delivery %d of it never finished%s; "+
					"dead-lettered before it is tried again (`schemaq dlq retry` once the cause is fixed)", prev, before)}, done
		}
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		w.log.Warn("attempts bucket unreadable; trying the event unmarked", zap.Error(err))
		return nil, done
	}
	mark := []byte(strconv.FormatUint(it.meta.NumDelivered, 10))
	if _, err := streams.Bounded(ctx, streams.WriteAttempt, func(ctx context.Context) (uint64, error) { return w.attempts.Put(ctx, key, mark) }); err != nil {
		w.log.Warn("attempt not marked; trying the event unmarked", zap.Error(err))
	}
	// Unmarked even when the event's deadline is what ended its handling,
	// and when the mark's write went unanswered: it may have landed.
	return nil, func() { w.unmark(context.Background(), key) }
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

// mayInterpret reports whether applying it may run PL/pgSQL. A payload
// compressed or in the object store is not read to tell: it is marked.
func mayInterpret(it *item) bool {
	if it.ev == nil {
		return false
	}
	switch ev := it.ev; {
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
