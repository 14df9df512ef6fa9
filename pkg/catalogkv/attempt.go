package catalogkv

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Requests to the bucket are bounded one by one. A request in flight
// when its server dies is never answered: bounded only by the caller's
// deadline (a worker's is the event's, 20 s), it stalled every database
// behind it after a node was killed in a cluster, where a new attempt
// through the server the connection moved to is answered at once.
const (
	readAttempt  = 3 * time.Second
	writeAttempt = 5 * time.Second
)

// get reads db's entry, retrying an attempt that went unanswered or found
// the bucket without a leader, until ctx ends.
func (s *Store) get(ctx context.Context, db string) (jetstream.KeyValueEntry, error) {
	return retried(ctx, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return s.kv.Get(ctx, db) })
}

// retried runs read with each attempt bounded by readAttempt, again
// after an unanswered one, until ctx ends.
func retried[T any](ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	for {
		actx, cancel := context.WithTimeout(ctx, readAttempt)
		v, err := read(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !streams.Unanswered(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// bounded runs one write with its attempt bounded by writeAttempt. A
// write is not retried here: one that went unanswered may have landed,
// and the caller's compare-and-set reads the entry again to find out.
func bounded[T any](ctx context.Context, write func(context.Context) (T, error)) (T, error) {
	actx, cancel := context.WithTimeout(ctx, writeAttempt)
	defer cancel()
	return write(actx)
}
