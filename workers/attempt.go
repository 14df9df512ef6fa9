package workers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
// event.

// attemptKey is an event's key in the attempts bucket.
func attemptKey(it *item) string { return strconv.FormatUint(it.meta.Sequence.Stream, 10) }

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
	if w.attempts == nil || it.meta.NumDelivered < 2 {
		return nil, done
	}
	key := attemptKey(it)
	e, err := w.attempts.Get(ctx, key)
	switch {
	case err == nil:
		prev, _ := strconv.ParseUint(string(e.Value()), 10, 64)
		if prev < it.meta.NumDelivered {
			db := subjectDB(it.msg.Subject())
			w.log.Error("event ended the process that handled it; dead-lettering it before it is tried again",
				zap.String("subject", it.msg.Subject()), zap.Uint64("stream_seq", it.meta.Sequence.Stream), zap.Uint64("delivery", prev))
			_ = w.attempts.Delete(ctx, key)
			return &outcome{act: actDeadLetter, kind: events.DLQKindFailed, db: db, seq: it.seq, typ: eventType(it), reason: fmt.Sprintf(
				"handling this event ended the process that handled it: delivery %d of it never finished, nor did the one before; "+
					"dead-lettered before it is tried again (`schemaq dlq retry` once the cause is fixed)", prev)}, done
		}
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		w.log.Warn("attempts bucket unreadable; trying the event unmarked", zap.Error(err))
		return nil, done
	}
	if _, err := w.attempts.Put(ctx, key, []byte(strconv.FormatUint(it.meta.NumDelivered, 10))); err != nil {
		w.log.Warn("attempt not marked; trying the event unmarked", zap.Error(err))
		return nil, done
	}
	return nil, func() { _ = w.attempts.Delete(context.Background(), key) }
}

func eventType(it *item) string {
	if it.ev != nil {
		return it.ev.Type
	}
	return ""
}
