package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestServingPortBoundBeforeReady: a process reports ready only once
// its serving port accepts, so a Kubernetes probe never sends clients to
// a refused connection. The port is bound before anything else starts:
// a port another process holds fails the command at once, naming it,
// before NATS is dialled and before any probe can pass. (The serve case
// guards the order startDaemon keeps: the daemon is published to the
// readiness check only after BindHTTP.)
func TestServingPortBoundBeforeReady(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	ns := testenv.NATS(t)
	for _, tc := range []struct {
		name string
		args []string
		nats string
		want string
	}{
		// No NATS listens on port 1: the error must be the port's, so
		// the port was tried first.
		{"mcp", []string{"mcp", "--http", addr}, "nats://127.0.0.1:1", "mcp --http " + addr},
		{"serve", []string{"serve", "--http-addr", addr}, ns.ClientURL(), "http listener " + addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := freePort(t)
			vars := map[string]string{"SCHEMAQ_NATS_URL": tc.nats, "SCHEMAQ_METRICS_ADDR": metrics, "SCHEMAQ_DATA_DIR": t.TempDir()}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan string, 1)
			go func() {
				// runVars: the roles log from several goroutines.
				out, err := runVars(ctx, tc.args, vars)
				done <- fmt.Sprint(out, err)
			}()
			for {
				if _, err := runVars(ctx, []string{"healthcheck", "--path", "/readyz"}, map[string]string{"SCHEMAQ_METRICS_ADDR": metrics}); err == nil {
					t.Errorf("%s reported ready while its port %s was another's", tc.name, addr)
				}
				select {
				case errOut := <-done:
					if !strings.Contains(errOut, tc.want) {
						t.Errorf("%s with its port taken: want an error naming %q, got %s", tc.name, tc.want, errOut)
					}
					return
				case <-ctx.Done():
					t.Fatalf("%s with its port taken did not stop", tc.name)
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
}
