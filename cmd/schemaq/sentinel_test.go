package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestRedisFailoverUnderLoad is the Redis half of #41's outside run, on
// Debian's redis-server: a primary, a replica and three Sentinels, a
// worker and a daemon that find the primary through them (searching in
// memory, which needs no query engine). The primary is killed (-9) while
// the worker projects 200 migrations and searches run; the Sentinels
// promote the replica; 100 more migrations are published. Every table
// becomes searchable, nothing is dead-lettered, at least 90% of the
// searches are answered, and no reader of the index ever sees a
// projection half written: at every instant, on whichever server is
// primary, the chunks of the database are those of the version it says
// it projected.
func TestRedisFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Redis primary, a replica and three Sentinels")
	}
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedisReplica(t, primary)
	sentinels := testenv.StartSentinels(t, primary, "schemaq", 3)
	ns := testenv.NATS(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("primary:\n%s\nreplica:\n%s", primary.Log(), replica.Log())
		}
	})
	vars := func() map[string]string {
		return map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_REDIS_SENTINELS": strings.Join(sentinels, ","),
			"SCHEMAQ_REDIS_MASTER": "schemaq", "SCHEMAQ_METRICS_ADDR": freePort(t), "SCHEMAQ_DATA_DIR": t.TempDir(),
			"SCHEMAQ_AUDIT_INTERVAL": "1s"}
	}
	var daemonMetrics string
	for _, role := range []string{"worker", "daemon"} {
		v := vars()
		daemonMetrics = v["SCHEMAQ_METRICS_ADDR"]
		stop := startService(t, role, []string{role}, v)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s:\n%s", role, stop())
			}
		})
		testenv.Eventually(t, 30*time.Second, role+" ready", func() bool {
			_, err := runVars(t.Context(), []string{"healthcheck", "--addr", v["SCHEMAQ_METRICS_ADDR"], "--path", "/readyz"}, v)
			return err == nil
		})
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cli, _ := client.New(nc)

	first := t.TempDir()
	ledgerMigrations(t, first, 1, 1)
	if out, errOut, code := runAt(t, ns.ClientURL(), "publish", "migrations", "--db", "ledger", "--wait", "30s", first); code != exitOK {
		t.Fatalf("the first migration: %s%s", out, errOut)
	}
	watch := watchProjections(t, sentinels, "ledger")
	load := startSearches(cli, "ledger", "amount booked in the ledger")

	// 200 migrations; the primary dies while the worker projects them.
	dir := t.TempDir()
	ledgerMigrations(t, dir, 1, 200)
	publishing := make(chan string, 1)
	go func() {
		out, errOut, code := runAt(t, ns.ClientURL(), "publish", "migrations", "--db", "ledger", "--wait", "120s", dir)
		publishing <- fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
	}()
	testenv.Eventually(t, 60*time.Second, "the worker projecting", func() bool { return watch.projected.Load() >= 40 })
	killedVersion, killedAt := watch.projected.Load(), time.Now()
	primary.Stop()
	t.Logf("killed the primary with version %d projected", killedVersion)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	testenv.Eventually(t, 30*time.Second, "the Sentinels promote the replica", func() bool {
		addr, err := sc.GetMasterAddrByName(context.Background(), "schemaq").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port())
	})
	t.Logf("the replica promoted %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	select {
	case out := <-publishing:
		if !strings.HasPrefix(out, "exit 0") || !strings.Contains(out, "catalog ledger is at version 200") {
			t.Fatalf("publish through the failover: %s", out)
		}
		t.Logf("the 200 migrations searchable %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	case <-time.After(3 * time.Minute):
		t.Fatal("the publish did not end within 3 minutes")
	}

	// 100 more, on the promoted replica.
	ledgerMigrations(t, dir, 201, 300)
	if out, errOut, code := runAt(t, ns.ClientURL(), "publish", "migrations", "--db", "ledger", "--wait", "120s", dir); code != exitOK ||
		!strings.Contains(out, "catalog ledger is at version 300") {
		t.Fatalf("publish after the failover (exit %d): %s%s", code, out, errOut)
	}
	t.Logf("100 more searchable %v after the kill", time.Since(killedAt).Round(time.Millisecond))
	for _, i := range []int{1, 40, 137, 200, 201, 299, 300} {
		name := fmt.Sprintf("ledger_%03d", i)
		testenv.Eventually(t, 30*time.Second, name+" searchable", func() bool {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			r, err := cli.Search(ctx, &events.SearchRequest{Database: "ledger", Question: name, K: 3, Kinds: []string{"table"}})
			return err == nil && len(r.Results) > 0 && strings.HasSuffix(r.Results[0].Name, name)
		})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	r, err := cli.Tables(ctx, &events.TablesRequest{Database: "ledger"})
	cancel()
	if err != nil || r.Indexed != 300 {
		t.Errorf("the daemon's index: %+v, %v; want version 300", r, err)
	}
	// Searches run for five seconds after the kill at least: through the
	// Sentinels' failover, whatever the publishes' pace.
	time.Sleep(time.Until(killedAt.Add(5 * time.Second)))
	load.end(t, 0.90, 30)
	// The daemon answered through the failover from what it held.
	if stale := metricValue(t, daemonMetrics, "schemaq_index_stale_searches_total"); stale <= 0 {
		t.Errorf("schemaq_index_stale_searches_total %v: the daemon never answered from its snapshots while Redis was away", stale)
	} else {
		t.Logf("%v searches answered from the daemon's snapshots while Redis was away", stale)
	}
	if out, errOut, code := runAt(t, ns.ClientURL(), "dlq", "list", "--db", "ledger"); code != exitOK || !strings.Contains(out, "0 dead letter(s)") {
		t.Errorf("dead letters: %s%s", out, errOut)
	}
	watch.end(t, 300)
}

// projectionWatch reads, every 10 ms and atomically (one script), the
// database's projected version and its chunks on whichever server the
// Sentinels name primary, and records any instant where the two
// disagree (a chunk newer than the projected version, or a number of
// tables other than it: version n of ledgerMigrations has n tables)
// while no landing mark tells readers to keep what they hold.
type projectionWatch struct {
	projected    atomic.Int64
	reads, after atomic.Int64 // reads in all, and after the first failed one
	failed       atomic.Bool
	mu           sync.Mutex
	torn         []string
	stop         context.CancelFunc
	done         chan struct{}
}

// watchScript returns {projected, newest chunk version, tables} for the
// database ARGV[2] of the store under prefix ARGV[1] (docs/redis.md,
// "Index layout"); {-1} before an index exists, {-2} while a projection
// is landing in batches.
var watchScript = redis.NewScript(`
local v = redis.call('HGET', ARGV[1] .. 'meta', 'current')
if not v then return {-1, 0, 0} end
local pre, tag = ARGV[1] .. 'v' .. v .. ':', '{' .. ARGV[2] .. '}'
if redis.call('HEXISTS', pre .. 'gens:' .. tag, 'l:' .. ARGV[2]) == 1 then return {-2, 0, 0} end
local projected = tonumber(redis.call('HGET', pre .. 'projected:' .. tag, ARGV[2]) or '0')
local newest, tables = 0, 0
for _, id in ipairs(redis.call('SMEMBERS', pre .. 'db:' .. tag)) do
  local f = redis.call('HMGET', pre .. 'c:' .. tag .. ':' .. string.sub(id, #ARGV[2] + 2), 'version', 'kind', 'part')
  local ver = tonumber(f[1] or '0')
  if ver > newest then newest = ver end
  if f[2] == ARGV[3] and (f[3] == false or f[3] == '0') then tables = tables + 1 end
end
return {projected, newest, tables}
`)

func watchProjections(t *testing.T, sentinels []string, db string) *projectionWatch {
	t.Helper()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "schemaq", SentinelAddrs: sentinels,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	ctx, cancel := context.WithCancel(context.Background())
	w := &projectionWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer rdb.Close()
		for ctx.Err() == nil {
			res, err := watchScript.Run(ctx, rdb, nil, "schemaq:", db, fmt.Sprintf("%x", "table")).Int64Slice()
			switch {
			case err != nil:
				w.failed.Store(true)
			case len(res) == 3 && res[0] >= 0:
				w.reads.Add(1)
				if w.failed.Load() {
					w.after.Add(1)
				}
				w.projected.Store(res[0])
				if res[1] > res[0] || res[2] != res[0] {
					w.mu.Lock()
					w.torn = append(w.torn, fmt.Sprintf("projected %d, newest chunk %d, %d tables", res[0], res[1], res[2]))
					w.mu.Unlock()
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// end stops the watch and checks it saw the final version, read the
// promoted primary, and never saw a projection half written.
func (w *projectionWatch) end(t *testing.T, final int64) {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "the store at the final version", func() bool { return w.projected.Load() == final })
	w.stop()
	<-w.done
	t.Logf("%d reads of the store, %d of them after the failover", w.reads.Load(), w.after.Load())
	if w.after.Load() < 10 {
		t.Errorf("the watch read the promoted primary %d times; it proves nothing", w.after.Load())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.torn) > 0 {
		t.Errorf("a projection was seen half written %d times, first: %s", len(w.torn), w.torn[0])
	}
}
