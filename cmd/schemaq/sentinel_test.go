package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestRedisThroughSentinel: with --redis-sentinels and --redis-master a
// role finds the shared index's Redis through Sentinel, and after the
// primary is killed and the Sentinels promote its replica, finds the new
// primary. Debian's redis-server has no query engine, so each start is
// refused, naming it; which server the role asked shows in its command
// statistics (MODULE LIST).
func TestRedisThroughSentinel(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedisReplica(t, primary)
	sentinels := testenv.StartSentinels(t, primary, "schemaq", 3)
	ns := testenv.NATS(t)
	vars := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_REDIS_SENTINELS": strings.Join(sentinels, ","),
		"SCHEMAQ_REDIS_MASTER": "schemaq", "SCHEMAQ_METRICS_ADDR": freePort(t), "SCHEMAQ_DATA_DIR": t.TempDir()}
	moduleLists := func(s *testenv.Redis) int {
		info, err := s.Client().Info(context.Background(), "commandstats").Result()
		if err != nil {
			return -1
		}
		for _, line := range strings.Split(info, "\n") {
			if strings.HasPrefix(line, "cmdstat_module|list:") || strings.HasPrefix(line, "cmdstat_module:") {
				return 1
			}
		}
		return 0
	}
	refused := func(where *testenv.Redis) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := runVars(ctx, []string{"worker"}, vars)
		if err == nil || !strings.Contains(err.Error(), "Sentinel master schemaq via "+sentinels[0]) || !strings.Contains(err.Error(), "query engine") {
			t.Fatalf("worker through Sentinel: %v\n%s", err, out)
		}
		if moduleLists(where) != 1 {
			t.Errorf("the worker did not ask %s, the primary", where)
		}
	}
	refused(primary)
	if moduleLists(replica) != 0 {
		t.Error("the worker asked the replica")
	}

	primary.Stop()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer sc.Close()
	testenv.Eventually(t, 30*time.Second, "the Sentinels promote the replica", func() bool {
		addr, err := sc.GetMasterAddrByName(context.Background(), "schemaq").Result()
		return err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(replica.Port())
	})
	refused(replica)
}
