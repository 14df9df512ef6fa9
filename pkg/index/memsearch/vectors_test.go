package memsearch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// sparseVector has k non-zero entries of dim, as the local embedder's
// hashing leaves most dimensions empty, normalised.
func sparseVector(rng *rand.Rand, dim, k int) []float32 {
	v := make([]float32, dim)
	for range k {
		v[rng.IntN(dim)] = rng.Float32()*2 - 1
	}
	return v
}

func vectorDocs(rng *rand.Rand, from, n, dim int) []Doc {
	docs := make([]Doc, n)
	schemas := []string{"public", "sales", "hr"}
	for i := range docs {
		num := from + i
		v := sparseVector(rng, dim, 5+rng.IntN(60))
		if num%50 == 0 {
			v = sparseVector(rng, dim, dim) // dense: stored whole
		}
		kind := chunk.KindTable
		if num%7 == 0 {
			kind = chunk.KindDoc
		}
		docs[i] = Doc{Chunk: chunk.Chunk{ID: fmt.Sprintf("db:%s:%d", kind, num), Database: "db", Kind: kind, Schema: schemas[num%3], Name: fmt.Sprint(num)},
			Vector: v, Fields: index.Fields{Name: fmt.Sprint("t", num)}}
	}
	return docs
}

// scan is the reference KNN: every chunk scored directly, best first,
// equal scores by id.
func scan(s *Snapshot, q index.VectorQuery) []index.Hit {
	var hits []index.Hit
	for _, d := range s.docs {
		if d != nil && s.admits(q.Filter, d) {
			hits = append(hits, index.Hit{Chunk: d.chunk, Score: float64(d.dot(q.Vector))})
		}
	}
	slices.SortFunc(hits, func(a, b index.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.Chunk.ID, b.Chunk.ID)
	})
	return hits[:min(q.Limit, len(hits))]
}

// The vector index answers exactly as scoring every chunk does, the
// scores to the bit, through writes that replace, remove and add chunks
// (each snapshot inheriting its parent's index, then building its own),
// with and without filters, for sparse and dense questions.
func TestVectorIndexScoresAsAScanDoes(t *testing.T) {
	const dim = 512
	rng := rand.New(rand.NewPCG(7, 11))
	s := New(dim).With(vectorDocs(rng, 0, 2000, dim), nil)
	filters := []index.Filter{
		{Database: "db"},
		{Database: "db", Schemas: []string{"sales"}},
		{Database: "db", Kinds: []string{chunk.KindDoc}},
		{Database: "db", Schemas: []string{"hr", "public"}, Kinds: []string{chunk.KindTable}},
	}
	indexed := 0
	for step := range 12 {
		for range 20 {
			q := index.VectorQuery{Filter: filters[rng.IntN(len(filters))], Vector: sparseVector(rng, dim, 10+rng.IntN(80)), Limit: 50}
			if rng.IntN(10) == 0 {
				q.Vector = sparseVector(rng, dim, dim)
			}
			got, want := s.SearchVector(q), scan(s, q)
			if len(got) != len(want) {
				t.Fatalf("step %d: %d hits, want %d", step, len(got), len(want))
			}
			for i := range got {
				if got[i].Chunk.ID != want[i].Chunk.ID || got[i].Score != want[i].Score {
					t.Fatalf("step %d, hit %d: %s %v, want %s %v", step, i, got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
				}
			}
		}
		if s.vecs.idx.Load() != nil {
			indexed++
		}
		// Replace some chunks, remove some, add some.
		var upserts []Doc
		for _, d := range vectorDocs(rng, rng.IntN(2000), 30, dim) {
			upserts = append(upserts, d)
		}
		upserts = append(upserts, vectorDocs(rng, 2000+step*40, 40, dim)...)
		var removed []string
		for range 25 {
			n := rng.IntN(2000)
			kind := chunk.KindTable
			if n%7 == 0 {
				kind = chunk.KindDoc
			}
			removed = append(removed, fmt.Sprintf("db:%s:%d", kind, n))
		}
		s = s.With(upserts, removed)
	}
	if indexed == 0 {
		t.Fatal("no search used the vector index: the test compared the scan with itself")
	}
}

// Searches running while the index is built, and on snapshots that
// inherit it, find what a scan finds (run with -race).
func TestVectorIndexUnderConcurrentSearches(t *testing.T) {
	const dim = 512
	rng := rand.New(rand.NewPCG(3, 5))
	s := New(dim).With(vectorDocs(rng, 0, 1500, dim), nil)
	next := s.With(vectorDocs(rng, 1500, 50, dim), nil)
	qs := make([]index.VectorQuery, 16)
	for i := range qs {
		qs[i] = index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: sparseVector(rand.New(rand.NewPCG(uint64(i), 1)), dim, 40), Limit: 20}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, q := range qs {
				snap := s
				if (w+i)%2 == 1 {
					snap = next
				}
				got, want := snap.SearchVector(q), scan(snap, q)
				if !slices.EqualFunc(got, want, func(a, b index.Hit) bool { return a.Chunk.ID == b.Chunk.ID && a.Score == b.Score }) {
					errs <- fmt.Sprintf("worker %d question %d: the index answered otherwise than a scan", w, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// BenchmarkSearchVector times one KNN search over 12,000 sparse chunks
// (about 10,000 tables with their wide parts), scanned and through the
// vector index, and the index's build, which the first search after
// enough writes pays.
func BenchmarkSearchVector(b *testing.B) {
	const dim = 512
	rng := rand.New(rand.NewPCG(1, 2))
	docs := vectorDocs(rng, 0, 12000, dim)
	s := New(dim).With(docs, nil)
	q := index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: sparseVector(rng, dim, 60), Limit: 50}
	b.Run("scan", func(b *testing.B) {
		scanned := New(dim).With(docs, nil)
		scanned.vecs.mu.Lock() // as while another search builds the index: every search scans
		b.ReportAllocs()
		for b.Loop() {
			scanned.SearchVector(q)
		}
	})
	b.Run("indexed", func(b *testing.B) {
		s.SearchVector(q) // builds the index
		b.ReportAllocs()
		for b.Loop() {
			s.SearchVector(q)
		}
	})
	b.Run("build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buildVectorIndex(dim, s.docs)
		}
	})
}
