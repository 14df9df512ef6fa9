package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/schemaq/schemaq/pkg/ask"
)

// A failing gateway is logged with its status and message, secrets
// redacted, once per status and interval, with how many were left out.
func TestGatewayFailuresAreLogged(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	g := newGatewayLog()
	now := time.Unix(0, 0)
	g.now = func() time.Time { return now }
	fail := func(status int, msg string) error {
		return &ask.GatewayFailure{Err: &ask.GatewayError{Status: status, Msg: msg}}
	}
	g.failed(log, "ask", fail(401, "invalid api key for https://gw.example/v1?api-key=sk-secret"))
	g.failed(log, "ask", fail(401, "again"))
	g.failed(log, "ask", fail(500, "upstream overloaded"))
	g.failed(log, "ask", errors.New("not a gateway failure"))
	now = now.Add(gatewayLogEvery)
	g.failed(log, "ask", fail(401, "still"))

	entries := logs.All()
	if len(entries) != 3 {
		t.Fatalf("%d lines, want 3: %v", len(entries), entries)
	}
	first := entries[0]
	if first.Level != zapcore.ErrorLevel || first.ContextMap()["status"] != int64(401) {
		t.Errorf("a refused key: %+v", first)
	}
	if msg, _ := first.ContextMap()["error"].(string); msg == "" || strings.Contains(msg, "sk-secret") || !strings.Contains(msg, "invalid api key") {
		t.Errorf("the message: %q", msg)
	}
	if entries[1].Level != zapcore.WarnLevel || entries[1].ContextMap()["status"] != int64(500) {
		t.Errorf("a 500: %+v", entries[1])
	}
	if entries[2].ContextMap()["like_it_since_last_logged"] != int64(1) {
		t.Errorf("the next 401 should count the one left out: %+v", entries[2].ContextMap())
	}
}
