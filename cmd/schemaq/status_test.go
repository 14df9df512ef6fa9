package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// The stream's disk is every database's: status names whose events and
// dead letters fill it, most first, and --json counts them all. It
// counts by subject, without reading the events.
func TestStatusNamesWhoseEventsFillTheStream(t *testing.T) {
	ns := testenv.NATS(t)
	js, err := jetstream.New(testenv.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{}
	for i, db := range []string{"flood", "shop", "hr", "billing", "crm", "audit", "tiny"} {
		n := 40 - 5*i
		for j := range n {
			subject := []string{events.SchemaSubject(db), events.DocsSubject(db), events.ExamplesSubject(db)}[j%3]
			if _, err := js.Publish(ctx, subject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		want[db] = uint64(n)
	}
	for range 3 {
		if _, err := js.Publish(ctx, "schemaq.dlq.shop", []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runAt(t, ns.ClientURL(), "status")
	if code != exitOK {
		t.Fatalf("status (exit %d): %s", code, errOut)
	}
	for _, line := range []string{
		"events in the stream, most first: flood 40, shop 35, hr 30, billing 25, crm 20 (and 2 more databases)",
		"dead letters, most first: shop 3\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("status lacks %q:\n%s", line, out)
		}
	}
	out, _, _ = runAt(t, ns.ClientURL(), "status", "--json")
	var rep struct {
		Events  map[string]uint64 `json:"events_by_database"`
		Letters map[string]uint64 `json:"dead_letters_by_database"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(rep.Events, want) || fmt.Sprint(rep.Letters) != "map[shop:3]" {
		t.Errorf("status --json: events %v, letters %v; want %v", rep.Events, rep.Letters, want)
	}
}
