// Package streams declares schemaq's JetStream topology: the event stream,
// the dead-letter stream, the catalog bucket, the object store for big
// payloads and the worker's durable consumer. Every process ensures it on start, so any of them can come up
// first.
package streams

import (
	"context"
	"fmt"
	"time"

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

// Ensure creates or updates the streams and the catalog bucket.
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
