package benchmark

import (
	"context"
	"sort"
	"sync"
	"time"
)

// LoadReport is the outcome of a closed-loop load run; its JSON shape is
// stable.
type LoadReport struct {
	Concurrency int                `json:"concurrency"`
	Requests    int                `json:"requests"`
	Errors      int                `json:"errors"`
	Seconds     float64            `json:"seconds"`
	Throughput  float64            `json:"throughput_per_s"`
	LatencyMS   map[string]float64 `json:"latency_ms"`
	FirstError  string             `json:"first_error,omitempty"`
}

// Load runs call from concurrency workers, each issuing its next request as
// soon as the last returns, for duration. i counts requests across workers.
func Load(ctx context.Context, concurrency int, duration time.Duration, call func(ctx context.Context, i int) error) LoadReport {
	ctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var (
		mu       sync.Mutex
		lat      []time.Duration
		errs     int
		firstErr string
		next     int
		wg       sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				t0 := time.Now()
				err := call(ctx, i)
				d := time.Since(t0)
				if ctx.Err() != nil {
					return // cut by the end of the run, not a real failure
				}
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
				} else {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return LoadReport{
		Concurrency: concurrency, Requests: len(lat) + errs, Errors: errs, Seconds: round3(secs),
		Throughput: round3(float64(len(lat)) / secs), FirstError: firstErr,
		LatencyMS: map[string]float64{"p50": ms(percentile(lat, 50)), "p95": ms(percentile(lat, 95)), "p99": ms(percentile(lat, 99))},
	}
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
