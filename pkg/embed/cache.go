package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
)

// CacheStore keeps vectors by key. Get returns what it has; missing keys
// are simply absent from the map.
type CacheStore interface {
	GetVectors(ctx context.Context, keys []string) (map[string][]float32, error)
	PutVectors(ctx context.Context, vecs map[string][]float32) error
}

// Cached wraps an Embedder with a cache keyed by model and content hash, so
// re-indexing unchanged text costs no embedding calls.
type Cached struct {
	inner  Embedder
	store  CacheStore
	hits   atomic.Int64
	misses atomic.Int64
	// failures counts cache reads and writes that failed: the texts were
	// embedded (or not stored) as if the cache were empty.
	failures atomic.Int64
}

// NewCached decorates inner with store.
func NewCached(inner Embedder, store CacheStore) *Cached {
	return &Cached{inner: inner, store: store}
}

// Model implements Embedder.
func (c *Cached) Model() string { return c.inner.Model() }

// Dimensions implements Embedder.
func (c *Cached) Dimensions() int { return c.inner.Dimensions() }

// Failures reports how many cache reads and writes failed since
// creation; a failed one costs embedding calls, never an answer.
func (c *Cached) Failures() int64 { return c.failures.Load() }

// Stats reports cache hits and misses since creation.
func (c *Cached) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// CacheKey is the key of text under model: model, dimensions and the
// SHA-256 of the text.
func CacheKey(model string, dim int, text string) string {
	sum := sha256.Sum256([]byte(text))
	return fmt.Sprintf("%s/%d/%s", model, dim, hex.EncodeToString(sum[:]))
}

// Embed implements Embedder: cached vectors are returned as they are, the
// rest are embedded in one call to the inner embedder and stored.
func (c *Cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	keys := make([]string, len(texts))
	for i, t := range texts {
		keys[i] = CacheKey(c.inner.Model(), c.inner.Dimensions(), t)
	}
	// The cache only saves calls: one that cannot be read (its Redis
	// failing over, say) leaves every text to embed.
	found, err := c.store.GetVectors(ctx, keys)
	if err != nil {
		c.failures.Add(1)
		found = nil
	}
	out := make([][]float32, len(texts))
	// The texts to embed, each once even if the batch repeats it.
	var missing []string
	pos := map[string]int{}
	for i, k := range keys {
		if v, ok := found[k]; ok && len(v) == c.inner.Dimensions() {
			out[i] = v
			continue
		}
		if _, ok := pos[k]; !ok {
			pos[k] = len(missing)
			missing = append(missing, texts[i])
		}
	}
	c.hits.Add(int64(len(texts) - len(missing)))
	c.misses.Add(int64(len(missing)))
	if len(missing) == 0 {
		return out, nil
	}
	vecs, err := c.inner.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missing) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", c.inner.Model(), len(vecs), len(missing))
	}
	put := make(map[string][]float32, len(pos))
	for k, j := range pos {
		put[k] = vecs[j]
	}
	for i, k := range keys {
		if out[i] == nil {
			out[i] = vecs[pos[k]]
		}
	}
	if err := c.store.PutVectors(ctx, put); err != nil {
		c.failures.Add(1)
	}
	return out, nil
}

// MemoryCache is an in-process CacheStore bounded by entry count; when
// full it forgets everything (cheap, and a re-embed is only a cost).
type MemoryCache struct {
	mu  sync.Mutex
	max int
	m   map[string][]float32
}

// NewMemoryCache holds at most max vectors (100,000 when max ≤ 0).
func NewMemoryCache(max int) *MemoryCache {
	if max <= 0 {
		max = 100_000
	}
	return &MemoryCache{max: max, m: map[string][]float32{}}
}

// GetVectors implements CacheStore.
func (m *MemoryCache) GetVectors(_ context.Context, keys []string) (map[string][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]float32, len(keys))
	for _, k := range keys {
		if v, ok := m.m[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// PutVectors implements CacheStore.
func (m *MemoryCache) PutVectors(_ context.Context, vecs map[string][]float32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.m)+len(vecs) > m.max {
		m.m = map[string][]float32{}
	}
	for k, v := range vecs {
		m.m[k] = v
	}
	return nil
}
