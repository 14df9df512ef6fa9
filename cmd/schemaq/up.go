package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"go.uber.org/zap"
)

// upMetricsAddr is where up serves /healthz, /readyz and /metrics unless
// told otherwise: healthcheck's default port, on loopback.
const upMetricsAddr = "127.0.0.1:9090"

// upHTTPAddr is where up serves the HTTP API unless told otherwise.
const upHTTPAddr = "127.0.0.1:8080"

// runUp is the embedded default: NATS, worker, daemon and the SQLite
// store in one process.
func runUp(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "up", "[flags]")
	var r roleFlags
	if err := r.register(fs, e, "console", false, roleSet{worker: true, serve: true}); err != nil {
		return err
	}
	listen := fs.String("listen", envString(e, "SCHEMAQ_LISTEN", "127.0.0.1:4222"), "address of the embedded NATS server; beyond loopback it needs authorization: SCHEMAQ_NATS_TOKEN, SCHEMAQ_NATS_USER and SCHEMAQ_NATS_PASSWORD, or --nats-config [SCHEMAQ_LISTEN]")
	fs.StringVar(&r.natsConfig, "nats-config", envString(e, "SCHEMAQ_NATS_CONFIG", ""), "nats-server configuration file for the embedded server: accounts, users, permissions, TLS (its listen address and store come from --listen and --data-dir); in-process clients use SCHEMAQ_NATS_USER/_PASSWORD, _TOKEN or _CREDS [SCHEMAQ_NATS_CONFIG]")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := r.check(); err != nil {
		return err
	}
	// Health and metrics on loopback by default, so that healthcheck
	// works right after the quick start; a port taken (a second up) only
	// costs them, with a warning. --metrics-addr "" turns them off.
	metricsSet := e.getenv("SCHEMAQ_METRICS_ADDR") != ""
	fs.Visit(func(f *flag.Flag) { metricsSet = metricsSet || f.Name == "metrics-addr" })
	if !metricsSet {
		r.metrics, r.metricsOptional = upMetricsAddr, true
		if !free(r.metrics) {
			fmt.Fprintf(e.stderr, "schemaq: no health or metrics endpoint: %s is taken (another schemaq up?); set --metrics-addr (SCHEMAQ_METRICS_ADDR)\n", r.metrics)
			r.metrics = ""
		}
	}
	// The HTTP API likewise, on loopback, where it needs no token.
	httpSet := e.getenv("SCHEMAQ_HTTP_ADDR") != ""
	fs.Visit(func(f *flag.Flag) { httpSet = httpSet || f.Name == "http-addr" })
	if !httpSet {
		r.http, r.httpOptional = upHTTPAddr, true
		if !free(r.http) {
			fmt.Fprintf(e.stderr, "schemaq: no HTTP API: %s is taken (another schemaq up?); set --http-addr (SCHEMAQ_HTTP_ADDR)\n", r.http)
			r.http = ""
		}
	}
	// The embedded server's credentials, the ones its clients are given;
	// its own in-process clients present them too.
	r.nats.user, r.nats.password, r.nats.token, r.nats.creds = e.getenv("SCHEMAQ_NATS_USER"), e.getenv("SCHEMAQ_NATS_PASSWORD"),
		e.getenv("SCHEMAQ_NATS_TOKEN"), e.getenv("SCHEMAQ_NATS_CREDS")
	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return usagef("--listen: port %q is not a number", portStr)
	}
	log, err := r.log.build(e)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about a failed flush
	em, err := startEmbedded(ctx, &r, log, host, port)
	if err != nil {
		return err
	}
	log.Info("schemaq up", zap.String("version", buildInfo().Version), zap.String("nats", em.url),
		zap.String("data_dir", *r.dataDir), zap.String("metrics", r.metrics))
	ep := endpoints{NATS: em.url, PID: os.Getpid()}
	health := ""
	if r.metrics != "" {
		ep.Metrics = "http://" + r.metrics
		health = ", health and metrics on " + ep.Metrics
	}
	if r.http != "" {
		ep.HTTP = "http://" + r.http
	}
	remove, err := writeEndpoints(*r.dataDir, ep)
	if err != nil {
		_ = em.shutdown()
		return err
	}
	fmt.Fprintf(e.stderr, "schemaq is up: NATS on %s%s, data in %s. Publish with `schemaq publish`, ask with `schemaq ask`. Ctrl-C stops.\n", em.url, health, *r.dataDir)
	fmt.Fprintf(e.stderr, "Commands run here find it in %s; from elsewhere: export SCHEMAQ_NATS_URL=%s\n", filepath.Join(*r.dataDir, endpointsFile), em.url)
	<-ctx.Done()
	remove()
	return em.shutdown()
}
