package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/httpretry"
)

var _ embed.Embedder = (*Embedder)(nil)

// gateway speaks the OpenAI /v1/embeddings shape and scripts failures.
type gateway struct {
	mu       sync.Mutex
	requests []map[string]any
	script   []int // status codes to answer before succeeding
	delay    time.Duration
	dim      int
}

// calls is how many embedding requests arrived; handlers may still be
// running (a timed-out request), so it takes the lock.
func (g *gateway) calls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.requests)
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); key != "sk-secret-key" {
		// OpenAI echoes the key it was given; we must not pass that on.
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error"}}`))
		return
	}
	var req map[string]any
	_ = json.NewDecoder(r.Body).Decode(&req)
	g.mu.Lock()
	g.requests = append(g.requests, req)
	var status int
	if len(g.script) > 0 {
		status, g.script = g.script[0], g.script[1:]
	}
	g.mu.Unlock()
	time.Sleep(g.delay)
	if status != 0 {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"try later","type":"server_error"}}`))
		return
	}
	inputs, _ := req["input"].([]any)
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	resp := struct {
		Object string         `json:"object"`
		Data   []datum        `json:"data"`
		Model  string         `json:"model"`
		Usage  map[string]int `json:"usage"`
	}{Object: "list", Model: req["model"].(string), Usage: map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}
	for i := range inputs {
		v := make([]float32, g.dim)
		v[i%g.dim] = 2 // not normalised on purpose
		resp.Data = append(resp.Data, datum{"embedding", i, v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func newEmbedder(t *testing.T, g *gateway, timeout time.Duration, key string) *Embedder {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	e, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: key, Model: "text-embedding-3-small",
		Dimensions: 8, BatchSize: 4, Timeout: timeout,
		Retry: httpretry.Config{MaxRetries: 2, InitialInterval: time.Millisecond, MaxInterval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEmbedBatchesAndNormalises(t *testing.T) {
	g := &gateway{dim: 8}
	e := newEmbedder(t, g, time.Second, "sk-secret-key")
	texts := []string{"a", "b", "c", "d", "e", "f"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 6 || g.calls() != 2 {
		t.Fatalf("%d vectors in %d requests, want 6 in 2", len(vecs), g.calls())
	}
	if vecs[5][1] != 1 {
		t.Errorf("vector 6 = %v, want the gateway's 6th (index 1 of batch 2) normalised", vecs[5])
	}
	if g.requests[0]["model"] != "text-embedding-3-small" || g.requests[0]["dimensions"] != float64(8) {
		t.Errorf("request %v", g.requests[0])
	}
}

func TestEmbedErrors(t *testing.T) {
	tests := []struct {
		name    string
		g       *gateway
		key     string
		timeout time.Duration
		wantErr string
		calls   int
	}{
		{"429 then success is retried", &gateway{dim: 8, script: []int{429}}, "", time.Second, "", 2},
		{"500 twice then success", &gateway{dim: 8, script: []int{500, 500}}, "", time.Second, "", 3},
		{"500 past the retries fails", &gateway{dim: 8, script: []int{500, 500, 500}}, "", time.Second, "500", 3},
		{"wrong dimension", &gateway{dim: 4}, "", time.Second, "got 4 dimensions, configured 8", 1},
		{"timeout", &gateway{dim: 8, delay: 300 * time.Millisecond}, "", 50 * time.Millisecond, "exceeded", 1},
		{"bad key is not retried and not leaked", &gateway{dim: 8}, "sk-wrong-key", time.Second, "401", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := "sk-secret-key"
			if tc.key != "" {
				key = tc.key
			}
			e := newEmbedder(t, tc.g, tc.timeout, key)
			_, err := e.Embed(context.Background(), []string{"x"})
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), key) {
				t.Errorf("error leaks the API key: %v", err)
			}
			if tc.calls > 0 && tc.g.calls() != tc.calls {
				t.Errorf("%d calls, want %d", tc.g.calls(), tc.calls)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	_, err := New(Config{})
	for _, want := range []string{"base URL", "model", "dimensions"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v should name %s", err, want)
		}
	}
}
