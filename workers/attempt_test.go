package workers_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// hangingStore never returns from an event's schema write, as a process
// that crashed inside it (a SIGSEGV in cgo) never does; release lets the
// goroutines go at the end of the test. An event's write runs under the
// event's deadline; the re-projection a worker runs at start, which has
// none, goes through, so that the crash is always the event's: with the
// catalog written before the first crash, the second worker re-projects
// at start, and had that hung, it would have died outside the event.
type hangingStore struct {
	workers.Store
	release chan struct{}
}

func (h hangingStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	if _, event := ctx.Deadline(); !event {
		return h.Store.(index.Replacer).ReplaceSchema(ctx, r)
	}
	<-h.release
	return index.Replaced{}, context.Canceled
}

// Projected says nothing is projected to an event, so that each delivery
// writes, whatever the start's re-projection did.
func (h hangingStore) Projected(ctx context.Context, db string) (int64, error) {
	if _, event := ctx.Deadline(); event {
		return 0, nil
	}
	return h.Store.Projected(ctx, db)
}

// TestEventThatEndsTheProcessIsDeadLettered: an event whose handling
// ends the process, twice, is dead-lettered by the third worker to get
// it, before that worker tries it. A worker "dies" here by losing its
// connection in the middle of the write, as a killed process does.
func TestEventThatEndsTheProcessIsDeadLettered(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.AckWait = time.Second
	cfg.MessageTimeout = 500 * time.Millisecond
	cfg.GapTimeout = 2 * time.Second
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })

	attempts, err := streams.Attempts(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	crashing := func(delivery int) {
		nc := testenv.Connect(t, e.ns)
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(context.Background(), "schemaq_catalogs")
		if err != nil {
			t.Fatal(err)
		}
		w, err := workers.New(js, catalogkv.New(kv), hangingStore{Store: e.store, release: release}, e.emb, zaptest.NewLogger(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = w.Run(context.Background()) }()
		// A redelivery is marked as under way as its handling starts; a
		// first delivery is not, and is under way once it is taken.
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("delivery %d under way", delivery), func() bool {
			if delivery > 1 {
				m, err := attempts.Get(context.Background(), "1")
				return err == nil && string(m.Value()) == strconv.Itoa(delivery)
			}
			c, err := e.js.Consumer(context.Background(), events.Stream, streams.Durable)
			if err != nil {
				return false
			}
			ci, err := c.Info(context.Background())
			return err == nil && ci.NumAckPending == 1
		})
		time.Sleep(100 * time.Millisecond) // into the write
		nc.Close()                         // the process is gone
	}
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	crashing(1)                      // delivery 1: forgiven
	time.Sleep(cfg.Consumer.AckWait) // until JetStream gives the event to the next
	crashing(2)                      // delivery 2: marked, and never finished

	time.Sleep(cfg.Consumer.AckWait)
	e.startWorker(cfg, e.store)
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "ended the process that handled it: delivery 2 of it never finished") {
		t.Errorf("dead letter %+v", dl[0])
	}
	// The database goes on: the catalog was written before the index
	// write that hung, and the next migration is projected with it.
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 2)
	testenv.Eventually(t, 10*time.Second, "both tables searchable", func() bool { return e.count("shop") >= 2 })
}
