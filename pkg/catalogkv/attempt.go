package catalogkv

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schemaq/schemaq/pkg/streams"
)

// get reads db's entry, each attempt bounded (streams.ReadAttempt) and
// retried after one that went unanswered or found the bucket without a
// leader, until ctx ends: one read lost with a dead server held every
// database behind it for the event's whole deadline.
func (s *Store) get(ctx context.Context, db string) (jetstream.KeyValueEntry, error) {
	return streams.Retried(ctx, streams.ReadAttempt, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return s.kv.Get(ctx, db) })
}
