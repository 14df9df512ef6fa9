package streams

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unanswered reports whether err is a JetStream request's that no
// server answered in time, or that found its stream without a leader
// (503: no leader, no quorum): in a cluster, a node lost or an election
// under way, which a new attempt may find over.
func Unanswered(err error) bool {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return true
	case errors.As(err, &api):
		// A store's refusal (a database past its bound) is an answer.
		return api.Code == 503 && api.ErrorCode != jsStoreFailed
	}
	return false
}

// A request in flight when its server dies is never answered, and
// neither is one sent to a stream whose leader just died: bounded only by
// its caller's deadline (a worker's is the event's, 20 s; a publish
// --wait's, minutes), it holds everything behind it, where a new attempt,
// through the server the connection moved to or to the new leader, is
// answered at once. So each request is bounded on its own.
const (
	// ReadAttempt bounds one read of a bucket or stream.
	ReadAttempt = 3 * time.Second
	// WriteAttempt bounds one write: a write through a leader waits for
	// its replicas, and with sync_interval: always for their disks.
	WriteAttempt = 5 * time.Second
)

// retryPause spaces attempts, so that a stream without a leader is not
// asked in a tight loop through its election.
const retryPause = 100 * time.Millisecond

// Retried runs op with each attempt bounded by per, again after one that
// went unanswered (Unanswered), until ctx ends. Only for an op that is
// safe to repeat: a read, or a publish that carries a message id.
func Retried[T any](ctx context.Context, per time.Duration, op func(context.Context) (T, error)) (T, error) {
	for {
		v, err := Bounded(ctx, per, op)
		if err == nil || ctx.Err() != nil || !Unanswered(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(retryPause):
		}
	}
}

// Bounded runs op once, bounded by per (and ctx). For a write that is not
// safe to repeat blindly (one that went unanswered may have landed: a
// compare-and-set reads again to find out), or one that is only worth a
// try.
func Bounded[T any](ctx context.Context, per time.Duration, op func(context.Context) (T, error)) (T, error) {
	actx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	return op(actx)
}

// objectRate is the slowest an object's chunks are expected to come or
// go; an attempt slower than that is taken for one lost on its way.
const objectRate = 4 << 20 // bytes per second

// ObjectAttempt bounds one read or write of an object of size bytes: a
// request's bound, and the time its chunks take at objectRate. The size
// comes from a reference (an event's, a catalog entry's): a bigger one
// than the object's only lengthens the bound, which the caller's deadline
// caps.
func ObjectAttempt(size uint64) time.Duration {
	size = min(size, 1<<40)
	return WriteAttempt + time.Duration(size/objectRate)*time.Second + time.Duration(size%objectRate)*time.Second/objectRate
}
