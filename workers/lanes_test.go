package workers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/status"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/pkg/text"
	"github.com/schemaq/schemaq/workers"
)

// laneConfig opens lanes early and retires them fast.
func laneConfig() workers.Config {
	cfg := testConfig()
	cfg.Consumer.MaxAckPending = 256
	cfg.LaneAt = 32
	cfg.LaneQuiet = 300 * time.Millisecond
	return cfg
}

// startLaneWorker runs a worker with the lanes' clocks shortened.
func (e *env) startLaneWorker(cfg workers.Config, opts ...workers.Option) {
	e.t.Helper()
	opts = append(opts, workers.WithLaneTimes(100*time.Millisecond, 300*time.Millisecond, 50*time.Millisecond, 300*time.Millisecond))
	e.startWorker(cfg, e.store, opts...)
}

// lanes names the lanes that exist.
func (e *env) lanes() []string {
	e.t.Helper()
	s, err := e.js.Stream(context.Background(), events.Stream)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	names := s.ConsumerNames(context.Background())
	for n := range names.Name() {
		if strings.Contains(n, "-lane-") {
			out = append(out, n)
		}
	}
	return out
}

// TestFloodMovesToALane: one team publishes 1,500 migrations, then
// another team one. The second team's migration is applied while most
// of the first team's wait, and every one of those is applied after.
// Without lanes (LaneAt 0) the second migration was delivered only once
// all but MaxAckPending of the flood were applied: a team's history
// held every other team's migrations back for as long as it took.
func TestFloodMovesToALane(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 1,500 migrations")
	}
	const n = 1500
	e := newEnv(t)
	cfg := laneConfig()
	flood, want := history(t, "flood", n)
	for _, ev := range flood {
		e.publish(ev)
	}
	e.publish(migration(t, "quiet", 1, "CREATE TABLE orders (id int PRIMARY KEY);"))
	reg := prometheus.NewRegistry()
	e.startLaneWorker(cfg, workers.WithMetrics(workers.NewMetrics(reg)))
	e.waitVersion("quiet", 1)
	if v := e.version("flood"); v >= n-int64(cfg.Consumer.MaxAckPending) {
		t.Fatalf("the quiet team's migration waited for %d of the flood's %d", v, n)
	}
	if len(e.lanes()) == 0 {
		t.Error("no lane was opened for the flooding database")
	}
	// status counts what the lane holds as the pool's lag.
	rep, err := status.Gather(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	var lane uint64
	for _, c := range rep.Consumers {
		if c.Name == "schemaq-worker-lane-flood" {
			lane = c.Pending + uint64(c.AckPending)
		}
	}
	if got := rep.Consumer.Pending + uint64(rep.Consumer.AckPending); lane == 0 || got < lane {
		t.Errorf("status: the pool has %d events pending, its lane %d", got, lane)
	}
	if got := metric(t, reg, "schemaq_worker_diverted_total"); got < n/2 {
		t.Errorf("schemaq_worker_diverted_total %v: the consumer left fewer than half the flood to the lane", got)
	}
	testenv.Eventually(t, 120*time.Second, "the whole flood applied", func() bool { return e.version("flood") == n })
	got, _, _ := e.cats.Get(context.Background(), "flood")
	sameCatalog(t, got, want)
	testenv.Eventually(t, 20*time.Second, "the lane retired", func() bool { return len(e.lanes()) == 0 })
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl[0])
	}
}

// TestReversedHistoryThroughALane: a history published last migration
// first floods its queue, and most of it goes to a lane, where each
// migration waits for the one before it without settling. The first
// migration, published last, must still reach the queue: a lane that
// held fewer events than its consumer kept it undelivered behind its
// successors until the gap timeout dead-lettered them.
func TestReversedHistoryThroughALane(t *testing.T) {
	e := newEnv(t)
	cfg := laneConfig()
	const n = 150 // past LaneAt (32) and within LaneAt and half MaxAckPending (32+128)
	evs, want := history(t, "rev", n)
	for i := len(evs) - 1; i >= 0; i-- {
		e.publish(evs[i])
	}
	e.startLaneWorker(cfg)
	testenv.Eventually(t, 60*time.Second, "the reversed history applied", func() bool { return e.version("rev") == n })
	got, _, _ := e.cats.Get(context.Background(), "rev")
	sameCatalog(t, got, want)
	// Not even for a while: gap letters re-sent and swept once their
	// predecessor applies leave the letter stream's sequence behind.
	dls, err := e.js.Stream(context.Background(), events.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dls.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.LastSeq != 0 {
		t.Errorf("%d letters were dead-lettered: the first migration waited behind its successors", info.State.LastSeq)
	}
}

// metric is the value of the counter or gauge name.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}

// TestLanesLoseNothing: a team publishes docs and migrations in bursts
// to two workers, with pauses long enough for its lanes to retire and
// sometimes not, so that events arrive while lanes are sealed, while
// their horizon is set and while they are deleted. Every event is
// applied, and the lanes end retired.
func TestLanesLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("long: bursts of events while lanes open and retire")
	}
	e := newEnv(t)
	cfg := laneConfig()
	cfg.LaneAt = 16
	cfg.Consumer.MaxAckPending = 128
	e.startLaneWorker(cfg)
	e.startLaneWorker(cfg)

	var mu sync.Mutex
	opened := map[string]bool{}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			for _, l := range e.lanes() {
				mu.Lock()
				opened[l] = true
				mu.Unlock()
			}
		}
	}()

	migrations, want := history(t, "burst", 600)
	docs, seq := 0, 0
	rng := rand.New(rand.NewPCG(7, 55))
	for round := range 10 {
		for range 60 {
			e.publish(migrations[seq])
			seq++
			for range 2 {
				ev, err := events.New(fmt.Sprintf("doc-%d", docs), "burst", time.Now(), &events.DocUpsert{DocID: fmt.Sprintf("d%05d.md", docs),
					Body: fmt.Sprintf("# Round %d\n\nNote %d on refunds.", round, docs)})
				if err != nil {
					t.Fatal(err)
				}
				e.publish(ev)
				docs++
			}
		}
		time.Sleep(time.Duration(rng.IntN(700)) * time.Millisecond)
	}
	testenv.Eventually(t, 120*time.Second, "every migration applied", func() bool { return e.version("burst") == int64(len(migrations)) })
	got, _, _ := e.cats.Get(context.Background(), "burst")
	sameCatalog(t, got, want)
	testenv.Eventually(t, 60*time.Second, "every doc indexed", func() bool {
		return e.count("burst") == len(want.Tables())+len(want.Views())+docs
	})
	testenv.Eventually(t, 30*time.Second, "the lanes retired", func() bool { return len(e.lanes()) == 0 })
	close(stop)
	<-watched
	if !opened["schemaq-worker-lane-burst"] || !opened["schemaq-worker-docs-lane-burst"] {
		t.Errorf("lanes seen: %v; want the schema and the docs lane", opened)
	}
	if dl := e.deadLetters(); len(dl) != 0 {
		t.Errorf("dead letters: %+v", dl[0])
	}
}

// TestDeletesLeaveLaterEdits: a doc and an example published, deleted
// and published again, with the second publish applied before the
// delete, as two workers or a lane and its consumer may apply them. The
// delete removes only what came before it: the later edits stay. It
// removed the doc and the example whole.
// TestDeletesKeepTheirPlace applies a database's doc and example events
// out of stream order, as workers and lanes may: a delete must remove
// only what came before it, and stay removed when an earlier edit
// arrives after it.
func TestDeletesKeepTheirPlace(t *testing.T) {
	ex := events.Example{ID: "net-revenue", Question: "Net revenue by month?", SQL: "SELECT 1"}
	payloads := []any{
		&events.DocUpsert{DocID: "refunds.md", Body: "# Refunds\n\nFirst version.\n\n## Partial\n\nA second section.\n\n## Late\n\nA third."},
		&events.ExamplesUpsert{Examples: []events.Example{ex}},
		&events.DocDelete{DocID: "refunds.md"},
		&events.ExamplesDelete{IDs: []string{ex.ID}},
		&events.DocUpsert{DocID: "refunds.md", Body: "# Refunds\n\nSecond version."},
		&events.ExamplesUpsert{Examples: []events.Example{ex}},
	}
	tests := []struct {
		name  string
		order []int
		want  int    // doc and example chunks left
		text  string // what the doc says, when one is left
	}{
		{"the deletes last", []int{0, 1, 4, 5, 2, 3}, 1, "Second version"},
		{"the first edits after the deletes", []int{2, 3, 0, 1}, 0, ""},
		{"the first edits last", []int{4, 5, 2, 3, 0, 1}, 1, "Second version"},
		{"a longer older edit after a newer", []int{4, 0}, 1, "Second version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			w, err := workers.New(e.js, e.cats, e.store, e.emb, zaptest.NewLogger(t), testConfig())
			if err != nil {
				t.Fatal(err)
			}
			msgs := publishAndFetch(t, e, "shop", payloads)
			for _, i := range tc.order {
				if got := w.Handle(ctx, msgs[i]); got != "ack" {
					t.Fatalf("event %d: %s", i, got)
				}
			}
			for _, kind := range []string{chunk.KindDoc, chunk.KindExample} {
				want := tc.want
				if kind == chunk.KindExample && !slices.Contains(tc.order, 5) {
					want = 0
				}
				if n, err := e.store.Count(ctx, index.Filter{Database: "shop", Kinds: []string{kind}}); err != nil || n != want {
					t.Errorf("%s chunks: %d (%v), want %d", kind, n, err, want)
				}
			}
			if tc.text == "" {
				return
			}
			hits, err := e.store.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}},
				Terms: text.Terms("refunds version"), Weights: index.DefaultWeights, Limit: 5})
			if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Chunk.Text, tc.text) {
				t.Errorf("the doc left: %+v, %v", hits, err)
			}
		})
	}
}

// publishAndFetch publishes one event per payload for db and returns
// them as delivered, in stream order, for Handle.
func publishAndFetch(t *testing.T, e *env, db string, payloads []any) []jetstream.Msg {
	t.Helper()
	for i, payload := range payloads {
		ev, err := events.New(fmt.Sprintf("ev-%d", i), db, time.Now(), payload)
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	cons, err := e.js.CreateConsumer(context.Background(), events.Stream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(len(payloads), jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != len(payloads) {
		t.Fatalf("fetched %d events, want %d", len(msgs), len(payloads))
	}
	return msgs
}

// TestForgedLaneIsIgnored: a user allowed the JetStream API makes a
// consumer named and marked as the victim database's lane that reads
// another database's subject. Workers that took it for the lane would
// acknowledge the victim's events unapplied once its queue filled, and
// the forged consumer would never deliver them. The victim's whole
// history must still apply.
func TestForgedLaneIsIgnored(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	cfg := laneConfig()
	of := cfg.Consumer.SchemaName()
	if _, err := e.js.CreateConsumer(ctx, events.Stream, jetstream.ConsumerConfig{
		Durable: streams.LaneName(of, "victim"), AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: 1,
		FilterSubjects: []string{events.SchemaSubject("attacker")},
		Metadata:       map[string]string{streams.LaneOfKey: of, streams.LaneDBKey: "victim"},
	}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	evs, want := history(t, "victim", n)
	for _, ev := range evs {
		e.publish(ev)
	}
	e.startLaneWorker(cfg)
	testenv.Eventually(t, 60*time.Second, "the victim's history applied", func() bool { return e.version("victim") == n })
	got, _, _ := e.cats.Get(ctx, "victim")
	sameCatalog(t, got, want)
}
