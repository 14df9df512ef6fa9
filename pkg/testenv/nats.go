package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/pkg/natsembed"
)

// NATS starts a server on a free port with its store in t.TempDir();
// both are cleaned up when the test ends.
func NATS(t testing.TB) *server.Server {
	t.Helper()
	return NATSWith(t, natsembed.Options{})
}

// NATSWith starts a server as Server does, with o's other settings
// (a small MaxPayload, a logger).
func NATSWith(t testing.TB, o natsembed.Options) *server.Server {
	t.Helper()
	o.Port, o.StoreDir = -1, t.TempDir()
	ns, err := natsembed.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	return ns
}

// Connect connects to ns; the connection closes with the test.
func Connect(t testing.TB, ns *server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), nats.Name(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Eventually polls cond every 10 ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
