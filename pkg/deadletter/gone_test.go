package deadletter

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// A letter another worker deleted first is gone, not a failure: the
// server says so in an error DeleteMsg does not type.
func TestDeletedTwiceIsGone(t *testing.T) {
	ctx := context.Background()
	js, err := jetstream.New(testenv.Connect(t, testenv.NATS(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	if err := Publish(ctx, js, Letter{Database: "shop", Subject: events.SchemaSubject("shop"), Reason: "r", StreamSeq: 1, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteMsg(ctx, 1)
	if err == nil || !gone(err) {
		t.Fatalf("the second delete: %v, gone %v", err, gone(err))
	}
	if _, err := s.GetMsg(ctx, 1); !gone(err) {
		t.Errorf("GetMsg of a deleted letter: %v", err)
	}
	if gone(context.Canceled) {
		t.Error("any error is gone")
	}
}
