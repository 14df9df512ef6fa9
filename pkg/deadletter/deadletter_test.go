package deadletter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// withStreams connects to a NATS server of its own with schemaq's
// streams made.
func withStreams(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := testenv.Connect(t, testenv.NATS(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(context.Background(), js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func migration(t *testing.T, db string, seq int64) []byte {
	t.Helper()
	ev, err := events.New(db+"-"+string(rune('a'+seq)), db, time.Now(), &events.Migration{Seq: seq, Source: "m.sql", SQL: "CREATE TABLE t (id int)"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ev.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The box's whole life: letters published as a worker does, read back,
// swept by catalog version, re-sent to their own subject only, deleted
// and purged.
func TestBox(t *testing.T) {
	ctx := context.Background()
	_, js := withStreams(t)
	publish := func(db string, seq int64, kind string, streamSeq uint64, data []byte) {
		t.Helper()
		err := deadletter.Publish(ctx, js, deadletter.Letter{Database: db, Subject: events.SchemaSubject(db), Source: "m.sql", Kind: kind,
			Reason: "line one\nline two", Deliveries: "3", EventSeq: seq, EventID: "id", StreamSeq: streamSeq, Data: data})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish("shop", 2, events.DLQKindRefused, 10, migration(t, "shop", 2))
	publish("shop", 2, events.DLQKindRefused, 10, migration(t, "shop", 2)) // the same message again: one letter
	publish("shop", 5, events.DLQKindGap, 11, migration(t, "shop", 5))
	publish("shop", 6, events.DLQKindGap, 12, migration(t, "shop", 6))
	publish("bad name!", 1, events.DLQKindInvalid, 13, []byte("{"))
	forged := migration(t, "other", 7) // an event of another database, under shop
	publish("shop", 7, events.DLQKindGap, 14, forged)

	box, err := deadletter.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	all, err := box.List(ctx, "")
	if err != nil || len(all) != 5 {
		t.Fatalf("List = %d letters, %v; want 5", len(all), err)
	}
	first := all[0]
	if first.Database != "shop" || first.Kind != events.DLQKindRefused || first.EventSeq != 2 || first.StreamSeq != 10 ||
		first.Reason != "line one line two" || first.Deliveries != "3" || first.Subject != events.SchemaSubject("shop") {
		t.Errorf("letter read back as %+v", first)
	}
	if all[3].Database != "_invalid" {
		t.Errorf("a bad database name is filed as %q", all[3].Database)
	}
	if shop, _ := box.List(ctx, "shop"); len(shop) != 4 {
		t.Errorf("shop has %d letters, want 4", len(shop))
	}

	// At version 4 the refused seq 2 is obsolete; the gap at 5 can apply
	// now, so the gaps are re-sent, but not the forged one.
	sw, err := box.Sweep(ctx, "shop", 4)
	if err != nil || sw.Dropped != 1 || sw.Resent != 2 || len(sw.Refused) != 1 {
		t.Fatalf("Sweep = %+v, %v; want 1 dropped, 2 re-sent, 1 refused", sw, err)
	}
	if len(sw.Obsolete) != 1 || sw.Obsolete[0].StreamSeq != 10 || sw.Obsolete[0].EventSeq != 2 {
		t.Errorf("obsolete letters %+v, want the refused seq 2's, naming stream event 10", sw.Obsolete)
	}
	left, _ := box.List(ctx, "shop")
	if len(left) != 1 || left[0].EventSeq != 7 {
		t.Fatalf("after the sweep: %+v", left)
	}
	if _, err := box.Retry(ctx, left[0].Seq); err == nil || !strings.Contains(err.Error(), "nothing was published") {
		t.Errorf("retry of a forged letter: %v", err)
	}
	s, _ := js.Stream(ctx, events.Stream)
	info, _ := s.Info(ctx)
	if info.State.Msgs != 2 {
		t.Errorf("the event stream holds %d re-sent events, want 2", info.State.Msgs)
	}
	// Each re-send names where its event first sat, so that it leaves
	// the stream once the copy applies.
	for seq, first := range map[uint64]string{1: "11", 2: "12"} {
		m, err := s.GetMsg(ctx, seq)
		if err != nil || m.Header.Get(events.HeaderResentFrom) != first {
			t.Errorf("re-send %d: resent from %q (%v), want %s", seq, m.Header.Get(events.HeaderResentFrom), err, first)
		}
	}

	if _, err := box.Delete(ctx, left[0].Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := box.Get(ctx, left[0].Seq); !errors.Is(err, deadletter.ErrNotFound) {
		t.Errorf("a deleted letter: %v", err)
	}
	publish("shop", 9, events.DLQKindRefused, 20, migration(t, "shop", 9))
	if l := box.Last(ctx, "shop", time.Now().Add(-time.Minute)); l == nil || l.EventSeq != 9 {
		t.Errorf("Last = %+v", l)
	}
	if l := box.Last(ctx, "shop", time.Now().Add(time.Minute)); l != nil {
		t.Errorf("Last after a time to come = %+v", l)
	}
	seq := box.Last(ctx, "shop", time.Time{}).Seq
	target, err := box.Retry(ctx, seq)
	if err != nil || target != events.SchemaSubject("shop") {
		t.Fatalf("Retry = %q, %v", target, err)
	}
	info, _ = s.Info(ctx)
	if m, err := s.GetMsg(ctx, info.State.LastSeq); err != nil || m.Header.Get(events.HeaderResentFrom) != "20" {
		t.Errorf("the retried event: %v, want it resent from 20", err)
	}
	if n, err := box.Purge(ctx, ""); err != nil || n != 1 {
		t.Errorf("Purge = %d, %v; want the one _invalid letter", n, err)
	}
	// A letter's JSON is what dlq list --json prints.
	b, _ := json.Marshal(first)
	if !strings.HasPrefix(string(b), `{"seq":`) || strings.Contains(string(b), "Data") {
		t.Errorf("JSON %s", b)
	}
}

// TestLettersOfLargeEvents: a box of 60 letters of docs events near a
// MiB (60 MB in all) beside three schema letters whose SQL is in the
// object store. Listing them reads their headers only (what the
// connection receives stays far below what their events weigh), a sweep
// and a purge still find and delete the objects of the letters they
// remove, and a re-sent gap letter carries its whole event.
func TestLettersOfLargeEvents(t *testing.T) {
	ctx := context.Background()
	nc, js := withStreams(t)
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("A poison doc a producer sent again and again. ", 21_000) // ~970 KB
	for i := range 60 {
		ev, err := events.New(fmt.Sprintf("big-%d", i), "shop", time.Now(), &events.DocUpsert{DocID: fmt.Sprintf("d%d.md", i), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		data, err := ev.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := deadletter.Publish(ctx, js, deadletter.Letter{Database: "shop", Subject: events.DocsSubject("shop"), Kind: events.DLQKindInvalid,
			Reason: "too big", StreamSeq: uint64(100 + i), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	// Schema letters whose SQL is an object: seq 2 refused (obsolete at
	// version 4), seq 5 a gap (re-sent at version 4), seq 9 refused.
	for _, tc := range []struct {
		seq  int64
		kind string
	}{{2, events.DLQKindRefused}, {5, events.DLQKindGap}, {9, events.DLQKindRefused}} {
		sql := fmt.Sprintf("CREATE TABLE t%d (id int);", tc.seq)
		name := events.EventObject("shop", fmt.Sprintf("m%d", tc.seq))
		info, err := obj.PutBytes(ctx, name, events.GzipSQL(sql))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.New(fmt.Sprintf("m%d", tc.seq), "shop", time.Now(), &events.Migration{Seq: tc.seq, Source: "m.sql",
			SQLObject: &events.ObjectRef{Name: name, Size: info.Size, Gzip: true, Checksum: events.Checksum(sql)}})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := ev.Encode()
		if err := deadletter.Publish(ctx, js, deadletter.Letter{Database: "shop", Subject: events.SchemaSubject("shop"), Kind: tc.kind,
			Reason: "r", EventSeq: tc.seq, StreamSeq: uint64(200 + tc.seq), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	objects := func() int {
		t.Helper()
		list, err := obj.List(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
			t.Fatal(err)
		}
		return len(list)
	}
	box, err := deadletter.Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}

	before := nc.Stats().InBytes
	all, err := box.List(ctx, "")
	if err != nil || len(all) != 63 {
		t.Fatalf("List = %d letters, %v", len(all), err)
	}
	if read := nc.Stats().InBytes - before; read > 1<<20 {
		t.Errorf("listing 63 letters received %d KB: it read their events", read>>10)
	}
	for _, l := range all {
		if l.Data != nil {
			t.Fatalf("letter %d listed with its event", l.Seq)
		}
	}
	if full, err := box.Get(ctx, all[0].Seq); err != nil || len(full.Data) < len(body) {
		t.Fatalf("Get has the event: %d bytes, %v", len(full.Data), err)
	}
	var some []deadletter.Letter
	if err := box.Each(ctx, "shop", func(l deadletter.Letter) bool { some = append(some, l); return len(some) < 10 }); err != nil || len(some) != 10 {
		t.Fatalf("Each stopped after %d, %v", len(some), err)
	}

	sw, err := box.Sweep(ctx, "shop", 4)
	if err != nil || sw.Dropped != 1 || sw.Resent != 1 {
		t.Fatalf("Sweep = %+v, %v", sw, err)
	}
	if n := objects(); n != 2 {
		t.Errorf("%d objects after the sweep dropped seq 2, want 2", n)
	}
	s, _ := js.Stream(ctx, events.Stream)
	resent, err := s.GetLastMsgForSubject(ctx, events.SchemaSubject("shop"))
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := events.Decode(resent.Data, 0); err != nil || ev.Migration == nil || ev.Migration.Seq != 5 || ev.SQLObject() == nil {
		t.Fatalf("the re-sent gap letter's event: %v %v", ev, err)
	}

	// The purge deletes seq 9's object, not seq 5's, which the re-sent
	// event still names.
	if n, err := box.Purge(ctx, "shop"); err != nil || n != 61 {
		t.Fatalf("Purge = %d, %v; want 61", n, err)
	}
	if n := objects(); n != 1 {
		t.Errorf("%d objects after the purge, want 1", n)
	}
}
