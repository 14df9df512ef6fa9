// Package httpretry is an http.RoundTripper that retries one HTTP call on
// 429 and 5xx with exponential backoff, honouring Retry-After. Only a
// single request is retried here; redelivering whole messages is
// JetStream's job.
package httpretry

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Config is plain data so it can come from flags.
type Config struct {
	// MaxRetries after the first attempt (0 disables retrying).
	MaxRetries int
	// InitialInterval is the first backoff; it doubles per retry.
	InitialInterval time.Duration
	// MaxInterval caps one wait, including a server's Retry-After.
	MaxInterval time.Duration
}

// DefaultConfig retries three times: ~0.5 s, 1 s, 2 s (jittered).
var DefaultConfig = Config{MaxRetries: 3, InitialInterval: 500 * time.Millisecond, MaxInterval: 30 * time.Second}

// Transport retries requests through Base.
type Transport struct {
	Base   http.RoundTripper
	Config Config
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a Transport over base (http.DefaultTransport when nil).
func New(base http.RoundTripper, cfg Config) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &Transport{Base: base, Config: cfg, sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retryable reports whether a status code is worth retrying: 429 (rate
// limited), 408 and 5xx. Other 4xx are the caller's mistake.
func Retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.Body != nil {
			if req.GetBody == nil {
				return nil, fmt.Errorf("httpretry: request body cannot be replayed")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("httpretry: replay body: %w", err)
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		resp, err := t.Base.RoundTrip(req)
		retry := attempt < t.Config.MaxRetries
		if err != nil {
			if !retry || req.Context().Err() != nil {
				return nil, err
			}
		} else if !Retryable(resp.StatusCode) || !retry {
			return resp, nil
		}
		wait := t.backoff(attempt)
		if resp != nil {
			if ra, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
				wait = ra
			}
			// Drain so the connection can be reused.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		if resp != nil {
			if ra, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
				// A server that asks for more time than the request has
				// left is told no: the caller learns when to come back.
				if dl, ok := req.Context().Deadline(); ok && time.Until(dl) < ra {
					return nil, &RetryAfterError{Status: resp.StatusCode, After: ra}
				}
			}
		}
		if t.Config.MaxInterval > 0 && wait > t.Config.MaxInterval {
			wait = t.Config.MaxInterval
		}
		if err := t.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

func (t *Transport) backoff(attempt int) time.Duration {
	d := t.Config.InitialInterval << attempt
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	// ±20% jitter so that many clients do not retry in step.
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// RetryAfterError: the server asked to retry later than the request's
// deadline allows.
type RetryAfterError struct {
	Status int
	After  time.Duration
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("the server answered %d and asked to retry after %v, beyond the request's deadline", e.Status, e.After)
}

// retryAfter parses Retry-After as seconds or an HTTP date.
func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := time.Until(at); d > 0 {
			return d, true
		}
		return 0, true
	}
	return 0, false
}
