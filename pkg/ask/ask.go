package ask

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"fmt"
	"time"

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

// Request is what an ask needs besides the retrieval.
type Request struct {
	Database, Question, Hints string
	// SystemCatalogs lets the SQL read pg_catalog, information_schema
	// and the session's identity (sqlguard.Options).
	SystemCatalogs bool
}

// Answer is what asking the model came to.
type Answer struct {
	SQL         string // checked SQL; empty when there is none
	Explanation string
	// RejectedSQL is the SQL the guard, the verifier or a failed repair
	// round refused. Refused SQL is never in SQL.
	RejectedSQL string
	Tables      []string // the tables and views SQL reads
	Warnings    []string // the guard's and the verifier's, with SQL
	Usage       Usage    // of every completion, the repair round's too
	LLM, Guard  time.Duration
	// Err says why there is no SQL: an *OutputError or a
	// *sqlguard.Rejection after the repair round, *Unanswerable, or a
	// *GatewayFailure. Nil with SQL.
	Err error
}

// Unanswerable is a model's word that the schema cannot answer the
// question.
type Unanswerable struct{ Explanation string }

func (e *Unanswerable) Error() string {
	return "the model found no way to answer from this schema: " + e.Explanation
}

// GatewayFailure is a gateway that failed an ask; First is why the first
// answer was refused when it failed in the repair round.
type GatewayFailure struct {
	Err   error // matches ErrGateway; a *GatewayError when it answered
	First error
}

func (e *GatewayFailure) Error() string {
	if e.First != nil {
		return fmt.Sprintf("the LLM gateway failed in the repair round: %v; the first answer was refused: %v", e.Err, e.First)
	}
	return fmt.Sprintf("the LLM gateway failed: %v", e.Err)
}

func (e *GatewayFailure) Unwrap() error { return e.Err }

// Ask asks the model and checks its SQL. Everything the model or the
// gateway got wrong comes back as an Answer with Err set, after one
// repair round for what the model got wrong; an error means the ask
// itself failed (its context ended).
func (a *Asker) Ask(ctx context.Context, cat *catalog.Catalog, req Request, res *retrieve.Result) (*Answer, error) {
	q := &asking{a: a, cat: cat, req: req, ans: &Answer{}}
	msgs := Prompt(req.Database, res, req.Question, req.Hints)
	at, err := q.try(ctx, msgs)
	var first *attempt
	if err == nil && at.failure != nil {
		// One repair round with the exact error.
		first = at
		at, err = q.try(ctx, repairMessages(msgs, at.raw, at.failure.Error()))
	}
	if err != nil {
		return q.gatewayFailed(ctx, err, first)
	}
	return q.settle(at), nil
}

// asking is one question on its way to checked SQL: up to two gateway
// calls, and the guard on what each wrote. ans collects what they
// spent.
type asking struct {
	a   *Asker
	cat *catalog.Catalog
	req Request
	ans *Answer
}

// try asks the gateway once and checks the SQL it wrote, if any.
func (q *asking) try(ctx context.Context, msgs []Message) (*attempt, error) {
	at, err := q.complete(ctx, msgs)
	if err != nil || at.failure != nil || at.sql == "" {
		return at, err
	}
	q.check(ctx, at)
	return at, nil
}

// complete is one gateway call, counted and timed, and its output read.
func (q *asking) complete(ctx context.Context, msgs []Message) (*attempt, error) {
	t0 := time.Now()
	ctx, span := otel.Tracer(traceScope).Start(ctx, "llm", trace.WithSpanKind(trace.SpanKindClient))
	q.ans.Usage.Calls++
	out, err := q.a.gw.Complete(ctx, Completion{Messages: msgs, JSON: true})
	if err != nil {
		span.SetStatus(codes.Error, "gateway failed")
	}
	span.End()
	q.ans.LLM += time.Since(t0)
	if err != nil {
		return nil, err
	}
	q.ans.Usage.add(out.Usage)
	at := &attempt{raw: out.Content}
	at.sql, at.explanation, at.failure = ParseOutput(out.Content)
	return at, nil
}

// check runs the guard on at's SQL against the catalog, and the
// verifier against the database when there is one; a refusal is at's
// failure.
func (q *asking) check(ctx context.Context, at *attempt) {
	t0 := time.Now()
	ctx, span := otel.Tracer(traceScope).Start(ctx, "guard")
	defer span.End()
	at.guard, at.failure = sqlguard.CheckWith(at.sql, q.cat, sqlguard.Options{SystemCatalogs: q.req.SystemCatalogs})
	if at.failure == nil && q.a.verify != nil {
		var r *sqlguard.Rejection
		switch err := q.a.verify.Verify(ctx, q.req.Database, at.sql); {
		case errors.As(err, &r):
			at.failure = r
		case err != nil:
			at.guard.Warnings = append(at.guard.Warnings, "not verified against the database: "+redact.Text(err.Error()))
		}
	}
	q.ans.Guard += time.Since(t0)
	if at.failure != nil {
		span.SetStatus(codes.Error, "refused")
	}
}

// gatewayFailed answers an ask whose gateway call failed: with the
// context retrieved, and, when it failed in the repair round, with the
// first answer and why it was refused. Any other error, or an ask whose
// context ended, fails the ask.
func (q *asking) gatewayFailed(ctx context.Context, err error, first *attempt) (*Answer, error) {
	if !errors.Is(err, ErrGateway) || ctx.Err() != nil {
		return nil, fmt.Errorf("ask %s: %w", q.req.Database, err)
	}
	f := &GatewayFailure{Err: err}
	if first != nil {
		q.ans.RejectedSQL, f.First = first.sql, first.failure
	}
	q.ans.Err = f
	return q.ans, nil
}

// settle is the answer the last attempt gives: its SQL with the tables
// it reads, or why there is none.
func (q *asking) settle(at *attempt) *Answer {
	ans := q.ans
	ans.SQL, ans.Explanation = at.sql, at.explanation
	switch {
	case at.failure != nil:
		ans.SQL, ans.RejectedSQL = "", at.sql
		ans.Err = at.failure
	case at.sql == "":
		ans.Err = &Unanswerable{Explanation: at.explanation}
	default:
		ans.Tables = at.guard.Tables
		ans.Warnings = at.guard.Warnings
	}
	return ans
}

// traceScope names this package's spans: the gateway call and the guard.
const traceScope = "github.com/schemaq/schemaq/pkg/ask"
