package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/index/redisearch"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// The binary's Redis wiring against a real redis-server without the
// query engine: every role refuses to start and says what it needs,
// instead of starting without an index.
func TestRedisStoreWiring(t *testing.T) {
	srv := testenv.StartRedis(t)
	ns := testenv.NATS(t)
	envWith := func(vars map[string]string) *env {
		// The NATS connection's closed handler logs asynchronously, after
		// the command returns.
		return &env{stdout: &syncBuffer{}, stderr: &syncBuffer{}, getenv: func(k string) string { return vars[k] }}
	}
	base := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_DATA_DIR": t.TempDir()}
	for _, tc := range []struct {
		name string
		args []string
		vars map[string]string
		code int
		want string
	}{
		{"worker searching in plain Redis", []string{"worker"}, map[string]string{"SCHEMAQ_REDIS_URL": srv.URL(), "SCHEMAQ_REDIS_SEARCH": "server"}, exitFailure, redisearch.Requirement},
		{"daemon searching in plain Redis", []string{"daemon", "--redis-search", "server"}, map[string]string{"SCHEMAQ_REDIS_URL": srv.URL()}, exitFailure, "no search module"},
		{"no Redis there", []string{"daemon"}, map[string]string{"SCHEMAQ_REDIS_URL": "redis://127.0.0.1:1/0"}, exitFailure, "unreachable"},
		{"password stays out of errors", []string{"daemon"}, map[string]string{"SCHEMAQ_REDIS_URL": "redis://app:s3cret@127.0.0.1:1/0"}, exitFailure, "app:xxxxx@127.0.0.1:1"},
		{"Sentinels and a cluster", []string{"daemon"}, map[string]string{"SCHEMAQ_REDIS_SENTINELS": "127.0.0.1:26379", "SCHEMAQ_REDIS_MASTER": "m", "SCHEMAQ_REDIS_CLUSTER": "127.0.0.1:7000"}, exitUsage, "give one"},
		{"a cluster's database", []string{"daemon", "--redis-cluster", "127.0.0.1:7000"}, map[string]string{"SCHEMAQ_REDIS_URL": "redis://127.0.0.1:7000/3"}, exitUsage, "database 0 only"},
		{"bad URL", []string{"daemon"}, map[string]string{"SCHEMAQ_REDIS_URL": "http://x"}, exitUsage, "--redis-url"},
		{"CA without TLS", []string{"daemon", "--redis-ca", "ca.pem"}, map[string]string{"SCHEMAQ_REDIS_URL": srv.URL()}, exitUsage, "not a rediss:// URL"},
		{"serve with a shared index", []string{"serve"}, map[string]string{"SCHEMAQ_REDIS_URL": srv.URL()}, exitUsage, "run `schemaq worker` and `schemaq daemon`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			for k, v := range base {
				vars[k] = v
			}
			for k, v := range tc.vars {
				vars[k] = v
			}
			e := envWith(vars)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := runEnv(ctx, tc.args, e)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if code := exitCode(err); code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d (%v), want %d with %q", code, err, tc.code, tc.want)
			}
			if strings.Contains(msg, "s3cret") || strings.Contains(e.stderr.(*syncBuffer).String(), "s3cret") {
				t.Error("the Redis password leaked into the output")
			}
		})
	}
}
