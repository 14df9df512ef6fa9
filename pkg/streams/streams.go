// Package streams declares schemaq's JetStream topology: the event stream,
// the dead-letter stream, the catalog bucket, the object store for big
// payloads and the worker's durable consumer. Every process ensures it on start, so any of them can come up
// first.
package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
)

// Config tunes the topology.
type Config struct {
	// Replicas is how many copies a JetStream cluster keeps of every
	// stream, bucket and object store (--stream-replicas). 0 keeps what
	// exists and creates what is missing with one: a process started
	// without the setting never scales the others' assets down. Set, it
	// scales existing assets in place.
	Replicas int
	// OnScale, when set, hears of every asset Ensure scaled.
	OnScale func(asset string, from, to int)
	// DuplicateWindow is how long JetStream remembers event ids to drop
	// re-published events.
	DuplicateWindow time.Duration
	// MaxAge bounds how long events are kept (0: forever). Catalogs live
	// in the bucket, so old events are only needed for replay.
	MaxAge time.Duration
	// MaxEventsPerDatabase bounds the events the stream keeps of one
	// database of each kind (schema, docs, examples): past it the server
	// refuses that database's publishes of that kind, and no one else's
	// (--max-events-per-database). 0 keeps the stream's bound, giving a
	// stream without one DefaultMaxEventsPerDatabase; NoEventLimit
	// removes it. A process started without the setting never changes
	// the others'.
	MaxEventsPerDatabase int64
	// OnLimitKept, when set, hears why the default bound was not applied.
	OnLimitKept func(why string)
	// Memory stores streams in memory (tests).
	Memory bool
}

// DefaultConfig suits a single node, and keeps a cluster's replicas as
// they are.
var DefaultConfig = Config{DuplicateWindow: time.Hour}

// Durable is the name of the workers' shared consumer.
const Durable = "schemaq-worker"

func (c Config) storage() jetstream.StorageType {
	if c.Memory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// Ensure creates or updates the streams, the buckets and the object
// store.
func Ensure(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.KeyValue, error) {
	if c.Replicas < 0 {
		return nil, fmt.Errorf("stream replicas must be zero (keep) or more, got %d", c.Replicas)
	}
	t := &topology{js: js, c: c}
	for _, a := range t.assets() {
		if err := t.ensure(ctx, a); err != nil {
			return nil, err
		}
	}
	return t.kv, nil
}

// topology ensures schemaq's assets one by one, each by a method.
type topology struct {
	js jetstream.JetStream
	c  Config
	kv jetstream.KeyValue // the catalog bucket, once ensured
}

// asset is one stream, bucket or object store.
type asset struct {
	name, backing string // as schemaq names it; its JetStream stream
	ensure        func(ctx context.Context, replicas int) error
}

func (t *topology) assets() []asset {
	return []asset{
		{events.Stream, events.Stream, t.eventStream},
		{events.DeadLetterStream, events.DeadLetterStream, t.deadLetters},
		{"bucket " + events.CatalogBucket, "KV_" + events.CatalogBucket, t.catalogs},
		{"object store " + events.ObjectBucket, "OBJ_" + events.ObjectBucket, t.objects},
		{"bucket " + events.SweepBucket, "KV_" + events.SweepBucket, t.sweeps},
		{"bucket " + events.AttemptBucket, "KV_" + events.AttemptBucket, t.attempts},
	}
}

// ensure ensures a at the replicas wanted: Config.Replicas, or when that
// is 0 what the asset has (1 for a new one).
func (t *topology) ensure(ctx context.Context, a asset) error {
	var have int
	err := ensureAsset(ctx, func(ctx context.Context) (err error) {
		have, err = existingReplicas(ctx, t.js, a.backing)
		return err
	})
	if err != nil {
		return fmt.Errorf("ensure %s: %w", a.name, err)
	}
	want := t.c.Replicas
	switch {
	case want == 0 && have > 0:
		want = have
	case want == 0:
		want = 1
	}
	if err := ensureAsset(ctx, func(ctx context.Context) error { return a.ensure(ctx, want) }); err != nil {
		if want > 1 {
			return fmt.Errorf("ensure %s at %d replicas: %w (a JetStream cluster keeps at most one replica per server: --stream-replicas must not exceed the servers that run JetStream)", a.name, want, err)
		}
		return fmt.Errorf("ensure %s: %w", a.name, err)
	}
	if have > 0 && have != want && t.c.OnScale != nil {
		t.c.OnScale(a.name, have, want)
	}
	return nil
}

// eventStream is the stream of every database's events, with its bound
// on the events of one database of a kind.
func (t *topology) eventStream(ctx context.Context, r int) error {
	// One read of the stream as it is serves the bound and the
	// comparison with what is wanted.
	have, err := t.js.Stream(ctx, events.Stream)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	per, record, err := eventLimit(ctx, have, t.c.MaxEventsPerDatabase, t.c.OnLimitKept)
	if err != nil {
		return err
	}
	cfg := jetstream.StreamConfig{
		Name:        events.Stream,
		Description: "schemaq events: schema migrations and snapshots, docs, examples",
		Subjects:    []string{events.StreamSubjectSchema, events.StreamSubjectDocs, events.StreamSubjectExamples},
		Storage:     t.c.storage(),
		Replicas:    r,
		Duplicates:  t.c.DuplicateWindow,
		MaxAge:      t.c.MaxAge,
		MaxMsgSize:  events.DefaultMaxEventBytes,
	}
	limitConfig(&cfg, per, record)
	return ensureStreamOver(ctx, t.js, have, cfg)
}

func (t *topology) deadLetters(ctx context.Context, r int) error {
	return ensureStream(ctx, t.js, jetstream.StreamConfig{
		Name:        events.DeadLetterStream,
		Description: "schemaq events that could not be applied, with the reason in headers",
		Subjects:    []string{events.DeadLetterSubjects},
		Storage:     t.c.storage(),
		Replicas:    r,
		// A letter's id is its event's stream sequence. Every serve
		// replica refuses a bad event, some only when they replay the
		// stream hours later; a day's window keeps one letter per event.
		Duplicates: 24 * time.Hour,
	})
}

func (t *topology) catalogs(ctx context.Context, r int) error {
	var err error
	t.kv, err = ensureKV(ctx, t.js, jetstream.KeyValueConfig{
		Bucket:       events.CatalogBucket,
		Description:  "schemaq catalogs, one key per database",
		History:      5,
		Storage:      t.c.storage(),
		Replicas:     r,
		MaxValueSize: int32(events.DefaultMaxEventBytes),
	})
	return err
}

func (t *topology) objects(ctx context.Context, r int) error {
	return ensureObjects(ctx, t.js, jetstream.ObjectStoreConfig{
		Bucket:      events.ObjectBucket,
		Description: "schemaq payloads larger than a message: big snapshots and migrations, big catalogs",
		Storage:     t.c.storage(),
		Replicas:    r,
	})
}

func (t *topology) sweeps(ctx context.Context, r int) error {
	_, err := ensureKV(ctx, t.js, jetstream.KeyValueConfig{
		Bucket:      events.SweepBucket,
		Description: "schemaq object sweeps: which worker swept last, and when",
		History:     1,
		Storage:     t.c.storage(),
		Replicas:    r,
	})
	return err
}

func (t *topology) attempts(ctx context.Context, r int) error {
	_, err := ensureKV(ctx, t.js, jetstream.KeyValueConfig{
		Bucket:      events.AttemptBucket,
		Description: "schemaq workers: redelivered events being handled, to tell one that ends the process",
		History:     1,
		// A marker outlives a crash by one redelivery; a day is ample
		// and keeps a bucket of abandoned markers from growing.
		TTL:      24 * time.Hour,
		Storage:  t.c.storage(),
		Replicas: r,
	})
	return err
}

// Every process ensures the topology when it starts, and an update of
// an unchanged asset is not free: the server rewrites its metadata, and
// nats-server 2.15 does so while a consumer being created on the same
// stream reads the config without its lock (fileStore.ConsumerStore),
// a race its detector caught when a worker started beside a daemon. So
// an asset whose settings are as wanted is left alone.

// ensureStream creates cfg's stream, or updates one that differs.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	have, _ := js.Stream(ctx, cfg.Name)
	return ensureStreamOver(ctx, js, have, cfg)
}

// ensureStreamOver creates cfg's stream, or updates have (nil: none was
// read) when it differs.
func ensureStreamOver(ctx context.Context, js jetstream.JetStream, have jetstream.Stream, cfg jetstream.StreamConfig) error {
	if have != nil && sameStream(have.CachedInfo().Config, cfg) {
		return nil
	}
	_, err := js.CreateOrUpdateStream(ctx, cfg)
	return err
}

func sameStream(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description && slices.Equal(have.Subjects, want.Subjects) &&
		have.Storage == want.Storage && have.Replicas == want.Replicas && have.Duplicates == want.Duplicates &&
		have.MaxAge == want.MaxAge && sameLimit(int64(have.MaxMsgSize), int64(want.MaxMsgSize)) && sameLimits(have, want)
}

// sameLimit: JetStream keeps "no limit" as -1 where a config says 0.
func sameLimit(a, b int64) bool { return max(a, 0) == max(b, 0) }

// ensureKV creates cfg's bucket, or updates one that differs.
func ensureKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if kv, err := js.KeyValue(ctx, cfg.Bucket); err == nil {
		if st, err := kv.Status(ctx); err == nil {
			if have, ok := st.(*jetstream.KeyValueBucketStatus); ok && sameKV(have.Config(), cfg) {
				return kv, nil
			}
		}
	}
	return js.CreateOrUpdateKeyValue(ctx, cfg)
}

func sameKV(have, want jetstream.KeyValueConfig) bool {
	return have.Description == want.Description && max(have.History, 1) == max(want.History, 1) &&
		sameLimit(int64(have.MaxValueSize), int64(want.MaxValueSize)) && have.TTL == want.TTL &&
		have.Storage == want.Storage && have.Replicas == want.Replicas
}

// ensureObjects creates cfg's object store, or updates one that differs.
func ensureObjects(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig) error {
	if obs, err := js.ObjectStore(ctx, cfg.Bucket); err == nil {
		if st, err := obs.Status(ctx); err == nil && st.Description() == cfg.Description && st.Storage() == cfg.Storage &&
			st.Replicas() == cfg.Replicas && st.TTL() == cfg.TTL {
			return nil
		}
	}
	_, err := js.CreateOrUpdateObjectStore(ctx, cfg)
	return err
}

// ensureTries bounds the attempts at one asset: replicas that start
// together (a StatefulSet's pods, compose's services) race to create it,
// and a replicated stream being placed does not answer the loser until
// it has a leader.
const ensureTries = 8

// ensureAsset runs ensure, each attempt within 2 s, again while it fails
// for want of an answer (a timeout, no leader yet, another process's
// create in flight), with backoff, until ctx ends.
func ensureAsset(ctx context.Context, ensure func(context.Context) error) error {
	wait := 250 * time.Millisecond
	var err error
	for range ensureTries {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = ensure(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !racing(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 4*time.Second)
	}
	return err
}

// racing reports whether err is one a retry may clear: no answer in
// time, a stream without a leader, one another process is creating, or
// a placement that failed because a peer is offline for now (a loaded
// cluster's peer misses a heartbeat; one more replica than servers says
// "no suitable peers" without it, and is not retried).
func racing(err error) bool {
	var api *jetstream.APIError
	return Unanswered(err) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) ||
		errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamNameInUse ||
			api.ErrorCode == jsClusterNoPeers && strings.Contains(api.Description, "peer offline"))
}

// jsClusterNoPeers is JetStream's "no suitable peers for placement".
const jsClusterNoPeers jetstream.ErrorCode = 10005

// existingReplicas is how many replicas stream has, 0 when it does not
// exist yet.
func existingReplicas(ctx context.Context, js jetstream.JetStream, stream string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.Config.Replicas, nil
}

// Attempts binds the bucket of attempt markers that Ensure creates.
func Attempts(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, events.AttemptBucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s (created by schemaq's workers and daemons when they start): %w", events.AttemptBucket, err)
	}
	return kv, nil
}

// Sweeps binds the bucket of the sweeps' turns that Ensure creates.
func Sweeps(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, events.SweepBucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s (created by schemaq's workers and daemons when they start): %w", events.SweepBucket, err)
	}
	return kv, nil
}

// Objects binds the object store Ensure creates.
func Objects(ctx context.Context, js jetstream.JetStream) (jetstream.ObjectStore, error) {
	obj, err := js.ObjectStore(ctx, events.ObjectBucket)
	if err != nil {
		return nil, fmt.Errorf("object store %s (created by schemaq's workers and daemons when they start): %w", events.ObjectBucket, err)
	}
	return obj, nil
}

// ConsumerConfig is the workers' durable pull consumers.
type ConsumerConfig struct {
	// Name is the schema consumer's name: Durable for the shared worker
	// pool, one name per replica when each replica keeps its own index.
	// The docs consumer's is Name+DocsSuffix.
	Name          string
	AckWait       time.Duration
	MaxDeliver    int
	MaxAckPending int
	// InactiveThreshold removes the consumer after this long without a
	// reader (0: never), so replicas that are gone do not pile up.
	InactiveThreshold time.Duration
}

// DefaultConsumer: deliveries are spent only by events that fail for a
// passing reason (a migration waiting for its predecessor is held, not
// redelivered); MaxAckPending bounds the events workers hold at once.
var DefaultConsumer = ConsumerConfig{AckWait: 30 * time.Second, MaxDeliver: 20, MaxAckPending: 1024}

// DocsSuffix names a docs consumer after its schema consumer.
const DocsSuffix = "-docs"

// SchemaName is the schema consumer's name.
func (c ConsumerConfig) SchemaName() string {
	if c.Name == "" {
		return Durable
	}
	return c.Name
}

// DocsName is the docs consumer's name.
func (c ConsumerConfig) DocsName() string { return c.SchemaName() + DocsSuffix }

// Consumers are a worker's two durables. Schema events and docs (with
// examples) have one each, so that neither kind waits behind the other:
// a consumer delivers in stream order and holds at most MaxAckPending
// events, and with one for both, a team publishing 25,000 docs kept
// another team's migration undelivered for most of a minute.
type Consumers struct {
	Schema, Docs jetstream.Consumer
}

// All are both, the schema consumer first.
func (c Consumers) All() []jetstream.Consumer { return []jetstream.Consumer{c.Schema, c.Docs} }

// EnsureConsumers creates or updates the schema and the docs consumer.
//
// Before 2026-12-05 one consumer (the schema consumer's name) took every
// event. Its first update narrows it to schema events, and the docs
// consumer it then creates starts after the events that consumer had
// acknowledged in a row (its ack floor): the docs events beyond that
// may come again, which applies nothing twice (a doc's sections are
// written at its event's stream sequence, and an older one never
// replaces a newer one), and none is missed.
func EnsureConsumers(ctx context.Context, js jetstream.JetStream, c ConsumerConfig) (Consumers, error) {
	start, err := docsStart(ctx, js, c)
	if err != nil {
		return Consumers{}, err
	}
	docs, err := ensureConsumer(ctx, js, c, c.DocsName(), "schemaq workers: docs and examples",
		[]string{events.StreamSubjectDocs, events.StreamSubjectExamples}, start)
	if err != nil {
		return Consumers{}, err
	}
	schema, err := ensureConsumer(ctx, js, c, c.SchemaName(), "schemaq workers: schema migrations and snapshots",
		[]string{events.StreamSubjectSchema}, 0)
	if err != nil {
		return Consumers{}, err
	}
	return Consumers{Schema: schema, Docs: docs}, nil
}

// docsStart is where a new docs consumer starts: after the ack floor of
// a consumer of every event of the same name, when there is one (an
// upgrade); at the stream's start otherwise (0). A docs consumer that
// exists keeps where it started (ensureConsumer).
func docsStart(ctx context.Context, js jetstream.JetStream, c ConsumerConfig) (uint64, error) {
	old, err := js.Consumer(ctx, events.Stream, c.SchemaName())
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ensure consumer %s: %w", c.DocsName(), err)
	}
	info := old.CachedInfo()
	if info.Config.FilterSubject != "" || len(info.Config.FilterSubjects) > 0 {
		return 0, nil // a schema consumer already: its docs consumer was removed, so read them all again
	}
	return info.AckFloor.Stream + 1, nil
}

// ensureConsumer creates or updates one durable. A durable's start
// cannot change, so an existing one keeps its own.
func ensureConsumer(ctx context.Context, js jetstream.JetStream, c ConsumerConfig, name, what string, subjects []string, start uint64) (jetstream.Consumer, error) {
	cfg := jetstream.ConsumerConfig{
		Durable:           name,
		Description:       what,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		MaxAckPending:     c.MaxAckPending,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: c.InactiveThreshold,
		FilterSubjects:    subjects,
	}
	if start > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, start
	}
	// Another worker may create it between the look and the write, from
	// another ack floor: the write then fails, and the next look takes
	// that one's start.
	var err error
	for range 3 {
		if have, err := js.Consumer(ctx, events.Stream, name); err == nil {
			old := have.CachedInfo().Config
			cfg.DeliverPolicy, cfg.OptStartSeq = old.DeliverPolicy, old.OptStartSeq
		}
		var cons jetstream.Consumer
		if cons, err = js.CreateOrUpdateConsumer(ctx, events.Stream, cfg); err == nil {
			return cons, nil
		}
	}
	return nil, fmt.Errorf("ensure consumer %s: %w", name, err)
}

// ReadEvents calls fn with every event of db on subject in s, oldest
// first, with its stream sequence. Messages that do not decode as events
// of at most maxBytes (0: events.DefaultMaxEventBytes), or that name
// another database than db, were dead-lettered when they came and are
// skipped here too. An error from fn stops the read and is returned.
func ReadEvents(ctx context.Context, s jetstream.Stream, subject, db string, maxBytes int, fn func(ev *events.Event, seq uint64) error) error {
	_, err := ReadSubject(ctx, s, subject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return nil
		}
		if ev, err := events.Decode(m.Data(), maxBytes); err == nil && ev.Database == db {
			return fn(ev, meta.Sequence.Stream)
		}
		return nil
	})
	return err
}

// ReadSubject calls fn with every message on subject in s, oldest first,
// and returns how many it read: those the subject holds as the read
// begins, and any that come before the read reaches the last of them.
// It asks where the subject ends before it reads, so a server slow to
// answer is an error, never taken for a subject with nothing on it:
// callers decide what may be deleted from what they did not find.
func ReadSubject(ctx context.Context, s jetstream.Stream, subject string, fn func(jetstream.Msg) error) (int, error) {
	return ReadSubjects(ctx, s, []string{subject}, fn)
}

// ReadSubjects is ReadSubject over several subjects at once, their
// messages in stream order.
func ReadSubjects(ctx context.Context, s jetstream.Stream, subjects []string, fn func(jetstream.Msg) error) (int, error) {
	return subjectRead{s: s, subjects: subjects}.read(ctx, fn)
}

// ReadHeaders is ReadSubject without the messages' bodies, for a listing
// of what a subject holds that must not cost what its messages weigh
// (a dead-letter box of thousands of events of a MiB). subject may hold
// wildcards.
func ReadHeaders(ctx context.Context, s jetstream.Stream, subject string, fn func(jetstream.Msg) error) (int, error) {
	return subjectRead{s: s, subjects: []string{subject}, headersOnly: true}.read(ctx, fn)
}

// readIdleSeconds is how long a read waits for the next message while
// the server says the subject holds more.
const readIdleSeconds = 10

// readBufferBytes bounds what a read holds ahead of its caller: more
// than the largest message a stream of schemaq's takes (an event of a
// MiB and its headers, or a letter carrying one).
const readBufferBytes = 16 << 20

// subjectRead reads the messages of subjects in s, each may hold
// wildcards.
type subjectRead struct {
	s           jetstream.Stream
	subjects    []string
	headersOnly bool
}

func (r subjectRead) errorf(format string, args ...any) error {
	return fmt.Errorf("read %s: "+format, append([]any{strings.Join(r.subjects, ", ")}, args...)...)
}

// lastSeq is the stream sequence of the subjects' last message (0:
// none). The subjects' last message decides where a read ends: the
// server's count of what a consumer has pending drifts while messages
// are deleted beside a read.
func (r subjectRead) lastSeq(ctx context.Context) (uint64, error) {
	var last uint64
	for _, subject := range r.subjects {
		m, err := r.s.GetLastMsgForSubject(ctx, subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			continue
		case err != nil:
			return 0, r.errorf("%w", err)
		}
		last = max(last, m.Sequence)
	}
	return last, nil
}

func (r subjectRead) read(ctx context.Context, fn func(jetstream.Msg) error) (int, error) {
	// What the subjects hold as the read begins is what it reads: a
	// subject published to without pause would otherwise keep it going.
	end, err := r.lastSeq(ctx)
	if err != nil || end == 0 {
		return 0, err
	}
	// The server forgets the consumer soon after the read: at the
	// default five minutes, a console's listings kept hundreds.
	cons, err := r.s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: r.subjects, HeadersOnly: r.headersOnly, InactiveThreshold: 10 * time.Second})
	if err != nil {
		return 0, r.errorf("%w", err)
	}
	// One pull subscription for the whole read: an ordered consumer's
	// Fetch creates a server consumer each time, which cost more than the
	// messages of a subject read 256 at a time. The buffer is bounded in
	// bytes too, since a subject's messages may each weigh a MiB.
	it, err := cons.Messages(jetstream.PullMaxBytes(readBufferBytes))
	if err != nil {
		return 0, r.errorf("%w", err)
	}
	defer it.Stop()
	var last uint64 // the stream sequence of the last message delivered
	// readOut says whether nothing is left after last: the messages
	// ahead may have been deleted meanwhile (a compactor beside), and
	// then no message says that none is pending.
	readOut := func() (bool, error) {
		now, err := r.lastSeq(ctx)
		return now <= last, err
	}
	n, idle := 0, 0
	for {
		msg, err := it.Next(jetstream.NextMaxWait(time.Second))
		if errors.Is(err, nats.ErrTimeout) {
			// Nothing came. A busy server may just be slow (seen under
			// CI's load with the race detector): wait on while the
			// subjects hold more.
			done, err := readOut()
			if err != nil || done || ctx.Err() != nil {
				return n, errors.Join(err, ctx.Err())
			}
			if idle++; idle == readIdleSeconds {
				return n, r.errorf("the stream holds messages there after sequence %d and sent none within %d s", last, readIdleSeconds)
			}
			continue
		}
		if err != nil {
			return n, r.errorf("after %d messages: %w", n, err)
		}
		n, idle = n+1, 0
		meta, err := msg.Metadata()
		if err != nil {
			return n, r.errorf("after %d messages: %w", n, err)
		}
		last = meta.Sequence.Stream
		if err := fn(msg); err != nil {
			return n, err
		}
		if last >= end {
			return n, nil
		}
		if meta.NumPending == 0 {
			// Said none pending; that count drifts under deletes and
			// has said none with a message ahead.
			if done, err := readOut(); err != nil || done {
				return n, err
			}
		}
		if err := ctx.Err(); err != nil {
			return n, err
		}
	}
}

// KeyValueKeys lists the keys of bucket that hold a message, from its
// stream's subjects: the server's answer at one moment. A key deleted or
// purged keeps its marker and is listed too, so callers read each key.
// nats.go's KeyValue.Keys watches the bucket and stops where the server
// says nothing is pending, a count that drifts while puts replace entries
// beside it: it then leaves out a key that was there all along.
func KeyValueKeys(ctx context.Context, js jetstream.JetStream, bucket string) ([]string, error) {
	s, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("list the keys of %s: %w", bucket, err)
	}
	prefix := "$KV." + bucket + "."
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, fmt.Errorf("list the keys of %s: %w", bucket, err)
	}
	keys := make([]string, 0, len(info.State.Subjects))
	for subject := range info.State.Subjects {
		keys = append(keys, strings.TrimPrefix(subject, prefix))
	}
	slices.Sort(keys)
	return keys, nil
}
