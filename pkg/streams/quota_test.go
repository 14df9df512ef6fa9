package streams_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestEventsPerDatabaseAreBounded: one database past its bound has its
// next publish of that kind refused with a reason naming it, and every
// other database and kind goes on; the bound survives processes started
// without the setting, and is never lowered below what a database holds
// (the server would delete that database's oldest events).
func TestEventsPerDatabaseAreBounded(t *testing.T) {
	ctx := context.Background()
	js := jsOf(t)
	ensure := func(per int64) error {
		cfg := streams.DefaultConfig
		cfg.MaxEventsPerDatabase = per
		_, err := streams.Ensure(ctx, js, cfg)
		return err
	}
	publish := func(subject string, i int) error {
		_, err := js.Publish(ctx, subject, []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprintf("%s-%d", subject, i)))
		return streams.NameFull(err, subject)
	}
	if err := ensure(5); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := publish(events.DocsSubject("shop"), i); err != nil {
			t.Fatalf("event %d of 5: %v", i, err)
		}
	}
	err := publish(events.DocsSubject("shop"), 5)
	var full *streams.FullError
	if !errors.As(err, &full) || !strings.Contains(err.Error(), `database "shop" holds the most docs events`) {
		t.Fatalf("the sixth docs event of shop: %v, want it refused naming shop and docs", err)
	}
	if streams.Unanswered(errors.Unwrap(err)) {
		t.Error("a refusal for the bound is taken for a stream that did not answer (publishes would retry it)")
	}
	for _, subject := range []string{events.DocsSubject("other"), events.ExamplesSubject("shop"), events.SchemaSubject("shop")} {
		if err := publish(subject, 0); err != nil {
			t.Errorf("%s, beside a full shop docs: %v", subject, err)
		}
	}

	if err := ensure(0); err != nil {
		t.Fatal(err)
	}
	if got := bound(t, js); got != 5 {
		t.Errorf("a process without the setting left the bound at %d, want 5", got)
	}
	err = ensure(3)
	if err == nil || !strings.Contains(err.Error(), "schemaq.docs.shop holds 5 events") {
		t.Errorf("lowering the bound below shop's 5 docs events: %v, want it refused naming them", err)
	}
	if n := held(t, js, events.DocsSubject("shop")); n != 5 {
		t.Errorf("shop holds %d docs events after the refused lowering, want 5", n)
	}
	if err := ensure(10); err != nil {
		t.Fatalf("raising the bound: %v", err)
	}
	if err := publish(events.DocsSubject("shop"), 5); err != nil {
		t.Errorf("the sixth docs event of shop under a bound of 10: %v", err)
	}
	if err := ensure(streams.NoEventLimit); err != nil {
		t.Fatal(err)
	}
	if err := ensure(0); err != nil {
		t.Fatal(err)
	}
	if got := bound(t, js); got != 0 {
		t.Errorf("a bound removed on purpose came back as %d when a process without the setting started", got)
	}
}

// TestDefaultBoundSparesAFullDatabase: a stream made before the bound
// gets the default, unless a database already holds more than it; then
// nothing is deleted and the stream stays without one.
func TestDefaultBoundSparesAFullDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		held  int
		bound int64
	}{
		{"below the default", 3, streams.DefaultMaxEventsPerDatabase},
		{"above the default", streams.DefaultMaxEventsPerDatabase + 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := jsOf(t)
			// The stream as a release before the bound made it.
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.Stream,
				Subjects: []string{events.StreamSubjectSchema, events.StreamSubjectDocs, events.StreamSubjectExamples}})
			if err != nil {
				t.Fatal(err)
			}
			subject := events.DocsSubject("shop")
			for i := range tc.held {
				if i%1000 == 999 {
					// Acknowledged a thousand at a time: a loaded machine
					// (the race detector) stalls a longer queue.
					<-js.PublishAsyncComplete()
				}
				if _, err := js.PublishAsync(subject, []byte("x")); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
			}
			<-js.PublishAsyncComplete()
			var why []string
			cfg := streams.DefaultConfig
			cfg.OnLimitKept = func(w string) { why = append(why, w) }
			if _, err := streams.Ensure(ctx, js, cfg); err != nil {
				t.Fatal(err)
			}
			if got := bound(t, js); got != tc.bound {
				t.Errorf("bound %d, want %d", got, tc.bound)
			}
			if n := held(t, js, subject); n != uint64(tc.held) {
				t.Errorf("shop holds %d docs events, want all %d", n, tc.held)
			}
			if kept := len(why) > 0; kept != (tc.bound == 0) || kept && !strings.Contains(why[0], subject) {
				t.Errorf("told %q", why)
			}
		})
	}
}

func jsOf(t *testing.T) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(testenv.Connect(t, testenv.NATS(t)))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func bound(t *testing.T, js jetstream.JetStream) int64 {
	t.Helper()
	s, err := js.Stream(context.Background(), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	return max(s.CachedInfo().Config.MaxMsgsPerSubject, 0)
}

func held(t *testing.T, js jetstream.JetStream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}
