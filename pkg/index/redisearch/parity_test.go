package redisearch

import (
	"context"
	"fmt"

	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/benchmark"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/indexer"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// shopCatalog is the example shop's migration history as a catalog.
func shopCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	files, err := migrate.Discover(filepath.Join("..", "..", "..", "examples", "shop", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New("shop")
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if c, err = c.Apply(f.Name, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	c.Version = int64(len(files))
	return c
}

// A document matching several of a query's terms scores the sum of what
// each term gives it, as BM25 says and the embedded store does. The
// filter once wrapped the union of terms, and RediSearch then scored a
// document by one of its terms only.
func TestUnionScoresEveryTermLive(t *testing.T) {
	rdb := liveClient(t)
	ctx := context.Background()
	s := openLive(t, rdb, Options{Dimensions: 8, Model: "local", Algorithm: "FLAT", Search: SearchServer})
	emb := embed.NewLocal(8)
	var recs []index.Record
	for _, c := range chunk.Catalog(shopCatalog(t), chunk.Options{}) {
		v, err := emb.Embed(ctx, []string{c.Text})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, index.Record{Chunk: c, Vector: v[0]})
	}
	if _, err := s.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	score := func(terms ...string) map[string]float64 {
		hits, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: terms, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, h := range hits {
			out[h.Chunk.ID] = h.Score
		}
		return out
	}
	// Two terms no compound joins ("customer" and "email" would make
	// customeremail). The server's term statistics move while other
	// indexes on it change (another test process writing, or dropping
	// its index), so the three searches are read again until they ran
	// under the same statistics; a union scored by one term only fails
	// every time.
	var differ []string
	for attempt := 0; attempt < 10; attempt++ {
		a, b, both := score("customer"), score("total"), score("customer", "total")
		differ = differ[:0]
		checked := 0
		for id, sc := range both {
			if want := a[id] + b[id]; math.Abs(sc-want) > 1e-3*want {
				differ = append(differ, fmt.Sprintf("%s: scores %.4f for both terms, %.4f + %.4f alone", id, sc, a[id], b[id]))
			}
			if a[id] > 0 && b[id] > 0 {
				checked++
			}
		}
		if checked == 0 {
			t.Fatal("no chunk holds both terms: the test checks nothing")
		}
		if len(differ) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range differ {
		t.Error(d)
	}
}

// The two stores run the same retrieval and rank alike: the same tables
// first and nearly the same top five. They differ where the formulas do
// (docs/redis.md#where-searches-run): RediSearch's BM25STD has b 0.5, a BM25+ IDF,
// integer field weights and statistics over the whole index.
func TestStoresRankAlikeLive(t *testing.T) {
	rdb := liveClient(t)
	emb := embed.NewLocal(0)
	red := openLive(t, rdb, Options{Dimensions: emb.Dimensions(), Model: emb.Model(), Algorithm: "FLAT", Search: SearchServer})
	first, overlap, _ := rankAlike(t, red)
	if first < 0.95 || overlap < 0.95 {
		t.Errorf("the stores rank apart: same first table for %.3f of the questions, top-5 overlap %.3f (want ≥ 0.95 each)", first, overlap)
	}
}

// Searching in memory, the Redis store ranks exactly as the embedded one,
// question by question; on plain Redis, so CI holds it.
func TestStoresRankAlikeInMemory(t *testing.T) {
	emb := embed.NewLocal(0)
	red := inMemory(t, testenv.StartRedis(t).Client(), "t:", emb.Dimensions())
	if _, _, differ := rankAlike(t, red); len(differ) > 0 {
		t.Errorf("%d questions ranked apart, first: %s", len(differ), differ[0])
	}
}

// rankAlike indexes the parity fixture in SQLite and in red, retrieves
// the top five tables for every question from both, and returns the
// share with the same first table, the mean top-5 overlap, and the
// questions whose lists differ at all.
func rankAlike(t *testing.T, red index.Store) (first, overlap float64, differ []string) {
	t.Helper()
	ctx := context.Background()
	schema, questions := parityFixture(t)
	cat, err := catalog.Snapshot("bench", "schema.sql", schema)
	if err != nil {
		t.Fatal(err)
	}
	cat.Version = 1
	emb := embed.NewLocal(0)
	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	top := map[string][][]string{}
	for name, st := range map[string]index.Store{"sqlite": lite, "redis": red} {
		if _, err := indexer.Catalog(ctx, st, emb, cat, chunk.NewChunker(chunk.Options{})); err != nil {
			t.Fatal(err)
		}
		ret, err := retrieve.New(st, emb, staticCatalog{cat}, retrieve.DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range questions {
			res, err := ret.Retrieve(ctx, retrieve.Request{Database: "bench", Question: q, K: 5})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range res.Items {
				if it.Bridge == "" {
					names = append(names, it.Name)
				}
			}
			top[name] = append(top[name], names)
		}
	}
	same := 0
	for i := range questions {
		l, r := top["sqlite"][i], top["redis"][i]
		if len(l) > 0 && len(r) > 0 && l[0] == r[0] {
			same++
		}
		if !slices.Equal(l, r) {
			differ = append(differ, fmt.Sprintf("%q: sqlite %v, redis %v", questions[i], l, r))
		}
		shared := 0
		for _, n := range l {
			if slices.Contains(r, n) {
				shared++
			}
		}
		overlap += float64(shared) / float64(max(len(l), 1))
	}
	n := float64(len(questions))
	first, overlap = float64(same)/n, overlap/n
	t.Logf("%d questions: same first table %.3f, top-5 overlap %.3f, %d lists differ", len(questions), first, overlap, len(differ))
	return first, overlap, differ
}

// parityFixture is SpiderUnion where the shared benchmark is here, else
// the example shop with questions about it.
func parityFixture(t *testing.T) (string, []string) {
	if dir := os.Getenv("SCHEMAQ_SHARED"); dir != "" || sharedHere() {
		s := testenv.ReadShared(t, "bench", "spiderunion", "schema.sql")
		f, err := os.Open(testenv.SharedPath(t, "bench", "spiderunion", "questions.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		qs, err := benchmark.ReadQuestions(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Question)
		}
		return s, out
	}
	return shopCatalog(t).DDL(), []string{
		"Which customers placed the most orders?", "net revenue from payments last month", "orders shipped to each city",
		"refunds per payment method", "customers without a shipping address", "average order total by customer",
	}
}

func sharedHere() bool {
	_, err := os.Stat(filepath.Join("..", "..", "..", "..", "shared", "bench", "spiderunion", "schema.sql"))
	return err == nil
}

type staticCatalog struct{ c *catalog.Catalog }

func (s staticCatalog) Catalog(db string) *catalog.Catalog {
	if strings.EqualFold(db, s.c.Database) {
		return s.c
	}
	return nil
}
