package streams_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/streams"
)

// BenchmarkReadSubject reads a subject of 10,000 messages of 1 KB, among
// 20,000, whole and by headers only: a fold of a busy database's docs or
// examples, a listing of its dead letters.
func BenchmarkReadSubject(b *testing.B) {
	ctx := context.Background()
	js, s := newStream(b, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}})
	const n = 20000
	body := []byte(strings.Repeat("x", 1024))
	for i := range n {
		if _, err := js.PublishAsync(fmt.Sprintf("bench.%d", i%2), body); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	for _, read := range []struct {
		name string
		fn   func(context.Context, jetstream.Stream, string, func(jetstream.Msg) error) (int, error)
	}{{"whole", streams.ReadSubject}, {"headers", streams.ReadHeaders}} {
		b.Run(read.name, func(b *testing.B) {
			for b.Loop() {
				got, err := read.fn(ctx, s, "bench.1", func(jetstream.Msg) error { return nil })
				if err != nil || got != n/2 {
					b.Fatalf("read %d of %d: %v", got, n/2, err)
				}
			}
		})
	}
}
