package daemon

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"sync"
	"time"

	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/tracing"
)

// adapt turns fn into a micro handler: strict decode, validation, a slot
// of the concurrency limit (or busy), a deadline, panic recovery, and one
// reply — the typed result or a typed error. Every request to every
// endpoint, over NATS and HTTP, comes through here: it is the one place
// a request is admitted, bounded and answered.
func adapt[Req any, PReq interface {
	*Req
	validator
}, Resp any](d *Daemon, endpoint string, fn func(context.Context, PReq) (Resp, error), errReply func(db string, e *events.Error) any) micro.Handler {
	return micro.HandlerFunc(func(raw micro.Request) {
		h := &handling[Req, PReq, Resp]{d: d, endpoint: endpoint, fn: fn, errReply: errReply, raw: raw}
		if !h.admit() {
			return
		}
		// micro calls handlers one at a time per subscription; the work
		// runs in its own goroutine so replicas serve requests concurrently.
		d.replying.Add(1)
		go h.serve()
	})
}

// handling is one request on its way through adapt, a method a stage.
type handling[Req any, PReq interface {
	*Req
	validator
}, Resp any] struct {
	d        *Daemon
	endpoint string
	fn       func(context.Context, PReq) (Resp, error)
	errReply func(db string, e *events.Error) any
	raw      micro.Request
	r        *tracked
	// db is the database the request names, once it is known to be
	// one: error replies carry it, as answers do.
	db string
}

// fail answers with e, in the endpoint's reply shape.
func (h *handling[Req, PReq, Resp]) fail(e *events.Error) {
	h.d.reply(h.r, h.endpoint, nil, e, func(e *events.Error) any { return h.errReply(h.db, e) })
}

// admit drops a request whose reply subject is not an inbox, unanswered,
// and takes a slot of the daemon's concurrency limit, or answers busy.
func (h *handling[Req, PReq, Resp]) admit() bool {
	d, raw := h.d, h.raw
	if why := replyRefused(raw.Reply()); why != "" {
		d.refuseReply(h.endpoint, raw.Reply(), why)
		return false
	}
	h.r = &tracked{Request: raw, d: d, endpoint: h.endpoint, id: requestIDOr(raw.Headers().Get(HeaderRequestID)), start: time.Now(), send: d.nc.PublishMsg}
	if s, ok := raw.(sender); ok {
		h.r.send = s.send // HTTP: the reply goes to the response, not a subject
	}
	select {
	case d.sem <- struct{}{}:
	default:
		h.fail(events.Errorf(events.CodeBusy, "the daemon is at its limit of %d concurrent requests; retry shortly", cap(d.sem)))
		return false
	}
	// The slot is given back as the reply goes out, not after: a caller
	// that sends its next request on the reply must find it free, or a
	// client at exactly MaxConcurrent would see busy.
	h.r.release = sync.OnceFunc(func() { <-d.sem })
	return true
}

// serve runs the admitted request in its own goroutine: decoded,
// authorised, answered. Whatever happens, its slots are given back and
// it gets one reply.
func (h *handling[Req, PReq, Resp]) serve() {
	defer h.d.replying.Done()
	// Read at the end: claim replaces it with one that also gives the
	// database's slot back.
	defer func() { h.r.release() }()
	defer h.d.pace.Begin()()
	defer h.recoverPanic()
	ctx, span, end := h.start()
	defer end()
	req, ok := h.decode(span)
	if !ok || !h.claim(span, req) {
		return
	}
	h.answer(ctx, span, req)
}

// recoverPanic turns a handler's panic into an internal error reply: no
// request may end the process.
func (h *handling[Req, PReq, Resp]) recoverPanic() {
	if p := recover(); p != nil {
		h.d.log.Error("handler panic", zap.String("endpoint", h.endpoint), zap.String("request_id", h.r.id), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		h.fail(events.Errorf(events.CodeInternal, "internal error"))
	}
}

// start gives the request its deadline, its id and caller, and its span,
// continuing the caller's trace (traceparent); end closes them.
func (h *handling[Req, PReq, Resp]) start() (ctx context.Context, span trace.Span, end func()) {
	ctx, cancel := context.WithTimeout(tracing.Extract(context.Background(), h.raw.Headers()), h.d.timeout(h.endpoint))
	ctx = context.WithValue(ctx, requestIDKey{}, h.r.id)
	ctx = context.WithValue(ctx, callerKey{}, callerOf(h.raw))
	ctx, span = tracing.Tracer().Start(ctx, events.ServiceName+"."+h.endpoint, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("schemaq.request_id", h.r.id)))
	return ctx, span, func() { span.End(); cancel() }
}

// decode reads the request strictly, takes its database from a
// per-database subject, and validates it; a request that fails is
// answered bad_request.
func (h *handling[Req, PReq, Resp]) decode(span trace.Span) (PReq, bool) {
	var req Req
	if err := events.DecodeRequest(h.r.Data(), &req); err != nil {
		h.fail(events.Errorf(events.CodeBadRequest, "%v", err))
		return nil, false
	}
	if t, ok := any(&req).(targeted); ok {
		if err := subjectDatabase(h.r.Subject(), h.endpoint, t); err != nil {
			h.fail(events.Errorf(events.CodeBadRequest, "%v", err))
			return nil, false
		}
		if events.ValidateDatabase(*t.Target()) == nil {
			h.db = *t.Target()
		}
	}
	if err := PReq(&req).Validate(); err != nil {
		span.SetStatus(codes.Error, events.CodeBadRequest)
		h.fail(events.Errorf(events.CodeBadRequest, "%v", err))
		return nil, false
	}
	return &req, true
}

// claim checks that the caller may use the request's database and takes
// a slot of that database's share of the daemon, so that one database
// cannot take every slot.
func (h *handling[Req, PReq, Resp]) claim(span trace.Span, req PReq) bool {
	t, ok := any(req).(targeted)
	if !ok {
		return true
	}
	db := *t.Target()
	span.SetAttributes(attribute.String("schemaq.database", db))
	// The database the handler will use, decoded strictly: what an HTTP
	// token may use is judged on it, not on a looser reading of the body.
	if e := principalOfRequest(h.raw).mayAsk(h.endpoint, db); e != nil {
		h.fail(e)
		return false
	}
	h.db = db
	if !h.d.acquireDatabase(db) {
		h.fail(h.d.databaseBusy(db))
		return false
	}
	// Given back with the daemon's slot, as the reply goes out.
	whole := h.r.release
	h.r.release = sync.OnceFunc(func() { h.d.perDB.release(db); whole() })
	return true
}

// answer calls the endpoint and replies: its result, its error in the
// endpoint's shape, or, when the store is unavailable, a replica's
// answer to the request handed over.
func (h *handling[Req, PReq, Resp]) answer(ctx context.Context, span trace.Span, req PReq) {
	d := h.d
	resp, err := h.fn(ctx, req)
	if err != nil {
		d.log.Debug("request failed", zap.String("endpoint", h.endpoint), zap.String("request_id", h.r.id), zap.Error(err))
	}
	if we := d.classify(ctx, h.endpoint, err); we != nil {
		span.SetStatus(codes.Error, we.Code)
		if we.Code == events.CodeStoreUnavailable && d.handOver(ctx, h.r, we) {
			return
		}
		// resp is a typed nil here; send the endpoint's error shape.
		h.fail(we)
		return
	}
	// What a reply spent counts whether or not it answered.
	d.observeStages(resp)
	// A reply may carry its own error (ask: the rejected SQL).
	if w, ok := any(resp).(interface{ WireError() *events.Error }); ok && w.WireError() != nil {
		b, _ := json.Marshal(resp)
		if err := h.r.Error(w.WireError().Code, w.WireError().Message, b); err != nil {
			d.log.Warn("reply failed", zap.String("endpoint", h.endpoint), zap.Error(err))
		}
		return
	}
	d.reply(h.r, h.endpoint, resp, nil, nil)
}
