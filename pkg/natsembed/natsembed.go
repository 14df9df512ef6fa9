// Package natsembed runs a NATS server with JetStream inside the process:
// the broker of `schemaq up`, and of every test that needs NATS.
package natsembed

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options of the embedded server.
type Options struct {
	Host     string // 127.0.0.1 unless set
	Port     int    // 4222 unless set; -1 picks a free port
	StoreDir string // JetStream data; survives restarts
	// NoListen serves in-process connections only.
	NoListen bool
}

// Start starts the server and waits until it accepts connections.
func Start(o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: a store directory is required")
	}
	if err := os.MkdirAll(o.StoreDir, 0o755); err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = 4222
	}
	opts := &server.Options{
		ServerName: "schemaq-embedded",
		Host:       o.Host,
		Port:       o.Port,
		DontListen: o.NoListen,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoLog:      true,
		NoSigs:     true,
		// Schema dumps can be large; the default 1 MiB max_payload matches
		// events.DefaultMaxEventBytes.
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(15 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 15s (is %s:%d in use?)", o.Host, o.Port)
	}
	return ns, nil
}
