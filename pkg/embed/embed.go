// Package embed turns texts into vectors for the KNN half of hybrid search.
//
// Embedder is the seam; Local is the deterministic default that needs no
// network, the openai subpackage talks to any OpenAI-compatible gateway,
// and Cached decorates either with a content-hash cache so an unchanged
// chunk is never embedded twice.
package embed

import (
	"context"
	"math"

	"github.com/schemaq/schemaq/pkg/text"
)

// Embedder embeds texts. Implementations are safe for concurrent use and
// return one L2-normalised vector of Dimensions() per text, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model and its settings; vectors of different models
	// are never mixed, and cache keys include it.
	Model() string
	Dimensions() int
}

// Local is a deterministic embedder built from hashed features: analyzed
// word terms, adjacent term pairs, and character 3- and 4-grams of each
// word. Character n-grams let "singers" meet "singer" and "nationality"
// meet "nation" where exact terms do not; term pairs keep a little word
// order. Features are hashed into Dimensions() buckets with a sign bit
// (the hashing trick), so no vocabulary is needed and two processes always
// agree.
type Local struct {
	dim int
}

// DefaultLocalDimensions balances collision noise against KNN cost.
const DefaultLocalDimensions = 512

// NewLocal returns a local embedder of dim dimensions (DefaultLocalDimensions
// when dim ≤ 0).
func NewLocal(dim int) *Local {
	if dim <= 0 {
		dim = DefaultLocalDimensions
	}
	return &Local{dim: dim}
}

// Model implements Embedder. The version changes with the analyzer the
// vectors are built from (v2: abbreviations spelt out), so that no cache
// serves vectors of an older analysis.
func (l *Local) Model() string { return "schemaq-local-v2" }

// Dimensions implements Embedder.
func (l *Local) Dimensions() int { return l.dim }

// Embed implements Embedder. It never fails except on a cancelled context.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = l.Vector(t)
	}
	return out, nil
}

// Feature weights: whole terms carry the meaning; pairs and n-grams add
// word order and fuzziness without drowning it.
const (
	wTerm  = 1.0
	wPair  = 0.5
	wGram3 = 0.25
	wGram4 = 0.35
)

// Vector embeds one text.
func (l *Local) Vector(s string) []float32 {
	v := make([]float32, l.dim)
	terms := text.TextTerms(s)
	for i, t := range terms {
		l.add(v, "w", t, "", wTerm)
		if i > 0 {
			l.add(v, "p", terms[i-1], t, wPair)
		}
	}
	for _, w := range text.Words(s) {
		if text.IsStopWord(w) || len(w) < 3 {
			continue
		}
		padded := "^" + w + "$"
		n3 := len(padded) - 2
		for j := 0; j+3 <= len(padded); j++ {
			l.add(v, "3", padded[j:j+3], "", wGram3/float32(math.Sqrt(float64(n3))))
		}
		n4 := len(padded) - 3
		for j := 0; j+4 <= len(padded); j++ {
			l.add(v, "4", padded[j:j+4], "", wGram4/float32(math.Sqrt(float64(n4))))
		}
	}
	normalize(v)
	return v
}

func (l *Local) add(v []float32, kind, a, b string, w float32) {
	h := fnv(kind, a, b)
	idx := int(h % uint64(l.dim))
	if h&(1<<63) != 0 {
		w = -w
	}
	v[idx] += w
}

// fnv is FNV-1a over kind, a, a separator and b, without allocating.
func fnv(kind, a, b string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range [...]string{kind, a, "\x00", b} {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
	}
	return h
}

func normalize(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
}

// Cosine returns the cosine similarity of two L2-normalised vectors (their
// dot product).
func Cosine(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	// Four accumulators let the CPU overlap the multiply-adds.
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
