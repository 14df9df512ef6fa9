package embed

import (
	"context"
	"errors"
	"testing"
)

func TestLocalIsDeterministicAndNormalised(t *testing.T) {
	l := NewLocal(0)
	a := l.Vector("How many singers do we have?")
	b := NewLocal(0).Vector("How many singers do we have?")
	if len(a) != DefaultLocalDimensions {
		t.Fatalf("dim %d", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("two embedders disagree")
		}
	}
	if c := Cosine(a, a); c < 0.999 || c > 1.001 {
		t.Errorf("not normalised: |v|² = %f", c)
	}
	if z := l.Vector("the of and"); Cosine(z, z) != 0 {
		t.Error("a text of stop words only should embed to zero")
	}
}

func TestLocalSimilarity(t *testing.T) {
	l := NewLocal(0)
	q := l.Vector("What is the nationality of each singer?")
	near := l.Vector("CREATE TABLE concert_singer.singer (singer_id numeric, name text, country text, nationality text)")
	far := l.Vector("CREATE TABLE flight_2.airports (city text, airportcode text, airportname text)")
	if Cosine(q, near) <= Cosine(q, far) {
		t.Errorf("singer table %.3f should be nearer than airports %.3f", Cosine(q, near), Cosine(q, far))
	}
	// Character n-grams bridge forms that terms alone miss.
	nat := l.Vector("nationality")
	if Cosine(nat, l.Vector("nation")) <= Cosine(nat, l.Vector("airport")) {
		t.Error("nationality should be nearer to nation than to airport")
	}
}

type countingEmbedder struct {
	Local
	calls, texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls++
	c.texts += len(texts)
	return c.Local.Embed(ctx, texts)
}

func TestCachedEmbedsEachTextOnce(t *testing.T) {
	inner := &countingEmbedder{Local: *NewLocal(64)}
	c := NewCached(inner, NewMemoryCache(0))
	ctx := context.Background()
	first, err := c.Embed(ctx, []string{"a table", "b table", "a table"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts != 2 {
		t.Errorf("embedded %d texts, want 2 (the repeat is embedded once)", inner.texts)
	}
	if Cosine(first[0], first[2]) < 0.999 {
		t.Error("a repeated text got a different vector")
	}
	again, err := c.Embed(ctx, []string{"b table", "a table"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.calls != 1 {
		t.Errorf("inner called %d times, want 1: everything was cached", inner.calls)
	}
	if Cosine(again[0], first[1]) < 0.999 {
		t.Error("cached vector differs")
	}
	// The repeat within the first batch and both texts of the second are hits.
	if h, m := c.Stats(); h != 3 || m != 2 {
		t.Errorf("stats hits %d misses %d, want 3 and 2", h, m)
	}
}

func TestCacheKeySeparatesModels(t *testing.T) {
	if CacheKey("m1", 8, "x") == CacheKey("m2", 8, "x") || CacheKey("m1", 8, "x") == CacheKey("m1", 16, "x") {
		t.Error("cache keys must include model and dimensions")
	}
}

// failingCache fails reads, writes, or both, as a cache on a Redis that
// is failing over does.
type failingCache struct {
	MemoryCache
	get, put bool
}

func (f *failingCache) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	if f.get {
		return nil, errors.New("redis: connection refused")
	}
	return f.MemoryCache.GetVectors(ctx, keys)
}

func (f *failingCache) PutVectors(ctx context.Context, vecs map[string][]float32) error {
	if f.put {
		return errors.New("redis: connection refused")
	}
	return f.MemoryCache.PutVectors(ctx, vecs)
}

// A cache that fails costs embedding calls, never an answer.
func TestCacheFailuresOnlyCostCalls(t *testing.T) {
	for _, tc := range []struct {
		name     string
		get, put bool
		failures int64
	}{
		{"reads fail", true, false, 1},
		{"writes fail", false, true, 1},
		{"both fail", true, true, 2},
		{"neither", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &countingEmbedder{Local: *NewLocal(16)}
			c := NewCached(inner, &failingCache{MemoryCache: *NewMemoryCache(0), get: tc.get, put: tc.put})
			vecs, err := c.Embed(context.Background(), []string{"orders", "customers"})
			if err != nil || len(vecs) != 2 || len(vecs[0]) != 16 {
				t.Fatalf("embed through a failing cache: %v, %d vectors", err, len(vecs))
			}
			if inner.texts != 2 || c.Failures() != tc.failures {
				t.Errorf("embedded %d texts, %d failures; want 2 and %d", inner.texts, c.Failures(), tc.failures)
			}
		})
	}
}
