package workers

import "time"

// WithLaneTimes shortens the lanes' clocks for tests (lanes.go).
func WithLaneTimes(fresh, seal, tick, close time.Duration) Option {
	return func(w *Worker) { w.laneTimes = laneTimes{fresh: fresh, seal: seal, tick: tick, close: close} }
}
