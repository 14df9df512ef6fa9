package workers_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	"github.com/schemaq/schemaq/pkg/index/sqlite"
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
				m, err := attempts.Get(context.Background(), "ev.1")
				return err == nil && strings.HasSuffix(string(m.Value()), " "+streams.Durable+" "+strconv.Itoa(delivery))
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
	if !strings.Contains(dl[0].reason, "ended the process that handled it: delivery 2 of it (consumer schemaq-worker) never finished") {
		t.Errorf("dead letter %+v", dl[0])
	}
	// The database goes on: the catalog was written before the index
	// write that hung, and the next migration is projected with it.
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 2)
	testenv.Eventually(t, 10*time.Second, "both tables searchable", func() bool { return e.count("shop") >= 2 })
}

// TestInterpretingEventCostsOneCrash: a migration that runs PL/pgSQL is
// marked from its first delivery, in the bucket every replica shares, so
// the process that dies applying it is the only one: the next delivery,
// on the same consumer or on another replica's, is dead-lettered before
// it is tried. (A migration of plain DDL keeps its forgiven first crash: the
// test above.) The process "dies" here by losing its connection while
// the interpreter works: a loop that changes a catalog of 3,000 tables
// inside an exception block on every turn runs for about a second
// before its step budget stops it.
func TestInterpretingEventCostsOneCrash(t *testing.T) {
	for _, next := range []string{streams.Durable, "replica-b"} {
		t.Run("then "+next, func(t *testing.T) { interpretingEventCostsOneCrash(t, next) })
	}
}

// interpretingEventCostsOneCrash: the worker that gets the event after
// the crash reads it on consumer next: the same durable, or a serve
// replica's own, whose first delivery it is.
func interpretingEventCostsOneCrash(t *testing.T, next string) {
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.AckWait = 3 * time.Second
	cfg.MessageTimeout = 2 * time.Second
	cfg.GapTimeout = 10 * time.Second
	attempts, err := streams.Attempts(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	var schema strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&schema, "CREATE TABLE t%d (id int PRIMARY KEY, note text);\n", i)
	}
	nc := testenv.Connect(t, e.ns)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), "schemaq_catalogs")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workers.New(js, catalogkv.New(kv), e.store, e.emb, zaptest.NewLogger(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(context.Background()) }()
	e.publish(migration(t, "shop", 1, schema.String()))
	e.waitVersion("shop", 1)
	e.publish(migration(t, "shop", 2, `DO $$ BEGIN FOR i IN 1..100000 LOOP
  BEGIN EXECUTE 'COMMENT ON TABLE t1 IS ''' || i || ''''; EXCEPTION WHEN others THEN NULL; END;
END LOOP; END $$;`))
	testenv.Eventually(t, 10*time.Second, "delivery 1 marked", func() bool {
		m, err := attempts.Get(context.Background(), "ev.2")
		return err == nil && strings.HasSuffix(string(m.Value()), " "+streams.Durable+" 1")
	})
	nc.Close() // the process is gone, mid-apply

	time.Sleep(cfg.Consumer.AckWait)
	cfgNext := cfg
	cfgNext.Consumer.Name = next
	e.startWorker(cfgNext, e.store)
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "ended the process that handled it: delivery 1 of it (consumer schemaq-worker) never finished") {
		t.Errorf("dead letter %+v", dl[0])
	}
	if v := e.version("shop"); v != 1 {
		t.Errorf("catalog at version %d: the poison migration applied", v)
	}
}

// scriptedStore runs each projection of an event through its own step:
// steps[i] for call i (nil: the store's own write). The re-projection a
// worker runs at start, which has no deadline, is not scripted: it
// fails with startErr when that is set.
type scriptedStore struct {
	*sqlite.Store
	startErr error
	mu       sync.Mutex
	calls    int
	steps    []func() error
}

func (s *scriptedStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	if _, event := ctx.Deadline(); !event {
		if s.startErr != nil {
			return index.Replaced{}, s.startErr
		}
		return s.Store.ReplaceSchema(ctx, r)
	}
	s.mu.Lock()
	i := s.calls
	s.calls++
	s.mu.Unlock()
	if i < len(s.steps) && s.steps[i] != nil {
		if err := s.steps[i](); err != nil {
			return index.Replaced{}, err
		}
	}
	return s.Store.ReplaceSchema(ctx, r)
}

// Replicas share the marks. Each counts deliveries on its own consumer,
// so one replica's mark of its second delivery is there when the other's
// third delivery of the same event arrives: a fresh mark of another
// process is a handling under way, not one that died, and the event waits
// for it instead of being dead-lettered (two replicas retrying through a
// node's loss had healthy events dead-lettered before).
func TestReplicasKeepTheirOwnAttemptMarks(t *testing.T) {
	e := newEnv(t)
	other, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"), e.emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	passing := errors.New("store busy") // a passing failure: retried
	aMarked := make(chan struct{})      // replica a is in its second delivery, marked
	release := make(chan struct{})      // replica a may finish
	// a starts once the event is in the catalog: its re-projection at
	// start fails, so that its index still lags when the event comes.
	a := &scriptedStore{Store: e.store, startErr: passing, steps: []func() error{
		func() error { return passing },
		func() error { close(aMarked); <-release; return nil },
	}}
	// b's re-projection at start, racing the event, must not project it
	// outside the script either.
	b := &scriptedStore{Store: other, startErr: passing, steps: []func() error{
		func() error { return passing },
		func() error { return passing },
	}}
	cfgA, cfgB := testConfig(), testConfig()
	cfgA.Consumer.Name, cfgB.Consumer.Name = "replica-a", "replica-b"
	for _, c := range []*workers.Config{&cfgA, &cfgB} {
		c.Consumer.AckWait, c.MessageTimeout, c.GapTimeout = 20*time.Second, 15*time.Second, time.Minute
	}
	// b's third delivery comes 2 s after its second: a is in its own
	// second delivery by then.
	cfgB.RetryDelay, cfgB.MaxRetryDelay = time.Second, 5*time.Second
	e.startWorker(cfgB, b)
	e.publish(migration(t, "shop", 1, "CREATE TABLE orders (id int);"))
	testenv.Eventually(t, 20*time.Second, "replica b failed twice", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.calls >= 2
	})
	time.Sleep(100 * time.Millisecond) // b's second delivery unmarked
	e.startWorker(cfgA, a)
	select {
	case <-aMarked:
	case <-time.After(20 * time.Second):
		t.Fatal("replica a never reached its second delivery")
	}
	// b's third delivery finds a's mark, fresh: it waits for a.
	time.Sleep(3 * time.Second)
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("dead-lettered while a handled it: %+v", dl)
	}
	close(release)
	testenv.Eventually(t, 30*time.Second, "replica b projected once a was done", func() bool {
		p, err := other.Projected(context.Background(), "shop")
		return err == nil && p == 1
	})
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
	testenv.Eventually(t, 20*time.Second, "replica a projected", func() bool {
		p, err := e.store.Projected(context.Background(), "shop")
		return err == nil && p == 1
	})
}

// Replicas catching up together meet on each event: the one that finds
// another's fresh mark waits for it to go, briefly, rather than leave
// the event for the whole stale-mark time (20 s here) and a delivery.
func TestReplicasMeetingOnAnEventWaitBriefly(t *testing.T) {
	e := newEnv(t)
	attempts, err := streams.Attempts(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	// Another replica is handling the event, which is the stream's first.
	if _, err := attempts.Put(context.Background(), "ev.1", []byte("other-process replica-a 1")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Consumer.Name = "replica-b"
	cfg.Consumer.AckWait, cfg.MessageTimeout, cfg.GapTimeout = 20*time.Second, 15*time.Second, time.Minute
	e.startWorker(cfg, e.store)
	// A DO block may run PL/pgSQL: its first delivery is marked.
	e.publish(migration(t, "shop", 1, "DO $$ BEGIN CREATE TABLE orders (id int); END $$;"))
	time.Sleep(500 * time.Millisecond) // b meets the mark
	if err := attempts.Delete(context.Background(), "ev.1"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "replica b done with the event soon after the other was", func() bool {
		c, err := e.js.Consumer(context.Background(), events.Stream, cfg.Consumer.SchemaName())
		if err != nil {
			return false
		}
		ci, err := c.Info(context.Background())
		return err == nil && ci.NumPending == 0 && ci.NumAckPending == 0 && ci.Delivered.Consumer > 0
	})
	if v := e.version("shop"); v != 1 {
		t.Errorf("catalog at version %d, want 1", v)
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}
