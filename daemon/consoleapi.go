package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
)

// The console's own endpoints. The request endpoints (search, ask,
// tables, feedback) answer over NATS and HTTP alike; what people do in
// the console beyond them (list and delete examples, read docs, check a
// migration, watch the stream and handle its dead letters) the CLI does
// over NATS with its own rights, and only the HTTP API offers to a
// browser, under the tokens file's rights. Each is a POST of JSON,
// strictly decoded, inside a slot of the concurrency limit and a
// deadline, as the request endpoints are.

// access is what a console endpoint asks of a token.
type access int

const (
	mayRead access = iota
	mayWrite
	mayAdmin
)

func (a access) String() string {
	return [...]string{bearer.AccessRead, bearer.AccessWrite, bearer.AccessAdmin}[a]
}

// databaseScoped is a console request about one database, whose name is
// checked and whose use the token must be granted.
type databaseScoped interface{ databaseName() string }

// consoleRoute serves one console endpoint: fn gets the decoded request
// and the token's holder (nil without tokens) and returns the reply.
func consoleRoute[Req any](d *Daemon, name string, need access, timeout time.Duration, fn func(context.Context, *principal, *Req) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r, http.MethodPost) {
			return
		}
		id := requestIDOr(r.Header.Get(HeaderRequestID))
		var req Req
		if status, e := decodeConsoleRequest(w, r, &req); e != nil {
			writeJSONError(w, status, id, e)
			return
		}
		who := principalOf(r.Context())
		if e := who.mayConsole(name, need, &req); e != nil {
			httpError(w, id, e)
			return
		}
		caller := who.nameOr("http")
		if !d.console.acquire(caller) {
			w.Header().Set("Retry-After", "1")
			httpError(w, id, events.Errorf(events.CodeBusy, "%s has %d console requests running already, the most one caller may; retry when one is done", events.Quote(caller), consolePerCaller))
			return
		}
		defer d.console.release(caller)
		select {
		case d.sem <- struct{}{}:
			defer func() { <-d.sem }()
		default:
			w.Header().Set("Retry-After", "1")
			httpError(w, id, events.Errorf(events.CodeBusy, "the daemon is at its limit of %d concurrent requests; retry shortly", cap(d.sem)))
			return
		}
		if s, ok := any(&req).(databaseScoped); ok && s.databaseName() != "" {
			db := s.databaseName()
			if !d.acquireDatabase(db) {
				w.Header().Set("Retry-After", "1")
				httpError(w, id, d.databaseBusy(db))
				return
			}
			defer d.perDB.release(db)
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		reply, err := runConsole(ctx, d.log, name, id, who, &req, fn)
		if err != nil {
			httpError(w, id, d.consoleError(ctx, name, id, err))
			return
		}
		w.Header().Set(HeaderRequestID, id)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	})
}

// runConsole runs fn, turning a panic into an internal error: nothing a
// browser sends may take the daemon down.
func runConsole[Req any](ctx context.Context, log *zap.Logger, name, id string, who *principal, req *Req, fn func(context.Context, *principal, *Req) (any, error)) (reply any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("console handler panic", zap.String("endpoint", name), zap.String("request_id", id), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			reply, err = nil, events.Errorf(events.CodeInternal, "internal error")
		}
	}()
	return fn(ctx, who, req)
}

// decodeConsoleRequest reads a JSON body (readJSONBody) into v,
// strictly: unknown and repeated keys are refused, as on the request
// endpoints. It returns the status and error of a refusal.
func decodeConsoleRequest(w http.ResponseWriter, r *http.Request, v any) (int, *events.Error) {
	body, status, e := readJSONBody(w, r)
	if e != nil {
		return status, e
	}
	if err := events.DecodeRequest(body, v); err != nil {
		return http.StatusBadRequest, events.Errorf(events.CodeBadRequest, "%v", err)
	}
	if s, ok := v.(databaseScoped); ok && s.databaseName() != "" {
		if err := events.ValidateDatabase(s.databaseName()); err != nil {
			return http.StatusBadRequest, events.Errorf(events.CodeBadRequest, "field database: %v", err)
		}
	}
	return 0, nil
}

// mayConsole checks a principal's right to a console endpoint: the
// access it needs and, for a request about one database, that
// database. No principal (an API without tokens, on loopback) may do
// everything.
func (p *principal) mayConsole(endpoint string, need access, req any) *events.Error {
	if p == nil {
		return nil
	}
	if s, ok := req.(databaseScoped); ok && s.databaseName() != "" {
		if e := p.useOf(s.databaseName()); e != nil {
			return e
		}
	}
	granted := mayRead
	switch {
	case p.Admin:
		granted = mayAdmin
	case p.Write:
		granted = mayWrite
	}
	if granted < need {
		return events.Errorf(events.CodeForbidden, "token %q has %s access; %s needs %s", p.Name, granted, endpoint, need)
	}
	return nil
}

// consoleError is the wire error of a failed console request: its own,
// a timeout, or an internal one, logged with its detail and sent
// without it.
func (d *Daemon) consoleError(ctx context.Context, endpoint, id string, err error) *events.Error {
	var we *events.Error
	switch {
	case errors.As(err, &we):
		return we
	case ctx.Err() != nil:
		return events.Errorf(events.CodeTimeout, "%s did not finish within its deadline", endpoint)
	}
	d.log.Error("console request failed", zap.String("endpoint", endpoint), zap.String("request_id", id), zap.Error(err))
	return events.Errorf(events.CodeInternal, "%s failed; the daemon's log has request %s", endpoint, id)
}
