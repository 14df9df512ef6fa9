package workers_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// TestCostlyEventsStayWithTheirDatabase: a database's events that are
// costly to read (each a compressed script of 32 MiB, under 40 KiB on
// the wire) are read by that database's queue, and expanded only when
// they apply. The consumer's handler, which every database's events pass
// through, read each in full and held it expanded: 24 of them, waiting
// for their predecessor, held another team's one-line migration back
// for a minute and the worker's heap at 1.5 GiB.
func TestCostlyEventsStayWithTheirDatabase(t *testing.T) {
	const n, mib = 24, 32
	e := newEnv(t)
	cfg := testConfig()
	cfg.GapTimeout = 5 * time.Minute // the flood waits for its first migration
	e.startWorker(cfg, e.store)
	gz := events.GzipSQL("CREATE TABLE IF NOT EXISTS t (id int);\n-- " + strings.Repeat(" ", mib<<20) + "\n")
	for seq := int64(2); seq <= n+1; seq++ {
		ev, err := events.New(fmt.Sprintf("flood-%d", seq), "flood", time.Now(), &events.Migration{Seq: seq, Source: fmt.Sprintf("%04d.sql", seq), SQLGzip: gz})
		if err != nil {
			t.Fatal(err)
		}
		e.publish(ev)
	}
	e.publish(migration(t, "victim", 1, "CREATE TABLE accounts (id bigint PRIMARY KEY);"))
	e.waitVersion("victim", 1)
	testenv.Eventually(t, 20*time.Second, "the flood held", func() bool { return e.consumer().NumAckPending == n })
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if held := ms.HeapAlloc >> 20; held > n*mib/4 {
		t.Errorf("the process holds %d MiB of heap for %d compressed events of %d MiB each", held, n, mib)
	}
	// Compressed SQL expands when it applies; SQL that does not expand is
	// an invalid event naming the field.
	e.publish(migration(t, "flood", 1, "CREATE TABLE first (id int);"))
	testenv.Eventually(t, 2*time.Minute, "the flood applied", func() bool { return e.version("flood") == n+1 })
	bad, err := events.New("victim-2", "victim", time.Now(), &events.Migration{Seq: 2, Source: "0002.sql", SQLGzip: gz[:len(gz)/2]})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(bad)
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, "data.sql_gzip") || !strings.Contains(dl[0].reason, "corrupt gzip") {
		t.Errorf("a truncated compressed script: %+v", dl[0])
	}
}

// TestHeldBytesAreBounded: a team publishes migrations of nearly 1 MiB
// that all wait for a predecessor. A consumer bounds what it holds by
// count (MaxAckPending, and a lane's window), so the worker held all of
// them: 700 took 1.4 GB. It must hold no more than MaxHeldBytes (and
// one event per handler that passed its check together), still take
// another team's migration, and apply the whole history once the
// predecessor comes. The predecessor comes last, behind what the worker
// will not take, so the waiting events go as gap letters after
// GapTimeout and are re-sent by themselves once it has applied.
func TestHeldBytesAreBounded(t *testing.T) {
	const n, kib = 40, 500
	e := newEnv(t)
	cfg := laneConfig()
	cfg.MaxHeldBytes = 8 * int64(cfg.MaxEventBytes) // the least allowed
	reg := prometheus.NewRegistry()
	e.startLaneWorker(cfg, workers.WithMetrics(workers.NewMetrics(reg)))
	pad := "-- " + strings.Repeat("x", kib<<10) + "\n"
	for seq := int64(2); seq <= n; seq++ {
		e.publish(migration(t, "wall", seq, fmt.Sprintf("CREATE TABLE t%d (id int);\n%s", seq, pad)))
	}
	e.publish(migration(t, "victim", 1, "CREATE TABLE accounts (id bigint PRIMARY KEY);"))
	e.waitVersion("victim", 1)
	var most float64
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		most = max(most, metric(t, reg, "schemaq_worker_held_bytes"))
		time.Sleep(20 * time.Millisecond)
	}
	if limit := float64(cfg.MaxHeldBytes + 4*int64(cfg.MaxEventBytes)); most > limit || most < float64(cfg.MaxHeldBytes/2) {
		t.Errorf("the worker held up to %.0f MiB of a flood of %d MiB; want between half of %d MiB and %.0f MiB", most/(1<<20), n, cfg.MaxHeldBytes>>20, limit/(1<<20))
	}
	e.publish(migration(t, "wall", 1, "CREATE TABLE first (id int);"))
	testenv.Eventually(t, 4*time.Minute, "the whole history applied", func() bool { return e.version("wall") == n })
	for _, dl := range e.deadLetters() {
		if !strings.HasPrefix(dl.reason, "gap:") {
			t.Errorf("a dead letter other than a gap letter: %+v", dl)
		}
	}
}
