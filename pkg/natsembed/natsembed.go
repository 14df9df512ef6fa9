// Package natsembed runs a NATS server with JetStream inside the process:
// the broker of `schemaq up`, and of every test that needs NATS.
package natsembed

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"
)

// Options of the embedded server.
type Options struct {
	Host     string // 127.0.0.1 unless set
	Port     int    // 4222 unless set; -1 picks a free port
	StoreDir string // JetStream data; survives restarts
	// NoListen serves in-process connections only.
	NoListen bool
	// MaxPayload is the largest message the server takes (NATS' default,
	// 1 MiB, when 0).
	MaxPayload int32
	// Log receives the server's warnings and errors (its notices at
	// debug level); nil discards them. A full disk shows up here first:
	// JetStream says so long before a publish times out.
	Log *zap.Logger
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
		NoLog:      o.Log == nil,
		NoSigs:     true,
		MaxPayload: o.MaxPayload,
		// Schema dumps can be large; the default 1 MiB max_payload matches
		// events.DefaultMaxEventBytes.
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Log != nil {
		ns.SetLoggerV2(serverLog{o.Log.WithOptions(zap.AddCallerSkip(1))}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(15 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 15s (is %s:%d in use?)", o.Host, o.Port)
	}
	return ns, nil
}

// serverLog is nats-server's Logger over zap.
type serverLog struct{ log *zap.Logger }

func (l serverLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l serverLog) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLog) Fatalf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l serverLog) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l serverLog) Tracef(format string, v ...any)  {}
