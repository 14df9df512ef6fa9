package deadletter_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/deadletter"
)

// TestDeletedLettersTakeTheirEvents: a letter a person deletes takes its
// event out of the stream, so that a replica replaying it neither
// applies it nor letters it again; unless the catalog's history applied
// that event, the letter's failure was passing, or the event in the
// stream is not the letter's.
func TestDeletedLettersTakeTheirEvents(t *testing.T) {
	ctx := context.Background()
	_, js := withStreams(t)
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	put := func(subject string, data []byte) uint64 {
		t.Helper()
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	first := migration(t, "shop", 1)
	applied := put(events.SchemaSubject("shop"), first)
	cat := catalog.New("shop").Record(catalog.Applied{Seq: 1, StreamSeq: applied})
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalogkv.New(kv).Put(ctx, cat, 0); err != nil {
		t.Fatal(err)
	}
	refused := migration(t, "shop", 2)
	doc := []byte(`{"not": "an event"}`)
	other := migration(t, "shop", 3)
	box, err := deadletter.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind, subject string
		data                []byte
		streamSeq           uint64 // 0: the letter's own event, published here
		dropped             bool
	}{
		{"a refused migration", events.DLQKindRefused, events.SchemaSubject("shop"), refused, 0, true},
		{"a gap the history never applied", events.DLQKindGap, events.SchemaSubject("shop"), migration(t, "shop", 4), 0, true},
		{"an invalid docs event", events.DLQKindInvalid, events.DocsSubject("shop"), doc, 0, true},
		{"a migration the history applied after all", events.DLQKindGap, events.SchemaSubject("shop"), first, applied, false},
		{"a passing failure", events.DLQKindFailed, events.DocsSubject("shop"), []byte(`{"failed": 1}`), 0, false},
		{"another event where the letter's was", events.DLQKindRefused, events.SchemaSubject("shop"), other, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := tc.streamSeq
			if at == 0 {
				stored := tc.data
				if tc.name == "another event where the letter's was" {
					stored = migration(t, "shop", 5) // a stream made again numbers another event here
				}
				at = put(tc.subject, stored)
			}
			if err := deadletter.Publish(ctx, js, deadletter.Letter{Database: "shop", Subject: tc.subject, Kind: tc.kind, Reason: tc.name,
				StreamSeq: at, Data: tc.data}); err != nil {
				t.Fatal(err)
			}
			l := box.Last(ctx, "shop", time.Time{})
			del, err := box.Delete(ctx, l.Seq)
			if err != nil || del.Event != tc.dropped || del.EventKept != nil {
				t.Errorf("Delete = %+v, %v; want the event dropped: %v", del, err, tc.dropped)
			}
			_, gerr := s.GetMsg(ctx, at)
			if inStream := gerr == nil; inStream == tc.dropped {
				t.Errorf("event %d in the stream: %v, want %v (%v)", at, inStream, !tc.dropped, gerr)
			}
		})
	}
	if _, err := s.GetMsg(ctx, applied); err != nil {
		t.Errorf("the applied migration: %v", err)
	}
}
