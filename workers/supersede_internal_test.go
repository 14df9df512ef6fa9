package workers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// A superseded event is deleted only when the stream holds, at its
// sequence, an event of the same database, on that database's subject,
// that holds the object whose mark or history entry named it.
func TestObjectsOfChecksTheEventReadBack(t *testing.T) {
	raw := func(db string, data any, subject string) *jetstream.RawStreamMsg {
		ev, err := events.New("ev", db, time.Now(), data)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if subject == "" {
			subject = ev.Subject()
		}
		return &jetstream.RawStreamMsg{Subject: subject, Data: b}
	}
	mig := &events.Migration{Seq: 4, Source: "0004.sql", SQL: "CREATE TABLE t (id int);"}
	snap := &events.Snapshot{Seq: 4, Source: "dump.sql", SQL: "CREATE TABLE t (id int);"}
	doc := &events.DocUpsert{DocID: "a.md", Body: "# A"}
	exs := &events.ExamplesUpsert{Examples: []events.Example{{ID: "q1", Question: "q?", SQL: "SELECT 1"}, {Question: "How many?", SQL: "SELECT 2"}}}
	tests := []struct {
		name  string
		msg   *jetstream.RawStreamMsg
		e     supersededEvent
		names string // "" when refused
	}{
		{"the migration the history names", raw("shop", mig, ""), supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 4"}, "schema.migration 4"},
		{"a migration at another seq", raw("shop", mig, ""), supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 3"}, ""},
		{"a snapshot where a migration was named", raw("shop", snap, ""), supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 4"}, ""},
		{"the snapshot the base names", raw("shop", snap, ""), supersededEvent{db: "shop", kind: kindSchema, name: "schema.snapshot 4"}, "schema.snapshot 4"},
		{"another database's migration", raw("billing", mig, ""), supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 4"}, ""},
		{"an event on another database's subject", raw("shop", mig, "schemaq.schema.billing"), supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 4"}, ""},
		{"the doc", raw("shop", doc, ""), supersededEvent{db: "shop", kind: chunk.KindDoc, name: "a.md"}, "a.md"},
		{"another doc", raw("shop", doc, ""), supersededEvent{db: "shop", kind: chunk.KindDoc, name: "b.md"}, ""},
		{"a doc where an example was named", raw("shop", doc, ""), supersededEvent{db: "shop", kind: chunk.KindExample, name: "a.md"}, ""},
		{"every example of the event", raw("shop", exs, ""), supersededEvent{db: "shop", kind: chunk.KindExample, name: "q1"}, "q1 " + events.ExampleID("How many?")},
		{"not an event", &jetstream.RawStreamMsg{Subject: "schemaq.docs.shop", Data: []byte(`{"hello":1}`)}, supersededEvent{db: "shop", kind: chunk.KindDoc, name: "a.md"}, ""},
		{"the set-aside migration its letter names", raw("shop", mig, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev", at: 4}, "schema.migration 4"},
		{"a set-aside snapshot", raw("shop", snap, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev", at: 4}, "schema.snapshot 4"},
		{"another event where a letter named one", raw("shop", mig, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev-2", at: 4}, ""},
		{"the letter's event at another seq than it says", raw("shop", mig, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev", at: 2}, ""},
		{"another database's event with the letter's id", raw("billing", mig, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev", at: 4}, ""},
		{"a doc with the letter's id", raw("shop", doc, ""), supersededEvent{db: "shop", kind: kindSchema, id: "ev", at: 4}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			names, err := objectsOf(tc.msg, tc.e, 0)
			if got := strings.Join(names, " "); got != tc.names || (err == nil) != (tc.names != "") {
				t.Errorf("objects %q (%v), want %q", got, err, tc.names)
			}
		})
	}
}

// A catalog kept across a stream made again names its events by the old
// numbering: a snapshot replaces only the schema events before it.
func TestASnapshotReplacesOnlyWhatCameBefore(t *testing.T) {
	v := &batchView{c: newCompactor(nil, nil, 0, zaptest.NewLogger(t), nil)}
	for _, tc := range []struct {
		seq, by uint64
		want    string
	}{{5, 9, ""}, {9, 9, supersededKept}, {500, 9, supersededKept}} {
		e := supersededEvent{db: "shop", kind: kindSchema, name: "schema.migration 3", seq: tc.seq, by: tc.by}
		if got := v.replaced(context.Background(), candidate{e: e, names: []string{e.name}}); got != tc.want {
			t.Errorf("event %d, snapshot at %d: %q, want %q", tc.seq, tc.by, got, tc.want)
		}
	}
}

// TestSetAsideOnlyWhatTheHistoryAppliedElsewhere: a dead-lettered schema
// event goes only when the history names the event it applied that seq
// from, and that is another event.
func TestSetAsideOnlyWhatTheHistoryAppliedElsewhere(t *testing.T) {
	cat := catalog.New("shop").Rebase(catalog.Base{Seq: 3, StreamSeq: 30}).Record(catalog.Applied{Seq: 4, StreamSeq: 41}).Record(catalog.Applied{Seq: 5})
	for _, tc := range []struct {
		seq  int64
		want uint64
	}{
		{4, 41}, // a migration applied from event 41
		{2, 30}, // below the snapshot the history starts at
		{3, 30},
		{5, 0}, // an entry from before histories named stream sequences
		{6, 0}, // past the history
	} {
		if got := appliedAt(cat, tc.seq); got != tc.want {
			t.Errorf("seq %d applied from %d, want %d", tc.seq, got, tc.want)
		}
	}
	letters := []deadletter.Letter{
		{EventSeq: 4, StreamSeq: 40, EventID: "refused-4"}, // refused, then applied from 41: goes
		{EventSeq: 4, StreamSeq: 41, EventID: "gap-4"},     // the event the history applied: stays
		{EventSeq: 2, StreamSeq: 25, EventID: "below-3"},   // the snapshot covers it: goes
		{EventSeq: 5, StreamSeq: 50, EventID: "old-5"},     // the history does not say: stays
		{EventSeq: 4, StreamSeq: 0, EventID: "no-seq"},     // a letter that names no event: stays
		{EventSeq: 4, StreamSeq: 42},                       // nor an id to read back: stays
	}
	var got []string
	for _, e := range setAsideEvents(cat, letters) {
		got = append(got, fmt.Sprintf("%s %d@%d by %d", e.id, e.at, e.seq, e.by))
	}
	if want := "[refused-4 4@40 by 41 below-3 2@25 by 30]"; fmt.Sprint(got) != want {
		t.Errorf("set aside %v, want %s", got, want)
	}
}

// TestResentEventsGoOnceTheCopyApplies: the first publication of a
// re-sent event is handed on only when the history applied the copy.
func TestResentEventsGoOnceTheCopyApplies(t *testing.T) {
	cat := catalog.New("shop").Record(catalog.Applied{Seq: 1, StreamSeq: 3}).Record(catalog.Applied{Seq: 2, StreamSeq: 9})
	mig := func(seq int64) *events.Event {
		ev, err := events.New(fmt.Sprintf("shop-%d", seq), "shop", time.Now(), &events.Migration{Seq: seq, Source: "m.sql", SQL: "SELECT 1;"})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	doc, err := events.New("shop-doc", "shop", time.Now(), &events.DocUpsert{DocID: "a.md", Body: "# A"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		ev     *events.Event
		header string
		here   uint64
		want   string
	}{
		{"the copy the history applied", mig(2), "5", 9, "shop-2 2@5 by 9"},
		{"a copy the history did not apply (a replica applied the first)", mig(2), "5", 11, ""},
		{"no header", mig(2), "", 9, ""},
		{"a header that names the copy itself", mig(2), "9", 9, ""},
		{"a header that is no number", mig(2), "five", 9, ""},
		{"a seq past the history", mig(3), "5", 12, ""},
		{"a doc", doc, "5", 9, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := resentEvent(cat, tc.ev, tc.header, tc.here)
			got := ""
			if ok {
				got = fmt.Sprintf("%s %d@%d by %d", e.id, e.at, e.seq, e.by)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestARefusedEventGoesWhenItsReplacementWent: a refused schema event is
// set aside to go once the event the history applied instead is in the
// stream. When a snapshot superseded that replacement first (the
// compactor deleted it before the set-aside event's turn), the refused
// event, older still, is superseded as much: it goes, where it used to
// stay for good. A replacement the stream never held keeps it.
func TestARefusedEventGoesWhenItsReplacementWent(t *testing.T) {
	ctx := context.Background()
	js, err := jetstream.New(testenv.Connect(t, testenv.NATS(t)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EVENTS", Subjects: []string{"schemaq.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := js.Publish(ctx, "schemaq.schema.shop", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteMsg(ctx, 3); err != nil { // the replacement, superseded
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		by   uint64
		want string
	}{
		{"the replacement went", 3, ""},
		{"the replacement is no event of the database", 4, supersededKept},
		{"past the stream's last", 9, supersededKept},
		{"before the refused event", 1, supersededKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &batchView{c: newCompactor(nil, nil, 1<<20, zaptest.NewLogger(t), nil), s: s, held: map[uint64]*heldObjects{}}
			e := supersededEvent{db: "shop", kind: kindSchema, name: "seq 2", id: "shop-0002", seq: 2, by: tc.by}
			if got := v.replaced(ctx, candidate{e: e, names: []string{e.name}}); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
