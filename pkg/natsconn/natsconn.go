// Package natsconn connects to NATS with the options real deployments need:
// several server URLs, credentials files, nkey seeds, user/password or
// token, TLS with a private CA and client certificates, a connection name,
// and endless reconnects with jittered backoff, logged.
package natsconn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// Config holds connection settings. Password and Token are secrets: they
// are never logged or put in errors.
type Config struct {
	URLs     []string
	Name     string
	Creds    string // credentials file (JWT + seed)
	NKeySeed string // nkey seed file
	User     string
	Password string
	Token    string
	CAFile   string
	CertFile string
	KeyFile  string
	// ConnectTimeout bounds the first connection.
	ConnectTimeout time.Duration
	// InboxPrefix replaces _INBOX in the subjects replies come back on:
	// in an account shared by several users, each may then be granted
	// subscribe on its own prefix only, not on every reply of _INBOX.>.
	InboxPrefix string
}

// Validate checks the settings before anything dials out, naming every
// problem.
func (c Config) Validate() error {
	var errs []error
	if len(c.URLs) == 0 {
		errs = append(errs, errors.New("nats url: at least one server URL is required"))
	}
	for _, u := range c.URLs {
		if !strings.Contains(u, "://") {
			errs = append(errs, fmt.Errorf("nats url: %q needs a scheme (nats://, tls://, ws://)", u))
		}
	}
	auth := 0
	for _, set := range []bool{c.Creds != "", c.NKeySeed != "", c.User != "", c.Token != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 {
		errs = append(errs, errors.New("nats auth: use one of credentials file, nkey seed, user/password or token"))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("nats tls: a client certificate needs both the certificate and the key file"))
	}
	if p := c.InboxPrefix; p != "" && (strings.ContainsAny(p, "*> \t\r\n") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..")) {
		errs = append(errs, fmt.Errorf("nats inbox prefix %q: a subject of literal tokens, such as _INBOX_shop", p))
	}
	if c.Password != "" && c.User == "" {
		errs = append(errs, errors.New("nats auth: a password needs a user"))
	}
	return errors.Join(errs...)
}

// Options turns the config into nats.Options, with log on connection
// events.
func (c Config) Options(log *zap.Logger) ([]nats.Option, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(false),
		nats.CustomReconnectDelay(func(attempts int) time.Duration {
			// 250 ms doubling to 8 s, ±25% so a fleet does not reconnect in step.
			d := 250 * time.Millisecond << min(attempts, 5)
			return time.Duration(float64(d) * (0.75 + 0.5*rand.Float64()))
		}),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			// Close calls this too, without an error: a clean exit is not
			// a disconnection worth a warning.
			if err == nil && nc.IsClosed() {
				return
			}
			log.Warn("nats disconnected", zap.Error(err))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", zap.String("url", nc.ConnectedUrlRedacted()))
		}),
		nats.ClosedHandler(func(*nats.Conn) { log.Info("nats connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats async error", zap.String("subject", subject), zap.Error(err))
		}),
	}
	if c.ConnectTimeout > 0 {
		opts = append(opts, nats.Timeout(c.ConnectTimeout))
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	switch {
	case c.Creds != "":
		opts = append(opts, nats.UserCredentials(c.Creds))
	case c.NKeySeed != "":
		o, err := nats.NkeyOptionFromSeed(c.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("nats nkey seed %s: %w", c.NKeySeed, err)
		}
		opts = append(opts, o)
	case c.User != "":
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	if c.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.CertFile, c.KeyFile))
	}
	return opts, nil
}

// Connect dials the servers.
func Connect(c Config, log *zap.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := c.Options(log)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(strings.Join(c.URLs, ","), append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", redact(c.URLs), err)
	}
	return nc, nil
}

// redact hides passwords in URLs like nats://user:pass@host.
func redact(urls []string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		if at := strings.LastIndex(u, "@"); at > 0 {
			if scheme := strings.Index(u, "://"); scheme >= 0 && scheme < at {
				creds := u[scheme+3 : at]
				if user, _, ok := strings.Cut(creds, ":"); ok {
					u = u[:scheme+3] + user + ":[redacted]" + u[at:]
				}
			}
		}
		out[i] = u
	}
	return strings.Join(out, ",")
}
