package workers

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Pausing. A write that fails for lack of space (the index store's disk,
// Redis memory, JetStream's storage) fails the same way on every
// redelivery: naking it would spend the event's deliveries in minutes
// and, once the dead-letter publish failed too, JetStream would stop
// delivering it: lost, with nothing pending and no letter. So such an
// event is not naked. It stays held in its database's queue, kept in
// progress (no delivery is spent), and the queue pauses, retrying with
// backoff until the write succeeds. A dead letter that cannot be
// published pauses its queue the same way. Other databases go on as far
// as their own writes succeed.

// maxPause is the longest wait between two tries of a paused queue.
const maxPause = 30 * time.Second

// noSpaceMarks are how stores say they are out of room, in the texts that
// reach the worker: SQLite's SQLITE_FULL, the operating system's ENOSPC,
// Redis' maxmemory refusal, JetStream's storage limit.
var noSpaceMarks = []string{
	"database or disk is full",
	"no space left on device",
	"OOM command not allowed",
	"insufficient resources",
	"insufficient storage",
}

// outOfSpace reports whether err, or an outcome's reason, says a store
// is out of room.
func outOfSpace(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || outOfSpaceText(err.Error()))
}

func outOfSpaceText(s string) bool {
	for _, m := range noSpaceMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// pauseFor reports whether out should pause its queue rather than be
// settled: a retry for lack of space.
func pauseFor(out outcome) bool {
	return out.act == actRetry && outOfSpaceText(out.reason)
}

// pause waits before q tries its first event again; it returns false when
// intake stops meanwhile. The wait doubles from RetryDelay to maxPause.
func (w *Worker) pause(intake context.Context, q *queue, reason string) bool {
	if q.pauses == 0 {
		w.setPaused(1)
		if w.m != nil {
			w.m.pauses.Inc()
		}
	}
	q.pauses++
	d := min(w.cfg.RetryDelay<<min(q.pauses-1, 16), maxPause)
	// Logged at error: someone has to free space or fix the bus.
	if q.pauses == 1 || q.pauses%20 == 0 {
		w.log.Error("database paused: its events stay pending until the write succeeds",
			zap.String("db", q.db), zap.String("reason", reason), zap.Int("tries", q.pauses), zap.Duration("next_try", d))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-intake.Done():
		w.unpause(q)
		return false
	case <-t.C:
		return true
	}
}

// unpause ends q's pause, if it has one, after a write went through.
func (w *Worker) unpause(q *queue) {
	if q.pauses == 0 {
		return
	}
	w.log.Info("database resumed", zap.String("db", q.db), zap.Int("tries", q.pauses))
	q.pauses = 0
	w.setPaused(-1)
}

func (w *Worker) setPaused(delta float64) {
	if w.m != nil {
		w.m.paused.Add(delta)
	}
}
