package streams_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestEnsureLeavesUnchangedAssetsAlone: every process ensures the
// topology when it starts; an asset already as wanted gets no create or
// update request (an update rewrites the stream's metadata, racing the
// consumers being created on it), and one whose setting changed gets
// exactly its update.
func TestEnsureLeavesUnchangedAssetsAlone(t *testing.T) {
	ctx := context.Background()
	nc := testenv.Connect(t, testenv.NATS(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := streams.DefaultConfig
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var writes []string
	sub, err := nc.Subscribe("$JS.API.STREAM.>", func(m *nats.Msg) {
		if strings.HasPrefix(m.Subject, "$JS.API.STREAM.CREATE.") || strings.HasPrefix(m.Subject, "$JS.API.STREAM.UPDATE.") {
			mu.Lock()
			writes = append(writes, m.Subject)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	seen := func() []string {
		nc.Flush()
		time.Sleep(100 * time.Millisecond) // the subscription's deliveries
		mu.Lock()
		defer mu.Unlock()
		out := writes
		writes = nil
		return out
	}

	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if w := seen(); len(w) != 0 {
		t.Errorf("ensuring an unchanged topology wrote %v", w)
	}
	cfg.MaxAge = 30 * 24 * time.Hour
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	if w := seen(); len(w) != 1 || w[0] != "$JS.API.STREAM.UPDATE."+events.Stream {
		t.Errorf("a new MaxAge wrote %v, want the event stream's update", w)
	}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil || s.CachedInfo().Config.MaxAge != cfg.MaxAge {
		t.Errorf("the event stream keeps events %v, want %v (%v)", s.CachedInfo().Config.MaxAge, cfg.MaxAge, err)
	}
}
