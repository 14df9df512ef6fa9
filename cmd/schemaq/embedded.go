package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/natsembed"
)

// embedded is a whole schemaq in this process: what `up` runs, and what
// the load benchmarks measure.
type embedded struct {
	ns   *server.Server
	nc   *nats.Conn // the runtime's own connection
	url  string
	done chan error
	stop context.CancelFunc
}

// startEmbedded starts NATS (listening on host:port, or in-process only
// when port is 0) and the worker and daemon over r's settings.
func startEmbedded(ctx context.Context, r *roleFlags, log *zap.Logger, host string, port int) (*embedded, error) {
	ns, err := natsembed.Start(natsembed.Options{Host: host, Port: port, NoListen: port == 0, StoreDir: filepath.Join(*r.dataDir, "nats")})
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.Name("schemaq-embedded"), nats.InProcessServer(ns))
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("connect to the embedded server: %w", err)
	}
	rt, err := r.open(ctx, log, nc)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	em := &embedded{ns: ns, nc: nc, url: ns.ClientURL(), done: make(chan error, 1), stop: cancel}
	go func() { em.done <- rt.run(runCtx, r, true, true) }()
	return em, nil
}

// connect opens another in-process client connection.
func (em *embedded) connect() (*nats.Conn, error) {
	return nats.Connect(em.url, nats.Name("schemaq-client"), nats.InProcessServer(em.ns))
}

// shutdown stops the roles, then the server.
func (em *embedded) shutdown() error {
	em.stop()
	err := <-em.done
	em.ns.Shutdown()
	return err
}
