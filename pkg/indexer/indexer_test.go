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

// touchOnly hides ReplaceSchema, so the indexer takes the Touch protocol,
// the one stores without an atomic replace (Redis) go through.
type touchOnly struct{ indexer.Writer }

// protocols runs a test on both ways of projecting a catalog.
var protocols = []struct {
	name   string
	atomic bool
	wrap   func(*sqlite.Store) indexer.Writer
}{
	{"atomic replace", true, func(s *sqlite.Store) indexer.Writer { return s }},
	{"touch", false, func(s *sqlite.Store) indexer.Writer { return touchOnly{s} }},
}

func TestCatalogWritesOnlyWhatChanged(t *testing.T) {
	for _, pr := range protocols {
		t.Run(pr.name, func(t *testing.T) {
			ctx := context.Background()
			e := &counting{Local: embed.NewLocal(32)}
			s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "i.db"), 32)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w := pr.wrap(s)
			v1, _ := catalog.Snapshot("db", "v1", "CREATE TABLE a (id int); CREATE TABLE b (id int); CREATE TABLE c (id int);")
			v1.Version = 1
			st, err := indexer.Catalog(ctx, w, e, v1, chunk.NewChunker(chunk.Options{}))
			if err != nil || st.Written != 3 || e.texts != 3 {
				t.Fatalf("first index: %+v, %d embedded, %v", st, e.texts, err)
			}
			v2, _ := v1.Apply("v2", "ALTER TABLE a ADD COLUMN x int; DROP TABLE c;")
			v2.Version = 2
			st, err = indexer.Catalog(ctx, w, e, v2, chunk.NewChunker(chunk.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			// The atomic replace leaves unchanged chunks alone; the touch
			// protocol raises their version.
			touched, bVersion := 1, int64(2)
			if pr.atomic {
				touched, bVersion = 0, 1
			}
			if st.Written != 1 || st.Touched != touched || st.Deleted != 1 || e.texts != 4 {
				t.Errorf("second index: %+v with %d texts embedded in all; want a rewritten, b unchanged, c deleted", st, e.texts)
			}
			metas, _ := s.Metas(ctx, index.Filter{Database: "db"})
			if len(metas) != 2 || metas["db:table:public.b"].Version != bVersion || metas["db:table:public.a"].Version != 2 {
				t.Errorf("stored: %+v", metas)
			}
			if p, _ := s.Projected(ctx, "db"); p != 2 {
				t.Errorf("projected %d", p)
			}
			// An older catalog arriving late changes nothing: it neither
			// replaces a newer chunk nor brings back the table v2 dropped.
			st, err = indexer.Catalog(ctx, w, e, v1, chunk.NewChunker(chunk.Options{}))
			if err != nil || st.Written != 0 {
				t.Errorf("stale index run wrote %d: %v", st.Written, err)
			}
			metas, _ = s.Metas(ctx, index.Filter{Database: "db"})
			if len(metas) != 2 || metas["db:table:public.a"].Version != 2 {
				t.Errorf("a stale run changed the index: %+v", metas)
			}
		})
	}
}

// racyStore lets a newer writer finish in the middle of an older one's
// run: the interleaving that could leave a dropped table behind.
type racyStore struct {
	indexer.Writer
	during func()
}

func (r *racyStore) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	n, err := r.Writer.Upsert(ctx, recs)
	r.race()
	return n, err
}

func (r *racyStore) race() {
	if r.during != nil {
		f := r.during
		r.during = nil
		f()
	}
}

// racyReplacer lets the newer writer finish between the older one's read
// of the stored chunks and its replace.
type racyReplacer struct{ *racyStore }

func (r racyReplacer) ReplaceSchema(ctx context.Context, sr index.SchemaReplace) (index.Replaced, error) {
	r.race()
	return r.Writer.(index.Replacer).ReplaceSchema(ctx, sr)
}

func TestSlowWriterCannotResurrectDroppedTables(t *testing.T) {
	for _, pr := range protocols {
		t.Run(pr.name, func(t *testing.T) {
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
			// The slow writer (v1) is under way; before it finishes, v2 is
			// indexed completely.
			racy := &racyStore{Writer: pr.wrap(s), during: func() {
				if _, err := indexer.Catalog(ctx, pr.wrap(s), e, v2, chunk.NewChunker(chunk.Options{})); err != nil {
					t.Fatal(err)
				}
			}}
			var slow indexer.Writer = racy
			if pr.atomic {
				slow = racyReplacer{racy}
			}
			if _, err := indexer.Catalog(ctx, slow, e, v1, chunk.NewChunker(chunk.Options{})); err != nil {
				t.Fatal(err)
			}
			if racy.during != nil {
				t.Fatal("the race was not run")
			}
			metas, _ := s.Metas(ctx, index.Filter{Database: "db"})
			if _, ok := metas["db:table:public.gone"]; ok || len(metas) != 1 || metas["db:table:public.a"].Version != 2 {
				t.Errorf("after the interleaving: %+v, want only a at version 2", metas)
			}
		})
	}
}

// A projection that lands between another's read and its replace makes
// that replace read again rather than write from a stale view.
func TestReplaceRetriesWhenTheProjectionMoved(t *testing.T) {
	ctx := context.Background()
	e := embed.NewLocal(32)
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "i.db"), 32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1, _ := catalog.Snapshot("db", "v1", "CREATE TABLE a (id int);")
	v1.Version = 1
	v2, _ := v1.Apply("v2", "ALTER TABLE a ADD COLUMN x int; CREATE TABLE b (id int);")
	v2.Version = 2
	// v3 takes a back to what v1 had: from v1's view, a is unchanged.
	v3, _ := v2.Apply("v3", "ALTER TABLE a DROP COLUMN x;")
	v3.Version = 3
	if _, err := indexer.Catalog(ctx, s, e, v1, chunk.NewChunker(chunk.Options{})); err != nil {
		t.Fatal(err)
	}
	// v3's run reads the index at v1; v2 lands before v3 replaces.
	racy := racyReplacer{&racyStore{Writer: s, during: func() {
		if _, err := indexer.Catalog(ctx, s, e, v2, chunk.NewChunker(chunk.Options{})); err != nil {
			t.Fatal(err)
		}
	}}}
	if _, err := indexer.Catalog(ctx, racy, e, v3, chunk.NewChunker(chunk.Options{})); err != nil {
		t.Fatal(err)
	}
	metas, _ := s.Metas(ctx, index.Filter{Database: "db"})
	want := map[string]string{}
	for _, c := range chunk.Catalog(v3, chunk.Options{}) {
		want[c.ID] = c.Hash
	}
	if len(metas) != len(want) {
		t.Fatalf("stored %v, want %v", metas, want)
	}
	for id, h := range want {
		if metas[id].Hash != h {
			t.Errorf("%s holds hash %s, v3 has %s", id, metas[id].Hash, h)
		}
	}
	if p, _ := s.Projected(ctx, "db"); p != 3 {
		t.Errorf("projected %d, want 3", p)
	}
}
