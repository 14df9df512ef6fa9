package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestDaemonWithoutAWriterIsRefused: a daemon over a local index that no
// worker writes (beside `up`, with a data directory of its own) took its
// share of searches and answered them with nothing. It is refused at
// start, naming what to run instead; beside a worker on the same data
// directory it starts.
func TestDaemonWithoutAWriterIsRefused(t *testing.T) {
	addr := freePort(t)
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr)
	t.Cleanup(func() { stop() })
	url := "nats://" + addr

	_, stderr, code := runCLI(t, "daemon", "--nats-url", url, "--data-dir", t.TempDir(), "--metrics-addr", "", "--log-level", "error")
	if code == exitOK || !strings.Contains(stderr, "no worker writes the index") || !strings.Contains(stderr, "schemaq serve") || !strings.Contains(stderr, "SCHEMAQ_REDIS_URL") {
		t.Fatalf("a daemon with no writer: exit %d, stderr %q", code, stderr)
	}

	// Beside a worker on the same data directory the daemon starts,
	// and answers from what the worker wrote.
	ns := testenv.NATS(t)
	dir := filepath.Join(t.TempDir(), "shared")
	vars := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_DATA_DIR": dir, "SCHEMAQ_METRICS_ADDR": "", "SCHEMAQ_LOG_LEVEL": "error"}
	startService(t, "worker", []string{"worker"}, vars)
	testenv.Eventually(t, 20*time.Second, "the worker holds the data directory", func() bool {
		_, held := dataDirWriter(dir)
		return held
	})
	startService(t, "daemon", []string{"daemon"}, vars)
	shop := filepath.Join("..", "..", "examples", "shop")
	if out, errOut, code := runAt(t, ns.ClientURL(), "publish", "migrations", "--db", "shop", "--wait", "30s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish: %s %s", out, errOut)
	}
	testenv.Eventually(t, 20*time.Second, "the daemon answers from the worker's index", func() bool {
		out, _, code := runAt(t, ns.ClientURL(), "search", "--db", "shop", "--timeout", "2s", "payments")
		return code == exitOK && strings.Contains(out, "public.payments")
	})
}
