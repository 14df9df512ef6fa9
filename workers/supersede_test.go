package workers_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// docEvent is a doc event as the stream holds it.
type docEvent struct {
	seq  uint64
	db   string
	doc  string
	body string // "" for a delete
}

// streamDocs reads every docs event left in the stream, in order.
func (e *env) streamDocs() []docEvent {
	e.t.Helper()
	ctx := context.Background()
	cons, err := e.js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.StreamSubjectDocs}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []docEvent
	for {
		batch, err := cons.Fetch(500, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			e.t.Fatal(err)
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			meta, _ := msg.Metadata()
			ev, err := events.Decode(msg.Data(), 0)
			if err != nil {
				e.t.Fatal(err)
			}
			d := docEvent{seq: meta.Sequence.Stream, db: ev.Database}
			if ev.DocUpsert != nil {
				d.doc, d.body = ev.DocUpsert.DocID, ev.DocUpsert.Body
			} else {
				d.doc = ev.DocDelete.DocID
			}
			out = append(out, d)
		}
		if got == 0 {
			return out
		}
	}
}

// newestPerDoc is what a stream of doc events decides: each doc's last.
func newestPerDoc(evs []docEvent) map[string]docEvent {
	out := map[string]docEvent{}
	for _, d := range evs {
		out[d.db+"/"+d.doc] = d
	}
	return out
}

func (e *env) publishDoc(db, doc, body string) {
	e.t.Helper()
	var data any = &events.DocUpsert{DocID: doc, Body: body}
	if body == "" {
		data = &events.DocDelete{DocID: doc}
	}
	ev, err := events.New(fmt.Sprintf("%s-%s-%d", db, doc, time.Now().UnixNano()), db, time.Now(), data)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publish(ev)
}

// docSections is what an index holds of db's docs: section id → hash.
func docSections(t *testing.T, s index.Store, db string) map[string]string {
	t.Helper()
	metas, err := s.Metas(context.Background(), index.Filter{Database: db, Kinds: []string{chunk.KindDoc}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for id, m := range metas {
		out[id] = m.Hash
	}
	return out
}

// A CI job that publishes every doc on each run adds an event per doc
// per run. Once a newer edit or delete of a doc is applied, the older
// event leaves the stream, and a replica replaying what is left builds
// the same index.
func TestSupersededDocEventsLeaveTheStream(t *testing.T) {
	e := newEnv(t)
	const docs, runs = 300, 3
	e.publishDoc("shop", "a.md", "# A\n\none")
	e.publishDoc("shop", "b.md", "# B\n\nbee")
	e.publishDoc("hr", "a.md", "# HR A\n\nanother team's doc of the same name")
	e.publishDoc("shop", "a.md", "# A\n\ntwo\n\n# A2\n\nmore")
	e.publishDoc("shop", "b.md", "") // deleted
	for run := range runs {
		for i := range docs {
			e.publishDoc("shop", fmt.Sprintf("guide/%03d.md", i), fmt.Sprintf("# Guide %d\n\nrun %d", i, run))
		}
	}
	published := e.streamDocs()
	want := newestPerDoc(published)
	if len(published) != 5+docs*runs || len(want) != 3+docs {
		t.Fatalf("published %d events of %d docs", len(published), len(want))
	}
	e.startWorker(testConfig(), e.store)
	testenv.Eventually(t, 60*time.Second, "every superseded doc event deleted", func() bool {
		return len(e.streamDocs()) == len(want)
	})
	left := e.streamDocs()
	if got := newestPerDoc(left); !maps.Equal(got, want) {
		t.Errorf("the stream keeps %d events, not each doc's newest", len(left))
	}
	if n := len(docSections(t, e.store, "shop")); n != docs+2 {
		t.Errorf("the index holds %d sections of shop's docs, want %d", n, docs+2)
	}

	// A replica replaying what is left builds the same index.
	fresh, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "replica.db"), e.emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	cfg := testConfig()
	cfg.Consumer.Name = "replica-2"
	e.startWorker(cfg, fresh)
	for _, db := range []string{"shop", "hr"} {
		testenv.Eventually(t, 30*time.Second, "the replica indexed "+db+"'s docs", func() bool {
			return maps.Equal(docSections(t, fresh, db), docSections(t, e.store, db))
		})
	}

	// An edit published while the workers run supersedes the last.
	e.publishDoc("shop", "a.md", "# A\n\nthree")
	testenv.Eventually(t, 30*time.Second, "a.md's previous event deleted", func() bool {
		n := 0
		for _, d := range e.streamDocs() {
			if d.db == "shop" && d.doc == "a.md" {
				n++
			}
		}
		return n == 1
	})
}

// With --keep-superseded the stream keeps every doc event.
func TestKeepSupersededKeepsEveryEvent(t *testing.T) {
	e := newEnv(t)
	for run := range 3 {
		e.publishDoc("shop", "a.md", fmt.Sprintf("# A\n\nrun %d", run))
	}
	e.publishDoc("shop", "a.md", "")
	cfg := testConfig()
	cfg.KeepSuperseded = true
	e.startWorker(cfg, e.store)
	testenv.Eventually(t, 20*time.Second, "a.md deleted from the index", func() bool {
		marks, err := e.store.Marks(context.Background(), "shop", chunk.KindDoc, []string{"a.md"})
		return err == nil && marks["a.md"] == 4
	})
	time.Sleep(500 * time.Millisecond) // what a compactor would have had to act
	if n := len(e.streamDocs()); n != 4 {
		t.Errorf("the stream keeps %d of 4 events", n)
	}
}

// An older edit applied after a newer one (redelivered, or through
// another worker) is superseded already: it goes. A mark that names
// an event of another doc or database, as one can once a stream was
// made again and numbers from 1, deletes nothing.
func TestSupersededEventsAreCheckedBeforeTheyGo(t *testing.T) {
	e := newEnv(t)
	e.publishDoc("shop", "a.md", "# A\n\nold")       // 1
	e.publishDoc("shop", "a.md", "# A\n\nnew")       // 2
	e.publishDoc("hr", "a.md", "# HR\n\nhr's")       // 3
	e.publishDoc("shop", "z.md", "# Z\n\nzed")       // 4
	e.publishDoc("shop", "b.md", "# B\n\nbee")       // 5
	e.publishDoc("shop", "z.md", "# Z\n\nzed again") // 6, deleted below, as a replica ahead would
	msgs := map[uint64]jetstream.Msg{}
	ctx := context.Background()
	cons, err := e.js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.StreamSubjectDocs}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(5)
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		meta, _ := m.Metadata()
		msgs[meta.Sequence.Stream] = m
	}
	if s, err := e.js.Stream(ctx, events.Stream); err != nil || s.DeleteMsg(ctx, 6) != nil {
		t.Fatalf("delete event 6: %v", err)
	}
	w, err := workers.New(e.js, e.cats, e.store, e.emb, zaptest.NewLogger(t), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		apply uint64 // the event handled, at its stream sequence
		marks map[string]int64
		out   map[string]int // the compactor's outcomes
		left  []uint64       // the doc events the stream still holds
	}{
		{"the newer edit first: nothing to supersede", 2, nil, map[string]int{}, []uint64{1, 2, 3, 4, 5}},
		{"the older edit after it goes", 1, nil, map[string]int{"deleted": 1}, []uint64{2, 3, 4, 5}},
		{"the same, redelivered: gone already", 1, nil, map[string]int{"gone": 1}, []uint64{2, 3, 4, 5}},
		{"a mark naming another database's event", 4, map[string]int64{"z.md": 3}, map[string]int{"kept": 1}, []uint64{2, 3, 4, 5}},
		{"a mark naming another doc's event", 4, map[string]int64{"z.md": 2}, map[string]int{"kept": 1}, []uint64{2, 3, 4, 5}},
		// An index kept across a stream made again holds marks from the
		// old numbering: the new stream's events, which it does not
		// apply, must stay for an index rebuilt from them.
		{"a mark past the end of the stream", 4, map[string]int64{"z.md": 100}, map[string]int{"kept": 1}, []uint64{2, 3, 4, 5}},
		{"a newer mark naming another doc's event", 4, map[string]int64{"z.md": 5}, map[string]int{"kept": 1}, []uint64{2, 3, 4, 5}},
		// A replica behind another: the newer event its mark names was
		// itself superseded and deleted. Left for now, no alarm.
		{"a newer mark naming an event deleted since", 4, map[string]int64{"z.md": 6}, map[string]int{"failed": 1}, []uint64{2, 3, 4, 5}},
	}
	for _, st := range steps {
		if st.marks != nil {
			// The mark a stream made again would leave behind.
			if err := e.store.DeleteDatabase(ctx, "shop"); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindDoc}, Names: st.marks}); err != nil {
				t.Fatal(err)
			}
		}
		if got := w.Handle(ctx, msgs[st.apply]); got != "ack" {
			t.Fatalf("%s: %s", st.name, got)
		}
		if got := w.Compact(ctx); !maps.Equal(got, st.out) {
			t.Errorf("%s: outcomes %v, want %v", st.name, got, st.out)
		}
		var left []uint64
		for _, d := range e.streamDocs() {
			left = append(left, d.seq)
		}
		if fmt.Sprint(left) != fmt.Sprint(st.left) {
			t.Errorf("%s: the stream holds %v, want %v", st.name, left, st.left)
		}
	}
}

// An examples event holds many examples: it leaves the stream only once
// a newer event replaced or deleted every one of them.
func TestSupersededExamplesGoWhenEveryOneIsReplaced(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	publish := func(data any) {
		ev, err := events.New(fmt.Sprintf("ex-%d", time.Now().UnixNano()), "shop", time.Now(), data)
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	ex := func(id, q string) events.Example { return events.Example{ID: id, Question: q, SQL: "SELECT 1"} }
	publish(&events.ExamplesUpsert{Examples: []events.Example{ex("q1", "How many orders?"), ex("", "How many refunds?")}}) // 1
	publish(&events.ExamplesUpsert{Examples: []events.Example{ex("q1", "How many orders today?")}})                        // 2
	publish(&events.ExamplesUpsert{Examples: []events.Example{ex("", "How many refunds?"), ex("q3", "Who?")}})             // 3
	publish(&events.ExamplesDelete{IDs: []string{"q1"}})                                                                   // 4
	publish(&events.ExamplesUpsert{Examples: []events.Example{ex("q3", "Who?"), ex("", "How many refunds?")}})             // 5
	cons, err := e.js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.StreamSubjectExamples}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(5)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	w, err := workers.New(e.js, e.cats, e.store, e.emb, zaptest.NewLogger(t), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	left := func() []uint64 {
		s, err := e.js.Stream(ctx, events.Stream)
		if err != nil {
			t.Fatal(err)
		}
		var out []uint64
		for seq := uint64(1); seq <= 5; seq++ {
			if _, err := s.GetMsg(ctx, seq); err == nil {
				out = append(out, seq)
			}
		}
		return out
	}
	steps := []struct {
		name string
		out  map[string]int
		left []uint64
	}{
		{"the first event", map[string]int{}, []uint64{1, 2, 3, 4, 5}},
		{"q1 replaced, the refunds question not yet", map[string]int{"live": 1}, []uint64{1, 2, 3, 4, 5}},
		{"the refunds question replaced too", map[string]int{"deleted": 1}, []uint64{2, 3, 4, 5}},
		{"q1 deleted", map[string]int{"deleted": 1}, []uint64{3, 4, 5}},
		{"both of an event's examples again: it is read back once", map[string]int{"deleted": 1}, []uint64{4, 5}},
	}
	for i, st := range steps {
		if got := w.Handle(ctx, msgs[i]); got != "ack" {
			t.Fatalf("%s: %s", st.name, got)
		}
		if got := w.Compact(ctx); !maps.Equal(got, st.out) {
			t.Errorf("%s: outcomes %v, want %v", st.name, got, st.out)
		}
		if got := left(); fmt.Sprint(got) != fmt.Sprint(st.left) {
			t.Errorf("%s: the stream holds %v, want %v", st.name, got, st.left)
		}
	}
	n, err := e.store.Count(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindExample}})
	if err != nil || n != 2 {
		t.Errorf("%d examples indexed (%v), want the refunds question and q3", n, err)
	}
}

// schemaEvents reads the schema events of db left in the stream: their
// types and seqs, in order.
func (e *env) schemaEvents(db string) []string {
	return e.eachSchemaEvent(db, func(ev *events.Event) string {
		seq := int64(0)
		if ev.Migration != nil {
			seq = ev.Migration.Seq
		} else {
			seq = ev.Snapshot.Seq
		}
		return fmt.Sprintf("%s %d", ev.Type, seq)
	})
}

// schemaIDs are the ids of db's schema events left in the stream, in
// order.
func (e *env) schemaIDs(db string) []string {
	return e.eachSchemaEvent(db, func(ev *events.Event) string { return ev.ID })
}

// eachSchemaEvent says what each schema event of db left in the stream
// is, in order.
func (e *env) eachSchemaEvent(db string, what func(*events.Event) string) []string {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, events.Stream)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	if err := streams.ReadEvents(ctx, s, events.SchemaSubject(db), db, 0, func(ev *events.Event, _ uint64) error {
		out = append(out, what(ev))
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// A team that publishes a schema dump on every deploy adds a snapshot
// per deploy. Once one is applied, the events of the catalog it
// replaced leave the stream; another database's events stay; a damaged
// catalog entry is still rebuilt from what is left.
func TestSnapshotsSupersedeTheSchemaEventsBefore(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	snap := func(seq int64, sql string) *events.Event {
		ev, err := events.New(fmt.Sprintf("shop-snap-%d", seq), "shop", time.Now(), &events.Snapshot{Seq: seq, Source: "dump.sql", SQL: sql})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int PRIMARY KEY);"))
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int"))
	e.waitDeadLetters(1)
	fixed := migration(t, "shop", 2, "CREATE TABLE b (id int);")
	fixed.ID = "shop-0002-fixed"
	e.publish(fixed)
	e.publish(migration(t, "other", 1, "CREATE TABLE z (id int);"))
	e.waitVersion("shop", 2)
	e.publish(snap(3, "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int); CREATE TABLE c (id int);"))
	e.publish(migration(t, "shop", 4, "CREATE TABLE d (id int);"))
	e.waitVersion("shop", 4)
	want := []string{"schema.snapshot 3", "schema.migration 4"} // the refused one went once the fix applied
	testenv.Eventually(t, 20*time.Second, "the events before the first snapshot gone", func() bool {
		return fmt.Sprint(e.schemaEvents("shop")) == fmt.Sprint(want)
	})
	e.publish(snap(5, "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE e (id int);"))
	e.publish(migration(t, "shop", 6, "CREATE TABLE f (id int);"))
	e.waitVersion("shop", 6)
	want = []string{"schema.snapshot 5", "schema.migration 6"}
	testenv.Eventually(t, 20*time.Second, "the first snapshot and the migration after it gone", func() bool {
		return fmt.Sprint(e.schemaEvents("shop")) == fmt.Sprint(want)
	})
	if got := e.schemaEvents("other"); fmt.Sprint(got) != "[schema.migration 1]" {
		t.Errorf("another database's events: %v", got)
	}

	before, _, err := e.cats.Get(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	e.corrupt("shop")
	e.publish(migration(t, "shop", 7, "CREATE TABLE g (id int);"))
	e.waitVersion("shop", 7)
	got, _, err := e.cats.Get(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "e", "f", "g"} {
		if got.Table(catalog.QualName{Schema: "public", Name: name}) == nil {
			t.Errorf("the catalog rebuilt from what is left lacks table %s", name)
		}
	}
	if got.Table(catalog.QualName{Schema: "public", Name: "b"}) != nil || got.Base().Seq != 5 || len(got.History()) != len(before.History())+1 {
		t.Errorf("rebuilt: base %v, %d applied, want the snapshot 5 and %d", got.Base(), len(got.History()), len(before.History())+1)
	}
}

// TestRefusedMigrationsLeaveOnceFixed: a CI job that publishes a broken
// migration on every run adds an event each time, each refused. Once the
// fix is applied, the sweep drops their dead letters and the events
// leave the stream with them, while the fix, the other database's
// refused migration (not fixed) and the events the history names stay.
func TestRefusedMigrationsLeaveOnceFixed(t *testing.T) {
	e := newEnv(t)
	e.startWorker(testConfig(), e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int PRIMARY KEY);"))
	for run := range 3 {
		broken := migration(t, "shop", 2, "CREATE TABLE b (id int")
		broken.ID = fmt.Sprintf("shop-0002-run%d", run)
		e.publish(broken)
	}
	e.publish(migration(t, "other", 1, "CREATE TABLE z (id int"))
	e.waitDeadLetters(4)
	if got := e.schemaEvents("shop"); len(got) != 4 {
		t.Fatalf("before the fix, shop's events: %v, want the migration and the 3 refused", got)
	}
	fixed := migration(t, "shop", 2, "CREATE TABLE b (id int);")
	fixed.ID = "shop-0002-fixed"
	e.publish(fixed)
	e.waitVersion("shop", 2)
	testenv.Eventually(t, 20*time.Second, "the refused events gone", func() bool {
		return fmt.Sprint(e.schemaEvents("shop")) == "[schema.migration 1 schema.migration 2]"
	})
	ids := e.schemaIDs("shop")
	if len(ids) != 2 || ids[1] != fixed.ID {
		t.Errorf("shop's events left: %v, want the first migration and the fix", ids)
	}
	if got := e.schemaEvents("other"); fmt.Sprint(got) != "[schema.migration 1]" {
		t.Errorf("another database's refused migration, not fixed: %v", got)
	}
}

// TestFullestDatabaseShareIsExported: the gauge an alert reads says how
// near the fullest database is to the stream's bound, before its
// publishes are refused.
func TestFullestDatabaseShareIsExported(t *testing.T) {
	e := newEnv(t)
	scfg := streams.DefaultConfig
	scfg.MaxEventsPerDatabase = 10
	if _, err := streams.Ensure(context.Background(), e.js, scfg); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		e.publishDoc("shop", fmt.Sprintf("page%d.md", i), "# Page\n\nOrders.")
	}
	e.publishDoc("other", "page.md", "# Page\n\nOrders.")
	reg := prometheus.NewRegistry()
	cfg := testConfig()
	cfg.KeepSuperseded = true
	e.startWorker(cfg, e.store, workers.WithMetrics(workers.NewMetrics(reg)))
	testenv.Eventually(t, 10*time.Second, "the fullest database's share read", func() bool {
		return metric(t, reg, "schemaq_stream_fullest_database_share") == 0.9
	})
}

// TestResentGapEventsLeaveTheStream: a migration published before its
// predecessor waits, is dead-lettered as a gap, and is re-sent by the
// sweep once the predecessor applies; the copy applies, and the first
// publication leaves the stream.
func TestResentGapEventsLeaveTheStream(t *testing.T) {
	e := newEnv(t)
	cfg := testConfig()
	e.startWorker(cfg, e.store)
	e.publish(migration(t, "shop", 1, "CREATE TABLE a (id int);"))
	e.publish(migration(t, "shop", 3, "CREATE TABLE c (id int);"))
	e.waitDeadLetters(1)
	e.publish(migration(t, "shop", 2, "CREATE TABLE b (id int);"))
	e.waitVersion("shop", 3)
	testenv.Eventually(t, 20*time.Second, "the first publication of migration 3 gone", func() bool {
		return fmt.Sprint(e.schemaEvents("shop")) == "[schema.migration 1 schema.migration 2 schema.migration 3]"
	})
}
