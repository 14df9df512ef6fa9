package httpretry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		statuses  []int
		header    string
		wantCalls int32
		wantCode  int
		wantWait  time.Duration // first wait, when a Retry-After sets it
	}{
		{"ok first time", []int{200}, "", 1, 200, 0},
		{"5xx then ok", []int{500, 502, 200}, "", 3, 200, 0},
		{"429 honours Retry-After seconds", []int{429, 200}, "7", 2, 200, 7 * time.Second},
		{"Retry-After is capped", []int{429, 200}, "3600", 2, 200, 30 * time.Second},
		{"4xx is not retried", []int{400, 200}, "", 1, 400, 0},
		{"gives up after MaxRetries", []int{503, 503, 503, 503, 503}, "", 4, 503, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				body, _ := io.ReadAll(r.Body)
				if string(body) != "payload" {
					t.Errorf("attempt %d got body %q", n, body)
				}
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.statuses[n-1])
			}))
			defer srv.Close()
			tr := New(nil, DefaultConfig)
			var waits []time.Duration
			tr.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("payload"))
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || calls.Load() != tc.wantCalls {
				t.Errorf("got %d after %d calls, want %d after %d", resp.StatusCode, calls.Load(), tc.wantCode, tc.wantCalls)
			}
			if tc.wantWait > 0 && (len(waits) == 0 || waits[0] != tc.wantWait) {
				t.Errorf("waits %v, want first %v", waits, tc.wantWait)
			}
		})
	}
}

func TestContextCancelsWait(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(429)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	_, err := (&http.Client{Transport: New(nil, DefaultConfig)}).Do(req)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("want a prompt context error, got %v after %v", err, time.Since(start))
	}
}

// TestRetryAfterBeyondTheDeadline: a Retry-After the request cannot wait
// for ends it at once with when to come back.
func TestRetryAfterBeyondTheDeadline(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := &http.Client{Transport: New(nil, Config{MaxRetries: 3, InitialInterval: time.Millisecond, MaxInterval: 30 * time.Second})}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	t0 := time.Now()
	_, err := client.Do(req)
	var ra *RetryAfterError
	if !errors.As(err, &ra) || ra.Status != 429 || ra.After != 20*time.Second || calls.Load() != 1 || time.Since(t0) > 500*time.Millisecond {
		t.Errorf("got %v after %d calls in %v", err, calls.Load(), time.Since(t0))
	}
}
