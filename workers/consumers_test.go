package workers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
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
