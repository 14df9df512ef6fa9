// Package natsembed runs a NATS server with JetStream inside the process:
// the broker of `schemaq up`, and of every test that needs NATS.
package natsembed

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
	// GrowStoreEvery is how often the server's JetStream storage limit is
	// raised to match the disk's free space (store.go); 0 means a minute.
	GrowStoreEvery time.Duration
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
	if err := os.MkdirAll(o.StoreDir, 0o700); err != nil {
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
	opts.JetStreamMaxStore = storeLimit(o.StoreDir)
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if o.Log != nil {
		// No stack traces: they would be the logger's own, not the
		// server's.
		ns.SetLoggerV2(serverLog{o.Log.WithOptions(zap.AddCallerSkip(1), zap.AddStacktrace(zapcore.FatalLevel))}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(15 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 15s (is %s:%d in use?)", o.Host, o.Port)
	}
	if opts.JetStreamMaxStore > 0 {
		every := o.GrowStoreEvery
		if every <= 0 {
			every = time.Minute
		}
		log := o.Log
		if log == nil {
			log = zap.NewNop()
		}
		go growStore(ns, opts, every, log)
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
