package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/natsembed"
)

// embedded is a whole schemaq in this process: what `up` runs, and what
// the load benchmarks measure.
type embedded struct {
	ns   *server.Server
	nc   *nats.Conn // the runtime's own connection
	url  string
	auth []nats.Option // the in-process clients' credentials
	done chan error
	stop context.CancelFunc
	// unlock releases the data directory, once everything is shut down.
	unlock func()
}

// startEmbedded starts NATS (listening on host:port, or in-process only
// when port is 0) and the worker and daemon over r's settings.
func startEmbedded(ctx context.Context, r *roleFlags, log *zap.Logger, host string, port int) (*embedded, error) {
	unlock, err := lockDataDir(*r.dataDir)
	if err != nil {
		return nil, err
	}
	// The server takes the credentials clients are given
	// (SCHEMAQ_NATS_TOKEN, or _USER and _PASSWORD), and the in-process
	// clients present them too.
	ns, err := natsembed.Start(natsembed.Options{Host: host, Port: port, NoListen: port == 0, StoreDir: filepath.Join(*r.dataDir, "nats"), Log: log.Named("nats"),
		ConfigFile: r.natsConfig, Token: r.nats.token, User: r.nats.user, Password: r.nats.password})
	if errors.Is(err, natsembed.ErrOpen) {
		unlock()
		return nil, usagef("%v", err)
	}
	if err != nil {
		unlock()
		return nil, err
	}
	auth := r.nats.credentials()
	nc, err := nats.Connect(ns.ClientURL(), append(auth, nats.Name("schemaq-embedded"), nats.InProcessServer(ns), asyncErrorsTo(log))...)
	if err != nil {
		ns.Shutdown()
		unlock()
		return nil, fmt.Errorf("connect to the embedded server: %w", err)
	}
	rt, err := r.open(ctx, log, nc, true)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		unlock()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	em := &embedded{ns: ns, nc: nc, url: ns.ClientURL(), auth: auth, done: make(chan error, 1), stop: cancel, unlock: unlock}
	go func() { em.done <- rt.run(runCtx, r, true, true) }()
	if err := em.waitReady(ctx); err != nil {
		_ = em.shutdown()
		return nil, err
	}
	return em, nil
}

// waitReady returns once the query service answers its own ping, so that
// "up" is only announced when requests can be served.
func (em *embedded) waitReady(ctx context.Context) error {
	probe, err := em.connect()
	if err != nil {
		return err
	}
	defer probe.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := probe.Request("$SRV.PING."+events.ServiceName, nil, 200*time.Millisecond); err == nil {
			return nil
		}
		select {
		case err := <-em.done:
			if err == nil {
				err = ctx.Err()
			}
			em.done <- err // shutdown reads it again
			return fmt.Errorf("schemaq did not start: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("schemaq did not become ready within 30s")
		}
	}
}

// connect opens another in-process client connection.
func (em *embedded) connect() (*nats.Conn, error) {
	// Its async errors (a watch losing its consumer as the server stops)
	// are not the caller's: without a handler nats.go prints them.
	return nats.Connect(em.url, append(em.auth, nats.Name("schemaq-client"), nats.InProcessServer(em.ns), asyncErrorsTo(zap.NewNop()))...)
}

// shutdown stops the roles, then the server.
func (em *embedded) shutdown() error {
	em.stop()
	err := <-em.done
	em.ns.Shutdown()
	em.ns.WaitForShutdown()
	em.unlock()
	return err
}

// asyncErrorsTo logs a connection's asynchronous errors, which nats.go
// would otherwise print to stderr.
func asyncErrorsTo(log *zap.Logger) nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		subject := ""
		if sub != nil {
			subject = sub.Subject
		}
		log.Warn("nats async error", zap.String("subject", subject), zap.Error(err))
	})
}
