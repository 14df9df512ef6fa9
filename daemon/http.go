package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/console"
	"github.com/schemaq/schemaq/pkg/loopback"
	"github.com/schemaq/schemaq/pkg/telemetry"
)

// The HTTP API answers the same requests as the NATS endpoints, through
// the same handlers: decoding, validation, limits, the concurrency slot,
// deadlines, metrics and request ids are theirs. Only the transport
// differs: the body is the request, the reply is the response, and the
// reply's error code becomes the status.

// HTTPConfig configures the HTTP API.
type HTTPConfig struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /v1 request. BindHTTP refuses to serve beyond loopback
	// without one.
	Token string
	// Version is reported in /openapi.json.
	Version string
	// AllowedHosts are the Host headers answered ("*" any); empty is the
	// loopback names when Addr is on loopback, and any host beyond it
	// (see allowedHosts).
	AllowedHosts []string
	// Addr is the address the API listens on, for AllowedHosts' default.
	Addr string
	// Tokens grant bearer tokens some databases, to read or to write
	// (bearer.Load); Token, when set too, is one more with every
	// database.
	Tokens []bearer.Token
	// TokensFile, when set, is where Tokens came from: ServeHTTPOn reads
	// it again when it changes (bearer.Watch), so a token revoked there
	// stops working without a restart.
	TokensFile string
	// NoConsole leaves the web console out: / and the pages under it
	// answer the API's JSON 404.
	NoConsole bool
}

// maxHTTPBody bounds a request body: a request is a question and its
// options, and one over NATS may not exceed the default max_payload
// either.
const maxHTTPBody = events.DefaultMaxEventBytes

// HTTPHandler serves POST /v1/search, /v1/ask, /v1/tables and
// /v1/feedback, GET /v1/databases, the console's own endpoints
// (consoleapi.go), GET /openapi.json, and the web console (pkg/console)
// on every other path a browser GETs.
func (d *Daemon) HTTPHandler(cfg HTTPConfig) http.Handler {
	return d.httpHandler(cfg, bearer.NewKeyring(cfg.Token, cfg.Tokens))
}

func (d *Daemon) httpHandler(cfg HTTPConfig, ring *bearer.Keyring) http.Handler {
	mux := http.NewServeMux()
	for _, ep := range d.endpoints() {
		mux.Handle("/v1/"+ep.name, authorized(ring, d.httpEndpoint(ep)))
	}
	mux.Handle("/v1/databases", authorized(ring, http.HandlerFunc(d.httpDatabases)))
	for name, h := range d.recordsRoutes() {
		mux.Handle("/v1/"+name, authorized(ring, h))
	}
	for name, h := range d.operationsRoutes() {
		mux.Handle("/v1/"+name, authorized(ring, h))
	}
	spec, specErr := OpenAPI(cfg.Version)
	mux.HandleFunc("/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r, http.MethodGet) {
			return
		}
		if specErr != nil {
			httpError(w, "", events.Errorf(events.CodeInternal, "openapi: %v", specErr))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(spec)
	})
	var ui http.Handler
	if !cfg.NoConsole {
		ui = console.Handler()
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// The console is every other page a browser GETs; the API's own
		// paths and every other method get the API's JSON 404.
		if ui == nil || strings.HasPrefix(r.URL.Path, "/v1/") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			httpError(w, "", events.Errorf(events.CodeNotFound, "no such path %s: the API is POST /v1/search, /v1/ask, /v1/tables, /v1/feedback, GET /v1/databases, and the console's POST /v1/examples, /v1/docs, /v1/check, /v1/operations and /v1/deadletters/…; /openapi.json describes it", events.Quote(r.URL.Path)))
			return
		}
		ui.ServeHTTP(w, r)
	})
	return newAllowedHosts(cfg.AllowedHosts, cfg.Addr).checkHost(mux)
}

// readJSONBody reads a request's JSON body of at most maxHTTPBody, or
// says why not with the status to answer.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, int, *events.Error) {
	// Required, not only checked when sent: a page on another origin may
	// POST without a preflight only with no Content-Type or a form's,
	// never with application/json.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, http.StatusUnsupportedMediaType, events.Errorf(events.CodeBadRequest, "Content-Type %s: send Content-Type: application/json", events.Quote(r.Header.Get("Content-Type")))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHTTPBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, events.Errorf(events.CodeTooLarge, "the request is over %d bytes", maxHTTPBody)
		}
		return nil, http.StatusBadRequest, events.Errorf(events.CodeBadRequest, "read the request: %v", err)
	}
	return body, 0, nil
}

// httpEndpoint runs one endpoint's handler for a POST.
func (d *Daemon) httpEndpoint(ep endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowMethod(w, r, http.MethodPost) {
			return
		}
		id := r.Header.Get(HeaderRequestID)
		body, status, e := readJSONBody(w, r)
		if e != nil {
			writeJSONError(w, status, id, e)
			return
		}
		who := principalOf(r.Context())
		req := &httpRequest{subject: events.ServiceName + "." + ep.name, data: body, headers: micro.Headers{}, out: make(chan *nats.Msg, 1), caller: "http", who: who}
		if who != nil {
			req.caller = "http:" + who.Name
		}
		if id != "" {
			req.headers[HeaderRequestID] = []string{id}
		}
		ep.h.Handle(req)
		select {
		case m := <-req.out:
			writeReply(w, m)
		case <-r.Context().Done():
			// The caller went away; the handler finishes and its reply
			// is dropped.
		case <-time.After(d.timeout(ep.name) + 5*time.Second):
			d.log.Warn("http request got no reply", zap.String("endpoint", ep.name), zap.String("request_id", id))
			writeJSONError(w, http.StatusGatewayTimeout, id, events.Errorf(events.CodeTimeout, "no reply within the deadline"))
		}
	})
}

// httpDatabases lists the databases the daemon has a catalog of.
func (d *Daemon) httpDatabases(w http.ResponseWriter, r *http.Request) {
	if !allowMethod(w, r, http.MethodGet) {
		return
	}
	type database struct {
		Name    string `json:"name"`
		Version int64  `json:"version"`
	}
	out := struct {
		Databases []database `json:"databases"`
	}{Databases: []database{}}
	who := principalOf(r.Context())
	if l, ok := d.cats.(interface{ Databases() []string }); ok {
		for _, name := range l.Databases() {
			if who != nil && !who.mayUse(name) {
				continue // another team's: not even its name
			}
			if c := d.cats.Catalog(name); c != nil {
				out.Databases = append(out.Databases, database{Name: name, Version: c.Version})
			}
		}
	}
	w.Header().Set(HeaderRequestID, requestIDOr(r.Header.Get(HeaderRequestID)))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func allowMethod(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeJSONError(w, http.StatusMethodNotAllowed, r.Header.Get(HeaderRequestID), events.Errorf(events.CodeBadRequest, "%s %s: use %s", r.Method, r.URL.Path, method))
	return false
}

// httpStatus maps a reply's error code to the HTTP status a client
// expects: the caller's mistakes are 4xx, the server's 5xx.
var httpStatus = map[string]int{
	events.CodeBadRequest:        http.StatusBadRequest,
	events.CodeUnknownDatabase:   http.StatusNotFound,
	events.CodeNotFound:          http.StatusNotFound,
	events.CodeTooLarge:          http.StatusRequestEntityTooLarge,
	events.CodeBusy:              http.StatusTooManyRequests,
	events.CodeRateLimited:       http.StatusTooManyRequests,
	events.CodeForbidden:         http.StatusForbidden,
	events.CodeTimeout:           http.StatusGatewayTimeout,
	events.CodeStoreUnavailable:  http.StatusServiceUnavailable,
	events.CodeNoDaemon:          http.StatusServiceUnavailable,
	events.CodeStreamUnavailable: http.StatusServiceUnavailable,
	events.CodeGatewayError:      http.StatusBadGateway,
	events.CodeGatewayAuth:       http.StatusBadGateway,
	events.CodeInternal:          http.StatusInternalServerError,
	events.CodeUnsafeSQL:         http.StatusUnprocessableEntity,
	events.CodeInvalidSQL:        http.StatusUnprocessableEntity,
	events.CodeUnknownTable:      http.StatusUnprocessableEntity,
	events.CodeUnknownColumn:     http.StatusUnprocessableEntity,
	events.CodeUnanswerable:      http.StatusUnprocessableEntity,
	events.CodeInvalidOutput:     http.StatusUnprocessableEntity,
}

// writeReply writes a handler's reply: its body as is, its error code as
// the status, its request id as a header.
func writeReply(w http.ResponseWriter, m *nats.Msg) {
	status := http.StatusOK
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		status = http.StatusInternalServerError
		if s, ok := httpStatus[code]; ok {
			status = s
		}
		switch code {
		case events.CodeBusy:
			w.Header().Set("Retry-After", "1")
		case events.CodeRateLimited:
			w.Header().Set("Retry-After", "10")
		}
	}
	if id := m.Header.Get(HeaderRequestID); id != "" {
		w.Header().Set(HeaderRequestID, id)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(m.Data)
}

func httpError(w http.ResponseWriter, id string, e *events.Error) {
	status, ok := httpStatus[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	writeJSONError(w, status, id, e)
}

func writeJSONError(w http.ResponseWriter, status int, id string, e *events.Error) {
	// Every reply carries a request id, the ones no handler answered too.
	w.Header().Set(HeaderRequestID, requestIDOr(id))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error *events.Error `json:"error"`
	}{e})
}

// httpRequest is a request that came over HTTP, for the micro handlers:
// its reply goes to out instead of a reply subject.
type httpRequest struct {
	subject string
	data    []byte
	headers micro.Headers
	out     chan *nats.Msg
	caller  string     // who, as the token said (callerOf)
	who     *principal // the token's holder; nil without tokens
}

func (r *httpRequest) send(m *nats.Msg) error {
	select {
	case r.out <- m:
	default: // a second reply (cannot happen: tracked replies once)
	}
	return nil
}

func (r *httpRequest) Respond(data []byte, opts ...micro.RespondOpt) error {
	m := &nats.Msg{Data: data, Header: nats.Header{}}
	for _, o := range opts {
		o(m)
	}
	return r.send(m)
}

func (r *httpRequest) RespondJSON(v any, opts ...micro.RespondOpt) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %w", micro.ErrMarshalResponse, err)
	}
	return r.Respond(b, opts...)
}

func (r *httpRequest) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	m := &nats.Msg{Data: data, Header: nats.Header{micro.ErrorHeader: {description}, micro.ErrorCodeHeader: {code}}}
	for _, o := range opts {
		o(m)
	}
	return r.send(m)
}

func (r *httpRequest) Data() []byte           { return r.data }
func (r *httpRequest) Headers() micro.Headers { return r.headers }
func (r *httpRequest) Subject() string        { return r.subject }

// Reply is not a subject; it is set so that a request a daemon cut off
// from its store takes is handed to a replica, as over NATS.
func (r *httpRequest) Reply() string { return "_HTTP" }

// BindHTTP binds addr for the API. A token is required for any address
// beyond loopback: the API answers questions about the schema, and a
// listener on every interface must not answer strangers. Binding is its
// own step so that a process reports ready only once the port accepts.
func BindHTTP(addr string, cfg HTTPConfig) (net.Listener, error) {
	if err := CheckHTTP(addr, cfg.Token != "" || len(cfg.Tokens) > 0); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listener %s: %w", addr, err)
	}
	return ln, nil
}

// ServeHTTPOn serves the API on ln, which BindHTTP bound for cfg, until
// ctx ends; it closes ln.
func (d *Daemon) ServeHTTPOn(ctx context.Context, ln net.Listener, cfg HTTPConfig) error {
	if cfg.Addr == "" {
		cfg.Addr = ln.Addr().String()
	}
	ring := bearer.NewKeyring(cfg.Token, cfg.Tokens)
	if cfg.TokensFile != "" {
		go bearer.Watch(ctx, ring, cfg.TokensFile, cfg.Token, bearer.WatchEvery, func(n int, err error) {
			if err != nil {
				d.log.Error("http tokens file not reloaded; the tokens stay as they were", zap.String("file", cfg.TokensFile), zap.Error(err))
				return
			}
			d.log.Info("http tokens reloaded", zap.String("file", cfg.TokensFile), zap.Int("tokens", n))
		})
	}
	d.log.Info("http api listening", zap.String("addr", ln.Addr().String()), zap.Bool("token", cfg.Token != ""))
	return telemetry.ServeUntil(ctx, ln, telemetry.HTTPServer(d.httpHandler(cfg, ring)), 10*time.Second)
}

// CheckHTTP refuses an address beyond loopback without a token.
func CheckHTTP(addr string, tokens bool) error {
	if !tokens && !loopback.Addr(addr) {
		return fmt.Errorf("--http-addr %s listens beyond loopback: set a bearer token (SCHEMAQ_HTTP_TOKEN, or SCHEMAQ_HTTP_TOKEN_FILE), or listen on 127.0.0.1", addr)
	}
	return nil
}
