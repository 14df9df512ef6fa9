// Package openai embeds through any OpenAI-compatible /v1/embeddings
// endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM, TEI) with
// github.com/sashabaranov/go-openai.
package openai

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/redact"
)

// Config of the embedder. APIKey is a secret: it never appears in errors
// or logs.
type Config struct {
	BaseURL    string // e.g. https://api.openai.com/v1
	APIKey     string
	Model      string
	Dimensions int // requested from models that support it; 0 keeps the model's own
	BatchSize  int // texts per request (default 64)
	Timeout    time.Duration
	Retry      httpretry.Config
}

// Embedder calls the gateway. It is safe for concurrent use.
type Embedder struct {
	cfg    Config
	client *goopenai.Client
	dim    int
}

// New validates cfg and builds the embedder; it does not dial out.
func New(cfg Config) (*Embedder, error) {
	var problems []error
	if cfg.BaseURL == "" {
		problems = append(problems, errors.New("embedder base URL is required"))
	}
	if cfg.Model == "" {
		problems = append(problems, errors.New("embedder model is required"))
	}
	if cfg.Dimensions <= 0 {
		problems = append(problems, errors.New("embedder dimensions must be set (the vector index needs it before the first call)"))
	}
	if err := errors.Join(problems...); err != nil {
		return nil, err
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: httpretry.New(nil, cfg.Retry)}
	return &Embedder{cfg: cfg, client: goopenai.NewClientWithConfig(oc), dim: cfg.Dimensions}, nil
}

// Model implements embed.Embedder.
func (e *Embedder) Model() string { return e.cfg.Model }

// Dimensions implements embed.Embedder.
func (e *Embedder) Dimensions() int { return e.dim }

// Embed implements embed.Embedder, in batches of BatchSize.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		end := min(start+e.cfg.BatchSize, len(texts))
		req := goopenai.EmbeddingRequestStrings{Input: texts[start:end], Model: goopenai.EmbeddingModel(e.cfg.Model)}
		if e.cfg.Dimensions > 0 {
			req.Dimensions = e.cfg.Dimensions
		}
		resp, err := e.client.CreateEmbeddings(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("embed %d texts with %s at %s: %w", end-start, e.cfg.Model, e.cfg.BaseURL, e.redact(err))
		}
		if len(resp.Data) != end-start {
			return nil, fmt.Errorf("embed with %s: gateway returned %d embeddings for %d texts", e.cfg.Model, len(resp.Data), end-start)
		}
		batch := make([][]float32, end-start)
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(batch) || batch[d.Index] != nil {
				return nil, fmt.Errorf("embed with %s: gateway returned embedding index %d out of order", e.cfg.Model, d.Index)
			}
			if len(d.Embedding) != e.dim {
				return nil, fmt.Errorf("embed with %s: got %d dimensions, configured %d", e.cfg.Model, len(d.Embedding), e.dim)
			}
			batch[d.Index] = normalized(d.Embedding)
		}
		out = append(out, batch...)
	}
	return out, nil
}

// redact keeps the API key out of error text whatever a gateway echoes.
func (e *Embedder) redact(err error) error {
	msg := redact.Text(err.Error()) // a key or password in the URL an HTTP error quotes
	if e.cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, e.cfg.APIKey, "[redacted]")
	}
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

func normalized(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(s))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
