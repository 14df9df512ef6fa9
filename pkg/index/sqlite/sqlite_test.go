package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/indextest"
)

func open(t *testing.T) index.Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "index.db"), indextest.Dimensions)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) { indextest.Run(t, open) }

func TestReopenKeepsDataAndChecksDimensions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := Open(ctx, path, indextest.Dimensions)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutVectors(ctx, map[string][]float32{"k": {1, 2}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path, indextest.Dimensions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetVectors(ctx, []string{"k", "missing"})
	if err != nil || len(got) != 1 || got["k"][1] != 2 {
		t.Errorf("cache after reopen: %v %v", got, err)
	}
	if s.Rebuilt() {
		t.Error("a compatible index was reported rebuilt")
	}
	vec := make([]float32, indextest.Dimensions)
	rec := index.Record{Vector: vec}
	rec.ID, rec.Database, rec.Kind, rec.Name, rec.Text, rec.Hash = "db:table:t", "db", "table", "t", "x", "h"
	if _, err := s.Upsert(ctx, []index.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetProjected(ctx, "db", 4); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Other dimensions (a new embedding model): the projection is emptied
	// and reported rebuilt; the embedding cache survives.
	s, err = Open(ctx, path, indextest.Dimensions*2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Rebuilt() {
		t.Error("a rebuilt index was not reported")
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "db"}); n != 0 {
		t.Errorf("%d chunks survived a rebuild", n)
	}
	if p, _ := s.Projected(ctx, "db"); p != 0 {
		t.Errorf("projected version %d survived a rebuild", p)
	}
	if got, _ := s.GetVectors(ctx, []string{"k"}); len(got) != 1 {
		t.Error("the embedding cache was dropped")
	}
}

// TestTwoHandlesSeeEachOthersWrites covers a worker and a daemon in two
// processes sharing the file: the reader's cache notices the writer.
func TestTwoHandlesSeeEachOthersWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	w, _ := Open(ctx, path, indextest.Dimensions)
	r, _ := Open(ctx, path, indextest.Dimensions)
	defer w.Close()
	defer r.Close()
	vec := make([]float32, indextest.Dimensions)
	vec[0] = 1
	search := func() int {
		hits, err := r.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: vec, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if search() != 0 {
		t.Fatal("empty index found something")
	}
	rec := index.Record{Vector: vec}
	rec.ID, rec.Database, rec.Kind, rec.Name, rec.Text, rec.Hash = "db:table:t", "db", "table", "t", "x", "h"
	if _, err := w.Upsert(ctx, []index.Record{rec}); err != nil {
		t.Fatal(err)
	}
	if search() != 1 {
		t.Error("the reader did not see the writer's chunk")
	}
}

// A reader in another process catches up from the writer's rows and
// tombstones, including after more writes than tombstones are kept for,
// and ends up where a fresh reader starts.
func TestReaderCatchesUpWithWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "index.db")
	w, _ := Open(ctx, path, indextest.Dimensions)
	r, _ := Open(ctx, path, indextest.Dimensions)
	defer w.Close()
	defer r.Close()
	rec := func(i int, body string) index.Record {
		vec := make([]float32, indextest.Dimensions)
		vec[i%indextest.Dimensions] = 1
		rr := index.Record{Vector: vec}
		rr.ID, rr.Database, rr.Kind, rr.Name, rr.Text, rr.Hash = fmt.Sprintf("db:table:t%d", i), "db", "table", fmt.Sprintf("t%d", i), body, body
		return rr
	}
	ids := func(s *Store) []string {
		hits, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"alpha", "beta"}, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hits {
			out = append(out, fmt.Sprintf("%s %.6f", h.Chunk.ID, h.Score))
		}
		return out
	}
	check := func(when string) {
		t.Helper()
		fresh, err := Open(ctx, path, indextest.Dimensions)
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.Close()
		got, want := ids(r), ids(fresh)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%s: the reader has\n%v\na fresh reader\n%v", when, got, want)
		}
	}
	for i := range 40 {
		if _, err := w.Upsert(ctx, []index.Record{rec(i, "alpha")}); err != nil {
			t.Fatal(err)
		}
	}
	check("after inserts")
	for i := 0; i < 40; i += 3 {
		if _, err := w.Upsert(ctx, []index.Record{rec(i, "beta beta")}); err != nil {
			t.Fatal(err)
		}
		if err := w.Delete(ctx, "db", []string{fmt.Sprintf("db:table:t%d", i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	check("after updates and deletes")
	// More writes than the tombstones cover: the reader reloads whole.
	for i := range tombstoneHorizon + 300 {
		if _, err := w.Upsert(ctx, []index.Record{rec(100+i%50, "alpha")}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := w.Delete(ctx, "db", []string{fmt.Sprintf("db:table:t%d", 100+(i+7)%50)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("after more writes than the tombstone horizon")
	var n int
	if err := w.db.QueryRow(`SELECT count(*) FROM tombstones`).Scan(&n); err != nil || n > 2*tombstoneHorizon {
		t.Errorf("%d tombstones kept (%v), want at most about %d", n, err, tombstoneHorizon)
	}
}

// Searches run while writes land: each sees a whole snapshot, before or
// after a write, never a half-applied one, and nothing races.
func TestSearchesDuringWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "index.db"), indextest.Dimensions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Each write replaces a pair of chunks together; a search sees both
	// of a pair or neither.
	pair := func(g int) []index.Record {
		var out []index.Record
		for _, side := range []string{"a", "b"} {
			vec := make([]float32, indextest.Dimensions)
			vec[0] = 1
			r := index.Record{Vector: vec}
			r.ID, r.Database, r.Kind, r.Name, r.Text, r.Hash = fmt.Sprintf("db:table:%s%d", side, g), "db", "table", side, "pair", fmt.Sprint(g)
			out = append(out, r)
		}
		return out
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				hits, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"pair"}, Limit: 1000})
				if err != nil {
					t.Error(err)
					return
				}
				if len(hits)%2 != 0 {
					t.Errorf("a search saw %d chunks: half a write", len(hits))
					return
				}
			}
		}()
	}
	for g := range 200 {
		if _, err := s.Upsert(ctx, pair(g)); err != nil {
			t.Fatal(err)
		}
		if g%3 == 0 {
			if err := s.Delete(ctx, "db", []string{fmt.Sprintf("db:table:a%d", g), fmt.Sprintf("db:table:b%d", g)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	if n, _ := s.Count(ctx, index.Filter{Database: "db"}); n != 2*(200-67) {
		t.Errorf("%d chunks stored, want %d", n, 2*(200-67))
	}
}

// TestOpenTogether: a worker and a daemon on a shared data directory
// (compose) open the index at the same moment, here four at a time on
// new files. Each must open: without retries on SQLITE_BUSY, setting WAL
// or creating the tables failed at once, without the busy timeout, and
// the daemon exited (TestDaemonWithoutAWriterIsRefused failed so).
func TestOpenTogether(t *testing.T) {
	for round := range 30 {
		path := filepath.Join(t.TempDir(), "index.db")
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, err := Open(context.Background(), path, indextest.Dimensions)
				if err != nil {
					t.Errorf("round %d: %v", round, err)
					return
				}
				s.Close()
			}()
		}
		wg.Wait()
	}
}
