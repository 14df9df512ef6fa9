package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nuid"
	"github.com/redis/go-redis/v9"
)

// TestLeaseMetricsLive runs `schemaq up` on the shared index of a live
// RediSearch: after a search the daemon holds its lease, and the
// worker's writes were announced, both on /metrics. CI has no such
// server and skips it.
func TestLeaseMetricsLive(t *testing.T) {
	redisURL := os.Getenv("SCHEMAQ_TEST_REDISEARCH_URL")
	if redisURL == "" {
		t.Skip("SCHEMAQ_TEST_REDISEARCH_URL not set")
	}
	prefix := "leasetest:" + nuid.Next() + ":"
	t.Cleanup(func() { dropPrefix(t, redisURL, prefix) })
	dir := t.TempDir()
	addr, metrics := freePort(t), freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_METRICS_ADDR", metrics,
		"SCHEMAQ_REDIS_URL", redisURL, "SCHEMAQ_REDIS_PREFIX", prefix)
	defer stop()
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "30s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	if out, errOut, code := runAt(t, url, "search", "--db", "shop", "revenue by customer"); code != exitOK || !strings.Contains(out, "public.") {
		t.Fatalf("search (exit %d): %s%s", code, out, errOut)
	}
	value := func(body, name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	body := scrapeUntil(t, metrics, 15*time.Second, func(body string) bool { return value(body, "schemaq_index_lease_held") == 1 })
	if v := value(body, "schemaq_index_lease_held"); v != 1 {
		t.Errorf("schemaq_index_lease_held %v after a search, want 1", v)
	}
	if v := value(body, "schemaq_index_announcements_total"); v < 1 {
		t.Errorf("schemaq_index_announcements_total %v after a publish, want some", v)
	}
	if v := value(body, "schemaq_index_announce_seconds_total"); v <= 0 {
		t.Errorf("schemaq_index_announce_seconds_total %v, want the time the writes took", v)
	}
	if v := value(body, "schemaq_index_lease_lapses_total"); v != 0 {
		t.Errorf("schemaq_index_lease_lapses_total %v on a quiet server, want 0", v)
	}
}

// dropPrefix removes a live test's indexes and keys from the server.
func dropPrefix(t *testing.T, redisURL, prefix string) {
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Error(err)
		return
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	names, _ := rdb.Do(ctx, "FT._LIST").StringSlice()
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			_ = rdb.Do(ctx, "FT.DROPINDEX", n).Err()
		}
	}
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		_ = rdb.Unlink(ctx, iter.Val()).Err()
	}
}
