package httprerank

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/rerank"
)

func TestRerank(t *testing.T) {
	var got request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/rerank" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad", 400)
			return
		}
		_ = json.NewDecoder(r.Body).Decode(&got)
		// Scores the last document highest and leaves the first out.
		_, _ = w.Write([]byte(`{"id":"x","results":[{"index":2,"relevance_score":0.9},{"index":1,"relevance_score":0.2}],"meta":{}}`))
	}))
	defer srv.Close()
	r, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "rerank-v3"})
	if err != nil {
		t.Fatal(err)
	}
	cands := []rerank.Candidate{{Name: "a", Text: "alpha"}, {Name: "b", Text: "beta"}, {Name: "c", Text: "gamma"}}
	out, err := r.Rerank(context.Background(), "which one?", cands)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out {
		names = append(names, c.Name)
	}
	if strings.Join(names, "") != "cba" || out[0].Score != 0.9 {
		t.Errorf("order %v scores %v", names, out)
	}
	if got.Query != "which one?" || len(got.Documents) != 3 || got.TopN != 3 || got.Model != "rerank-v3" {
		t.Errorf("request %+v", got)
	}
}

func TestRerankErrors(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"500":       func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 500) },
		"malformed": func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"results": [`)) },
		"bad index": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"results":[{"index":7,"relevance_score":1}]}`))
		},
		"too slow": func(w http.ResponseWriter, r *http.Request) { time.Sleep(300 * time.Millisecond) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(handler)
			defer srv.Close()
			r, _ := New(Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond, Retry: httpretry.Config{MaxRetries: 1, InitialInterval: time.Millisecond}})
			if _, err := r.Rerank(context.Background(), "q", []rerank.Candidate{{Name: "a"}}); err == nil {
				t.Error("want an error")
			}
		})
	}
}
