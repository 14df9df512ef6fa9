package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/sqlguard"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Feedback. A caller hands back SQL that answers a question: a model's
// answer it accepted, or one a person corrected. The SQL must pass the
// guard against the database's current catalog, as an ask's answer must,
// and read at least one of its relations; then it is published as an
// examples.upsert event, so it replays, replicates and survives
// rebuilds like any published example, and retrieval reads it from then
// on. The event and the example are named by the question and the SQL,
// so the same feedback twice stores one example.

// Publisher puts an event on the stream and waits for the stream's
// acknowledgement; *client.Client does, retrying through an election.
type Publisher interface {
	Publish(ctx context.Context, ev *events.Event) (client.Published, error)
}

// WithFeedback has the feedback endpoint store accepted SQL through p.
// Without it, feedback is refused.
func WithFeedback(p Publisher) Option { return func(d *Daemon) { d.pub = p } }

func (d *Daemon) feedback(ctx context.Context, req *events.FeedbackRequest) (*events.FeedbackReply, error) {
	if d.pub == nil {
		return nil, events.Errorf(events.CodeStreamUnavailable, "this daemon was started without a way to publish feedback; nothing was stored")
	}
	cat := d.cats.Catalog(req.Database)
	if cat == nil {
		return nil, events.Errorf(events.CodeUnknownDatabase, "database %q has no catalog: feedback is checked against one; publish a migration or snapshot first", req.Database)
	}
	if e := d.admitFeedback(ctx, req.Database); e != nil {
		d.countFeedback("limited")
		return nil, e
	}
	res, err := sqlguard.CheckFeedback(req.SQL, req.Schema, cat)
	if err != nil {
		we := AskError(err)
		if errors.Is(err, sqlguard.ErrNoRelation) {
			we.Code = events.CodeBadRequest
		}
		we.Message = fmt.Sprintf("field sql: %s; nothing was stored", we.Message)
		d.countFeedback("refused")
		return nil, we
	}
	ex := events.Example{
		ID: events.FeedbackExampleID(req.Question, req.SQL), Question: strings.TrimSpace(req.Question), SQL: strings.TrimSpace(req.SQL),
		Schema: req.Schema, Origin: events.OriginFeedback, AskID: req.AskID, Corrected: req.Corrected,
		CatalogVersion: cat.Version, Tables: res.Tables, Author: callerFrom(ctx), Client: req.Client,
	}
	ev, err := events.New("feedback-"+ex.ID, req.Database, time.Now(), &events.ExamplesUpsert{Examples: []events.Example{ex}})
	if err != nil {
		return nil, fmt.Errorf("feedback event: %w", err)
	}
	pub, err := d.pub.Publish(ctx, ev)
	if err != nil {
		d.log.Warn("feedback not published", zap.String("database", req.Database), zap.String("example", ex.ID), zap.Error(err))
		d.countFeedback("failed")
		if full := (*streams.FullError)(nil); errors.As(err, &full) {
			return nil, events.Errorf(events.CodeRateLimited, "database %s holds the most examples events the stream keeps of one database (--max-events-per-database, the operator's setting); nothing was stored", events.Quote(req.Database))
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return nil, events.Errorf(events.CodeTimeout, "the stream did not acknowledge the feedback before the deadline; it may or may not be stored, and sending it again is safe")
		}
		return nil, events.Errorf(events.CodeStreamUnavailable, "the stream did not take the feedback (%v); nothing was stored, and sending it again is safe", err)
	}
	d.countFeedback("stored")
	d.log.Info("feedback stored", zap.String("database", req.Database), zap.String("example", ex.ID), zap.String("author", ex.Author), zap.Uint64("seq", pub.Sequence),
		zap.Bool("duplicate", pub.Duplicate), zap.Bool("corrected", req.Corrected), zap.String("ask_id", req.AskID))
	return &events.FeedbackReply{Database: req.Database, Example: ex.ID, Version: cat.Version, Tables: res.Tables,
		Seq: pub.Sequence, Duplicate: pub.Duplicate, Warnings: res.Warnings}, nil
}

func (d *Daemon) countFeedback(outcome string) {
	if d.m != nil {
		d.m.feedback.WithLabelValues(outcome).Inc()
	}
}
