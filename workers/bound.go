package workers

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/streams"
)

// boundEvery is how often a worker reads how near the fullest database
// is to the stream's bound: the stream's per-subject counts, about 60 ms
// at 30,000 subjects.
const boundEvery = time.Minute

// watchBound exports the largest share of the stream's bound on events
// per database (--max-events-per-database) that one database's events
// of one kind hold, so that an alert can fire before its publishes are
// refused: `schemaq status` names it, but only when someone asks.
func (w *Worker) watchBound(ctx context.Context) {
	t := time.NewTicker(boundEvery)
	defer t.Stop()
	for {
		w.readBound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (w *Worker) readBound(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := w.eventStream(ctx)
	if err != nil {
		return
	}
	subject, held, bound, err := streams.Fullest(ctx, s)
	if err != nil {
		w.log.Debug("the stream's counts per subject unread", zap.Error(err))
		return
	}
	share := 0.0
	if bound > 0 {
		share = float64(held) / float64(bound)
	}
	w.m.fullest.Set(share)
	if share >= streams.NearShare {
		w.log.Warn("a database nears the stream's bound on its events: past it, its publishes of that kind are refused",
			zap.String("subject", subject), zap.Uint64("events", held), zap.Int64("bound", bound))
	}
}
