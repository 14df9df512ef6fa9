package streams_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// A request lost with its server is, to its sender, one that nobody
// answers. Retried sends it again once each attempt's bound is up, until
// one is answered; it gives up at once on any other error; Bounded tries
// once.
func TestRequestsAreBoundedOneByOne(t *testing.T) {
	ns := testenv.NATS(t)
	nc := testenv.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "requests"})
	if err != nil {
		t.Fatal(err)
	}
	// The responder drops the first `lost` requests of each case, as a
	// server that died with them in flight would.
	var seen, lost atomic.Int64
	sub, err := nc.Subscribe("answer", func(m *nats.Msg) {
		if seen.Add(1) > lost.Load() {
			_ = m.Respond([]byte("ok"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	request := func(ctx context.Context) (string, error) {
		m, err := nc.RequestWithContext(ctx, "answer", nil)
		if err != nil {
			return "", err
		}
		return string(m.Data), nil
	}
	missing := func(ctx context.Context) (string, error) {
		seen.Add(1)
		_, err := kv.Get(ctx, "missing")
		return "", err
	}
	const per = 200 * time.Millisecond
	tests := []struct {
		name     string
		retried  bool
		lost     int64
		op       func(context.Context) (string, error)
		want     string
		wantErr  error
		attempts int64
	}{
		{name: "answered", retried: true, op: request, want: "ok", attempts: 1},
		{name: "two lost, then answered", retried: true, lost: 2, op: request, want: "ok", attempts: 3},
		{name: "another error is not retried", retried: true, op: missing, wantErr: jetstream.ErrKeyNotFound, attempts: 1},
		{name: "bounded tries once", lost: 1, op: request, wantErr: context.DeadlineExceeded, attempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen.Store(0)
			lost.Store(tt.lost)
			// The caller's deadline is far off: only the bound per attempt
			// keeps a lost request from holding the caller until then.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			var got string
			var err error
			if tt.retried {
				got, err = streams.Retried(ctx, per, tt.op)
			} else {
				got, err = streams.Bounded(ctx, per, tt.op)
			}
			if got != tt.want || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
			if n := seen.Load(); n != tt.attempts {
				t.Errorf("%d attempts, want %d", n, tt.attempts)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v: an attempt was not bounded", took)
			}
		})
	}
	// The caller's own deadline still ends the retries.
	lost.Store(1 << 40)
	ctx, cancel := context.WithTimeout(context.Background(), 3*per)
	defer cancel()
	if _, err := streams.Retried(ctx, per, request); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("retries past the caller's deadline: %v", err)
	}
}

// An object's attempt grows with its size from a request's bound; a size
// from a hostile reference cannot overflow it.
func TestObjectAttemptGrowsWithSize(t *testing.T) {
	tests := []struct {
		size uint64
		want time.Duration
	}{
		{0, streams.WriteAttempt},
		{4 << 20, streams.WriteAttempt + time.Second},
		{64 << 20, streams.WriteAttempt + 16*time.Second},
		{1<<64 - 1, streams.WriteAttempt + (1<<40)/(4<<20)*time.Second},
	}
	for _, tt := range tests {
		if got := streams.ObjectAttempt(tt.size); got != tt.want {
			t.Errorf("ObjectAttempt(%d) = %v, want %v", tt.size, got, tt.want)
		}
	}
}
