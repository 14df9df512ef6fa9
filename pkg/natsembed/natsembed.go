// Package natsembed runs a NATS server with JetStream inside the process:
// the broker of `schemaq up`, and of every test that needs NATS.
package natsembed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/schemaq/schemaq/pkg/loopback"
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
	// Authorization. ConfigFile is a nats-server configuration file whose
	// accounts, users, permissions and TLS the server takes (its listen
	// address and JetStream store are the ones above); Token, or User and
	// Password, is the simple case. The server refuses to listen beyond
	// loopback with none of them (ErrOpen).
	ConfigFile     string
	Token          string
	User, Password string
}

// ErrOpen is the refusal to serve NATS beyond this machine with no
// authorization: whoever reached it could publish schemas and delete
// dead letters.
var ErrOpen = errors.New("the embedded NATS server would listen beyond loopback with no authorization")

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
	opts, err := o.serverOptions()
	if err != nil {
		return nil, err
	}
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

// serverOptions are the server's options: the configuration file's,
// when there is one, with the listen address, the JetStream store and
// the logging set here.
func (o Options) serverOptions() (*server.Options, error) {
	opts := &server.Options{}
	if o.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(o.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
	}
	opts.ServerName = "schemaq-embedded"
	opts.Host, opts.Port, opts.DontListen = o.Host, o.Port, o.NoListen
	opts.JetStream, opts.StoreDir = true, o.StoreDir
	opts.NoLog, opts.NoSigs = o.Log == nil, true
	if o.MaxPayload > 0 {
		opts.MaxPayload = o.MaxPayload
	}
	switch {
	case o.Token != "":
		opts.Authorization = o.Token
	case o.User != "":
		opts.Username, opts.Password = o.User, o.Password
	}
	if !o.NoListen && !loopback.Host(o.Host) && !authorized(opts) {
		return nil, fmt.Errorf("%w: listening on %s; set a token (SCHEMAQ_NATS_TOKEN), a user and password (SCHEMAQ_NATS_USER, SCHEMAQ_NATS_PASSWORD) or a configuration with authorization (--nats-config), or listen on 127.0.0.1", ErrOpen, net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	}
	opts.JetStreamMaxStore = storeLimit(o.StoreDir)
	return opts, nil
}

// authorized reports whether opts ask clients to authenticate.
func authorized(opts *server.Options) bool {
	return opts.Authorization != "" || opts.Username != "" || len(opts.Users) > 0 || len(opts.Nkeys) > 0 ||
		len(opts.TrustedOperators) > 0 || len(opts.TrustedKeys) > 0 || opts.AuthCallout != nil ||
		(opts.TLSConfig != nil && opts.TLSVerify)
}
