package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCommandsFindTheLocalUp: after `up` on ports of its own, commands
// given only its data directory (SCHEMAQ_DATA_DIR, or .schemaq where
// they run) reach it, healthcheck probes its health endpoint and not a
// fixed port, and the banner prints the export line. A file left by an
// up that is gone is not read.
func TestCommandsFindTheLocalUp(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	addr, metrics := freePort(t), freePort(t)
	stopUp := startUp(t, data, addr, "SCHEMAQ_METRICS_ADDR", metrics)
	var once sync.Once
	var logs string
	stop := func() string { once.Do(func() { logs = stopUp() }); return logs }
	t.Cleanup(func() { stop() })

	path := filepath.Join(data, endpointsFile)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("endpoints file: %v %v, want mode 0600", err, info)
	}
	var ep endpoints
	if b, _ := os.ReadFile(path); json.Unmarshal(b, &ep) != nil || ep.NATS != "nats://"+addr || ep.Metrics != "http://"+metrics {
		t.Fatalf("endpoints: %+v", ep)
	}

	vars := map[string]string{"SCHEMAQ_DATA_DIR": data}
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	if out, code := runWith(t, vars, "publish", "migrations", "--db", "shop", "--wait", "20s", shop); code != exitOK || !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("publish without a URL: exit %d\n%s", code, out)
	}
	if out, code := runWith(t, vars, "healthcheck"); code != exitOK || !strings.Contains(out, "http://"+metrics+"/readyz") {
		t.Errorf("healthcheck without an address: exit %d\n%s", code, out)
	}

	stop()
	if !strings.Contains(logs, "export SCHEMAQ_NATS_URL=nats://"+addr) {
		t.Errorf("the banner has no export line:\n%s", logs)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the endpoints file outlives up: %v", err)
	}
	// One left behind by an up that died is not believed.
	if _, err := writeEndpoints(data, endpoints{NATS: "nats://" + addr}); err != nil {
		t.Fatal(err)
	}
	if ep := localEndpoints(data); ep != nil {
		t.Errorf("the endpoints of an up that is gone were read: %+v", ep)
	}
}

func runWith(t *testing.T, vars map[string]string, args ...string) (string, int) {
	t.Helper()
	out, errOut, code := runVars2(t, args, vars)
	return out + errOut, code
}
