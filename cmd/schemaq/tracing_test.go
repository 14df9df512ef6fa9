package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// collector is an OTLP/HTTP trace receiver: what a collector or Jaeger
// runs, decoding the protobuf requests the exporter sends.
type collector struct {
	mu    sync.Mutex
	spans map[string][]string // span name → the names of its span events
	roles []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP trace export", http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "schemaq.role" {
				c.roles = append(c.roles, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				var evs []string
				for _, e := range s.Events {
					evs = append(evs, e.Name)
				}
				c.spans[s.Name] = append(c.spans[s.Name], evs...)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	_, _ = w.Write(b)
}

func (c *collector) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.spans {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestTracesReachAnOTLPEndpoint: with OTEL_EXPORTER_OTLP_ENDPOINT set, up
// exports the spans of an event (applied, projected, acknowledged) and of
// a search (the request, retrieval and its stages) over OTLP/HTTP.
func TestTracesReachAnOTLPEndpoint(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms: the SDK reads it from the process
	col := &collector{spans: map[string][]string{}}
	srv := httptest.NewServer(col)
	defer srv.Close()
	dir := t.TempDir()
	addr := freePort(t)
	stop := startUp(t, filepath.Join(dir, "data"), addr, "OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL, "SCHEMAQ_HTTP_ADDR", "")
	shop := filepath.Join("..", "..", "examples", "shop")
	if out, errOut, code := runAt(t, "nats://"+addr, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish (exit %d): %s %s", code, out, errOut)
	}
	if out, _, code := runAt(t, "nats://"+addr, "search", "--db", "shop", "which customers placed the most orders"); code != exitOK {
		t.Fatalf("search: %s", out)
	}
	want := []string{"schemaq.event schema.migration", "schemaq.search", "retrieve", "gather", "fuse", "rerank", "expand"}
	testenv.Eventually(t, 10*time.Second, "spans exported", func() bool {
		got := col.names()
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
	stop()
	col.mu.Lock()
	defer col.mu.Unlock()
	if evs := strings.Join(col.spans["schemaq.event schema.migration"], " "); !strings.Contains(evs, "applied") || !strings.Contains(evs, "projected") {
		t.Errorf("the migration spans' events: %s", evs)
	}
	if !slices.Contains(col.roles, "up") {
		t.Errorf("resource roles %v, want up", col.roles)
	}
}
