// Package telemetry serves a process's operational endpoints on their own
// listener: /metrics (Prometheus), /healthz (the process is alive) and
// /readyz (every readiness check passes: NATS connected, store reachable,
// consumer bound, service registered). It also instruments embedders.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check reports whether one dependency is ready; nil means ready.
type Check func(ctx context.Context) error

// Server serves the endpoints. Checks can be added while it runs (a role
// adds its own once started).
type Server struct {
	reg    *prometheus.Registry
	mu     sync.Mutex
	checks map[string]Check
}

// New returns a server over reg.
func New(reg *prometheus.Registry) *Server {
	return &Server{reg: reg, checks: map[string]Check{}}
}

// AddCheck registers a readiness check under name.
func (s *Server) AddCheck(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// Handler is the HTTP mux of the three endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if failed := s.failing(ctx); len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + strings.Join(failed, "; ") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

func (s *Server) failing(ctx context.Context) []string {
	type named struct {
		name  string
		check Check
	}
	// Copied under the lock: checks run outside it, and a role may add
	// one meanwhile.
	s.mu.Lock()
	checks := make([]named, 0, len(s.checks))
	for n, c := range s.checks {
		checks = append(checks, named{n, c})
	}
	s.mu.Unlock()
	if len(checks) == 0 {
		return []string{"starting"}
	}
	sort.Slice(checks, func(i, j int) bool { return checks[i].name < checks[j].name })
	var failed []string
	for _, c := range checks {
		if err := c.check(ctx); err != nil {
			failed = append(failed, c.name+": "+err.Error())
		}
	}
	return failed
}

// Serve listens on addr until ctx ends.
func (s *Server) Serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	return ServeUntil(ctx, ln, HTTPServer(s.Handler()), 5*time.Second)
}

// HTTPServer serves h with the bounds every schemaq listener keeps: a
// request's headers must arrive in 5 s and the whole request in 30 s (a
// body trickled a byte at a time held a handler for as long as its
// client liked), headers are at most 64 KiB, and an idle connection
// closes after 2 minutes (without it, and without a read timeout, a
// kept-alive connection stayed open for good). A streamed reply is not
// cut: the read timeout bounds reading the request, not the handler.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
}

// ServeUntil serves srv on ln until ctx ends, then shuts it down, giving
// requests in flight up to grace to finish.
func ServeUntil(ctx context.Context, ln net.Listener, srv *http.Server, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Connected is the readiness of a NATS connection.
type Connected interface {
	IsConnected() bool
}

// NATSCheck fails while the connection is down (it reconnects by itself).
func NATSCheck(nc Connected) Check {
	return func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("not connected")
		}
		return nil
	}
}

// Pinger answers a cheap query; a store's Count with a filter that
// matches nothing will do.
type Pinger func(ctx context.Context) error

// StoreCheck fails while the index store does not answer.
func StoreCheck(ping Pinger) Check { return Check(ping) }

// FlagCheck fails until ready reports true (a consumer bound, a service
// registered).
func FlagCheck(what string, ready func() bool) Check {
	return func(context.Context) error {
		if !ready() {
			return errors.New(what)
		}
		return nil
	}
}
