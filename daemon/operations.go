package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/status"
)

// The console's operations page: how the stream and its consumers
// stand, the daemons answering and how they differ, and the dead letters
// with their reasons, retried or deleted. Only admin tokens reach it, and
// an admin token sees the catalogs and letters of its own databases
// only: a letter holds the event that failed, another team's SQL.

// OperationsRequest asks for the operations page.
type OperationsRequest struct{}

// OperationsReply is `schemaq status` and the dead letters.
type OperationsReply struct {
	*status.Report
	Letters []deadletter.Letter `json:"letters"`
}

// LetterRequest names one dead letter by its sequence in the
// dead-letter stream.
type LetterRequest struct {
	Seq uint64 `json:"seq"`
}

// LetterReply says what became of a dead letter.
type LetterReply struct {
	Seq      uint64 `json:"seq"`
	Database string `json:"database"`
	// Retried is the subject the letter's event was published to again.
	Retried string `json:"retried,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	// EventDeleted: the letter's event left the event stream too, so a
	// replica replaying it neither applies it nor letters it again.
	EventDeleted bool `json:"event_deleted,omitempty"`
}

const (
	// maxListedLetters bounds the letters one page lists.
	maxListedLetters = 1000
	// retryAckWait bounds a retry's wait for the stream's acknowledgement.
	retryAckWait = 5 * time.Second
)

func (d *Daemon) operationsRoutes() map[string]http.Handler {
	long := 3 * d.cfg.RequestTimeout
	return map[string]http.Handler{
		"operations":         consoleRoute(d, "operations", mayAdmin, long, d.operations),
		"deadletters/retry":  consoleRoute(d, "deadletters/retry", mayAdmin, long, d.retryLetter),
		"deadletters/delete": consoleRoute(d, "deadletters/delete", mayAdmin, long, d.deleteLetter),
	}
}

func (d *Daemon) operations(ctx context.Context, who *principal, _ *OperationsRequest) (any, error) {
	js, err := jetstream.New(d.nc)
	if err != nil {
		return nil, fmt.Errorf("operations: %w", err)
	}
	rep, err := status.Gather(ctx, js)
	if err != nil {
		return nil, events.Errorf(events.CodeStreamUnavailable, "%v", err)
	}
	if who != nil {
		// Another team's catalog is not even named.
		maps.DeleteFunc(rep.Catalogs, func(db string, _ int64) bool { return !who.mayUse(db) })
		maps.DeleteFunc(rep.Drift, func(db string, _ int) bool { return !who.mayUse(db) })
		maps.DeleteFunc(rep.Unreadable, func(db string, _ string) bool { return !who.mayUse(db) })
		maps.DeleteFunc(rep.EventsByDatabase, func(db string, _ uint64) bool { return !who.mayUse(db) })
		maps.DeleteFunc(rep.LettersByDatabase, func(db string, _ uint64) bool { return !who.mayUse(db) })
		maps.DeleteFunc(rep.NearBound, func(db string, _ map[string]uint64) bool { return !who.mayUse(db) })
	}
	out := &OperationsReply{Report: rep, Letters: []deadletter.Letter{}}
	box, err := d.letterBox(ctx)
	if err != nil {
		return out, nil // no letter written yet: the stream is made by the first
	}
	// The page lists reasons; the events stay in the stream, unread.
	err = box.Each(ctx, "", func(l deadletter.Letter) bool {
		if who == nil || who.mayUse(l.Database) {
			out.Letters = append(out.Letters, l)
		}
		return len(out.Letters) < maxListedLetters
	})
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	if who != nil {
		rep.DeadLetters = uint64(len(out.Letters))
	}
	return out, nil
}

// ownLetter is the letter seq, when who may handle it.
func (d *Daemon) ownLetter(ctx context.Context, who *principal, seq uint64) (*deadletter.Box, *deadletter.Letter, error) {
	if seq == 0 {
		return nil, nil, events.Errorf(events.CodeBadRequest, "field seq: a dead letter's sequence number is required")
	}
	box, err := d.letterBox(ctx)
	if err != nil {
		return nil, nil, events.Errorf(events.CodeStreamUnavailable, "%v", err)
	}
	l, err := box.Get(ctx, seq)
	// Another team's letter is answered as one that is not there: its
	// existence is theirs too.
	if errors.Is(err, deadletter.ErrNotFound) || (err == nil && who != nil && !who.mayUse(l.Database)) {
		return nil, nil, events.Errorf(events.CodeNotFound, "there is no dead letter %d (retried, deleted or swept already?)", seq)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	return box, l, nil
}

func (d *Daemon) retryLetter(ctx context.Context, who *principal, req *LetterRequest) (any, error) {
	box, l, err := d.ownLetter(ctx, who, req.Seq)
	if err != nil {
		return nil, err
	}
	// NATS drops a publish its permissions refuse and tells only the
	// connection's error handler: the stream's acknowledgement never
	// comes. A short wait, and a reply that names the likely cause.
	pctx, cancel := context.WithTimeout(ctx, retryAckWait)
	defer cancel()
	target, err := box.Retry(pctx, req.Seq)
	switch {
	case errors.Is(err, deadletter.ErrUnsendable):
		return nil, events.Errorf(events.CodeBadRequest, "%v", err)
	case err != nil && pctx.Err() != nil && ctx.Err() == nil:
		return nil, events.Errorf(events.CodeStreamUnavailable, "dead letter %d was not re-sent: the stream did not acknowledge within %s; "+
			"may this daemon's NATS user publish on %s? (docs/api.md, the console's endpoints)", req.Seq, retryAckWait, l.Subject)
	case err != nil:
		return nil, events.Errorf(events.CodeStreamUnavailable, "dead letter %d was not re-sent: %v", req.Seq, err)
	}
	d.log.Info("dead letter re-sent from the console", zap.Uint64("seq", req.Seq), zap.String("database", l.Database), zap.String("subject", target), zap.String("by", who.nameOr("http")))
	return &LetterReply{Seq: req.Seq, Database: l.Database, Retried: target}, nil
}

func (d *Daemon) deleteLetter(ctx context.Context, who *principal, req *LetterRequest) (any, error) {
	box, l, err := d.ownLetter(ctx, who, req.Seq)
	if err != nil {
		return nil, err
	}
	del, err := box.Delete(ctx, req.Seq)
	if err != nil {
		return nil, events.Errorf(events.CodeStreamUnavailable, "dead letter %d was not deleted: %v", req.Seq, err)
	}
	d.log.Info("dead letter deleted from the console", zap.Uint64("seq", req.Seq), zap.String("database", l.Database), zap.String("by", who.nameOr("http")),
		zap.Bool("event_deleted", del.Event), zap.NamedError("event_kept", del.EventKept))
	return &LetterReply{Seq: req.Seq, Database: l.Database, Deleted: true, EventDeleted: del.Event}, nil
}
