package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestSharedIndexOnRedisCluster runs a worker and two daemons over a
// three-primary Redis Cluster (--redis-cluster), publishes the example's
// migrations, docs and worked examples, and finds each kind through
// either daemon; searching in the server is refused there at start.
func TestSharedIndexOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node Redis Cluster")
	}
	nodes := testenv.StartRedisCluster(t, 3)
	seeds := nodes[0].Addr() + "," + nodes[1].Addr()
	// The roles sign in as the user k8s/dev-services/redis/users.acl
	// defines, on every node, with the two commands a cluster client
	// adds to read the slot map (docs/redis.md): any other command they
	// send is denied, and noDenials fails the test on it.
	file, err := os.ReadFile(filepath.Join(k8sDir, "dev-services", "redis", "users.acl"))
	if err != nil {
		t.Fatal(err)
	}
	_, rules, _ := parseACL(t, string(file))
	rules = withoutSearchCommands(rules) + " +cluster|slots +command"
	admins := make([]string, len(nodes))
	for i, n := range nodes {
		admins[i] = n.URL()
	}
	userURL, user := createRedisUser(t, rules, "schemaq:", admins...)
	ns := testenv.NATS(t)
	vars := func() map[string]string {
		return map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_REDIS_CLUSTER": seeds, "SCHEMAQ_REDIS_URL": userURL,
			"SCHEMAQ_METRICS_ADDR": freePort(t), "SCHEMAQ_DATA_DIR": t.TempDir()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server := vars()
	server["SCHEMAQ_REDIS_SEARCH"] = "server"
	if out, err := runVars(ctx, []string{"daemon"}, server); err == nil || !strings.Contains(err.Error(), "coordinator") {
		t.Errorf("a daemon searching in the server on a cluster: %v\n%s", err, out)
	}
	for _, role := range []string{"worker", "daemon", "daemon"} {
		v := vars()
		startService(t, role, []string{role}, v)
		testenv.Eventually(t, 30*time.Second, role+" ready", func() bool {
			_, err := runVars(t.Context(), []string{"healthcheck", "--addr", v["SCHEMAQ_METRICS_ADDR"], "--path", "/readyz"}, v)
			return err == nil
		})
	}
	shop := filepath.Join("..", "..", "examples", "shop")
	if out, errOut, code := runAt(t, ns.ClientURL(), "publish", "migrations", "--db", "shop", "--wait", "60s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish migrations: %s%s", out, errOut)
	}
	searchPublished(t, ns.ClientURL())
	for _, admin := range admins {
		noDenials(t, admin, user)
	}
}
