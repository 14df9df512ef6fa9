package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/telemetry"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadyzFollowsDependencies(t *testing.T) {
	ns := testenv.NATS(t)
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "i.db"), 8)
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(prometheus.NewRegistry())
	srv := httptest.NewServer(tel.Handler())
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "starting") {
		t.Errorf("with no checks yet: %d %s", code, body)
	}
	ready := false
	tel.AddCheck("nats", telemetry.NATSCheck(nc))
	tel.AddCheck("store", telemetry.StoreCheck(func(ctx context.Context) error {
		_, err := store.Count(ctx, index.Filter{Database: "_readyz"})
		return err
	}))
	tel.AddCheck("consumer", telemetry.FlagCheck("not bound", func() bool { return ready }))
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "consumer: not bound") {
		t.Errorf("consumer not bound: %d %s", code, body)
	}
	ready = true
	if code, body := get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("all ready: %d %s", code, body)
	}
	ns.Shutdown()
	testenv.Eventually(t, 5*time.Second, "unready without NATS", func() bool {
		code, body := get(t, srv.URL+"/readyz")
		return code == 503 && strings.Contains(body, "nats: not connected")
	})
	store.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || !strings.Contains(body, "store:") {
		t.Errorf("store closed: %d %s", code, body)
	}
	if code, _ := get(t, srv.URL+"/healthz"); code != 200 {
		t.Error("healthz must not depend on dependencies")
	}
}

func TestEmbedderMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := telemetry.InstrumentEmbedder(reg, embed.NewCached(embed.NewLocal(8), embed.NewMemoryCache(0)))
	ctx := context.Background()
	_, _ = e.Embed(ctx, []string{"a", "b"})
	_, _ = e.Embed(ctx, []string{"a"})
	srv := httptest.NewServer(telemetry.New(reg).Handler())
	defer srv.Close()
	_, body := get(t, srv.URL+"/metrics")
	for _, want := range []string{`schemaq_embed_calls_total{outcome="ok"} 2`, "schemaq_embed_texts_total 3",
		"schemaq_embed_cache_hits_total 1", "schemaq_embed_cache_misses_total 2", "schemaq_embed_seconds_count 2"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
