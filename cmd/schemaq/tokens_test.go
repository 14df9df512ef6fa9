package main

import (
	"path/filepath"
	"testing"
)

// TestEveryGatewayCallCounts: an ask whose answer is refused twice (the
// first and the repair round) and one the gateway fails still spent
// calls and tokens, and /metrics counts them.
func TestEveryGatewayCallCounts(t *testing.T) {
	llm := fakeLLM(t)
	metrics := freePort(t)
	addr := freePort(t)
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m",
		"SCHEMAQ_LLM_RETRIES", "0", "SCHEMAQ_METRICS_ADDR", metrics)
	t.Cleanup(func() { stop() })
	url := "nats://" + addr
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	if _, _, code := runAt(t, url, "ask", "--db", "shop", "How many ghosts? answer[SELECT count(*) FROM ghosts]"); code == exitOK {
		t.Fatal("the refused answer passed")
	}
	if got := metricValue(t, metrics, "schemaq_daemon_llm_calls_total"); got != 2 {
		t.Errorf("a refused answer and its repair round: %v calls counted, want 2", got)
	}
	if got := metricValue(t, metrics, `schemaq_daemon_llm_tokens_total{kind="prompt"}`); got != 20 {
		t.Errorf("prompt tokens of the two refused calls: %v, want 20", got)
	}
	if _, _, code := runAt(t, url, "ask", "--db", "shop", "gateway-down"); code == exitOK {
		t.Fatal("the gateway's failure passed")
	}
	if got := metricValue(t, metrics, "schemaq_daemon_llm_calls_total"); got != 3 {
		t.Errorf("after a failed call: %v calls counted, want 3", got)
	}
}
