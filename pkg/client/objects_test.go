package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/streams"
)

// TestExamplesFoldTheStream: ten thousand examples over twenty events,
// a thousand deleted, ten of those published again, one edited, and
// another database's and a forged event beside them: the listing is
// exactly the fold, each example with the event that stored it last.
func TestExamplesFoldTheStream(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	publish := func(db, id string, payload any) uint64 {
		t.Helper()
		return publishEvent(t, cli, db, id, payload)
	}
	const batches, per = 20, 500
	for b := range batches {
		exs := make([]events.Example, per)
		for i := range exs {
			n := b*per + i
			exs[i] = events.Example{ID: fmt.Sprintf("x%05d", n), Question: fmt.Sprintf("question %d", n), SQL: fmt.Sprintf("SELECT %d FROM t", n)}
		}
		publish("shop", fmt.Sprintf("batch-%d", b), &events.ExamplesUpsert{Examples: exs})
	}
	// An example without an id is listed under its question's hash.
	publish("shop", "no-id", &events.ExamplesUpsert{Examples: []events.Example{{Question: "How  many orders?", SQL: "SELECT count(*) FROM orders"}}})
	publish("other", "other-1", &events.ExamplesUpsert{Examples: []events.Example{{ID: "x00001", Question: "elsewhere", SQL: "SELECT 1"}}})
	// A forged event: another database's, on shop's subject.
	forged, _ := events.New("forged", "other", time.Now(), &events.ExamplesUpsert{Examples: []events.Example{{ID: "forged", Question: "q", SQL: "SELECT 1"}}})
	raw, _ := forged.Encode()
	if _, err := js.Publish(ctx, events.ExamplesSubject("shop"), raw); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for n := 2000; n < 3000; n++ {
		deleted = append(deleted, fmt.Sprintf("x%05d", n))
	}
	if _, err := cli.DeleteExamples(ctx, "shop", deleted); err != nil {
		t.Fatal(err)
	}
	// A delete naming ids that are not stored names every one of them and
	// publishes nothing, not even for the ids that are.
	before := lastSeq(t, js)
	_, err := cli.DeleteExamples(ctx, "shop", []string{"x00010", deleted[0], "nope"})
	if !errors.Is(err, client.ErrNoExample) || !strings.Contains(err.Error(), `shop has no example "x02000", "nope"`) || strings.Contains(err.Error(), "x00010") {
		t.Fatalf("a delete of what is not stored: %v", err)
	}
	if after := lastSeq(t, js); after != before {
		t.Fatalf("a refused delete published: last sequence %d, was %d", after, before)
	}
	// Published again and deleted again: the second delete of the same
	// ids is not dropped as a duplicate of the first.
	republish := func(name string) uint64 {
		back := make([]events.Example, 10)
		for i := range back {
			back[i] = events.Example{ID: deleted[i], Question: "back " + deleted[i], SQL: "SELECT 2 FROM t"}
		}
		return publish("shop", name, &events.ExamplesUpsert{Examples: back})
	}
	republish("back-1")
	pubs, err := cli.DeleteExamples(ctx, "shop", deleted[:10])
	if err != nil || len(pubs) != 1 || pubs[0].Duplicate {
		t.Fatalf("a second delete: %+v %v", pubs, err)
	}
	backSeq := republish("back-2")
	editSeq := publish("shop", "edit", &events.ExamplesUpsert{Examples: []events.Example{{ID: "x00007", Question: "question 7, edited", SQL: "SELECT 7 FROM t", Origin: events.OriginFeedback}}})

	got, err := cli.Examples(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if want := batches*per - len(deleted) + 10 + 1; len(got) != want {
		t.Fatalf("%d examples, want %d", len(got), want)
	}
	byID := map[string]int{}
	for i, ex := range got {
		if _, dup := byID[ex.ID]; dup {
			t.Fatalf("%s listed twice", ex.ID)
		}
		byID[ex.ID] = i
		if i > 0 && got[i-1].Seq > ex.Seq {
			t.Fatalf("not in stream order at %d", i)
		}
	}
	for _, id := range []string{"x02000", "x02009"} {
		if ex := got[byID[id]]; ex.Seq != backSeq || ex.Question != "back "+id {
			t.Errorf("%s published again: %+v", id, ex)
		}
	}
	if _, ok := byID["x02010"]; ok {
		t.Error("a deleted example is listed")
	}
	if ex := got[byID["x00007"]]; ex.Seq != editSeq || ex.Question != "question 7, edited" || ex.Origin != events.OriginFeedback || ex.Event != "edit" {
		t.Errorf("the edited example: %+v", ex)
	}
	if _, ok := byID[events.ExampleID("how many orders?")]; !ok {
		t.Error("the example published without an id is not listed under its question's hash")
	}
	if _, ok := byID["forged"]; ok {
		t.Error("another database's event on shop's subject is listed")
	}
	if got[byID["x00001"]].Question != "question 1" {
		t.Error("another database's example replaced shop's")
	}
	if none, err := cli.Examples(ctx, "empty"); err != nil || len(none) != 0 {
		t.Errorf("a database without examples: %v %v", none, err)
	}
}

// TestDocsFoldAndDelete: three hundred docs, a delete of fifty (one id
// given twice), a delete naming docs that are not stored, and a doc
// published again after its delete and deleted again: the listing is the
// fold, and a refused delete publishes nothing.
func TestDocsFoldAndDelete(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	publish := func(id, doc string) uint64 {
		t.Helper()
		return publishEvent(t, cli, "shop", id, &events.DocUpsert{DocID: doc, Title: "title of " + doc, Body: "body of " + doc})
	}
	const n = 300
	for i := range n {
		publish(fmt.Sprintf("doc-%d", i), fmt.Sprintf("d%03d.md", i))
	}
	var deleted []string
	for i := 100; i < 150; i++ {
		deleted = append(deleted, fmt.Sprintf("d%03d.md", i))
	}
	pubs, err := cli.DeleteDocs(ctx, "shop", append(slices.Clone(deleted), deleted[0]))
	if err != nil || len(pubs) != len(deleted) {
		t.Fatalf("delete of %d docs, one named twice: %d events, %v", len(deleted), len(pubs), err)
	}

	before := lastSeq(t, js)
	_, err = cli.DeleteDocs(ctx, "shop", []string{"d001.md", deleted[3], "nope.md"})
	if !errors.Is(err, client.ErrNoDoc) || !strings.Contains(err.Error(), `shop has no doc "d103.md", "nope.md"`) || strings.Contains(err.Error(), "d001") {
		t.Fatalf("a delete of what is not stored: %v", err)
	}
	if after := lastSeq(t, js); after != before {
		t.Fatalf("a refused delete published: last sequence %d, was %d", after, before)
	}
	if _, err := cli.DeleteDocs(ctx, "other", []string{"d001.md"}); !errors.Is(err, client.ErrNoDoc) {
		t.Fatalf("another database's delete of shop's doc: %v", err)
	}

	// Published again and deleted again: the second delete is not
	// dropped as a duplicate of the first.
	publish("back-1", deleted[0])
	if pubs, err := cli.DeleteDocs(ctx, "shop", deleted[:1]); err != nil || len(pubs) != 1 || pubs[0].Duplicate {
		t.Fatalf("a second delete: %+v %v", pubs, err)
	}
	backSeq := publish("back-2", deleted[1])

	got, err := cli.Docs(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if want := n - len(deleted) + 1; len(got) != want {
		t.Fatalf("%d docs, want %d", len(got), want)
	}
	for i, d := range got {
		if i > 0 && got[i-1].Seq >= d.Seq {
			t.Fatalf("not in stream order at %d", i)
		}
		switch {
		case d.DocID == deleted[0] || d.DocID == deleted[2]:
			t.Errorf("deleted doc %s is listed", d.DocID)
		case d.DocID == deleted[1] && (d.Seq != backSeq || d.Event != "back-2"):
			t.Errorf("the doc published again: %+v", d)
		case d.Bytes != len("body of "+d.DocID) || d.Body != "":
			t.Errorf("%s: %d bytes, body %q in a listing", d.DocID, d.Bytes, d.Body)
		}
	}
	// Bodies: all of them for a check, or one by its listing's sequence.
	full, err := cli.DocsWithBodies(ctx, "shop")
	if err != nil || len(full) != len(got) || full[5].Body != "body of "+full[5].DocID {
		t.Fatalf("with bodies: %d docs, %v", len(full), err)
	}
	if body, err := cli.DocBody(ctx, "shop", got[7]); err != nil || body != "body of "+got[7].DocID {
		t.Errorf("DocBody: %q %v", body, err)
	}
	// The body as the listing saw it, even when the doc was stored again
	// since: the page shows one version of it, not a mix.
	publish("again", got[8].DocID)
	if body, err := cli.DocBody(ctx, "shop", got[8]); err != nil || body != "body of "+got[8].DocID {
		t.Errorf("DocBody of a doc stored again since: %q %v", body, err)
	}
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, got[11].Seq); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		db string
		d  client.StoredDoc
	}{
		"gone from the stream": {"shop", got[11]},
		"another database":     {"other", got[9]},
		"another doc's event":  {"shop", client.StoredDoc{DocID: got[9].DocID, Seq: got[10].Seq}},
		"no such sequence":     {"shop", client.StoredDoc{DocID: got[9].DocID, Seq: 1 << 40}},
	} {
		if body, err := cli.DocBody(ctx, tc.db, tc.d); !errors.Is(err, client.ErrNoDoc) {
			t.Errorf("DocBody, %s: %q %v", name, body, err)
		}
	}
	// Several bodies: the gone one passed over, until the caller stops.
	read := func(stopAfter int) []string {
		t.Helper()
		var ids []string
		err := cli.DocBodies(ctx, "shop", got[9:14], func(d client.StoredDoc, body string) bool {
			if body != "body of "+d.DocID {
				t.Errorf("%s: body %q", d.DocID, body)
			}
			ids = append(ids, d.DocID)
			return len(ids) < stopAfter
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	want := []string{got[9].DocID, got[10].DocID, got[12].DocID, got[13].DocID}
	if ids := read(10); !slices.Equal(ids, want) {
		t.Errorf("DocBodies: %v, want %v", ids, want)
	}
	if ids := read(3); !slices.Equal(ids, want[:3]) {
		t.Errorf("DocBodies stopped after 3: %v", ids)
	}
}

// TestListingsAreKeptUntilTheSubjectChanges: a listing folds the
// subject from the start (an ordered consumer, seen on the JetStream
// API) only when it changed otherwise than by a few events added since
// the last listing: a message removed, a purge, more events than extend
// reads one by one (message gets, seen on the API too). An event on
// another database's subject changes nothing.
func TestListingsAreKeptUntilTheSubjectChanges(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	api := func(subject string) func() int {
		sub, err := js.Conn().SubscribeSync(subject)
		if err != nil {
			t.Fatal(err)
		}
		return func() int {
			t.Helper()
			if err := js.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			n, _, err := sub.Pending()
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				if _, err := sub.NextMsg(time.Second); err != nil {
					t.Fatal(err)
				}
			}
			return n
		}
	}
	// how says how the listing since the last call was made: an ordered
	// consumer's fetch may create more than one consumer; the state of
	// the subject is one message get, extending reads more.
	consumers, gets := api("$JS.API.CONSUMER.CREATE.>"), api("$JS.API.STREAM.MSG.GET.>")
	how := func() string {
		c, g := consumers(), gets()
		switch {
		case c > 0:
			return "folded"
		case g > 1:
			return "extended"
		}
		return "kept"
	}
	publish := func(db, id string, payload any) uint64 {
		t.Helper()
		return publishEvent(t, cli, db, id, payload)
	}
	doc := func(db, id string) uint64 {
		return publish(db, db+"-"+id+"-"+fmt.Sprint(time.Now().UnixNano()), &events.DocUpsert{DocID: id, Body: "# " + id})
	}
	first := doc("shop", "a.md")
	doc("shop", "b.md")
	st, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	many := func() {
		for i := range 300 {
			doc("shop", fmt.Sprintf("m%03d.md", i))
		}
	}
	manyIDs := func(before ...string) []string {
		out := slices.Clone(before)
		for i := range 300 {
			out = append(out, fmt.Sprintf("m%03d.md", i))
		}
		return out
	}
	steps := []struct {
		name, how string
		change    func()
		want      []string
	}{
		{"first listing", "folded", func() {}, []string{"a.md", "b.md"}},
		{"nothing changed", "kept", func() {}, []string{"a.md", "b.md"}},
		{"another database's doc", "kept", func() { doc("other", "c.md") }, []string{"a.md", "b.md"}},
		{"a doc published", "extended", func() { doc("shop", "c.md") }, []string{"a.md", "b.md", "c.md"}},
		{"a doc stored again", "extended", func() { doc("shop", "a.md") }, []string{"b.md", "c.md", "a.md"}},
		{"nothing changed again", "kept", func() {}, []string{"b.md", "c.md", "a.md"}},
		{"a doc published and its message removed", "kept", func() {
			if err := st.DeleteMsg(ctx, doc("shop", "d.md")); err != nil {
				t.Fatal(err)
			}
		}, []string{"b.md", "c.md", "a.md"}}, // the subject is as the kept fold read it
		{"a message removed, none added", "folded", func() {
			if err := st.DeleteMsg(ctx, first+1); err != nil { // b.md's only upsert
				t.Fatal(err)
			}
		}, []string{"c.md", "a.md"}},
		{"a message removed and one added", "folded", func() {
			if err := st.DeleteMsg(ctx, first); err != nil { // a.md's first upsert
				t.Fatal(err)
			}
			doc("shop", "e.md")
		}, []string{"c.md", "a.md", "e.md"}},
		{"more added than extend reads", "folded", many, manyIDs("c.md", "a.md", "e.md")},
		{"a doc deleted", "extended", func() {
			if _, err := cli.DeleteDocs(ctx, "shop", []string{"a.md"}); err != nil {
				t.Fatal(err)
			}
		}, manyIDs("c.md", "e.md")},
		{"the subject purged", "kept", func() { // read as empty: no consumer, no get
			if err := st.Purge(ctx, jetstream.WithPurgeSubject(events.DocsSubject("shop"))); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	how()
	for _, s := range steps {
		s.change()
		how() // the change's own reads
		got, err := cli.Docs(ctx, "shop")
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var ids []string
		for _, d := range got {
			ids = append(ids, d.DocID)
		}
		if h := how(); h != s.how || !slices.Equal(ids, s.want) {
			t.Errorf("%s: %s, %v; want %s, %v", s.name, h, ids, s.how, s.want)
		}
	}
}

// publishEvent publishes payload as event id of db and returns its
// stream sequence.
func publishEvent(t testing.TB, cli *client.Client, db, id string, payload any) uint64 {
	t.Helper()
	ev, err := events.New(id, db, time.Now(), payload)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cli.Publish(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return p.Sequence
}

// lastSeq is the stream's last sequence.
func lastSeq(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}
