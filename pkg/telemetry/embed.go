package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schemaq/schemaq/pkg/embed"
)

// Embedder counts and times an embedder's calls.
type Embedder struct {
	embed.Embedder
	calls   *prometheus.CounterVec
	texts   prometheus.Counter
	seconds prometheus.Histogram
}

// InstrumentEmbedder wraps e, registering its metrics on reg. When e is an
// *embed.Cached, its hits and misses are exported too.
func InstrumentEmbedder(reg prometheus.Registerer, e embed.Embedder) *Embedder {
	m := &Embedder{
		Embedder: e,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_embed_calls_total",
			Help: "Embedding calls by outcome (ok, error)."}, []string{"outcome"}),
		texts: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_embed_texts_total",
			Help: "Texts sent for embedding (before the cache)."}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "schemaq_embed_seconds",
			Help: "Latency of embedding calls.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}),
	}
	reg.MustRegister(m.calls, m.texts, m.seconds)
	if c, ok := e.(*embed.Cached); ok {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_embed_cache_hits_total",
				Help: "Texts whose embedding came from the cache."}, func() float64 { h, _ := c.Stats(); return float64(h) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_embed_cache_misses_total",
				Help: "Texts that had to be embedded."}, func() float64 { _, m := c.Stats(); return float64(m) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_embed_cache_failures_total",
				Help: "Cache reads and writes that failed (the texts were embedded as if not cached)."}, func() float64 { return float64(c.Failures()) }),
		)
	}
	return m
}

// Embed implements embed.Embedder.
func (m *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t0 := time.Now()
	out, err := m.Embedder.Embed(ctx, texts)
	m.seconds.Observe(time.Since(t0).Seconds())
	m.texts.Add(float64(len(texts)))
	if err != nil {
		m.calls.WithLabelValues("error").Inc()
	} else {
		m.calls.WithLabelValues("ok").Inc()
	}
	return out, err
}
