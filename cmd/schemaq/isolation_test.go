package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// docsAccounts is the account-per-team NATS configuration of
// docs/deploy.md, with its passwords defined.
func docsAccounts(t *testing.T) string {
	return docsNATSConfig(t, "For example, with accounts", "accounts")
}

// TestTenantIsolation runs the attacks one team made on another through
// the documented NATS configuration, against a real server with the
// accounts block of docs/deploy.md and `serve` inside schemaq's account.
// shop-app may use database shop only. Any answer about other, any of
// other's traffic seen, or any write to schemaq's streams and buckets
// fails the test.
func TestTenantIsolation(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(docsAccounts(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NATSWith(t, natsembed.Options{ConfigFile: conf})
	as := func(user string) map[string]string {
		pass := strings.ReplaceAll(strings.TrimSuffix(user, "-app"), "-", "_") + "_pass"
		return map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_NATS_USER": user, "SCHEMAQ_NATS_PASSWORD": pass}
	}
	connect := func(user string) *nats.Conn {
		t.Helper()
		v := as(user)
		// Refusals are the point here: they are not printed.
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(user, v["SCHEMAQ_NATS_PASSWORD"]),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	run := func(user string, args ...string) (string, bool) {
		t.Helper()
		out, errOut, code := runVars2(t, args, as(user))
		return out + errOut, code == exitOK
	}

	vars := as("replica")
	vars["SCHEMAQ_DATA_DIR"] = t.TempDir()
	vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
	startService(t, "serve", []string{"serve", "--replica-id", "iso"}, vars)
	testenv.Eventually(t, 30*time.Second, "serve is ready", func() bool {
		_, err := runVars(t.Context(), []string{"healthcheck", "--path", "/readyz"}, vars)
		return err == nil
	})
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "0001_secret.sql"), []byte(
		"CREATE TABLE payroll_zebracorn (id int PRIMARY KEY, salary numeric);\nCOMMENT ON TABLE payroll_zebracorn IS 'salaries, other team only';\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each team's producer publishes from its own account, which has no
	// JetStream: the plan and the wait go through the daemon.
	for db, dir := range map[string]string{"shop": shop, "other": other} {
		if out, ok := run(db+"-ci", "publish", "migrations", "--db", db, "--wait", "30s", dir); !ok || !strings.Contains(out, "at version") {
			t.Fatalf("%s-ci publishes %s: %s", db, db, out)
		}
	}
	if out, ok := run("shop-ci", "publish", "migrations", "--db", "shop", "--wait", "30s", shop); !ok || !strings.Contains(out, "nothing to publish") && !strings.Contains(out, "0 event(s)") {
		t.Errorf("shop-ci publishes shop again (planned against the daemon's history): %s", out)
	}
	if err := os.WriteFile(filepath.Join(other, "0002_bad.sql"), []byte("CREATE TABEL t (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, ok := run("other-ci", "publish", "migrations", "--db", "other", "--wait", "30s", other); ok || !strings.Contains(out, "dead-lettered") {
		t.Errorf("other-ci's refused migration, waited for: %s", out)
	}

	// What schemaq holds, read as its operator, to compare at the end.
	admin := connect("operator")
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, events.Stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter("schemaq.>"))
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(ctx, events.CatalogBucket)
		if err != nil {
			t.Fatal(err)
		}
		entry, err := kv.Get(ctx, "other")
		if err != nil {
			t.Fatalf("other's catalog: %v", err)
		}
		kvs, err := js.Stream(ctx, "KV_"+events.CatalogBucket)
		if err != nil {
			t.Fatal(err)
		}
		kvInfo, err := kvs.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		subjects, _ := json.Marshal(info.State.Subjects)
		return fmt.Sprintf("stream msgs %d max %d subjects %s; other's catalog rev %d (%d bytes); bucket max_age %v max_msgs %d",
			info.State.Msgs, info.Config.MaxMsgs, subjects, entry.Revision(), len(entry.Value()), kvInfo.Config.MaxAge, kvInfo.Config.MaxMsgs)
	}
	before := state()

	// shop-app listens to everything its account carries.
	eve := connect("shop-app")
	var mu sync.Mutex
	var seen []string
	// Both: in one account with permissions, ">" is refused and
	// "_INBOX.>" carries every team's replies.
	for _, subj := range []string{">", "_INBOX.>"} {
		if _, err := eve.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, m.Subject+" "+string(m.Data))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eve.Flush(); err != nil {
		t.Fatal(err)
	}

	// other-app asks about other while shop-app listens.
	if out, ok := run("other-app", "search", "--db", "other", "salaries"); !ok || !strings.Contains(out, "payroll_zebracorn") {
		t.Fatalf("other-app's own search: %s", out)
	}
	// shop-app uses shop, as it may.
	if out, ok := run("shop-app", "search", "--db", "shop", "orders"); !ok || !strings.Contains(out, "orders") {
		t.Fatalf("shop-app's own search: %s", out)
	}

	body := []byte(`{"database":"shop","question":"q"}`)
	for _, reply := range []string{"$KV.schemaq_catalogs.other", "schemaq.examples.other", "$JS.API.STREAM.PURGE.SCHEMAQ", "schemaq.schema.other"} {
		m := nats.NewMsg("schemaq.search.shop")
		m.Reply, m.Data = reply, body
		if err := eve.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	writes := map[string]string{
		"schemaq.schema.other":                      `{"spec":"1","id":"x","type":"schema.migration","database":"other","time":"2026-01-01T00:00:00Z","data":{"seq":2,"sql":"DROP TABLE t"}}`,
		"schemaq.examples.other":                    `garbage`,
		"$KV.schemaq_catalogs.other":                `garbage`,
		"$JS.API.STREAM.UPDATE.SCHEMAQ":             `{"name":"SCHEMAQ","max_msgs":1}`,
		"$JS.API.STREAM.PURGE.SCHEMAQ":              `{}`,
		"$JS.API.STREAM.UPDATE.KV_schemaq_catalogs": `{"name":"KV_schemaq_catalogs","max_age":2000000000}`,
	}
	for subj, data := range writes {
		msg, err := eve.Request(subj, []byte(data), time.Second)
		if err == nil && !jsRefused(msg) {
			t.Errorf("shop-app's %s was answered: %s", subj, msg.Data)
		}
	}
	for _, ep := range []string{events.EndpointAsk, events.EndpointSearch, events.EndpointTables, events.EndpointFeedback} {
		for _, subj := range []string{events.DatabaseSubject(ep, "other"), events.EndpointSubject(ep)} {
			req := `{"database":"other","question":"wages","sql":"SELECT 1"}`
			if msg, err := eve.Request(subj, []byte(req), time.Second); err == nil {
				t.Errorf("shop-app's request on %s was answered: %.300s", subj, msg.Data)
			}
		}
	}
	for _, args := range [][]string{
		{"search", "--db", "other", "--timeout", "2s", "wages"},
		{"ask", "--db", "other", "--timeout", "2s", "wages"},
		{"tables", "--db", "other", "--timeout", "2s"},
		{"feedback", "--db", "other", "--timeout", "2s", "--question", "wages", "--sql", "SELECT 1"},
	} {
		if out, ok := run("shop-app", args...); ok {
			t.Errorf("shop-app's %v succeeded: %s", args, out)
		}
	}
	if err := eve.Flush(); err != nil {
		t.Fatal(err)
	}

	// shop-ci has no JetStream to administer, and no other team's subjects.
	shopCI := connect("shop-ci")
	for subj, data := range map[string]string{
		"$JS.API.STREAM.UPDATE.SCHEMAQ":                                     `{"name":"SCHEMAQ","subjects":["schemaq.schema.*","schemaq.docs.*","schemaq.examples.*"],"max_msgs":1}`,
		"$JS.API.STREAM.PURGE.SCHEMAQ":                                      `{}`,
		"$JS.API.STREAM.UPDATE.KV_schemaq_catalogs":                         `{"name":"KV_schemaq_catalogs","max_age":2000000000}`,
		"$JS.API.DIRECT.GET.KV_schemaq_catalogs.$KV.schemaq_catalogs.other": ``,
		"schemaq.schema.other":                                              `{}`,
	} {
		if msg, err := shopCI.Request(subj, []byte(data), time.Second); err == nil && !jsRefused(msg) {
			t.Errorf("shop-ci's %s was answered: %.300s", subj, msg.Data)
		}
	}

	time.Sleep(200 * time.Millisecond) // any stray reply would be here
	if after := state(); after != before {
		t.Errorf("schemaq's state changed:\nbefore %s\nafter  %s", before, after)
	}
	mu.Lock()
	defer mu.Unlock()
	// Only other's question and table name would tell (shop-app's own
	// requests above avoid both words).
	for _, s := range seen {
		if strings.Contains(s, "zebracorn") || strings.Contains(s, "salaries") {
			t.Errorf("shop-app saw other's traffic: %.300s", s)
		}
	}
	if out, ok := run("other-app", "tables", "--db", "other"); !ok || !strings.Contains(out, "payroll_zebracorn") {
		t.Errorf("other's catalog after the attacks: %s", out)
	}
}

// jsRefused reports whether a reply is the JetStream API's error (an
// account without JetStream gets one), not a change made.
func jsRefused(m *nats.Msg) bool {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(m.Data, &r) == nil && r.Error != nil
}
