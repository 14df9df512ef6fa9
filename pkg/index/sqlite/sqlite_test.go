package sqlite

import (
	"context"
	"path/filepath"
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
