package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// BenchmarkDocsListing is one listing of 2,000 docs of 20 KB (40 MB of
// bodies) as a console page asks for it: when nothing changed since the
// last listing, and after one more doc was published (the publish
// included), when the kept fold is extended by it.
func BenchmarkDocsListing(b *testing.B) {
	ctx := context.Background()
	js, cli := connect(b)
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("Refunds are recorded as negative payment lines. ", 400)
	publish := func(i int) {
		publishEvent(b, cli, "shop", fmt.Sprintf("doc-%d-%d", i, time.Now().UnixNano()), &events.DocUpsert{DocID: fmt.Sprintf("d%05d.md", i), Body: body})
	}
	const docs = 2000
	for i := range docs {
		publish(i)
	}
	list := func() {
		got, err := cli.Docs(ctx, "shop")
		if err != nil || len(got) < docs {
			b.Fatalf("%d docs, %v", len(got), err)
		}
	}
	b.Run("unchanged", func(b *testing.B) {
		list()
		for b.Loop() {
			list()
		}
	})
	b.Run("after-a-publish", func(b *testing.B) {
		i := docs
		for b.Loop() {
			publish(i)
			i++
			list()
		}
	})
}
