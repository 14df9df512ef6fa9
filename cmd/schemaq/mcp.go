package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/loopback"
	"github.com/schemaq/schemaq/pkg/mcpserver"
	"github.com/schemaq/schemaq/pkg/telemetry"
)

// runMCP serves schemaq's tools to AI agents over MCP: stdio for a local
// agent, streamable HTTP (--http) for shared deployments. It talks to the
// running system over NATS, or to an embedded one with --embedded.
func runMCP(ctx context.Context, e *env, args []string) error {
	var o mcpOptions
	if err := o.parse(e, args); err != nil {
		return err
	}
	log, err := o.role.log.build(e) // stderr: stdout carries the protocol on stdio
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush
	// The port is bound before anything reports ready: a probe that
	// passed while it was not would send agents to a refused connection,
	// and a port taken fails here, before NATS is dialled.
	ln, err := o.listen()
	if err != nil {
		return err
	}
	if ln != nil {
		defer ln.Close() //nolint:errcheck // closed by the server once it serves
	}
	nc, done, err := o.connect(ctx, log)
	if err != nil {
		return err
	}
	defer done()
	cli, _ := client.New(nc)
	checker, err := newImpactSource(nc)
	if err != nil {
		return err
	}
	return o.serve(ctx, e, log, nc, ln, mcpserver.New(cli, buildInfo().Version, mcpserver.WithChecker(checker)))
}

// listen binds --http's address; on stdio there is none.
func (o *mcpOptions) listen() (net.Listener, error) {
	if o.http == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return nil, fmt.Errorf("mcp --http %s: %w", o.http, err)
	}
	return ln, nil
}

// mcpOptions are `schemaq mcp`'s flags and the tokens they name.
type mcpOptions struct {
	role       roleFlags
	http       string
	embedded   bool
	bounds     mcpserver.HTTPConfig
	token      string // SCHEMAQ_MCP_TOKEN: every database
	tokens     []bearer.Token
	tokensFile string
}

// parse reads the flags and refuses an open listener, or a bad tokens
// file, before anything is dialled.
func (o *mcpOptions) parse(e *env, args []string) error {
	fs := newFlags(e, "mcp", "[--http ADDR] [--embedded] [flags]")
	if err := o.role.register(fs, e, "json", true, roleSet{worker: true, serve: true}); err != nil {
		return err
	}
	fs.StringVar(&o.http, "http", envString(e, "SCHEMAQ_MCP_HTTP", ""), "serve streamable HTTP on this address instead of stdio [SCHEMAQ_MCP_HTTP]")
	fs.BoolVar(&o.embedded, "embedded", envString(e, "SCHEMAQ_MCP_EMBEDDED", "") == "1", "run NATS, worker, daemon and the index in this process (data in --data-dir) instead of connecting to --nats-url [SCHEMAQ_MCP_EMBEDDED=1]")
	fs.StringVar(&o.tokensFile, "tokens-file", envString(e, "SCHEMAQ_MCP_TOKENS_FILE", ""), "with --http, a JSON file of tokens, each with its databases and read or write access, as the HTTP API's (docs/api.md); read again when it changes [SCHEMAQ_MCP_TOKENS_FILE]")
	if err := intVar(fs, e, &o.bounds.MaxSessions, "max-sessions", "SCHEMAQ_MCP_MAX_SESSIONS", mcpserver.DefaultMaxSessions,
		"with --http, the sessions kept at once; a new one closes the least recently used (with tokens, its own token's once that holds its share), whose client opens another"); err != nil {
		return err
	}
	if err := durationVar(fs, e, &o.bounds.SessionIdle, "session-idle", "SCHEMAQ_MCP_SESSION_IDLE", time.Hour,
		"with --http, close a session no request has used for this long (0: by count only)"); err != nil {
		return err
	}
	fs.BoolVar(&o.bounds.Stateless, "stateless", envString(e, "SCHEMAQ_MCP_STATELESS", "") == "1",
		"with --http, keep no sessions: each request is answered alone, so replicas need no session affinity (feedback from a client of a protocol before 2026-07-28 then names only the token) [SCHEMAQ_MCP_STATELESS=1]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if o.bounds.MaxSessions < 1 || o.bounds.SessionIdle < 0 {
		return usagef("mcp: --max-sessions must be 1 or more and --session-idle 0 or more, got %d and %s", o.bounds.MaxSessions, o.bounds.SessionIdle)
	}
	o.token = e.getenv("SCHEMAQ_MCP_TOKEN") // a secret: from the environment only
	if o.tokensFile != "" {
		var err error
		if o.tokens, err = bearer.Load(o.tokensFile); err != nil {
			return usagef("mcp --tokens-file: %v", err)
		}
	}
	if o.http != "" && o.token == "" && o.tokens == nil && !loopback.Addr(o.http) {
		return usagef("mcp --http %s: serving beyond this host needs a bearer token: set SCHEMAQ_MCP_TOKEN or --tokens-file (clients send Authorization: Bearer <token>), or bind a loopback address such as 127.0.0.1:8765", o.http)
	}
	return nil
}

// connect dials NATS, or starts the embedded system and connects to it;
// done closes what it opened.
func (o *mcpOptions) connect(ctx context.Context, log *zap.Logger) (nc *nats.Conn, done func(), err error) {
	if !o.embedded {
		if nc, err = o.role.nats.connect(log); err != nil {
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	em, err := startEmbedded(ctx, &o.role, log.Named("embedded"), "", 0)
	if err != nil {
		return nil, nil, err
	}
	if nc, err = em.connect(); err != nil {
		em.shutdown() //nolint:errcheck // logged by the roles
		return nil, nil, err
	}
	return nc, func() {
		nc.Close()
		em.shutdown() //nolint:errcheck // logged by the roles
	}, nil
}

// serve answers on stdio, or HTTP on ln, and serves the health endpoints
// beside, until ctx ends or the input does.
func (o *mcpOptions) serve(ctx context.Context, e *env, log *zap.Logger, nc *nats.Conn, ln net.Listener, server *mcp.Server) error {
	g := newGroup(ctx)
	if !o.embedded && o.role.metrics != "" { // embedded roles serve their own
		tel := mcpHealth(nc)
		g.Go(func(ctx context.Context) error { return tel.Serve(ctx, o.role.metrics) })
	}
	if ln == nil {
		g.Go(func(ctx context.Context) error { return serveMCPStdio(ctx, log, server) })
		g.Wait()
		return g.Stop(nil)
	}
	handler := mcpserver.HTTPHandler(server, o.bounds)
	if ring := bearer.NewKeyring(o.token, o.tokens); !ring.Empty() {
		handler = mcpserver.RequireToken(ring, handler)
		if o.tokensFile != "" {
			g.Background(func(ctx context.Context) { o.watchTokens(ctx, log, ring) })
		}
	}
	log.Info("mcp serving streamable HTTP", zap.String("addr", ln.Addr().String()), zap.Bool("stateless", o.bounds.Stateless), zap.Int("tokens", len(o.tokens)))
	fmt.Fprintf(e.stderr, "schemaq mcp: streamable HTTP on http://%s\n", ln.Addr())
	g.Go(func(ctx context.Context) error {
		if err := telemetry.ServeUntil(ctx, ln, telemetry.HTTPServer(handler), o.role.shutdown); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		return nil
	})
	g.Wait()
	return g.Stop(nil)
}

// watchTokens reads the tokens file again when it changes, so a token
// revoked there stops working without a restart.
func (o *mcpOptions) watchTokens(ctx context.Context, log *zap.Logger, ring *bearer.Keyring) {
	bearer.Watch(ctx, ring, o.tokensFile, o.token, bearer.WatchEvery, func(n int, err error) {
		if err != nil {
			log.Error("mcp tokens file not reloaded; the tokens stay as they were", zap.String("file", o.tokensFile), zap.Error(err))
			return
		}
		log.Info("mcp tokens reloaded", zap.String("file", o.tokensFile), zap.Int("tokens", n))
	})
}

// serveMCPStdio serves server on stdin and stdout until the input ends.
func serveMCPStdio(ctx context.Context, log *zap.Logger, server *mcp.Server) error {
	log.Info("mcp serving on stdio")
	stdio := &mcpserver.LineTransport{In: os.Stdin, Out: os.Stdout, OnRefused: func(line, code int, reason string) {
		log.Warn("mcp: refused a line; the session goes on", zap.Int("line", line), zap.Int("code", code), zap.String("reason", reason))
	}}
	if err := server.Run(ctx, stdio); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// mcpHealth is what a Deployment probes on --metrics-addr: /healthz,
// /readyz (ready while NATS is connected: every tool goes through it)
// and the process's /metrics.
func mcpHealth(nc *nats.Conn) *telemetry.Server {
	tel := telemetry.New(processRegistry())
	tel.AddCheck("nats", telemetry.NATSCheck(nc))
	return tel
}
