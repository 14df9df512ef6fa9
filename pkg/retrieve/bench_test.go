package retrieve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/benchmark"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/pkg/text"
)

type oneCatalog struct{ c *catalog.Catalog }

func (o oneCatalog) Catalog(string) *catalog.Catalog { return o.c }

// spiderFixture indexes SpiderUnion once per benchmark.
func spiderFixture(b testing.TB) (*sqlite.Store, *catalog.Catalog, []benchmark.Question) {
	b.Helper()
	sql := testenv.ReadShared(b, "bench", "spiderunion", "schema.sql")
	qf := testenv.ReadShared(b, "bench", "spiderunion", "questions.jsonl")
	qs, err := benchmark.ReadQuestions(strings.NewReader(qf))
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.Snapshot("spider", "schema.sql", sql)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := indexCatalogs(b, cat)
	return s, cat, qs
}

// Retrieval stage benchmarks over SpiderUnion (876 tables), one question a
// loop cycling through the 658. Run:
//
//	go test ./pkg/retrieve -run '^$' -bench . -benchmem -count 6 | tee retrieve.txt
func BenchmarkRetrieve(b *testing.B) {
	s, cat, qs := spiderFixture(b)
	ctx := context.Background()
	e := embed.NewLocal(0)
	b.Run("stage=bm25", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			q := qs[i%len(qs)]
			i++
			if _, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "spider"},
				Terms: text.Terms(q.Question), Weights: index.DefaultWeights, Limit: 50}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stage=knn", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			q := qs[i%len(qs)]
			i++
			if _, err := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "spider"},
				Vector: e.Vector(q.Question), Limit: 50}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stage=schema-rerank", func(b *testing.B) {
		r, _ := retrieve.New(s, e, nil, retrieve.DefaultConfig)
		res, err := r.Retrieve(ctx, retrieve.Request{Database: "spider", Question: qs[0].Question, K: 50})
		if err != nil {
			b.Fatal(err)
		}
		cands := make([]rerank.Candidate, len(res.Items))
		for i, it := range res.Items {
			cands[i] = it.Candidate
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			q := qs[i%len(qs)]
			i++
			rerank.Schema(rerank.DefaultWeights, q.Question, append([]rerank.Candidate(nil), cands[:retrieve.DefaultConfig.Rescore.Window]...))
		}
	})
	for _, tc := range []struct {
		name string
		cfg  func(retrieve.Config) retrieve.Config
	}{
		{"pipeline=default", func(c retrieve.Config) retrieve.Config { return c }},
		{"pipeline=bm25-only", func(c retrieve.Config) retrieve.Config {
			c.Gather.KNN, c.Rescore.Enabled, c.Expand.Enabled = false, false, false
			return c
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r, err := retrieve.New(s, e, oneCatalog{cat}, tc.cfg(retrieve.DefaultConfig))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := qs[i%len(qs)]
				i++
				if _, err := r.Retrieve(ctx, retrieve.Request{Database: "spider", Question: q.Question, K: 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The longest questions a request may carry (events.MaxQuestionBytes),
	// with hints as long: what a careless or hostile caller sends. Each
	// must stay within the latency targets, not only the questions people
	// ask.
	rng := rand.New(rand.NewPCG(1, 2))
	words := func(n int) string {
		var b strings.Builder
		for b.Len() < events.MaxQuestionBytes-n {
			for range 3 + rng.IntN(n) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
			b.WriteByte(' ')
		}
		return b.String()
	}
	r, err := retrieve.New(s, e, oneCatalog{cat}, retrieve.DefaultConfig)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, q string }{
		{"one-word", strings.Repeat("a", events.MaxQuestionBytes)},
		{"random-words", words(8)},
		{"schema-words", strings.Repeat(qs[0].Question+" ", events.MaxQuestionBytes/(len(qs[0].Question)+1))},
		{"punctuation", strings.Repeat(`"*(-:`, events.MaxQuestionBytes/5)},
	} {
		b.Run("question=4KB-"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Retrieve(ctx, retrieve.Request{Database: "spider", Question: tc.q, Hints: tc.q, K: 20}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRetrieveScale runs the default pipeline over SpiderUnion
// copied into more schemas (benchmark.Replicate), unfiltered and with the
// question's gold schema named, to show how cost grows with the index
// and that naming a schema makes it follow that schema's size, with the
// Go heap in use and the live heap after a collection. Set
// SCHEMAQ_SCALE to the table counts (default 876,10000):
//
//	SCHEMAQ_SCALE=876,10000,35000 go test ./pkg/retrieve -run '^$' -bench Scale -benchtime 400x -count 3
func BenchmarkRetrieveScale(b *testing.B) {
	sql := testenv.ReadShared(b, "bench", "spiderunion", "schema.sql")
	qf := testenv.ReadShared(b, "bench", "spiderunion", "questions.jsonl")
	qs, err := benchmark.ReadQuestions(strings.NewReader(qf))
	if err != nil {
		b.Fatal(err)
	}
	sizes := os.Getenv("SCHEMAQ_SCALE")
	if sizes == "" {
		sizes = "876,10000"
	}
	for _, size := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(size))
		if err != nil {
			b.Fatalf("SCHEMAQ_SCALE: %v", err)
		}
		copies, err := benchmark.Replicate(sql, n)
		if err != nil {
			b.Fatal(err)
		}
		cat, err := catalog.Snapshot("spider", "schema.sql", strings.Join(copies.Scripts, "\n"))
		if err != nil {
			b.Fatal(err)
		}
		s, e := indexCatalogs(b, cat)
		r, err := retrieve.New(s, e, oneCatalog{cat}, retrieve.DefaultConfig)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for _, named := range []bool{false, true} {
			b.Run(fmt.Sprintf("tables=%d/schema-named=%v", len(cat.Tables()), named), func(b *testing.B) {
				var m runtime.MemStats
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					q := qs[i%len(qs)]
					i++
					req := retrieve.Request{Database: "spider", Question: q.Question, K: 20}
					if named && len(q.GoldTables) > 0 {
						if schema, _, ok := strings.Cut(q.GoldTables[0], "."); ok {
							req.Schemas = []string{schema}
						}
					}
					if _, err := r.Retrieve(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				// heap-MB is the heap in use, garbage included, as the
				// loop left it; live-MB what a collection keeps: the
				// index, the caches and the catalog.
				runtime.ReadMemStats(&m)
				b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MB")
				runtime.GC()
				runtime.ReadMemStats(&m)
				b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-MB")
			})
		}
	}
}
