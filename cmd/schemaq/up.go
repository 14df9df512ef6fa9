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
	// works right after the quick start; the HTTP API likewise, where on
	// loopback it needs no token. --metrics-addr "" turns them off.
	onLoopback(e, fs, "metrics-addr", "SCHEMAQ_METRICS_ADDR", upMetricsAddr, "no health or metrics endpoint", &r.metrics, &r.metricsOptional)
	onLoopback(e, fs, "http-addr", "SCHEMAQ_HTTP_ADDR", upHTTPAddr, "no HTTP API", &r.http, &r.httpOptional)
	// The embedded server's credentials, the ones its clients are given;
	// its own in-process clients present them too.
	r.nats.user, r.nats.password, r.nats.token, r.nats.creds = e.getenv("SCHEMAQ_NATS_USER"), e.getenv("SCHEMAQ_NATS_PASSWORD"),
		e.getenv("SCHEMAQ_NATS_TOKEN"), e.getenv("SCHEMAQ_NATS_CREDS")
	host, port, err := listenAddr(*listen)
	if err != nil {
		return err
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

// onLoopback gives an endpoint neither its flag nor its variable set the
// loopback address addr, marked optional: a port taken (a second up)
// only costs the endpoint, with a warning that says what is missing.
func onLoopback(e *env, fs *flag.FlagSet, name, envName, addr, what string, dst *string, optional *bool) {
	set := e.getenv(envName) != ""
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	if set {
		return
	}
	*dst, *optional = addr, true
	if !free(addr) {
		fmt.Fprintf(e.stderr, "schemaq: %s: %s is taken (another schemaq up?); set --%s (%s)\n", what, addr, name, envName)
		*dst = ""
	}
}

// listenAddr splits --listen into the host and port the embedded server
// takes.
func listenAddr(listen string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, usagef("--listen: %v", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", 0, usagef("--listen: port %q is not a number", portStr)
	}
	return host, port, nil
}
