package memsearch

import (
	"errors"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

func testDoc(id string) Doc {
	return Doc{Chunk: chunk.Chunk{ID: id, Database: "db", Kind: chunk.KindTable, Name: id}, Vector: []float32{1, 0, 0},
		Fields: index.Fields{Name: id}}
}

func TestCurrentCatchesUpOnlyWhenBehind(t *testing.T) {
	c := NewCurrent()
	var calls []int64 // the since of each catch-up
	load := func(docs ...Doc) CatchUp {
		return func(base *Snapshot, since int64) (*Snapshot, int64, error) {
			calls = append(calls, since)
			if base == nil {
				base = New(3)
			}
			return base.With(docs, nil), since + 1 + int64(len(docs)), nil
		}
	}
	steps := []struct {
		name      string
		gen       int64
		catchUp   CatchUp
		wantCalls []int64
		wantLen   int
		caughtUp  bool
	}{
		{"first load", 2, load(testDoc("a"), testDoc("b")), []int64{-1}, 2, true},
		{"current: no read", 2, load(testDoc("x")), []int64{-1}, 2, false},
		{"behind: from its generation", 3, load(testDoc("c")), []int64{-1, 2}, 3, true},
		{"a failed read keeps the last good snapshot", 9, func(*Snapshot, int64) (*Snapshot, int64, error) {
			calls = append(calls, -9)
			return nil, 0, errors.New("down")
		}, []int64{-1, 2, -9}, 3, false},
	}
	for _, st := range steps {
		snap, caughtUp, err := c.Get(st.gen, st.catchUp)
		if err != nil || snap.Len() != st.wantLen || caughtUp != st.caughtUp || len(calls) != len(st.wantCalls) || calls[len(calls)-1] != st.wantCalls[len(st.wantCalls)-1] {
			t.Fatalf("%s: %d chunks, caught up %v, %v, calls %v; want %d, %v, calls %v", st.name, snap.Len(), caughtUp, err, calls, st.wantLen, st.caughtUp, st.wantCalls)
		}
	}
	if _, _, err := NewCurrent().Get(1, func(*Snapshot, int64) (*Snapshot, int64, error) { return nil, 0, errors.New("down") }); err == nil {
		t.Error("a failed first load returned no error")
	}
}

func TestCurrentAdvancesOnlyFromTheGenerationBefore(t *testing.T) {
	c := NewCurrent()
	c.Advance(3, 2, []Doc{testDoc("a")}, nil) // not the first write, nothing loaded: ignored
	if snap, gen := c.Snapshot(); snap != nil || gen != -1 {
		t.Fatalf("advanced from nothing to generation 2: %v %d", snap, gen)
	}
	c.Advance(3, 1, []Doc{testDoc("a")}, nil) // the database's first write
	c.Advance(3, 2, []Doc{testDoc("b")}, nil)
	c.Advance(3, 4, []Doc{testDoc("d")}, nil) // 3 was another process's: skip
	snap, gen := c.Snapshot()
	if gen != 2 || snap.Len() != 2 {
		t.Errorf("at generation %d with %d chunks, want 2 and 2", gen, snap.Len())
	}
	// A catch-up that read less than an advance already applied does
	// not take the snapshot back.
	c.Advance(3, 3, []Doc{testDoc("c")}, nil)
	got, _, _ := c.Get(5, func(base *Snapshot, since int64) (*Snapshot, int64, error) { return New(3), 2, nil })
	if _, gen := c.Snapshot(); gen != 3 || got.Len() != 3 {
		t.Errorf("a catch-up to generation 2 replaced generation 3: now %d with %d chunks", gen, got.Len())
	}
}

// A caller that needs a generation another caller is still catching up
// to waits for it rather than take the snapshot as it was, and catches
// up itself when what it waited for fell short.
func TestCurrentWaitsForACatchUpInFlight(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inFlight  int64 // the generation the first catch-up reaches
		want      int64 // the second caller's
		wantCalls int
	}{
		{"the catch-up in flight brings it", 3, 3, 2},
		{"it falls short", 2, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCurrent()
			if _, _, err := c.Get(1, func(*Snapshot, int64) (*Snapshot, int64, error) { return New(3).With([]Doc{testDoc("a")}, nil), 1, nil }); err != nil {
				t.Fatal(err)
			}
			calls := 1
			started, release := make(chan struct{}), make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _, _ = c.Get(tc.inFlight, func(base *Snapshot, _ int64) (*Snapshot, int64, error) {
					calls++
					close(started)
					<-release
					return base.With([]Doc{testDoc("b")}, nil), tc.inFlight, nil
				})
			}()
			<-started
			got := make(chan int, 1)
			go func() {
				snap, _, _ := c.Get(tc.want, func(base *Snapshot, _ int64) (*Snapshot, int64, error) {
					calls++
					return base.With([]Doc{testDoc("c")}, nil), tc.want, nil
				})
				got <- snap.Len()
			}()
			select {
			case n := <-got:
				t.Fatalf("returned a snapshot of %d chunks while the catch-up it needs was in flight", n)
			case <-time.After(50 * time.Millisecond):
			}
			close(release)
			<-done
			if n := <-got; n < 2 {
				t.Errorf("after the catch-up: %d chunks", n)
			}
			if _, gen := c.Snapshot(); gen != tc.want || calls != tc.wantCalls {
				t.Errorf("at generation %d after %d catch-ups, want %d after %d", gen, calls, tc.want, tc.wantCalls)
			}
		})
	}
}
