package workers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/status"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestDocsDoNotHoldBackMigrations: one team publishes thousands of
// docs, then another team a migration. The migration is applied and
// searchable while most of the docs still wait. With one consumer for
// both, it was delivered only once all but MaxAckPending of the docs
// were done: 25,000 docs held a migration back for most of a minute.
func TestDocsDoNotHoldBackMigrations(t *testing.T) {
	const docs = 3000
	e := newEnv(t)
	cfg := testConfig()
	cfg.Consumer.MaxAckPending = 64
	for i := range docs {
		ev, err := events.New(fmt.Sprintf("flood-%d", i), "flood", time.Now(), &events.DocUpsert{DocID: fmt.Sprintf("d%05d.md", i),
			Body: fmt.Sprintf("# Refunds %d\n\nRefunds are recorded as negative payment lines.", i)})
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	e.publish(migration(t, "quiet", 1, "CREATE TABLE orders (id int PRIMARY KEY);"))
	e.startWorker(cfg, e.store)
	testenv.Eventually(t, 60*time.Second, "the quiet team's migration searchable", func() bool {
		p, _ := e.store.Projected(context.Background(), "quiet")
		return p == 1
	})
	// Before, the migration came once docs-MaxAckPending docs were acked.
	if got := e.count("flood"); got >= docs-cfg.Consumer.MaxAckPending {
		t.Fatalf("the migration waited for %d of the %d docs", got, docs)
	}
	testenv.Eventually(t, 120*time.Second, "every doc indexed", func() bool { return e.count("flood") == docs })
}

// TestOneConsumerBecomesTwo: a stream consumed by the one consumer of
// every event that releases before 2026-12-05 used. The first worker of
// this release narrows it to schema events and starts the docs consumer
// after what it had acknowledged: no doc it left is lost, none it acked
// comes again.
func TestOneConsumerBecomesTwo(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	old, err := e.js.CreateOrUpdateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{
		Durable: streams.Durable, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	doc := func(id string) *events.Event {
		ev, err := events.New("ev-"+id, "shop", time.Now(), &events.DocUpsert{DocID: id, Body: "# " + id + "\n\nabout " + id})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	// The old worker took and acknowledged the first doc (its index has
	// it, this one need not), and had the second in hand when it stopped.
	e.publish(doc("acked.md"))
	e.publish(doc("held.md"))
	batch, err := old.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got int
	for msg := range batch.Messages() {
		if got == 0 {
			if err := msg.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
		got++
	}
	if got != 2 {
		t.Fatalf("fetched %d events, want 2", got)
	}
	e.publish(doc("after.md"))
	e.publish(migration(t, "shop", 1, "CREATE TABLE orders (id int);"))

	e.startWorker(testConfig(), e.store)
	e.waitVersion("shop", 1)
	testenv.Eventually(t, 30*time.Second, "the docs the old worker left indexed", func() bool { return e.count("shop") == 1+2 })
	metas, err := e.store.Metas(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}})
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(maps.Keys(metas))
	has := func(doc string) bool {
		return slices.ContainsFunc(ids, func(id string) bool { return strings.Contains(id, doc) })
	}
	if has("acked.md") || !has("held.md") || !has("after.md") {
		t.Errorf("indexed %v: want held.md and after.md, not acked.md", ids)
	}
	for name, want := range map[string][]string{
		streams.Durable:                      {events.StreamSubjectSchema},
		streams.Durable + streams.DocsSuffix: {events.StreamSubjectDocs, events.StreamSubjectExamples},
	} {
		c, err := e.js.Consumer(ctx, events.Stream, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CachedInfo().Config.FilterSubjects; !slices.Equal(got, want) {
			t.Errorf("consumer %s filters %v, want %v", name, got, want)
		}
	}
}

// TestDocRunsKeepArrivalOrder: docs that arrive together are indexed a
// run at a time, and the result is what one at a time gave: a doc edited
// twice keeps its last edit's sections only, a deleted doc stays deleted.
func TestDocRunsKeepArrivalOrder(t *testing.T) {
	e := newEnv(t)
	seq := 0
	publish := func(data any) {
		seq++
		ev, err := events.New(fmt.Sprintf("ev-%d", seq), "shop", time.Now(), data)
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	publish(&events.DocUpsert{DocID: "a.md", Body: "# A\n\nfirst\n\n# A2\n\nsecond"})
	publish(&events.DocUpsert{DocID: "b.md", Body: "# B\n\nbee"})
	publish(&events.DocUpsert{DocID: "a.md", Body: "# A\n\nshrunk"})
	publish(&events.DocUpsert{DocID: "c.md", Body: "# C\n\nsea"})
	publish(&events.DocDelete{DocID: "b.md"})
	for i := range 150 {
		publish(&events.DocUpsert{DocID: fmt.Sprintf("bulk-%03d.md", i), Body: fmt.Sprintf("# Bulk %d\n\nrow %d", i, i)})
	}
	publish(&events.DocUpsert{DocID: "a.md", Body: "# A\n\nfinal\n\n# A3\n\nthree\n\n# A4\n\nfour"})
	store := &writeCounter{Store: e.store}
	e.startWorker(testConfig(), store)
	// The consumers and their lanes: past LaneAt docs of one database
	// the docs consumer leaves the rest to a lane.
	testenv.Eventually(t, 30*time.Second, "every event applied", func() bool {
		rep, err := status.Gather(context.Background(), e.js)
		if err != nil {
			return false
		}
		for _, c := range rep.Consumers {
			if c.Name == streams.DefaultConsumer.DocsName() {
				return c.Delivered > 0 && rep.Consumer.Pending == 0 && rep.Consumer.AckPending == 0
			}
		}
		return false
	})
	metas, err := e.store.Metas(context.Background(), index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for id := range metas {
		doc := strings.TrimPrefix(id, "shop:doc:")
		per[doc[:strings.LastIndexByte(doc, ':')]]++ // shop:doc:a.md:2 is a.md's second section
	}
	if per["a.md"] != 3 || per["b.md"] != 0 || per["c.md"] != 1 || len(metas) != 3+1+150 {
		t.Errorf("a.md %d sections, b.md %d, c.md %d, %d in all; want a.md's last 3, c.md's 1, b.md none, and 150 bulk",
			per["a.md"], per["b.md"], per["c.md"], len(metas))
	}
	hits, err := e.store.SearchText(context.Background(), index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}}, Terms: []string{"shrunk", "second"}, Limit: 5})
	if err != nil || len(hits) != 0 {
		t.Errorf("an older edit of a.md is still found: %v %v", hits, err)
	}
	// 155 upserts in runs: [a b] [a c] [bulk×64] [bulk×64] [bulk×22 a],
	// give or take where deliveries split them; one by one was 155 each.
	if up, stale := store.upserts.Load(), store.stale.Load(); up > 40 || stale > 40 {
		t.Errorf("%d index writes and %d stale deletions for 155 doc upserts: not written in runs", up, stale)
	}
}

// writeCounter counts a store's chunk writes and stale deletions.
type writeCounter struct {
	*sqlite.Store
	upserts, stale atomic.Int64
}

func (w *writeCounter) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	w.upserts.Add(1)
	return w.Store.Upsert(ctx, recs)
}

func (w *writeCounter) DeleteStale(ctx context.Context, st index.Stale) (int, error) {
	w.stale.Add(1)
	return w.Store.DeleteStale(ctx, st)
}
