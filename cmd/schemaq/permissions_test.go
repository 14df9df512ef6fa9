package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// docsAuthorization is the example NATS configuration of docs/deploy.md,
// with its passwords defined: the test runs what the docs tell users to
// write.
func docsAuthorization(t *testing.T) string {
	return docsNATSConfig(t, "For example, in the NATS server's configuration", "authorization")
}

// docsNATSConfig is the block (authorization, accounts) of the example
// of docs/deploy.md that follows intro, passwords defined.
func docsNATSConfig(t *testing.T, intro, block string) string {
	return testenv.DocsNATSConfig(t, filepath.Join("..", "..", "docs", "deploy.md"), intro, block)
}

// withReplica adds to conf a user replica with the worker's and the
// daemon's permissions together, as `schemaq serve` (both roles in one
// process) needs.
func withReplica(t *testing.T, conf string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docs.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("the docs' NATS configuration: %v", err)
	}
	var pub, sub []string
	for _, u := range opts.Users {
		if u.Username == "worker" || u.Username == "daemon" {
			pub = append(pub, u.Permissions.Publish.Allow...)
			sub = append(sub, u.Permissions.Subscribe.Allow...)
		}
	}
	quote := func(ss []string) string {
		slices.Sort(ss)
		ss = slices.Compact(ss)
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = strconv.Quote(s)
		}
		return strings.Join(q, ", ")
	}
	replica := fmt.Sprintf("users = [\n    { user: replica, password: replica_pass, permissions: { publish: { allow: [%s] }, subscribe: { allow: [%s] } } }\n",
		quote(pub), quote(sub))
	return strings.Replace(conf, "users = [\n", replica, 1)
}

// TestRolePermissions runs a real NATS server with the permissions
// docs/deploy.md gives each role, and each role as its user: every one
// does its job, and is refused what its row leaves out.
func TestRolePermissions(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(withReplica(t, docsAuthorization(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NATSWith(t, natsembed.Options{ConfigFile: conf})
	as := func(user string) map[string]string {
		pass := strings.ToLower(strings.NewReplacer("-", "_").Replace(user)) + "_pass"
		if user == "shop-app" {
			pass = "app_pass"
		}
		vars := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_NATS_USER": user, "SCHEMAQ_NATS_PASSWORD": pass}
		if user == "shop-app" {
			// Its replies come on its own inbox prefix, the only one it
			// may read.
			vars["SCHEMAQ_NATS_INBOX_PREFIX"] = "_INBOX.shop_app"
		}
		return vars
	}
	prefix := "permtest:" + nuid.Next() + ":" // one shared index for the worker and the daemon
	role := func(user string, args ...string) {
		t.Helper()
		vars := as(user)
		vars["SCHEMAQ_DATA_DIR"] = t.TempDir()
		vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
		if url, live := os.LookupEnv("SCHEMAQ_TEST_REDISEARCH_URL"); live && args[0] != "serve" {
			vars["SCHEMAQ_REDIS_URL"] = url
			vars["SCHEMAQ_REDIS_PREFIX"] = prefix
		}
		startService(t, user+" "+args[0], args, vars)
		var probe string
		t.Cleanup(func() {
			if t.Failed() && probe != "" {
				t.Logf("%s as %s, last readiness probe: %s", args[0], user, probe)
			}
		})
		testenv.Eventually(t, 30*time.Second, args[0]+" as "+user+" is ready", func() bool {
			out, err := runVars(t.Context(), []string{"healthcheck", "--path", "/readyz"}, vars)
			probe = fmt.Sprint(out, err)
			return err == nil
		})
	}
	run := func(user string, args ...string) (string, bool) {
		t.Helper()
		out, errOut, code := runVars2(t, args, as(user))
		return out + errOut, code == exitOK
	}
	mustRun := func(user string, args ...string) string {
		t.Helper()
		out, ok := run(user, args...)
		if !ok {
			t.Fatalf("%s: %v: %s", user, args, out)
		}
		return out
	}
	refused := func(user string, args ...string) {
		t.Helper()
		if out, ok := run(user, append(args, "--timeout", "2s")...); ok {
			t.Errorf("%s may %v: %s", user, args, out)
		}
	}

	if os.Getenv("SCHEMAQ_TEST_REDISEARCH_URL") != "" {
		// The shared topology: worker and daemon, each as its own user.
		role("worker", "worker")
		role("daemon", "daemon")
	} else {
		role("replica", "serve", "--replica-id", "perm")
	}
	shop := filepath.Join("..", "..", "examples", "shop")
	if out := mustRun("ci", "publish", "migrations", "--db", "shop", "--wait", "30s", filepath.Join(shop, "migrations")); !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("ci's publish did not wait for the catalog: %s", out)
	}
	if out := mustRun("ci", "publish", "docs", "--db", "shop", "--wait", "30s", filepath.Join(shop, "docs")); !strings.Contains(out, "docs of shop indexed and searchable") {
		t.Errorf("ci's publish docs did not wait for the index: %s", out)
	}
	testenv.Eventually(t, 30*time.Second, "shop-app finds the docs", func() bool {
		out, ok := run("shop-app", "search", "--db", "shop", "partial refunds", "--kind", "doc")
		return ok && strings.Contains(out, "refunds.md")
	})
	if out := mustRun("shop-app", "tables", "--db", "shop"); !strings.Contains(out, "public.orders") {
		t.Errorf("shop-app's tables: %s", out)
	}
	// shop-app hands back confirmed SQL; the daemon stores it as an
	// example, which the operator lists and ci, the producer, deletes.
	out := mustRun("shop-app", "feedback", "--db", "shop", "--question", "orders per customer", "--sql", "SELECT customer_id, count(*) FROM orders GROUP BY 1")
	id := regexp.MustCompile(`stored as example (fb-\S+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("shop-app's feedback: %s", out)
	}
	if out := mustRun("operator", "examples", "list", "--db", "shop"); !strings.Contains(out, id[1]) {
		t.Errorf("the operator's examples list: %s", out)
	}
	mustRun("ci", "examples", "delete", "--db", "shop", "--wait", "30s", id[1])
	if out := mustRun("ci", "examples", "list", "--db", "shop"); strings.Contains(out, id[1]) {
		t.Errorf("deleted, yet listed: %s", out)
	}

	// A migration the catalog refuses is a dead letter the worker wrote,
	// which the operator reads and re-sends.
	bad := filepath.Join(t.TempDir(), "0007_bad.sql")
	if err := os.WriteFile(bad, []byte("CREATE TABEL t (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("ci", "publish", "migrations", "--db", "shop", "--wait", "30s", bad)
	var seq string
	testenv.Eventually(t, 30*time.Second, "the operator lists the dead letter", func() bool {
		out, ok := run("operator", "dlq", "list", "--db", "shop")
		if f := regexp.MustCompile(`(?m)^(\d+)\tshop\t`).FindStringSubmatch(out); ok && f != nil {
			seq = f[1]
		}
		return seq != ""
	})
	mustRun("operator", "dlq", "show", seq)
	mustRun("operator", "dlq", "retry", seq)
	if out := mustRun("operator", "status"); !strings.Contains(out, "daemons: 1") {
		t.Errorf("the operator's status does not list the daemon: %s", out)
	}

	// The operator retires shop: its catalog, index and events go.
	if out := mustRun("operator", "databases", "retire", "--db", "shop", "--yes"); !strings.Contains(out, "retired shop") {
		t.Errorf("the operator's retire: %s", out)
	}
	testenv.Eventually(t, 30*time.Second, "shop is forgotten", func() bool {
		out, _ := run("shop-app", "search", "--db", "shop", "orders")
		return strings.Contains(out, "unknown_database")
	})
	refused("ci", "databases", "retire", "--db", "shop", "--yes")
	refused("shop-app", "databases", "retire", "--db", "shop", "--yes")
	refused("ci", "publish", "migrations", "--db", "other", filepath.Join(shop, "migrations"))
	refused("ci", "dlq", "purge")
	refused("shop-app", "search", "--db", "other", "orders")
	// shop-app reads its own inbox only, not everyone's replies.
	violations := make(chan error, 4)
	eve, err := nats.Connect(ns.ClientURL(), nats.UserInfo("shop-app", "app_pass"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer eve.Close()
	if _, err := eve.SubscribeSync("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	_ = eve.Flush()
	select {
	case err := <-violations:
		if !strings.Contains(err.Error(), "Permissions Violation") {
			t.Errorf("shop-app's subscription to _INBOX.>: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("shop-app may subscribe to _INBOX.>, and so read every reply")
	}
	refused("shop-app", "publish", "docs", "--db", "shop", filepath.Join(shop, "docs"))
	refused("shop-app", "dlq", "list")
	refused("shop-app", "feedback", "--db", "other", "--question", "q", "--sql", "SELECT 1 FROM t")
	refused("shop-app", "examples", "delete", "--db", "shop", "x")
	refused("shop-app", "examples", "list", "--db", "shop")
	refused("operator", "search", "--db", "shop", "orders")
	refused("daemon", "publish", "docs", "--db", "shop", filepath.Join(shop, "docs"))
	refused("daemon", "search", "--db", "shop", "orders")
	refused("worker", "search", "--db", "shop", "orders")
}
