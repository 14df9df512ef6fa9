package benchmark

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// LoadReport is the outcome of a closed-loop load run; its JSON shape is
// stable. Every request issued is counted once: answered, failed (an
// error reply or a transport error, by code) or timed out (no reply
// within the per-request deadline).
type LoadReport struct {
	Concurrency int     `json:"concurrency"`
	Requests    int     `json:"requests"`
	Answered    int     `json:"answered"`
	Failed      int     `json:"failed"`
	TimedOut    int     `json:"timed_out"`
	Errors      int     `json:"errors"` // failed + timed out
	Seconds     float64 `json:"seconds"`
	// Throughput counts answered requests only.
	Throughput float64            `json:"throughput_per_s"`
	LatencyMS  map[string]float64 `json:"latency_ms"` // of answered requests
	FailedBy   map[string]int     `json:"failed_by,omitempty"`
	FirstError string             `json:"first_error,omitempty"`
}

// LoadConfig shapes a load run.
type LoadConfig struct {
	Concurrency int
	// Duration is how long new requests are issued; requests in flight
	// when it ends are waited for (up to Timeout) and counted.
	Duration time.Duration
	// Stop, when closed, ends the issuing early, like Duration.
	Stop <-chan struct{}
	// Timeout is each request's deadline; 0 means none beyond ctx.
	Timeout time.Duration
	// Code names a failure for FailedBy (an error code); nil or "" counts
	// it as "error".
	Code func(error) string
}

// Load runs call from cfg.Concurrency workers, each issuing its next
// request as soon as the last returns, for cfg.Duration. i counts
// requests across workers. Cancelling ctx stops the run; requests cut by
// it are not counted.
func Load(ctx context.Context, cfg LoadConfig, call func(ctx context.Context, i int) error) LoadReport {
	window, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	if cfg.Stop != nil {
		go func() {
			select {
			case <-cfg.Stop:
				stop()
			case <-window.Done():
			}
		}()
	}
	var (
		mu       sync.Mutex
		lat      []time.Duration
		rep      = LoadReport{Concurrency: cfg.Concurrency, FailedBy: map[string]int{}}
		next     int
		wg       sync.WaitGroup
		lastDone time.Time
	)
	start := time.Now()
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for window.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				rctx, cancel := ctx, context.CancelFunc(func() {})
				if cfg.Timeout > 0 {
					rctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
				}
				t0 := time.Now()
				err := call(rctx, i)
				d := time.Since(t0)
				timedOut := err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded)
				cancel()
				if ctx.Err() != nil {
					return // the run was cancelled: not the system's failure
				}
				mu.Lock()
				rep.Requests++
				lastDone = time.Now()
				switch {
				case err == nil:
					rep.Answered++
					lat = append(lat, d)
				case timedOut:
					rep.TimedOut++
					if rep.FirstError == "" {
						rep.FirstError = err.Error()
					}
				default:
					rep.Failed++
					code := ""
					if cfg.Code != nil {
						code = cfg.Code(err)
					}
					if code == "" {
						code = "error"
					}
					rep.FailedBy[code]++
					if rep.FirstError == "" {
						rep.FirstError = err.Error()
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := lastDone.Sub(start).Seconds()
	if secs <= 0 {
		secs = time.Since(start).Seconds()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rep.Errors = rep.Failed + rep.TimedOut
	rep.Seconds = round3(secs)
	rep.Throughput = round3(float64(rep.Answered) / secs)
	rep.LatencyMS = map[string]float64{"p50": ms(percentile(lat, 50)), "p95": ms(percentile(lat, 95)), "p99": ms(percentile(lat, 99))}
	if len(rep.FailedBy) == 0 {
		rep.FailedBy = nil
	}
	return rep
}

// Percentiles summarises durations as p50/p95/p99/max in milliseconds.
func Percentiles(d []time.Duration) map[string]float64 {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	out := map[string]float64{"p50": ms(percentile(s, 50)), "p95": ms(percentile(s, 95)), "p99": ms(percentile(s, 99))}
	if len(s) > 0 {
		out["max"] = ms(s[len(s)-1])
	}
	return out
}
