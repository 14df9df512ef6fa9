package indexer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/indexer"
)

type counting struct {
	*embed.Local
	texts int
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts += len(texts)
	return c.Local.Embed(ctx, texts)
}

func TestCatalogWritesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	e := &counting{Local: embed.NewLocal(32)}
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "i.db"), 32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1, _ := catalog.Snapshot("db", "v1", "CREATE TABLE a (id int); CREATE TABLE b (id int); CREATE TABLE c (id int);")
	v1.Version = 1
	st, err := indexer.Catalog(ctx, s, e, v1, chunk.Options{})
	if err != nil || st.Written != 3 || e.texts != 3 {
		t.Fatalf("first index: %+v, %d embedded, %v", st, e.texts, err)
	}
	v2, _ := v1.Apply("v2", "ALTER TABLE a ADD COLUMN x int; DROP TABLE c;")
	v2.Version = 2
	st, err = indexer.Catalog(ctx, s, e, v2, chunk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 1 || st.Touched != 1 || st.Deleted != 1 || e.texts != 4 {
		t.Errorf("second index: %+v with %d texts embedded in all; want a rewritten, b touched, c deleted", st, e.texts)
	}
	metas, _ := s.Metas(ctx, index.Filter{Database: "db"})
	if len(metas) != 2 || metas["db:table:public.b"].Version != 2 || metas["db:table:public.a"].Version != 2 {
		t.Errorf("stored: %+v", metas)
	}
	if p, _ := s.Projected(ctx, "db"); p != 2 {
		t.Errorf("projected %d", p)
	}
	// An older catalog arriving late changes nothing: it neither replaces
	// a newer chunk nor brings back the table v2 dropped.
	st, err = indexer.Catalog(ctx, s, e, v1, chunk.Options{})
	if err != nil || st.Written != 0 {
		t.Errorf("stale index run wrote %d: %v", st.Written, err)
	}
	metas, _ = s.Metas(ctx, index.Filter{Database: "db"})
	if len(metas) != 2 || metas["db:table:public.a"].Version != 2 {
		t.Errorf("a stale run changed the index: %+v", metas)
	}
}

// racyStore lets a newer writer finish in the middle of an older one's
// run: the interleaving that could leave a dropped table behind.
type racyStore struct {
	*sqlite.Store
	during func()
}

func (r *racyStore) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	n, err := r.Store.Upsert(ctx, recs)
	if r.during != nil {
		f := r.during
		r.during = nil
		f()
	}
	return n, err
}

func TestSlowWriterCannotResurrectDroppedTables(t *testing.T) {
	ctx := context.Background()
	e := embed.NewLocal(32)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "i.db"), 32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1, _ := catalog.Snapshot("db", "v1", "CREATE TABLE a (id int); CREATE TABLE gone (id int);")
	v1.Version = 1
	v2, _ := v1.Apply("v2", "DROP TABLE gone; ALTER TABLE a ADD COLUMN x int;")
	v2.Version = 2
	// The slow writer (v1) writes its chunks; before it finishes, v2 is
	// indexed completely.
	slow := &racyStore{Store: s, during: func() {
		if _, err := indexer.Catalog(ctx, s, e, v2, chunk.Options{}); err != nil {
			t.Fatal(err)
		}
	}}
	if _, err := indexer.Catalog(ctx, slow, e, v1, chunk.Options{}); err != nil {
		t.Fatal(err)
	}
	metas, _ := s.Metas(ctx, index.Filter{Database: "db"})
	if _, ok := metas["db:table:public.gone"]; ok || len(metas) != 1 || metas["db:table:public.a"].Version != 2 {
		t.Errorf("after the interleaving: %+v, want only a at version 2", metas)
	}
}
