package workers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
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
