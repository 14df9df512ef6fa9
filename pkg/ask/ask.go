package ask

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/redact"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// Asker writes and checks SQL. Safe for concurrent use.
type Asker struct {
	gw     Gateway
	verify Verifier
}

// Verifier checks SQL the guard passed against a real database
// (pkg/verify): a *sqlguard.Rejection is a verdict, which gets the
// model's repair round like the guard's; any other error means it could
// not check, and the SQL is returned with a warning saying so.
type Verifier interface {
	Verify(ctx context.Context, database, sql string) error
}

// Option configures an Asker.
type Option func(*Asker)

// WithVerifier has every answer the guard passes verified too.
func WithVerifier(v Verifier) Option { return func(a *Asker) { a.verify = v } }

// New builds an Asker on a gateway.
func New(gw Gateway, opts ...Option) (*Asker, error) {
	if gw == nil {
		return nil, errors.New("ask: a gateway is required")
	}
	a := &Asker{gw: gw}
	for _, opt := range opts {
		opt(a)
	}
	return a, nil
}

// attempt is one answer and what became of it.
type attempt struct {
	raw, sql, explanation string
	guard                 *sqlguard.Result
	failure               error // *OutputError or *sqlguard.Rejection
}

// Ask asks the model and checks its SQL. Gateway failures are returned as
// errors; everything the model got wrong comes back as a reply with its
// error set (and the SQL it wrote), after one repair round.
func (a *Asker) Ask(ctx context.Context, cat *catalog.Catalog, req *events.AskRequest, res *retrieve.Result) (*events.AskReply, error) {
	reply := &events.AskReply{Database: req.Database, Timings: map[string]float64{"retrieve": ms(res.Timings.Total)}}
	for _, it := range res.Items {
		reply.Context = append(reply.Context, events.ContextItem{ID: it.Chunks[0].ID, Kind: it.Kind, Name: it.Name, Score: it.Score, Bridge: it.Bridge, Title: it.Title})
	}
	reply.Joins = retrieve.WireJoins(res.Joins)
	reply.Warnings = append(reply.Warnings, res.Warnings...)
	if req.Explain {
		reply.Explain, reply.QueryTerms = res.Explain, res.Terms
	}
	msgs := Prompt(req.Database, res, req.Question, req.Hints)
	var usage Usage
	var llm, guard time.Duration
	try := func(msgs []Message) (*attempt, error) {
		t0 := time.Now()
		out, err := a.gw.Complete(ctx, Completion{Messages: msgs, JSON: true})
		llm += time.Since(t0)
		if err != nil {
			return nil, err
		}
		usage.add(out.Usage)
		at := &attempt{raw: out.Content}
		at.sql, at.explanation, at.failure = ParseOutput(out.Content)
		if at.failure != nil || at.sql == "" {
			return at, nil
		}
		t0 = time.Now()
		at.guard, at.failure = sqlguard.CheckWith(at.sql, cat, sqlguard.Options{SystemCatalogs: req.AllowSystemCatalogs})
		if at.failure == nil && a.verify != nil {
			var r *sqlguard.Rejection
			switch err := a.verify.Verify(ctx, req.Database, at.sql); {
			case errors.As(err, &r):
				at.failure = r
			case err != nil:
				at.guard.Warnings = append(at.guard.Warnings, "not verified against the database: "+redact.Text(err.Error()))
			}
		}
		guard += time.Since(t0)
		return at, nil
	}
	at, err := try(msgs)
	var first *attempt
	if err == nil && at.failure != nil {
		// One repair round with the exact error.
		first = at
		at, err = try(repairMessages(msgs, at.raw, at.failure.Error()))
	}
	reply.Timings["llm"], reply.Timings["guard"] = ms(llm), ms(guard)
	reply.Usage = &events.Usage{PromptTokens: usage.Prompt, CompletionTokens: usage.Completion, CachedTokens: usage.Cached}
	if err != nil {
		if !errors.Is(err, ErrGateway) || ctx.Err() != nil {
			return nil, fmt.Errorf("ask %s: %w", req.Database, err)
		}
		// A gateway failure still answers with the context retrieved,
		// and, when it failed in the repair round, with the first answer
		// and why it was refused.
		code := events.CodeGatewayError
		var ge *GatewayError
		if errors.As(err, &ge) && (ge.Status == http.StatusUnauthorized || ge.Status == http.StatusForbidden) {
			code = events.CodeGatewayAuth
		}
		if first != nil {
			reply.RejectedSQL = first.sql
			reply.Error = events.Errorf(code, "the LLM gateway failed in the repair round: %v; the first answer was refused: %v", err, first.failure)
		} else {
			reply.Error = events.Errorf(code, "the LLM gateway failed: %v", err)
		}
		if ge != nil && ge.RetryAfter > 0 {
			reply.Error.RetryAfter = int(math.Ceil(ge.RetryAfter.Seconds()))
		}
		return reply, nil
	}
	reply.SQL, reply.Explanation = at.sql, at.explanation
	switch {
	case at.failure != nil:
		// Refused SQL never travels as sql: see events.AskReply.
		reply.SQL, reply.RejectedSQL = "", at.sql
		reply.Error = wireError(at.failure)
	case at.sql == "":
		reply.Error = events.Errorf(events.CodeUnanswerable, "the model found no way to answer from this schema: %s", at.explanation)
	default:
		reply.Tables = at.guard.Tables
		reply.Warnings = append(reply.Warnings, at.guard.Warnings...)
	}
	return reply, nil
}

func wireError(err error) *events.Error {
	var oe *OutputError
	if errors.As(err, &oe) {
		return events.Errorf(events.CodeInvalidOutput, "%v; the model answered: %.500s", oe.Err, oe.Raw)
	}
	code := events.CodeInvalidSQL
	switch {
	case errors.Is(err, sqlguard.ErrUnsafe):
		code = events.CodeUnsafeSQL
	case errors.Is(err, sqlguard.ErrUnknownTable):
		code = events.CodeUnknownTable
	case errors.Is(err, sqlguard.ErrUnknownColumn):
		code = events.CodeUnknownColumn
	}
	var r *sqlguard.Rejection
	if errors.As(err, &r) {
		return events.Errorf(code, "%s", r.Reason)
	}
	return events.Errorf(code, "%v", err)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
