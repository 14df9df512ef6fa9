// Package httprerank is the gateway reranker: a cross-encoder behind an
// HTTP /rerank endpoint in the Cohere, Jina and TEI shape
// ({model, query, documents, top_n} → {results: [{index, relevance_score}]}).
// It is opt-in; when it fails, retrieval keeps its fused order and says so.
package httprerank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/redact"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// Config of the reranker; APIKey is a secret.
type Config struct {
	BaseURL string // e.g. https://api.cohere.com/v2 or http://tei:8080
	APIKey  string
	Model   string
	Timeout time.Duration
	Retry   httpretry.Config
	// MaxChars bounds each document sent (long DDL is cut).
	MaxChars int
}

// Reranker calls the endpoint. Safe for concurrent use.
type Reranker struct {
	cfg    Config
	client *http.Client
}

var _ rerank.Reranker = (*Reranker)(nil)

// New validates cfg.
func New(cfg Config) (*Reranker, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("rerank base URL is required (SCHEMAQ_RERANK_BASE_URL)")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = 4000
	}
	return &Reranker{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout, Transport: httpretry.New(nil, cfg.Retry)}}, nil
}

type request struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type response struct {
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
}

// Rerank implements rerank.Reranker: candidates the endpoint scored come
// first by relevance; any it left out follow in their previous order.
func (r *Reranker) Rerank(ctx context.Context, query string, cands []rerank.Candidate) ([]rerank.Candidate, error) {
	if len(cands) == 0 {
		return cands, nil
	}
	docs := make([]string, len(cands))
	for i, c := range cands {
		d := c.Title + "\n" + c.Text
		if len(d) > r.cfg.MaxChars {
			d = d[:r.cfg.MaxChars]
		}
		docs[i] = d
	}
	body, _ := json.Marshal(request{Model: r.cfg.Model, Query: query, Documents: docs, TopN: len(docs)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.cfg.BaseURL, "/")+"/rerank", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.APIKey)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rerank: %w", ctx.Err())
		}
		// The error quotes the URL, secrets and all.
		return nil, fmt.Errorf("rerank: %s", redact.Text(err.Error()))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("rerank: %s answered %d: %.200s", redact.URL(r.cfg.BaseURL), resp.StatusCode, raw)
	}
	var out response
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("rerank: malformed reply: %w", err)
	}
	scored := make([]bool, len(cands))
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	for _, res := range out.Results {
		if res.Index < 0 || res.Index >= len(cands) || scored[res.Index] {
			return nil, fmt.Errorf("rerank: reply has index %d for %d documents", res.Index, len(cands))
		}
		scored[res.Index] = true
		hits = append(hits, hit{res.Index, res.RelevanceScore})
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	ordered := make([]rerank.Candidate, 0, len(cands))
	for _, h := range hits {
		c := cands[h.i]
		c.Score = h.score
		ordered = append(ordered, c)
	}
	for i, c := range cands {
		if !scored[i] {
			c.Score = 0
			ordered = append(ordered, c)
		}
	}
	return ordered, nil
}
