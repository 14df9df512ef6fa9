package streams_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestReadSubject: a read delivers every message of its subject, in
// stream order and no other subject's, whatever the messages weigh; a
// headers-only read carries no bodies; the caller's error or a
// cancelled context stops it.
func TestReadSubject(t *testing.T) {
	ctx := context.Background()
	js, s := newStream(t, jetstream.StreamConfig{Name: "READ", Subjects: []string{"read.>"}, MaxMsgSize: 2 << 20})
	const big = 1<<20 - 1024 // as large as the server's payload limit lets a message be
	next := map[string]int{} // each subject's messages are numbered in order
	publish := func(subject string, n, size int) {
		for i := range n {
			m := nats.NewMsg(subject)
			m.Header.Set("N", fmt.Sprint(next[subject]))
			next[subject]++
			m.Data = bytes.Repeat([]byte{byte('a' + i%26)}, size)
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish("read.small", 3000, 100)
	publish("read.other", 500, 100)
	publish("read.big", 40, big) // 40 MiB: more than a read holds ahead
	publish("read.small", 10, 100)

	errStop := errors.New("stop")
	tests := []struct {
		name    string
		read    func(context.Context, jetstream.Stream, string, func(jetstream.Msg) error) (int, error)
		subject string
		stopAt  int // fn fails at this message (0: never)
		want    int
		size    int // each body's length (0: headers only)
		wantErr error
	}{
		{"small", streams.ReadSubject, "read.small", 0, 3010, 100, nil},
		{"big", streams.ReadSubject, "read.big", 0, 40, big, nil},
		{"empty", streams.ReadSubject, "read.none", 0, 0, 0, nil},
		{"headers", streams.ReadHeaders, "read.big", 0, 40, 0, nil},
		{"wildcard headers", streams.ReadHeaders, "read.*", 0, 3550, 0, nil},
		{"stopped by the caller", streams.ReadSubject, "read.small", 700, 700, 100, errStop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var last uint64
			perSubject := map[string]int{}
			n, err := tt.read(ctx, s, tt.subject, func(m jetstream.Msg) error {
				meta, err := m.Metadata()
				if err != nil {
					return err
				}
				if meta.Sequence.Stream <= last {
					t.Fatalf("sequence %d after %d", meta.Sequence.Stream, last)
				}
				last = meta.Sequence.Stream
				if got := m.Headers().Get("N"); got != fmt.Sprint(perSubject[m.Subject()]) {
					t.Fatalf("%s: message %s, want %d", m.Subject(), got, perSubject[m.Subject()])
				}
				perSubject[m.Subject()]++
				if len(m.Data()) != tt.size {
					t.Fatalf("a body of %d bytes, want %d", len(m.Data()), tt.size)
				}
				if tt.stopAt > 0 && meta.Sequence.Stream == uint64(tt.stopAt) {
					return errStop
				}
				return nil
			})
			if !errors.Is(err, tt.wantErr) || n != tt.want {
				t.Fatalf("read %d, %v; want %d, %v", n, err, tt.want, tt.wantErr)
			}
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		n, err := streams.ReadSubject(cctx, s, "read.small", func(jetstream.Msg) error {
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) || n != 1 {
			t.Fatalf("read %d, %v; want 1 and the cancellation", n, err)
		}
	})
}

// newStream is a stream of its own on a server of its own.
func newStream(tb testing.TB, cfg jetstream.StreamConfig) (jetstream.JetStream, jetstream.Stream) {
	tb.Helper()
	js, err := jetstream.New(testenv.Connect(tb, testenv.NATS(tb)))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := js.CreateStream(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return js, s
}

// TestReadBesideDeletes: a read while another client deletes messages
// of the subject (a compactor) ends once the subject holds nothing after
// the last message read, and delivers every message never deleted. The
// messages ahead of a read may all go, and then no message says that
// none is pending: the read once waited for them and failed after 10 s.
// The race is the server's, so each case runs rounds until it shows.
func TestReadBesideDeletes(t *testing.T) {
	ctx := context.Background()
	type readFn func(context.Context, jetstream.Stream, func(jetstream.Msg) error) (int, error)
	for _, tc := range []struct {
		name    string
		publish []string // in turn, half of a round each for two
		read    readFn
	}{
		{"subject", []string{"gc.a"}, func(ctx context.Context, s jetstream.Stream, fn func(jetstream.Msg) error) (int, error) {
			return streams.ReadSubject(ctx, s, "gc.a", fn)
		}},
		{"wildcard headers", []string{"gc.b"}, func(ctx context.Context, s jetstream.Stream, fn func(jetstream.Msg) error) (int, error) {
			return streams.ReadHeaders(ctx, s, "gc.*", fn)
		}},
		// A worker's replay of docs and examples for a rebuilt index: the
		// second subject's messages come last, so the first's last
		// message alone would end the read early.
		{"two subjects", []string{"gc.c.1", "gc.d.1"}, func(ctx context.Context, s jetstream.Stream, fn func(jetstream.Msg) error) (int, error) {
			return streams.ReadSubjects(ctx, s, []string{"gc.c.*", "gc.d.*"}, fn)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, s := newStream(t, jetstream.StreamConfig{Name: "GC", Subjects: []string{"gc.>"}})
			kept := map[uint64]bool{}
			for round := range 40 {
				var seqs []uint64
				for i := range 50 {
					a, err := js.Publish(ctx, tc.publish[i*len(tc.publish)/50], []byte("x"))
					if err != nil {
						t.Fatal(err)
					}
					seqs = append(seqs, a.Sequence)
				}
				// Two of each round's stay, anywhere among them.
				rand.Shuffle(len(seqs), func(i, j int) { seqs[i], seqs[j] = seqs[j], seqs[i] })
				kept[seqs[48]], kept[seqs[49]] = true, true
				deleted := make(chan error, 1)
				go func() {
					for _, q := range seqs[:48] {
						if err := s.DeleteMsg(ctx, q); err != nil {
							deleted <- err
							return
						}
					}
					deleted <- nil
				}()
				seen := map[uint64]bool{}
				_, err := tc.read(ctx, s, func(m jetstream.Msg) error {
					meta, err := m.Metadata()
					if err == nil {
						seen[meta.Sequence.Stream] = true
					}
					return err
				})
				if derr := <-deleted; derr != nil {
					t.Fatal(derr)
				}
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				for q := range kept {
					if !seen[q] {
						t.Fatalf("round %d: message %d was never deleted and not read", round, q)
					}
				}
			}
		})
	}
}

// TestReadEndsWhilePublished: a read takes what the subject holds as it
// begins, and ends while publishers go on: one that followed new
// messages would never end on a subject published to without pause.
func TestReadEndsWhilePublished(t *testing.T) {
	ctx := context.Background()
	js, s := newStream(t, jetstream.StreamConfig{Name: "BUSY", Subjects: []string{"busy.>"}})
	const before = 500
	for range before {
		if _, err := js.Publish(ctx, "busy.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		deadline := time.After(20 * time.Second)
		for {
			select {
			case <-stop:
				return
			case <-deadline:
				return
			default:
			}
			if _, err := js.Publish(ctx, "busy.a", []byte("x")); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	n, err := streams.ReadSubject(ctx, s, "busy.a", func(jetstream.Msg) error {
		time.Sleep(100 * time.Microsecond) // a reader slower than the publisher
		return nil
	})
	select {
	case <-stopped:
		t.Errorf("the read ended only once publishing stopped (%d messages)", n)
	default:
	}
	close(stop)
	<-stopped
	if err != nil || n < before {
		t.Fatalf("read %d, %v; want at least the %d held as it began", n, err, before)
	}
}
