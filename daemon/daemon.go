// Package daemon is the query daemon: the NATS micro service "schemaq" with
// the endpoints ask, search, tables and feedback, in a queue group so replicas share
// the load. Catalogs come from the key-value bucket through a watcher, so
// a migration is visible to every replica without a restart.
//
// Every reply is a typed JSON object; every failure is a reply whose error
// object has a code (events.Code*) and a message, also set as micro's
// service-error headers. Requests beyond MaxConcurrent get `busy` at once
// rather than queueing, and each request has a deadline.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/kept"
	"github.com/schemaq/schemaq/pkg/pace"
	"github.com/schemaq/schemaq/pkg/redact"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// Catalogs is the daemon's view of the catalogs (a catalogkv.Watcher).
type Catalogs interface {
	Catalog(db string) *catalog.Catalog
}

// Counter tells whether a database has anything indexed (docs-only
// databases have no catalog).
type Counter interface {
	Count(ctx context.Context, f index.Filter) (int, error)
}

// projector is a Counter that also tells which catalog version its index
// reflects (every index.Store does).
type projector interface {
	Projected(ctx context.Context, db string) (int64, error)
}

// Retriever runs retrieval.
type Retriever interface {
	Retrieve(ctx context.Context, req retrieve.Request) (*retrieve.Result, error)
	// InferredJoins are the joins the catalog's names imply for one
	// table, which describing it shows beside its declared keys.
	Graph(cat *catalog.Catalog) *catalog.Graph
}

// Asker turns a question and its retrieved context into checked SQL. A nil
// Asker makes ask retrieval-only.
type Asker interface {
	Ask(ctx context.Context, db *catalog.Catalog, req ask.Request, res *retrieve.Result) (*ask.Answer, error)
}

// Config of the daemon. Start from DefaultConfig.
type Config struct {
	Version       string // SemVer, reported by the micro service
	MaxConcurrent int
	// MaxConcurrentPerDatabase is each database's share of the
	// MaxConcurrent slots, so that one team cannot take a daemon from
	// the others: past it, a database's requests are taken only while
	// more than a share of the slots is free (slots.go). 0 is a quarter
	// of MaxConcurrent (at least 1); MaxConcurrent or more is no share.
	MaxConcurrentPerDatabase int
	RequestTimeout           time.Duration
	// AskTimeout is the deadline of an ask, which waits for the model:
	// one call and one repair round. 0 means RequestTimeout.
	AskTimeout time.Duration
	DefaultK   int
	// HealthInterval is how often the store is checked (WithHealth): a
	// daemon whose store does not answer leaves the queue group, so its
	// share of requests goes to replicas that can answer, and rejoins
	// once it answers again. 0 means one second.
	HealthInterval time.Duration
	// NoGatewayHint is the explanation of retrieval-only ask replies.
	NoGatewayHint string
	// AllowSystemCatalogs lets an ask that asks for it read pg_catalog
	// and information_schema (and the guard's other system lookups). It
	// is the operator's: a request can only narrow it, so an agent cannot
	// grant itself the server's catalogs.
	AllowSystemCatalogs bool
	// Store names the kind of index store it reads ("sqlite": its own,
	// "redis": shared), announced in the service metadata.
	Store string
	// Feedback bounds the feedback it takes (zero fields: no bound).
	Feedback FeedbackLimits
}

// DefaultConfig suits a replica on two cores.
var DefaultConfig = Config{
	Version: "0.0.0-dev", MaxConcurrent: 64, RequestTimeout: 10 * time.Second, DefaultK: 10,
	Feedback: DefaultFeedbackLimits,
	NoGatewayHint: "retrieval only: no LLM gateway is configured, so no SQL was written. Set SCHEMAQ_LLM_BASE_URL, " +
		"SCHEMAQ_LLM_MODEL and SCHEMAQ_LLM_API_KEY (any OpenAI-compatible endpoint) and restart; the context below is what the model would see.",
}

// Daemon serves the endpoints.
type Daemon struct {
	nc    *nats.Conn
	cats  Catalogs
	count Counter
	ret   Retriever
	asker Asker
	log   *zap.Logger
	cfg   Config
	sem   chan struct{}
	// feedbackByCaller and feedbackByDB rate feedback (feedbacklimits.go).
	feedbackByCaller, feedbackByDB *rateLimiter
	// letters answers a wait's question for dead letters (letters.go).
	letters letterBox
	// replying counts handlers that gave their slot back and are still
	// sending their reply; Run waits for them too.
	replying sync.WaitGroup
	m        *Metrics
	ready    atomic.Bool

	// health is the store's readiness check (nil: always ready); leave is
	// signalled by a request the store failed, so the daemon stops taking
	// requests at once rather than at the next check.
	health func(context.Context) error
	pace   *pace.Gate // nil unless indexing runs in this process
	svcMu  sync.Mutex
	svc    micro.Service // nil while out of the queue group
	state  atomic.Pointer[string]
	gwLog  *gatewayLog
	pub    Publisher // nil: feedback is refused
	// console counts each caller's console requests, perDB each
	// database's requests (slots.go).
	console, perDB *keyedSlots
	// records reads examples and docs for the console (records.go);
	// nil: those pages answer stream_unavailable.
	records Records
	// listings keeps sorted table listings for paging (listing.go).
	listings listings
	// parsedExamples keeps the console's parsed example SQL (records.go).
	parsedExamples kept.Map[parsedSQL]
}

// Option configures a Daemon.
type Option func(*Daemon)

// WithMetrics records the daemon's metrics in m.
func WithMetrics(m *Metrics) Option { return func(d *Daemon) { d.m = m } }

// WithPace marks each request in flight on g, so that indexing in the
// same process gives way to it (see package pace).
func WithPace(g *pace.Gate) Option { return func(d *Daemon) { d.pace = g } }

// WithHealth makes queue-group membership follow check (the store's
// readiness probe): while it fails the daemon takes no requests.
func WithHealth(check func(context.Context) error) Option {
	return func(d *Daemon) { d.health = check }
}

// Ready reports whether the service is registered and serving.
func (d *Daemon) Ready() bool { return d.ready.Load() }

// State says why the daemon is not serving ("" while it serves), for
// the readiness probe.
func (d *Daemon) State() string {
	if p := d.state.Load(); p != nil {
		return *p
	}
	return "starting"
}

func (d *Daemon) setState(s string) { d.state.Store(&s) }

// HeaderRequestID carries a request id: taken from the request when the
// caller sets it, made up otherwise, logged with the request and returned
// on the reply.
const HeaderRequestID = "Schemaq-Request-Id"

// New builds a daemon; asker may be nil.
func New(nc *nats.Conn, cats Catalogs, count Counter, ret Retriever, asker Asker, log *zap.Logger, cfg Config, opts ...Option) (*Daemon, error) {
	var errs []error
	if nc == nil || cats == nil || count == nil || ret == nil || log == nil {
		errs = append(errs, errors.New("daemon: connection, catalogs, counter, retriever and logger are required"))
	}
	if cfg.MaxConcurrent <= 0 {
		errs = append(errs, fmt.Errorf("daemon: max concurrent requests must be positive, got %d", cfg.MaxConcurrent))
	}
	if cfg.MaxConcurrentPerDatabase < 0 {
		errs = append(errs, fmt.Errorf("daemon: max concurrent requests per database must be zero (a quarter of the whole) or positive, got %d", cfg.MaxConcurrentPerDatabase))
	}
	if cfg.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("daemon: request timeout must be positive, got %v", cfg.RequestTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.DefaultK <= 0 {
		cfg.DefaultK = 10
	}
	d := &Daemon{nc: nc, cats: cats, count: count, ret: ret, asker: asker, log: log, cfg: cfg, gwLog: newGatewayLog(),
		sem:              make(chan struct{}, cfg.MaxConcurrent),
		feedbackByCaller: newRateLimiter(cfg.Feedback.PerCaller), feedbackByDB: newRateLimiter(cfg.Feedback.PerDatabase),
		console: newKeyedSlots(consolePerCaller), perDB: databaseSlots(cfg),
		parsedExamples: kept.Map[parsedSQL]{Max: maxParsedExamples}}
	for _, o := range opts {
		o(d)
	}
	return d, nil
}

// Run serves until ctx ends, then stops the service (draining its
// subscriptions) and waits for requests in flight.
//
// The service is in the queue group only while the store answers: a
// daemon cut off from its store would otherwise take its share of
// requests and fail them. It leaves when a check fails (or a request
// finds the store unavailable), answers what it already took, and joins
// again when a check passes.
func (d *Daemon) Run(ctx context.Context) error {
	interval := d.cfg.HealthInterval
	if interval <= 0 {
		interval = time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for ctx.Err() == nil {
		err := d.check(ctx)
		switch {
		case ctx.Err() != nil:
		case err == nil:
			if err := d.join(); err != nil {
				return err
			}
		default:
			if d.State() == "starting" {
				d.log.Warn("not joining the queue group until the store answers", zap.Error(err))
			}
			d.leave("store check failed: " + err.Error())
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	d.leave("stopped")
	// Wait for handlers still running: they hold a semaphore slot each.
	for i := 0; i < cap(d.sem); i++ {
		d.sem <- struct{}{}
	}
	d.replying.Wait()
	d.log.Info("daemon stopped")
	return nil
}

func (d *Daemon) check(ctx context.Context) error {
	if d.health == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return d.health(cctx)
}

// join registers the service and its endpoints, unless it is registered.
func (d *Daemon) join() error {
	d.svcMu.Lock()
	defer d.svcMu.Unlock()
	if d.svc != nil {
		return nil
	}
	svc, err := micro.AddService(d.nc, micro.Config{
		Name:        events.ServiceName,
		Version:     d.cfg.Version,
		Description: "schemaq: schema retrieval and text-to-SQL",
		Metadata:    d.capabilities(),
		ErrorHandler: func(_ micro.Service, e *micro.NATSError) {
			d.log.Warn("micro service error", zap.String("subject", e.Subject), zap.String("error", e.Description))
		},
	})
	if err != nil {
		return fmt.Errorf("register service %s: %w", events.ServiceName, err)
	}
	grp := svc.AddGroup(events.ServiceName)
	for _, ep := range d.endpoints() {
		// The catch-all subject (schemaq.search, the database in the
		// body) and the per-database one (schemaq.search.<db>), which
		// NATS permissions can grant database by database.
		if err := grp.AddEndpoint(ep.name, ep.h); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("register endpoint %s: %w", ep.name, err)
		}
		if err := grp.AddEndpoint(ep.name+"-db", ep.h, micro.WithEndpointSubject(ep.name+".*")); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("register endpoint %s.*: %w", ep.name, err)
		}
	}
	// Ready means the server routes requests here: until it has the
	// subscriptions, a request sent on the strength of /readyz finds no
	// responder. A connection that is down resends them on reconnect, so
	// a flush that fails only delays readiness to the next check.
	if err := d.nc.FlushTimeout(2 * time.Second); err != nil {
		_ = svc.Stop()
		why := "the server has not confirmed the subscriptions: " + err.Error()
		if d.State() != why {
			d.log.Warn("not joining the queue group yet", zap.String("reason", why))
		}
		d.setState(why)
		return nil
	}
	d.svc = svc
	d.ready.Store(true)
	d.setState("")
	if d.m != nil {
		d.m.serving.Set(1)
	}
	d.log.Info("daemon serving", zap.String("service", events.ServiceName), zap.String("version", d.cfg.Version))
	return nil
}

// leave takes the service out of the queue group. Draining the
// subscriptions hands nothing back: requests already delivered still
// reach their handlers and are answered.
func (d *Daemon) leave(why string) {
	d.svcMu.Lock()
	defer d.svcMu.Unlock()
	d.setState(why)
	if d.svc == nil {
		return
	}
	d.ready.Store(false)
	if d.m != nil {
		d.m.serving.Set(0)
	}
	if err := d.svc.Stop(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		d.log.Warn("stop service", zap.Error(err))
	}
	d.svc = nil
	if why != "stopped" {
		d.log.Warn("left the queue group: not taking requests until the store answers", zap.String("reason", why))
	}
}

type validator interface{ Validate() error }

// targeted is a request that names its database (events' Target).
type targeted interface{ Target() *string }

// subjectDatabase fills or checks req's database from a per-database
// subject (schemaq.<endpoint>.<db>); the catch-all subject leaves it as
// the body says.
func subjectDatabase(subject, endpoint string, req targeted) error {
	db, ok := strings.CutPrefix(subject, events.DatabaseSubject(endpoint, ""))
	if !ok {
		return nil
	}
	switch body := req.Target(); {
	case *body == "":
		*body = db
	case *body != db:
		return fmt.Errorf("field database: %s, but the request came on %s, the subject of database %s; leave it out or make them agree",
			events.Quote(*body), subject, events.Quote(db))
	}
	return nil
}

// endpoint is one request endpoint and the handler that answers it, over
// NATS and over HTTP alike.
type endpoint struct {
	name string
	h    micro.Handler
}

func (d *Daemon) endpoints() []endpoint {
	return []endpoint{
		{events.EndpointAsk, adapt(d, events.EndpointAsk, d.ask, func(db string, e *events.Error) any { return &events.AskReply{Database: db, Error: e} })},
		{events.EndpointSearch, adapt(d, events.EndpointSearch, d.search, func(db string, e *events.Error) any { return &events.SearchReply{Database: db, Error: e} })},
		{events.EndpointTables, adapt(d, events.EndpointTables, d.tables, func(db string, e *events.Error) any { return &events.TablesReply{Database: db, Error: e} })},
		{events.EndpointFeedback, adapt(d, events.EndpointFeedback, d.feedback, func(db string, e *events.Error) any {
			return &events.FeedbackReply{Database: db, Error: e}
		})},
	}
}

// requestIDKey carries a request's id in its context: an ask's reply
// returns it as the ask id that feedback cites.
type requestIDKey struct{}

// requestIDOr is the id a caller sent, or a new one: every request and
// every reply has one.
func requestIDOr(id string) string {
	if id == "" {
		return nuid.Next()
	}
	return id
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// HeaderForwarded marks a request that a daemon cut off from its store
// handed to the queue group; it is handed on once at most, so requests
// never circle between daemons that all lost the store.
const HeaderForwarded = "Schemaq-Forwarded"

// handOver is the answer to a request taken just before the store
// failed: the daemon leaves the queue group, sends the request to the
// group (a replica that can answer), and relays that reply. It reports
// false when no replica answered, and the caller then gets the error.
func (d *Daemon) handOver(ctx context.Context, r *tracked, cause *events.Error) bool {
	if d.health == nil || r.Headers().Get(HeaderForwarded) != "" || r.Reply() == "" {
		return false
	}
	if d.check(ctx) == nil {
		// The store still serves (from what it holds, while its Redis
		// fails over): the daemon stays, and this request's error stands.
		return false
	}
	// Leaving first, on this connection, orders the unsubscribe before
	// the request, so the server cannot hand it back to this daemon.
	d.leave("a request found the store unavailable: " + cause.Message)
	m := nats.NewMsg(r.Subject())
	for k, v := range r.Headers() {
		m.Header[k] = v
	}
	m.Header.Set(HeaderForwarded, "1")
	m.Header.Set(HeaderRequestID, r.id)
	m.Data = r.Data()
	reply, err := d.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		if d.m != nil {
			d.m.forwards.WithLabelValues("failed").Inc()
		}
		d.log.Debug("no replica took the request", zap.String("endpoint", r.endpoint), zap.String("request_id", r.id), zap.Error(err))
		return false
	}
	if d.m != nil {
		d.m.forwards.WithLabelValues("answered").Inc()
	}
	r.done("forwarded")
	if err := r.respond(&nats.Msg{Header: reply.Header, Data: reply.Data}, nil); err != nil {
		d.log.Warn("reply failed", zap.String("endpoint", r.endpoint), zap.Error(err))
	}
	return true
}

// tracked wraps a request so that every reply carries the request id and
// is counted once with its outcome code.
type tracked struct {
	micro.Request
	d        *Daemon
	endpoint string
	id       string
	start    time.Time
	release  func() // gives the concurrency slot back; nil without one
	// send delivers the reply: published on the reply subject over NATS,
	// written to the response over HTTP.
	send func(*nats.Msg) error
}

// sender is a request that takes its reply itself rather than on a
// subject (httpRequest).
type sender interface{ send(*nats.Msg) error }

func (t *tracked) done(code string) {
	if t.d.m != nil {
		t.d.m.requests.WithLabelValues(t.endpoint, code).Inc()
		t.d.m.seconds.WithLabelValues(t.endpoint).Observe(time.Since(t.start).Seconds())
	}
}

// respond publishes a reply on the connection, not through micro's
// request: micro reads the request's error state right after the handler
// returns, while the work goroutine is still replying, which is a data
// race. The reply carries the same headers micro would set.
func (t *tracked) respond(m *nats.Msg, opts []micro.RespondOpt) error {
	m.Subject = t.Reply()
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	for _, opt := range opts {
		opt(m)
	}
	m.Header.Set(HeaderRequestID, t.id)
	if t.release != nil {
		t.release()
	}
	err := t.send(m)
	if errors.Is(err, nats.ErrMaxPayload) {
		// The caller would wait out its timeout for a reply that never
		// left: it gets a short one that says why.
		t.d.log.Warn("reply larger than the server's max_payload; sent an error instead", zap.String("endpoint", t.endpoint),
			zap.String("request_id", t.id), zap.Int("bytes", len(m.Data)), zap.Int64("max_payload", t.d.nc.MaxPayload()))
		err = t.d.nc.PublishMsg(t.tooLarge(len(m.Data)))
	}
	if err != nil {
		return fmt.Errorf("%w: %w", micro.ErrRespond, err)
	}
	return nil
}

// tooLarge is the reply that stands in for one the server would not
// carry. Every reply type has its error at the top level, so this body
// decodes as any of them.
func (t *tracked) tooLarge(size int) *nats.Msg {
	e := events.Errorf(events.CodeTooLarge, "the reply (%d bytes) is larger than the NATS server's max_payload (%d bytes); ask for less (a smaller k or limit)", size, t.d.nc.MaxPayload())
	b, _ := json.Marshal(struct {
		Error *events.Error `json:"error"`
	}{e})
	return &nats.Msg{Subject: t.Reply(), Data: b, Header: nats.Header{
		micro.ErrorHeader: {e.Message}, micro.ErrorCodeHeader: {e.Code}, HeaderRequestID: {t.id}}}
}

func (t *tracked) RespondJSON(v any, opts ...micro.RespondOpt) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %w", micro.ErrMarshalResponse, err)
	}
	t.done("ok")
	return t.respond(&nats.Msg{Data: b}, opts)
}

func (t *tracked) Error(code, description string, data []byte, opts ...micro.RespondOpt) error {
	t.done(code)
	if code == events.CodeInternal || code == events.CodeTimeout || code == events.CodeGatewayError {
		t.d.log.Warn("request failed", zap.String("endpoint", t.endpoint), zap.String("request_id", t.id), zap.String("code", code))
	}
	return t.respond(&nats.Msg{Header: nats.Header{micro.ErrorHeader: {headerValue(description)}, micro.ErrorCodeHeader: {code}}, Data: data}, opts)
}

// maxErrorHeader bounds the error description in a reply's header; the
// body carries the whole message.
const maxErrorHeader = 1024

// headerValue makes a header value of an error message: one line, at
// most maxErrorHeader bytes, marked when cut.
func headerValue(s string) string {
	line := events.OneLine(s, len(s))
	if len(line) <= maxErrorHeader {
		return line
	}
	return events.OneLine(line, maxErrorHeader) + "… (cut)"
}

// observeStages records the stage timings and token usage a reply carries.
func (d *Daemon) observeStages(resp any) {
	if d.m == nil {
		return
	}
	var timings map[string]float64
	switch r := resp.(type) {
	case *events.AskReply:
		timings = r.Timings
		if r.Usage != nil {
			d.m.tokens.WithLabelValues("prompt").Add(float64(r.Usage.PromptTokens))
			d.m.tokens.WithLabelValues("completion").Add(float64(r.Usage.CompletionTokens))
			d.m.tokens.WithLabelValues("cached").Add(float64(r.Usage.CachedTokens))
			d.m.llmCalls.Add(float64(r.Usage.LLMCalls))
		}
	case *events.SearchReply:
		timings = r.Timings
	}
	for _, stage := range []string{"retrieve", "llm", "guard"} {
		if v, ok := timings[stage]; ok {
			d.m.stage.WithLabelValues(stage).Observe(v / 1000)
		}
	}
}

// timeout is an endpoint's deadline.
func (d *Daemon) timeout(endpoint string) time.Duration {
	if endpoint == events.EndpointAsk && d.cfg.AskTimeout > 0 {
		return d.cfg.AskTimeout
	}
	return d.cfg.RequestTimeout
}

// classify maps an endpoint error to a wire error, logging internal ones
// once (their detail is not sent).
func (d *Daemon) classify(ctx context.Context, endpoint string, err error) *events.Error {
	var we *events.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &we):
		return we
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return events.Errorf(events.CodeTimeout, "no answer within %v", d.timeout(endpoint))
	case errors.Is(err, index.ErrUnavailable):
		return events.Errorf(events.CodeStoreUnavailable, "the index store is unavailable; retry shortly")
	case errors.Is(err, ask.ErrGateway):
		// Go's HTTP errors quote the URL, and a gateway's may hold a key
		// (?api-key=) or a password.
		msg := redact.Text(err.Error())
		d.log.Warn("gateway failed", zap.String("endpoint", endpoint), zap.String("error", msg))
		return events.Errorf(events.CodeGatewayError, "the LLM gateway failed: %s", msg)
	}
	d.log.Error("request failed", zap.String("endpoint", endpoint), zap.String("error", redact.Text(err.Error())))
	return events.Errorf(events.CodeInternal, "internal error")
}

// reply sends resp, or an error reply with micro's error headers set.
func (d *Daemon) reply(r micro.Request, endpoint string, resp any, e *events.Error, errReply func(*events.Error) any) {
	var err error
	if e != nil {
		b, _ := json.Marshal(errReply(e))
		err = r.Error(e.Code, e.Message, b)
	} else {
		err = r.RespondJSON(resp)
	}
	if err != nil {
		d.log.Warn("reply failed", zap.String("endpoint", endpoint), zap.Error(err))
	}
}

// known reports whether db has a catalog or indexed docs.
func (d *Daemon) known(ctx context.Context, db string) (*catalog.Catalog, error) {
	if c := d.cats.Catalog(db); c != nil {
		return c, nil
	}
	n, err := d.count.Count(ctx, index.Filter{Database: db})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, events.Errorf(events.CodeUnknownDatabase, "database %q has no schema or docs indexed; publish a migration or snapshot first", db)
	}
	return nil, nil
}

// schemasKnown refuses a schemas filter naming a schema the database
// does not have: a misspelt one would filter every table out, and the
// empty reply would read as "nothing matches". A database known by its
// docs alone (cat nil) has no schemas to check against.
func schemasKnown(cat *catalog.Catalog, schemas []string) error {
	if cat == nil || len(schemas) == 0 {
		return nil
	}
	have := cat.Schemas()
	for i, s := range schemas {
		if _, ok := slices.BinarySearch(have, s); !ok {
			return events.Errorf(events.CodeBadRequest, "field schemas[%d]: database %s has no schema %s at catalog version %d (it has %s)",
				i, cat.Database, events.Quote(s), cat.Version, someNames(have, maxNamedSchemas))
		}
	}
	return nil
}

// maxNamedSchemas bounds the schemas an error lists: a pooled warehouse
// may have hundreds.
const maxNamedSchemas = 10

// someNames lists up to n names, quoted, and how many more there are.
func someNames(names []string, n int) string {
	quoted := make([]string, 0, min(n, len(names)))
	for _, s := range names[:min(n, len(names))] {
		quoted = append(quoted, events.Quote(s))
	}
	out := strings.Join(quoted, ", ")
	if len(names) > n {
		out += fmt.Sprintf(" and %d more", len(names)-n)
	}
	return out
}

func (d *Daemon) k(k int) int {
	if k <= 0 {
		return d.cfg.DefaultK
	}
	return k
}

func (d *Daemon) search(ctx context.Context, req *events.SearchRequest) (*events.SearchReply, error) {
	cat, err := d.known(ctx, req.Database)
	if err != nil {
		return nil, err
	}
	if err := schemasKnown(cat, req.Schemas); err != nil {
		return nil, err
	}
	res, err := d.ret.Retrieve(ctx, retrieve.Request{Database: req.Database, Question: req.Question, K: d.k(req.K), Kinds: req.Kinds, Schemas: req.Schemas, Tags: req.Tags, Hints: req.Hints})
	if err != nil {
		return nil, err
	}
	d.tally(events.EndpointSearch, res)
	out := &events.SearchReply{Database: req.Database, Results: contextItems(res, true), Joins: wireJoins(res.Joins), Timings: timings(res.Timings),
		Warnings: res.Warnings, Schemas: wireShares(res.Schemas), Ambiguous: res.Ambiguous}
	if w := driftWarning(cat); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	if req.Explain {
		out.Explain, out.QueryTerms = wireExplain(res.Explain), WireTerms(res.Terms)
	}
	return out, nil
}

func (d *Daemon) ask(ctx context.Context, req *events.AskRequest) (*events.AskReply, error) {
	cat, err := d.known(ctx, req.Database)
	if err != nil {
		return nil, err
	}
	if err := schemasKnown(cat, req.Schemas); err != nil {
		return nil, err
	}
	res, err := d.ret.Retrieve(ctx, retrieve.Request{Database: req.Database, Question: req.Question, K: d.k(req.K), Schemas: req.Schemas, Tags: req.Tags, Hints: req.Hints})
	if err != nil {
		return nil, err
	}
	d.tally(events.EndpointAsk, res)
	var refusedSystem string
	if req.AllowSystemCatalogs && !d.cfg.AllowSystemCatalogs {
		req.AllowSystemCatalogs = false
		refusedSystem = "the request allows system catalogs, but this daemon does not (its operator starts it with --allow-system-catalogs): the SQL may read only the database's own tables"
	}
	if d.asker == nil {
		if d.m != nil {
			d.m.retrievalOnly.Inc()
		}
		out := d.askReply(req, cat, res, nil, refusedSystem)
		out.AskID = requestID(ctx)
		return out, nil
	}
	ans, err := d.asker.Ask(ctx, cat, ask.Request{Database: req.Database, Question: req.Question, Hints: req.Hints,
		SystemCatalogs: req.AllowSystemCatalogs}, res)
	if err != nil {
		return nil, err
	}
	d.gwLog.failed(d.log, events.EndpointAsk, ans.Err)
	out := d.askReply(req, cat, res, ans, refusedSystem)
	out.AskID = requestID(ctx)
	return out, nil
}

// tally counts a reply whose context the token budget cut, and one whose
// question fits several schemas, so that an operator sees how often the
// budget bites and how often callers should have named a schema without
// reading replies.
func (d *Daemon) tally(endpoint string, res *retrieve.Result) {
	if d.m == nil {
		return
	}
	if res.Truncated {
		d.m.cuts.WithLabelValues(endpoint).Inc()
	}
	if res.Ambiguous {
		d.m.ambiguous.WithLabelValues(endpoint).Inc()
	}
	if res.Stale > 0 {
		d.m.staleExamples.WithLabelValues(endpoint).Add(float64(res.Stale))
	}
}

// driftWarning says, when the catalog of a database has drift, that it
// may differ from the real database, and where to look.
func driftWarning(cat *catalog.Catalog) string {
	if cat == nil || len(cat.Drift()) == 0 {
		return ""
	}
	d := cat.Drift()
	return fmt.Sprintf("the catalog of %s has drift: %d statement(s) of its history name objects it does not know "+
		"(first: %s), so tables or columns made outside the replayed DDL may be missing or untyped; "+
		"`schemaq tables --db %s` lists them, and a snapshot clears them", cat.Database, len(d), d[0], cat.Database)
}

func driftWire(cat *catalog.Catalog) ([]events.Drift, int) {
	d := cat.Drift()
	out := make([]events.Drift, 0, min(len(d), events.MaxDriftListed))
	for _, x := range d[:min(len(d), events.MaxDriftListed)] {
		out = append(out, events.Drift{Seq: x.Seq, Migration: x.Migration, Source: x.Source, Statement: x.Statement,
			Line: x.Line, Column: x.Column, Excerpt: x.Excerpt, Error: x.Error, Inferred: x.Inferred, Stopped: x.Stopped})
	}
	return out, len(d)
}

func (d *Daemon) tables(ctx context.Context, req *events.TablesRequest) (*events.TablesReply, error) {
	var objects []events.ObjectVersion
	if len(req.Objects) > 0 {
		var err error
		if objects, err = d.objectVersions(ctx, req); err != nil {
			return nil, err
		}
	}
	var letter *events.LetterInfo
	if req.LettersSince != nil {
		letter = d.newestLetter(ctx, req.Database, *req.LettersSince)
	}
	cat := d.cats.Catalog(req.Database)
	if cat == nil && (objects != nil || req.History || req.LettersSince != nil) {
		// A publisher's questions about a database it has yet to give
		// a catalog.
		out := &events.TablesReply{Database: req.Database, Tables: []events.TableInfo{}, Objects: objects, Letter: letter}
		if req.History {
			out.History = &events.CatalogHistory{Database: req.Database}
		}
		return out, nil
	}
	if cat == nil {
		return nil, events.Errorf(events.CodeUnknownDatabase, "database %q has no catalog; publish a migration or snapshot first", req.Database)
	}
	out := &events.TablesReply{Database: req.Database, Version: cat.Version, Objects: objects, Letter: letter}
	if req.History {
		out.History = cat.Lineage()
	}
	if len(cat.Drift()) > 0 {
		out.Drift, out.DriftTotal = driftWire(cat)
	}
	if p, ok := d.count.(projector); ok {
		v, err := p.Projected(ctx, req.Database)
		if err != nil {
			return nil, events.Errorf(events.CodeStoreUnavailable, "index store: %v", err)
		}
		out.Indexed = v
	}
	if req.Table != "" {
		return d.describeTable(cat, req, out)
	}
	page(d.listings.of(cat), req, out)
	return out, nil
}

// describeTable answers a request for one table (or view), by its name
// or a former one, with its neighbourhood when asked.
func (d *Daemon) describeTable(cat *catalog.Catalog, req *events.TablesRequest, out *events.TablesReply) (*events.TablesReply, error) {
	g := d.ret.Graph(cat)
	desc := g.Describe(req.Table)
	if desc == nil {
		// A former name answers with the relation it became.
		if now, r, ok := cat.Former(req.Table); ok {
			desc = g.Describe(now.Schema + "." + now.Name)
			out.RenamedTo = &events.RenamedTo{From: r.From, To: now.Key(), Source: r.Source}
		}
	}
	if desc == nil {
		return nil, events.Errorf(events.CodeNotFound, "table %q is not in database %s (version %d), nor a view of that name", req.Table, req.Database, cat.Version)
	}
	out.Tables = []events.TableInfo{tableInfo(desc)}
	if req.Neighbourhood > 0 {
		out.Graph = tableGraph(g, desc.Name, req.Neighbourhood)
	}
	return out, nil
}

// versioner reads the versions of stored chunks.
type versioner interface {
	Metas(ctx context.Context, f index.Filter) (map[string]index.Meta, error)
}

// objectVersions answers a tables request's Objects: the highest version
// among each doc's or example's chunks (0 when none is stored).
func (d *Daemon) objectVersions(ctx context.Context, req *events.TablesRequest) ([]events.ObjectVersion, error) {
	v, ok := d.count.(versioner)
	if !ok {
		return nil, events.Errorf(events.CodeBadRequest, "this daemon's index cannot report object versions")
	}
	kinds := map[string]bool{}
	for _, o := range req.Objects {
		kinds[o.Kind] = true
	}
	best := map[events.IndexedRef]int64{}
	for kind := range kinds {
		metas, err := v.Metas(ctx, index.Filter{Database: req.Database, Kinds: []string{kind}})
		if err != nil {
			return nil, events.Errorf(events.CodeStoreUnavailable, "index store: %v", err)
		}
		prefix := req.Database + ":" + kind + ":"
		for id, m := range metas {
			name := strings.TrimPrefix(id, prefix)
			// Sections are numbered: db:doc:name:part.
			if i := strings.LastIndexByte(name, ':'); i >= 0 {
				if _, err := strconv.Atoi(name[i+1:]); err == nil {
					name = name[:i]
				}
			}
			ref := events.IndexedRef{Kind: kind, Name: name}
			best[ref] = max(best[ref], m.Version)
		}
	}
	out := make([]events.ObjectVersion, len(req.Objects))
	for i, o := range req.Objects {
		out[i] = events.ObjectVersion{IndexedRef: o, Version: best[o]}
	}
	return out, nil
}

// capabilities announce, in the service's metadata ($SRV.INFO), what this
// replica answers with: replicas of one queue group that differ answer
// the same ask differently, which `schemaq status` warns of.
func (d *Daemon) capabilities() map[string]string {
	gateway := "none"
	if d.asker != nil {
		gateway = "configured"
	}
	return map[string]string{
		events.CapabilityGateway:             gateway,
		events.CapabilityAllowSystemCatalogs: strconv.FormatBool(d.cfg.AllowSystemCatalogs),
		events.CapabilityStore:               d.cfg.Store,
	}
}

// tableGraph is the join graph around the table named (schema.table).
func tableGraph(g *catalog.Graph, name string, hops int) *events.TableGraph {
	n, ok := g.Neighbourhood(strings.ToLower(name), hops, events.MaxGraphTables)
	out := &events.TableGraph{Tables: []events.GraphTable{}, Joins: []events.GraphJoin{}}
	if !ok {
		return out // a view: no joins of its own
	}
	names := map[string]string{}
	for _, nd := range n.Nodes {
		q := nd.Table.Schema + "." + nd.Table.Name
		names[strings.ToLower(q)] = q
		out.Tables = append(out.Tables, events.GraphTable{Name: q, Hops: nd.Hops, Columns: len(nd.Table.Columns), Comment: nd.Table.Comment})
	}
	for _, e := range n.Edges {
		out.Joins = append(out.Joins, events.GraphJoin{From: names[e.From], FromColumns: e.FromColumns, To: names[e.To], ToColumns: e.ToColumns, Declared: e.Declared})
	}
	out.Truncated = n.Truncated
	return out
}
