package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Workers and daemons refuse a NATS server that cannot do what they need,
// at start and with the fix named, rather than losing docs later.
func TestRolesRefuseServerWithoutJetStream(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(ns.Shutdown)
	for _, role := range []string{"worker", "daemon", "serve"} {
		dir := t.TempDir()
		if role == "daemon" {
			// A daemon over a local index needs a worker on its directory
			// before it goes as far as the server.
			release, err := lockDataDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
		}
		_, stderr, code := runCLI(t, role, "--nats-url", ns.ClientURL(), "--data-dir", dir, "--log-level", "error")
		if code == exitOK || !strings.Contains(stderr, "JetStream is not enabled") {
			t.Errorf("%s: exit %d, stderr %q; want a refusal naming JetStream", role, code, stderr)
		}
	}
}
