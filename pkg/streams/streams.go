// Package streams declares schemaq's JetStream topology: the event stream,
// the dead-letter stream, the catalog bucket, the object store for big
// payloads and the worker's durable consumer. Every process ensures it on start, so any of them can come up
// first.
package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
)

// Config tunes the topology.
type Config struct {
	Replicas int
	// DuplicateWindow is how long JetStream remembers event ids to drop
	// re-published events.
	DuplicateWindow time.Duration
	// MaxAge bounds how long events are kept (0: forever). Catalogs live
	// in the bucket, so old events are only needed for replay.
	MaxAge time.Duration
	// Memory stores streams in memory (tests).
	Memory bool
}

// DefaultConfig suits a single node.
var DefaultConfig = Config{Replicas: 1, DuplicateWindow: time.Hour}

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
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        events.Stream,
		Description: "schemaq events: schema migrations and snapshots, docs, examples",
		Subjects:    []string{events.StreamSubjectSchema, events.StreamSubjectDocs, events.StreamSubjectExamples},
		Storage:     c.storage(),
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
		MaxAge:      c.MaxAge,
		MaxMsgSize:  events.DefaultMaxEventBytes,
	}); err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", events.Stream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        events.DeadLetterStream,
		Description: "schemaq events that could not be applied, with the reason in headers",
		Subjects:    []string{events.DeadLetterSubjects},
		Storage:     c.storage(),
		Replicas:    c.Replicas,
		// A letter's id is its event's stream sequence. Every serve
		// replica refuses a bad event, some only when they replay the
		// stream hours later; a day's window keeps one letter per event.
		Duplicates: 24 * time.Hour,
	}); err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", events.DeadLetterStream, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:       events.CatalogBucket,
		Description:  "schemaq catalogs, one key per database",
		History:      5,
		Storage:      c.storage(),
		Replicas:     c.Replicas,
		MaxValueSize: int32(events.DefaultMaxEventBytes),
	})
	if err != nil {
		return nil, fmt.Errorf("ensure bucket %s: %w", events.CatalogBucket, err)
	}
	if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      events.ObjectBucket,
		Description: "schemaq payloads larger than a message: big snapshots and migrations, big catalogs",
		Storage:     c.storage(),
		Replicas:    c.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("ensure object store %s: %w", events.ObjectBucket, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      events.SweepBucket,
		Description: "schemaq object sweeps: which worker swept last, and when",
		History:     1,
		Storage:     c.storage(),
		Replicas:    c.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("ensure bucket %s: %w", events.SweepBucket, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      events.AttemptBucket,
		Description: "schemaq workers: redelivered events being handled, to tell one that ends the process",
		History:     1,
		// A marker outlives a crash by one redelivery; a day is ample
		// and keeps a bucket of abandoned markers from growing.
		TTL:      24 * time.Hour,
		Storage:  c.storage(),
		Replicas: c.Replicas,
	}); err != nil {
		return nil, fmt.Errorf("ensure bucket %s: %w", events.AttemptBucket, err)
	}
	return kv, nil
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

// ConsumerConfig is the workers' durable pull consumer.
type ConsumerConfig struct {
	// Name is the durable's name: Durable for the shared worker pool, one
	// name per replica when each replica keeps its own index.
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

// EnsureConsumer creates or updates the durable consumer.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, c ConsumerConfig) (jetstream.Consumer, error) {
	name := c.Name
	if name == "" {
		name = Durable
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{
		Durable:           name,
		Description:       "schemaq workers",
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		MaxAckPending:     c.MaxAckPending,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: c.InactiveThreshold,
	})
	if err != nil {
		return nil, fmt.Errorf("ensure consumer %s: %w", name, err)
	}
	return cons, nil
}

// ReadSubject calls fn with every message on subject in s, oldest first,
// and returns how many it read. It knows how many to expect before it
// reads, so a server slow to answer is an error, never taken for a
// subject with nothing on it: callers decide what may be deleted from
// what they did not find.
func ReadSubject(ctx context.Context, s jetstream.Stream, subject string, fn func(jetstream.Msg) error) (int, error) {
	count := func() (uint64, error) {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", subject, err)
		}
		return info.State.Subjects[subject], nil
	}
	want, err := count()
	if err != nil || want == 0 {
		return 0, err
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", subject, err)
	}
	n := 0
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return n, fmt.Errorf("read %s after %d messages: %w", subject, n, err)
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			n++
			if err := fn(msg); err != nil {
				return n, err
			}
			if meta, err := msg.Metadata(); err == nil && meta.NumPending == 0 {
				return n, nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return n, fmt.Errorf("read %s after %d messages: %w", subject, n, err)
		}
		if got == 0 {
			// Nothing came: messages may have been deleted meanwhile;
			// only the server's count can say the subject is read out.
			left, err := count()
			if err != nil {
				return n, err
			}
			if left > 0 && ctx.Err() == nil {
				return n, fmt.Errorf("read %s: the stream holds %d messages there and sent none within a second", subject, left)
			}
			return n, ctx.Err()
		}
	}
}
