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
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/mcpserver"
	"github.com/schemaq/schemaq/pkg/telemetry"
)

// runMCP serves schemaq's tools to AI agents over MCP: stdio for a local
// agent, streamable HTTP (--http) for shared deployments. It talks to the
// running system over NATS, or to an embedded one with --embedded.
func runMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp", "[--http ADDR] [--embedded] [flags]")
	var r roleFlags
	if err := r.register(fs, e, "json", true, roleSet{worker: true, serve: true}); err != nil {
		return err
	}
	httpAddr := fs.String("http", envString(e, "SCHEMAQ_MCP_HTTP", ""), "serve streamable HTTP on this address instead of stdio [SCHEMAQ_MCP_HTTP]")
	embedded := fs.Bool("embedded", envString(e, "SCHEMAQ_MCP_EMBEDDED", "") == "1", "run NATS, worker, daemon and the index in this process (data in --data-dir) instead of connecting to --nats-url [SCHEMAQ_MCP_EMBEDDED=1]")
	tokensFile := fs.String("tokens-file", envString(e, "SCHEMAQ_MCP_TOKENS_FILE", ""), "with --http, a JSON file of tokens, each with its databases and read or write access, as the HTTP API's (docs/api.md) [SCHEMAQ_MCP_TOKENS_FILE]")
	var bounds mcpserver.HTTPConfig
	if err := intVar(fs, e, &bounds.MaxSessions, "max-sessions", "SCHEMAQ_MCP_MAX_SESSIONS", mcpserver.DefaultMaxSessions,
		"with --http, the sessions kept at once; a new one closes the least recently used, whose client opens another"); err != nil {
		return err
	}
	if err := durationVar(fs, e, &bounds.SessionIdle, "session-idle", "SCHEMAQ_MCP_SESSION_IDLE", time.Hour,
		"with --http, close a session no request has used for this long (0: by count only)"); err != nil {
		return err
	}
	fs.BoolVar(&bounds.Stateless, "stateless", envString(e, "SCHEMAQ_MCP_STATELESS", "") == "1",
		"with --http, keep no sessions: each request is answered alone, so replicas need no session affinity (feedback from a client of a protocol before 2026-07-28 then names only the token) [SCHEMAQ_MCP_STATELESS=1]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if bounds.MaxSessions < 1 || bounds.SessionIdle < 0 {
		return usagef("mcp: --max-sessions must be 1 or more and --session-idle 0 or more, got %d and %s", bounds.MaxSessions, bounds.SessionIdle)
	}
	// Refuse an open listener, or a bad tokens file, before dialling
	// anything.
	token := e.getenv("SCHEMAQ_MCP_TOKEN") // a secret: from the environment only
	var tokens []bearer.Token
	if *tokensFile != "" {
		var err error
		if tokens, err = bearer.Load(*tokensFile); err != nil {
			return usagef("mcp --tokens-file: %v", err)
		}
	}
	if *httpAddr != "" && token == "" && tokens == nil && !loopback(*httpAddr) {
		return usagef("mcp --http %s: serving beyond this host needs a bearer token: set SCHEMAQ_MCP_TOKEN or --tokens-file (clients send Authorization: Bearer <token>), or bind a loopback address such as 127.0.0.1:8765", *httpAddr)
	}
	log, err := r.log.build(e) // stderr: stdout carries the protocol on stdio
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush
	var cli *client.Client
	var nc *nats.Conn
	if *embedded {
		em, err := startEmbedded(ctx, &r, log.Named("embedded"), "", 0)
		if err != nil {
			return err
		}
		defer em.shutdown() //nolint:errcheck // logged by the roles
		if nc, err = em.connect(); err != nil {
			return err
		}
		defer nc.Close()
		cli, _ = client.New(nc)
	} else {
		if nc, err = r.nats.connect(log); err != nil {
			return err
		}
		defer nc.Close()
		cli, _ = client.New(nc)
	}
	checker, err := newImpactSource(nc)
	if err != nil {
		return err
	}
	server := mcpserver.New(cli, buildInfo().Version, mcpserver.WithChecker(checker))
	g := newGroup(ctx)
	if !*embedded && r.metrics != "" { // embedded roles serve their own
		tel := mcpHealth(nc)
		g.Go(func(ctx context.Context) error { return tel.Serve(ctx, r.metrics) })
	}
	if *httpAddr == "" {
		g.Go(func(ctx context.Context) error { return serveMCPStdio(ctx, log, server) })
	} else {
		ln, err := net.Listen("tcp", *httpAddr)
		if err != nil {
			return g.Stop(fmt.Errorf("mcp: %w", err))
		}
		handler := mcpserver.HTTPHandler(server, bounds)
		if ring := bearer.NewKeyring(token, tokens); !ring.Empty() {
			handler = mcpserver.RequireToken(ring, handler)
		}
		log.Info("mcp serving streamable HTTP", zap.String("addr", ln.Addr().String()), zap.Bool("stateless", bounds.Stateless), zap.Int("tokens", len(tokens)))
		fmt.Fprintf(e.stderr, "schemaq mcp: streamable HTTP on http://%s\n", ln.Addr())
		g.Go(func(ctx context.Context) error {
			if err := telemetry.ServeUntil(ctx, ln, telemetry.HTTPServer(handler), r.shutdown); err != nil {
				return fmt.Errorf("mcp: %w", err)
			}
			return nil
		})
	}
	g.Wait()
	return g.Stop(nil)
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfoMetric(reg)
	tel := telemetry.New(reg)
	tel.AddCheck("nats", telemetry.NATSCheck(nc))
	return tel
}

// loopback reports whether addr (host:port) binds only this host.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
