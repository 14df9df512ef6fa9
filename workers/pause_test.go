package workers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// fullStore is the index store on a full disk: while full is set, every
// write fails as the real ones do, with ENOSPC or SQLite's SQLITE_FULL.
type fullStore struct {
	*sqlite.Store
	full   atomic.Bool
	failed atomic.Int64
}

func (f *fullStore) fail(op string) error {
	if !f.full.Load() {
		return nil
	}
	f.failed.Add(1)
	if op == "replace schema" {
		return fmt.Errorf("%s: database or disk is full (13)", op)
	}
	return fmt.Errorf("%s: write index.db: %w", op, syscall.ENOSPC)
}

func (f *fullStore) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	if err := f.fail("upsert"); err != nil {
		return 0, err
	}
	return f.Store.Upsert(ctx, recs)
}

func (f *fullStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	if err := f.fail("replace schema"); err != nil {
		return index.Replaced{}, err
	}
	return f.Store.ReplaceSchema(ctx, r)
}

func (f *fullStore) SetProjected(ctx context.Context, db string, v int64) error {
	if err := f.fail("set projected"); err != nil {
		return err
	}
	return f.Store.SetProjected(ctx, db, v)
}

// consumer is the state of the workers' two consumers, summed.
func (e *env) consumer() *jetstream.ConsumerInfo {
	e.t.Helper()
	sum := &jetstream.ConsumerInfo{}
	for _, name := range []string{streams.DefaultConsumer.SchemaName(), streams.DefaultConsumer.DocsName()} {
		c, err := e.js.Consumer(context.Background(), events.Stream, name)
		if err != nil {
			e.t.Fatal(err)
		}
		ci, err := c.Info(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		sum.NumAckPending += ci.NumAckPending
		sum.NumRedelivered += ci.NumRedelivered
		sum.NumPending += ci.NumPending
	}
	return sum
}

// TestFullDiskPausesAndLosesNothing: writes that fail for lack of space
// are retried for as long as it takes, without spending deliveries, and
// the events stay pending; once space returns, everything is indexed.
// Before, each failure was naked, the deliveries ran out in seconds, and
// the event was gone when the dead-letter publish failed as well.
func TestFullDiskPausesAndLosesNothing(t *testing.T) {
	e := newEnv(t)
	store := &fullStore{Store: e.store}
	store.full.Store(true)
	cfg := testConfig() // 5 deliveries, 10–50 ms apart: spent in well under a second
	reg := prometheus.NewRegistry()
	w, err := workers.New(e.js, e.cats, store, e.emb, zaptest.NewLogger(t), cfg, workers.WithMetrics(workers.NewMetrics(reg)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	paused := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "schemaq_worker_paused_databases" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no schemaq_worker_paused_databases")
		return 0
	}
	e.publish(migration(t, "shop", 1, "CREATE TABLE customers (id int, name text);"))
	doc, _ := events.New("doc-1", "shop", time.Now(), &events.DocUpsert{DocID: "a.md", Body: "# Refunds\nHow refunds work."})
	e.publish(doc)

	testenv.Eventually(t, 10*time.Second, "writes failing for lack of space", func() bool { return store.failed.Load() >= 10 })
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Fatalf("dead letters while the disk is full: %+v", dl)
	}
	ci := e.consumer()
	if ci.NumAckPending != 2 || ci.NumRedelivered != 0 {
		t.Errorf("consumer: %d ack pending, %d redelivered; want both events held, neither redelivered", ci.NumAckPending, ci.NumRedelivered)
	}
	if got := paused(); got != 1 {
		t.Errorf("paused databases = %v, want 1", got)
	}

	store.full.Store(false)
	testenv.Eventually(t, 30*time.Second, "indexed once space returns", func() bool {
		return e.count("shop") >= 2 && e.consumer().NumAckPending == 0
	})
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl)
	}
	if got := paused(); got != 0 {
		t.Errorf("paused databases = %v after space returned, want 0", got)
	}
}

// TestDeadLetterThatCannotBePublishedStaysPending: a refused event whose
// dead letter cannot be written is held, not naked away, until it can.
func TestDeadLetterThatCannotBePublishedStaysPending(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	ctx := context.Background()
	if err := e.js.DeleteStream(ctx, events.DeadLetterStream); err != nil {
		t.Fatal(err)
	}
	e.publish(migration(t, "shop", 1, "CREATE TABLE (;"))
	time.Sleep(2 * time.Second) // five deliveries' worth, many times over
	if ci := e.consumer(); ci.NumAckPending != 1 || ci.NumRedelivered != 0 {
		t.Fatalf("consumer: %d ack pending, %d redelivered; want the event held", ci.NumAckPending, ci.NumRedelivered)
	}
	if _, err := streams.Ensure(ctx, e.js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	dl := e.waitDeadLetters(1)
	if len(dl) != 1 || dl[0].source != "0001.sql" {
		t.Errorf("dead letters %+v", dl)
	}
	testenv.Eventually(t, 10*time.Second, "the event settled", func() bool { return e.consumer().NumAckPending == 0 })
}
