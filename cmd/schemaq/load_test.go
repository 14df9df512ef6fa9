package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
)

// ledgerMigrations writes migrations from..to into dir, each creating
// one table (ledger_NNN), so that catalog version n has n tables.
func ledgerMigrations(t *testing.T, dir string, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		sql := fmt.Sprintf("CREATE TABLE ledger_%03d (id bigint PRIMARY KEY, amount numeric, booked_at timestamptz);\n", i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d_ledger_%03d.sql", i, i)), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// searchLoad asks db one search every 20 ms until stopped, counting the
// answers and the longest time between two of them: how long a node's
// loss interrupted searching.
type searchLoad struct {
	asked, answered atomic.Int64
	gap             atomic.Int64 // nanoseconds
	stop            context.CancelFunc
	wg              sync.WaitGroup
	mu              sync.Mutex
	errs            map[string]int // why searches failed
}

func startSearches(cli *client.Client, db, question string) *searchLoad {
	l := &searchLoad{errs: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		last := time.Now()
		for ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err := cli.Search(actx, &events.SearchRequest{Database: db, Question: question, K: 5})
			cancel()
			if ctx.Err() != nil {
				return
			}
			l.asked.Add(1)
			if err != nil {
				l.mu.Lock()
				l.errs[err.Error()]++
				l.mu.Unlock()
			}
			if err == nil {
				l.answered.Add(1)
				if d := time.Since(last); int64(d) > l.gap.Load() {
					l.gap.Store(int64(d))
				}
				last = time.Now()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return l
}

// end stops the searches and checks that at least floor of them, and at
// least min in number, were answered.
func (l *searchLoad) end(t *testing.T, floor float64, least int64) {
	t.Helper()
	l.stop()
	l.wg.Wait()
	asked, answered := l.asked.Load(), l.answered.Load()
	share := float64(answered) / float64(max(asked, 1))
	t.Logf("%d of %d searches answered (%.1f%%); the longest time without an answer %v", answered, asked, 100*share,
		time.Duration(l.gap.Load()).Round(time.Millisecond))
	if asked < least || share < floor {
		t.Errorf("%d of %d searches answered, want at least %.0f%% of at least %d; failures: %v", answered, asked, 100*floor, least, l.errs)
	}
}

// metricValue is the value of an unlabelled metric on addr's /metrics
// (-1 when it is not there).
func metricValue(t *testing.T, addr, name string) float64 {
	t.Helper()
	body := scrapeUntil(t, addr, 0, func(string) bool { return true })
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
