package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// runHealthcheck probes a running schemaq's /readyz (or /healthz) and
// exits non-zero unless it answers 200. The image has no shell or curl,
// so container health checks call the binary itself.
func runHealthcheck(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "healthcheck", "[flags]")
	addr := fs.String("addr", envString(e, "SCHEMAQ_METRICS_ADDR", ""), "the process's metrics address (default: that of the `schemaq up` running on SCHEMAQ_DATA_DIR (.schemaq), else :9090, a container's) [SCHEMAQ_METRICS_ADDR]")
	path := fs.String("path", "/readyz", "what to probe: /readyz (ready to serve) or /healthz (alive)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("healthcheck takes no arguments")
	}
	if *addr == "" {
		*addr = ":9090"
		dir := envString(e, "SCHEMAQ_DATA_DIR", ".schemaq")
		if ep := localEndpoints(dir); ep != nil {
			if ep.Metrics == "" {
				return fmt.Errorf("healthcheck: the schemaq up running on %s serves no health endpoint (its address was taken); give --addr", dir)
			}
			*addr = strings.TrimPrefix(ep.Metrics, "http://")
		}
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q: %v", *addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1" // listening on every interface: probe loopback
	}
	if !strings.HasPrefix(*path, "/") {
		return usagef("--path %q: must start with /", *path)
	}
	url := "http://" + net.JoinHostPort(host, port) + *path
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	fmt.Fprintf(e.stdout, "%s: %s\n", url, strings.TrimSpace(string(body)))
	return nil
}
