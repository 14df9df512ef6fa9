// Package client is the Go client of schemaq for other services: publish
// events with their id as the JetStream message id, and ask, search and
// list tables by NATS request-reply with typed replies. A reply's error
// object comes back as an *events.Error, so callers can match codes:
//
//	reply, err := c.Ask(ctx, &events.AskRequest{Database: "shop", Question: q})
//	if errors.Is(err, &events.Error{Code: events.CodeUnknownDatabase}) { … }
package client

import (
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Client talks to a running schemaq. It is safe for concurrent use; the
// connection stays the caller's.
type Client struct {
	nc *nats.Conn
	js jetstream.JetStream
	// onRetry hears of each publish or catalog read retried
	// (OnPublishRetry).
	onRetry func(attempt int, err error)
	// onWait hears where a wait for a catalog version stands
	// (OnWaitProgress).
	onWait func(WaitProgress)
	// The last listings of docs and examples, used again while their
	// subjects have not changed (listings.go).
	docListings     listings[StoredDoc]
	exampleListings listings[StoredExample]
}

// OnPublishRetry sets fn to be told of every publish, and every read of
// the catalog bucket, retried while a stream elects its leader, for a
// caller that reports progress. Set it before publishing.
func (c *Client) OnPublishRetry(fn func(attempt int, err error)) { c.onRetry = fn }

// publishRetryFor bounds how long Publish retries a stream that does not
// answer: a JetStream cluster elects a new stream leader within seconds
// of losing one.
const publishRetryFor = 20 * time.Second

// New builds a client on a connection.
func New(nc *nats.Conn) (*Client, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("schemaq client: %w", err)
	}
	return &Client{nc: nc, js: js}, nil
}

// FullError is a publish the stream refused because the event's
// database holds the most events of its kind the stream keeps
// (--max-events-per-database): nothing was stored, and publishing again
// will not help until events leave or an operator raises the bound.
type FullError = streams.FullError

// Published is the outcome of a publish.
type Published struct {
	Sequence  uint64 // position in the SCHEMAQ stream
	Duplicate bool   // JetStream dropped it: an event with this id was published within the duplicate window
}

// Publish validates and publishes an event on its subject with its id as
// Nats-Msg-Id, and waits for JetStream's acknowledgement. A migration or
// snapshot too large for a message even compressed has its SQL written
// to the object store first (events.ObjectBucket) and carries a
// reference to it; the object is removed again if the publish fails.
func (c *Client) Publish(ctx context.Context, ev *events.Event) (Published, error) {
	if err := ev.Validate(); err != nil {
		return Published{}, fmt.Errorf("publish %s %s: %w", ev.Type, ev.ID, err)
	}
	data, err := ev.Encode()
	if err != nil {
		return Published{}, fmt.Errorf("publish %s %s: %w", ev.Type, ev.ID, err)
	}
	var object string
	if len(data) > events.DefaultMaxEventBytes {
		if data, object, err = c.offload(ctx, ev, len(data)); err != nil {
			return Published{}, fmt.Errorf("publish %s %s: %w", ev.Type, ev.ID, err)
		}
	}
	m := nats.NewMsg(ev.Subject())
	m.Data = data
	m.Header.Set(events.HeaderMsgID, ev.ID)
	m.Header.Set(events.HeaderEventType, ev.Type)
	injectTrace(ctx, m)
	ack, err := c.publishMsg(ctx, m)
	if err != nil {
		if object != "" {
			c.dropObject(object)
		}
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			return Published{}, fmt.Errorf("publish %s %s: no %s stream answered on %s (is schemaq up, or have its streams been created?): %w",
				ev.Type, ev.ID, events.Stream, ev.Subject(), err)
		}
		return Published{}, fmt.Errorf("publish %s %s: %w", ev.Type, ev.ID, streams.NameFull(err, ev.Subject()))
	}
	return Published{Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// offload writes a migration's or snapshot's SQL, gzip-compressed, to the
// object store under events/<db>/<event id> and returns the event encoded
// with a reference instead. The name is the event's id, so re-publishing
// it (a duplicate JetStream drops) rewrites the same object.
func (c *Client) offload(ctx context.Context, ev *events.Event, size int) ([]byte, string, error) {
	var sql string
	var gz []byte
	switch {
	case ev.Migration != nil:
		sql, gz = ev.Migration.SQL, ev.Migration.SQLGzip
	case ev.Snapshot != nil:
		sql, gz = ev.Snapshot.SQL, ev.Snapshot.SQLGzip
	default:
		return nil, "", fmt.Errorf("%w: %d bytes encoded, the limit is %d (split it, or raise NATS max_payload and the stream's max message size together)",
			events.ErrTooLarge, size, events.DefaultMaxEventBytes)
	}
	if len(gz) > 0 {
		// The publisher compressed it already; the checksum is the SQL's.
		plain, err := events.GunzipSQL(gz)
		if err != nil {
			return nil, "", err
		}
		sql = plain
	} else {
		gz = events.GzipSQL(sql)
	}
	obj, err := streams.Objects(ctx, c.js)
	if err != nil {
		return nil, "", err
	}
	name := events.EventObject(ev.Database, ev.ID)
	info, err := obj.PutBytes(ctx, name, gz)
	if err != nil {
		return nil, "", fmt.Errorf("write the SQL to object %s: %w", name, err)
	}
	ref := &events.ObjectRef{Name: name, Size: info.Size, Gzip: true, Checksum: events.Checksum(sql)}
	var payload any
	if ev.Migration != nil {
		m := *ev.Migration
		m.SQL, m.SQLGzip, m.SQLObject = "", nil, ref
		payload = &m
	} else {
		sn := *ev.Snapshot
		sn.SQL, sn.SQLGzip, sn.SQLObject = "", nil, ref
		payload = &sn
	}
	slim, err := events.New(ev.ID, ev.Database, ev.Time, payload)
	if err == nil {
		var data []byte
		if data, err = slim.Encode(); err == nil {
			return data, name, nil
		}
	}
	c.dropObject(name)
	return nil, "", err
}

// dropObject removes an object the publish no longer needs, best effort:
// an orphan costs storage, not correctness.
func (c *Client) dropObject(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if obj, err := streams.Objects(ctx, c.js); err == nil {
		_ = obj.Delete(ctx, name)
	}
}

// Ask asks for SQL. On an error reply it returns the reply (which may
// still carry the context, and the refused statement in RejectedSQL, never
// in SQL) and the *events.Error.
func (c *Client) Ask(ctx context.Context, req *events.AskRequest) (*events.AskReply, error) {
	var reply events.AskReply
	if err := c.request(ctx, events.EndpointAsk, req, &reply); err != nil {
		return nil, err
	}
	return &reply, wireError(reply.Error)
}

// Search retrieves the ranked context for a question.
func (c *Client) Search(ctx context.Context, req *events.SearchRequest) (*events.SearchReply, error) {
	var reply events.SearchReply
	if err := c.request(ctx, events.EndpointSearch, req, &reply); err != nil {
		return nil, err
	}
	return &reply, wireError(reply.Error)
}

// Tables lists a database's tables, or describes one.
func (c *Client) Tables(ctx context.Context, req *events.TablesRequest) (*events.TablesReply, error) {
	var reply events.TablesReply
	if err := c.request(ctx, events.EndpointTables, req, &reply); err != nil {
		return nil, err
	}
	return &reply, wireError(reply.Error)
}

// Feedback hands back SQL that answers a question (an ask's answer,
// accepted or corrected). SQL the guard passes is stored as a worked
// example; refused SQL gets the *events.Error saying why, and nothing is
// stored. The same question and SQL again store one example.
func (c *Client) Feedback(ctx context.Context, req *events.FeedbackRequest) (*events.FeedbackReply, error) {
	var reply events.FeedbackReply
	if err := c.request(ctx, events.EndpointFeedback, req, &reply); err != nil {
		return nil, err
	}
	return &reply, wireError(reply.Error)
}

// Database is a database schemaq has a catalog for.
type Database struct {
	Name    string `json:"name"`
	Version int64  `json:"version"` // catalog version: the last migration applied
}

// Databases lists the databases with a catalog, from the catalog bucket.
// It reads each entry's version from its header and decodes nothing
// else, so the client needs neither the catalog nor the DDL parser.
func (c *Client) Databases(ctx context.Context) ([]Database, error) {
	kv, err := c.catalogs(ctx)
	if kv == nil || err != nil {
		return nil, err
	}
	// The bucket's subjects, not kv.Keys: its watch leaves out an entry
	// replaced while it reads (streams.KeyValueKeys). Deleted entries
	// are listed too, and skipped below.
	var keys []string
	err = c.ridingElections(ctx, kvStream, func(ctx context.Context) (err error) {
		keys, err = streams.KeyValueKeys(ctx, c.js, kv.Bucket())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list databases: %w", err)
	}
	out := make([]Database, 0, len(keys))
	for _, k := range keys {
		e, err := c.entry(ctx, kv, k)
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue // deleted since the listing
		}
		v, err := entryVersion(e)
		if err != nil {
			return nil, err
		}
		out = append(out, Database{Name: k, Version: v})
	}
	return out, nil
}

// kvStream is the stream behind the catalog bucket.
const kvStream = "KV_" + events.CatalogBucket

// catalogs is the catalog bucket; nil on a server without it yet.
func (c *Client) catalogs(ctx context.Context) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := c.ridingElections(ctx, kvStream, func(ctx context.Context) (err error) {
		kv, err = c.js.KeyValue(ctx, events.CatalogBucket)
		return err
	})
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog bucket %s: %w", events.CatalogBucket, err)
	}
	return kv, nil
}

// entry is db's entry in the catalog bucket kv; nil without one.
func (c *Client) entry(ctx context.Context, kv jetstream.KeyValue, db string) (jetstream.KeyValueEntry, error) {
	var e jetstream.KeyValueEntry
	err := c.ridingElections(ctx, kvStream, func(ctx context.Context) (err error) {
		e, err = kv.Get(ctx, db)
		return err
	})
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog %s: %w", db, err)
	}
	return e, nil
}

// entryVersion is a catalog entry's version: from its header, or, for an
// entry written before headers, from the compressed JSON's version field.
func entryVersion(e jetstream.KeyValueEntry) (int64, error) {
	if v, ok := events.CatalogEntryVersion(e.Value()); ok {
		return v, nil
	}
	h, err := events.DecodeCatalogHistory(e.Value())
	if err != nil {
		return 0, fmt.Errorf("read catalog %s (revision %d): %w", e.Key(), e.Revision(), err)
	}
	return h.Version, nil
}

func wireError(e *events.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// request sends one request; ctx should carry the deadline.
func (c *Client) request(ctx context.Context, endpoint string, req any, reply any) error {
	// The per-database subject, which permissions can grant database by
	// database; a name that is no subject token goes on the catch-all
	// subject, whose reply says what is wrong with it.
	subject := events.EndpointSubject(endpoint)
	if t, ok := req.(interface{ Target() *string }); ok && events.ValidateDatabase(*t.Target()) == nil {
		subject = events.DatabaseSubject(endpoint, *t.Target())
	}
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	msg, err := c.send(ctx, subject, data)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return events.Errorf(events.CodeNoDaemon, "no schemaq daemon answers on %s: none is running, or none can reach its index store (a daemon leaves the queue group while its /readyz fails); is `schemaq up` or `schemaq daemon` running?", subject)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return events.Errorf(events.CodeTimeout, "%s: no reply before the deadline", subject)
	case err != nil:
		return fmt.Errorf("%s: %w", subject, err)
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("%s: malformed reply: %w", subject, err)
	}
	return nil
}

// A request that finds no daemon is asked again for noDaemonGrace, every
// noDaemonPoll: a replica leaves the queue group while its store check
// fails and joins again at the next check that passes (a second apart by
// default), and a request in that gap would fail although the daemon is
// back a moment later. No daemon took it, so asking again is safe even
// for ask.
const (
	noDaemonGrace = 2 * time.Second
	noDaemonPoll  = 250 * time.Millisecond
)

// send sends one request on subject. It never falls back to another
// subject: NATS drops a publish that permissions refuse without a reply,
// so a caller granted only its databases' subjects would wait out its
// whole deadline for a catch-all it may not use.
func (c *Client) send(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	grace := time.Now().Add(noDaemonGrace)
	for {
		m := nats.NewMsg(subject)
		m.Data = data
		injectTrace(ctx, m)
		msg, err := c.nc.RequestMsgWithContext(ctx, m)
		if !errors.Is(err, nats.ErrNoResponders) || !time.Now().Before(grace) {
			return msg, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(noDaemonPoll):
		}
	}
}

// injectTrace writes the caller's trace context (W3C traceparent) into
// m's headers with the global propagator, so that the worker's or the
// daemon's spans join the caller's trace. Nothing is written without a
// span in ctx, or when the application set no propagator (OpenTelemetry's
// default is none).
func injectTrace(ctx context.Context, m *nats.Msg) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(http.Header(m.Header)))
}

// publishMsg publishes m, retrying with backoff while the stream does not
// answer (no responders, a timeout, a stream without a leader): in a
// cluster that is a leader election, and a retry is safe because the
// event's id makes JetStream drop a second copy. A stream that does not
// exist at all is not waited for.
func (c *Client) publishMsg(ctx context.Context, m *nats.Msg) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := c.ridingElections(ctx, events.Stream, func(ctx context.Context) (err error) {
		ack, err = c.js.PublishMsg(ctx, m)
		return err
	})
	return ack, err
}

// ridingElections runs op, retrying with backoff while the answer is one
// of a stream without a leader (retryable), as stream's is for a moment
// after a cluster starts or loses the node that led it; publishes are
// safe to repeat through their ids, reads always. No responders also
// means a stream, or a JetStream, that is not there at all: that returns
// at once, as does every other error.
func (c *Client) ridingElections(ctx context.Context, stream string, op func(context.Context) error) error {
	until := time.Now().Add(publishRetryFor)
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op(actx)
		cancel()
		// "Not enabled for this account" is a 503 too, but an answer: a
		// producer in a team's own account (docs/deploy.md) asks a
		// daemon instead.
		if err == nil || noJetStream(err) || !streams.Unanswered(err) || ctx.Err() != nil || time.Now().Add(wait).After(until) || !c.streamThere(ctx, stream, err) {
			return err
		}
		if c.onRetry != nil {
			c.onRetry(attempt, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// streamThere tells, after err, whether stream is there to wait for.
func (c *Client) streamThere(ctx context.Context, stream string, err error) bool {
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, serr := c.js.Stream(sctx, stream)
	return !errors.Is(serr, jetstream.ErrStreamNotFound) && !errors.Is(serr, jetstream.ErrJetStreamNotEnabled) && !errors.Is(serr, jetstream.ErrJetStreamNotEnabledForAccount)
}
