package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/status"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// startServe runs `schemaq serve` as the replica id; see startService.
func startServe(t *testing.T, url, dataDir, id string) (stop func() string) {
	t.Helper()
	return startService(t, "serve "+id, []string{"serve", "--data-dir", dataDir, "--replica-id", id, "--log-format", "json"},
		map[string]string{"SCHEMAQ_NATS_URL": url})
}

// TestServeReplicas runs two replicas with indexes of their own on one
// NATS: both index everything, and a replica that starts late answers
// only once it has caught up with the stream.
func TestServeReplicas(t *testing.T) {
	ns := testenv.NATS(t)
	url := ns.ClientURL()
	dir := t.TempDir()
	shop := filepath.Join("..", "..", "examples", "shop")

	stopA := startServe(t, url, filepath.Join(dir, "a"), "a")
	// publish --wait waits for the catalog; the docs need a replica's index.
	if out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK || !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("publish migrations (exit %d): %s %s", code, out, errOut)
	}
	if out, errOut, code := runAt(t, url, "publish", "docs", "--db", "shop", filepath.Join(shop, "docs")); code != exitOK {
		t.Fatalf("publish docs (exit %d): %s %s", code, out, errOut)
	}
	searchDoc := func() (string, int) {
		out, _, code := runAt(t, url, "search", "--db", "shop", "partial refunds", "--kind", "doc", "--k", "1")
		return out, code
	}
	testenv.Eventually(t, 20*time.Second, "replica a indexes the docs", func() bool {
		out, _ := searchDoc()
		return strings.Contains(out, "refunds.md")
	})

	// Replica b starts after everything was published and a stops: every
	// answer b gives must already hold the doc, as b opens for queries
	// only once it has replayed the stream into its own index.
	stopB := startServe(t, url, filepath.Join(dir, "b"), "b")
	logsA := stopA()
	if !strings.Contains(logsA, `"consumer":"schemaq-replica-a"`) {
		t.Errorf("replica a did not consume on its own durable: %s", logsA)
	}
	var out string
	code := exitFailure
	for deadline := time.Now().Add(20 * time.Second); code != exitOK && time.Now().Before(deadline); {
		out, code = searchDoc()
		if code != exitOK {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if code != exitOK || !strings.Contains(out, "refunds.md") {
		t.Fatalf("replica b's first answer (exit %d) lacks the doc: %s", code, out)
	}
	if out, _, _ := runAt(t, url, "search", "--db", "shop", "customers with their shipping addresses", "--kind", "table", "--k", "3"); !strings.Contains(out, "shipping_addresses") {
		t.Errorf("replica b table search: %s", out)
	}
	for _, d := range []string{"a", "b"} {
		if entries, err := os.ReadDir(filepath.Join(dir, d)); err != nil || len(entries) == 0 {
			t.Errorf("replica %s has no index of its own in %s: %v", d, filepath.Join(dir, d), err)
		}
	}

	nc := testenv.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	replicaConsumers := []string{"schemaq-replica-a", "schemaq-replica-a-docs", "schemaq-replica-b", "schemaq-replica-b-docs"}
	for _, name := range replicaConsumers {
		c, err := js.Consumer(ctx, events.Stream, name)
		if err != nil {
			t.Errorf("consumer %s: %v", name, err)
			continue
		}
		info, err := c.Info(ctx)
		if err != nil || info.Config.InactiveThreshold != 24*time.Hour {
			t.Errorf("consumer %s: inactive threshold not set: %v %+v", name, err, info)
		}
	}
	for _, name := range []string{streams.Durable, streams.Durable + streams.DocsSuffix} {
		if _, err := js.Consumer(ctx, events.Stream, name); err == nil {
			t.Errorf("replicas created the shared worker consumer %s", name)
		}
	}
	out, _, _ = runAt(t, url, "status", "--json")
	var st struct {
		Consumers []struct {
			Name    string `json:"name"`
			Pending uint64 `json:"pending"`
		} `json:"consumers"`
	}
	var listed []string
	if err := json.Unmarshal([]byte(out), &st); err == nil {
		for _, c := range st.Consumers {
			listed = append(listed, c.Name)
		}
	}
	if !slices.Equal(listed, replicaConsumers) || st.Consumers[2].Pending != 0 || st.Consumers[3].Pending != 0 {
		t.Errorf("status lists the replicas' consumers: %v %s", listed, out)
	}
	if out, _, _ := runAt(t, url, "status"); !strings.Contains(out, "consumer schemaq-replica-b: 0 pending") {
		t.Errorf("status: %s", out)
	}
	// With a back and b up, a migration that cannot apply is refused by
	// both and dead-lettered once.
	stopA = startServe(t, url, filepath.Join(dir, "a"), "a")
	bad := filepath.Join(dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "0001_a.sql"), []byte("CREATE TABLE t (id int);\nCREATE TABLE t (id int);"), 0o644)
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "bad", "--wait", "1s", bad); code != exitFailure {
		t.Errorf("a bad migration was not refused (exit %d): %s", code, errOut)
	}
	testenv.Eventually(t, 20*time.Second, "both replicas settle the bad migration", func() bool {
		out, _, _ := runAt(t, url, "status", "--json")
		var st struct {
			Stream struct {
				LastSeq uint64 `json:"last_seq"`
			} `json:"stream"`
			Consumers []struct {
				Name       string `json:"name"`
				Delivered  uint64 `json:"delivered_seq"`
				AckPending int    `json:"ack_pending"`
			} `json:"consumers"`
		}
		if json.Unmarshal([]byte(out), &st) != nil || len(st.Consumers) != 4 {
			return false
		}
		for _, c := range st.Consumers {
			// The last event is the migration: the docs consumers never see it.
			schema := !strings.HasSuffix(c.Name, streams.DocsSuffix)
			if schema && c.Delivered < st.Stream.LastSeq || c.AckPending != 0 {
				return false
			}
		}
		return true
	})
	out, _, _ = runAt(t, url, "dlq", "list", "--db", "bad", "--json")
	var letters []struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal([]byte(out), &letters) != nil || len(letters) != 1 {
		t.Errorf("want one dead letter for the bad migration, have: %s", out)
	}
	stopA()
	if logsB := stopB(); !strings.Contains(logsB, "caught up with the stream") {
		t.Errorf("replica b did not log catching up: %s", logsB)
	}
}

// TestStatusWarnsOfMixedDaemons: replicas announce their capabilities,
// and status warns when the replicas of the queue group differ: one with
// a gateway and one without answer the same ask differently.
func TestStatusWarnsOfMixedDaemons(t *testing.T) {
	ns := testenv.NATS(t)
	url := ns.ClientURL()
	dir := t.TempDir()
	stopA := startServe(t, url, filepath.Join(dir, "a"), "a")
	defer stopA()
	stopB := startService(t, "serve b", []string{"serve", "--data-dir", filepath.Join(dir, "b"), "--replica-id", "b", "--log-format", "json"},
		map[string]string{"SCHEMAQ_NATS_URL": url, "SCHEMAQ_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SCHEMAQ_LLM_MODEL": "m"})
	var out, errOut string
	testenv.Eventually(t, 20*time.Second, "both replicas answer $SRV.INFO", func() bool {
		out, errOut, _ = runAt(t, url, "status")
		return strings.Contains(out, "daemons: 2")
	})
	if !strings.Contains(out, "gateway configured, store sqlite") || !strings.Contains(out, "gateway none, store sqlite") ||
		!strings.Contains(errOut, "warning: the 2 daemons of the schemaq queue group differ in their LLM gateway: 1 with a gateway (ask writes SQL), 1 without (ask answers with retrieval only)") {
		t.Errorf("status with mixed replicas:\n%s\n%s", out, errOut)
	}
	jsonOut, _, code := runAt(t, url, "status", "--json")
	var rep struct {
		Daemons  []status.Daemon `json:"daemons"`
		Warnings []string        `json:"warnings"`
	}
	if code != exitOK || json.Unmarshal([]byte(jsonOut), &rep) != nil || len(rep.Daemons) != 2 || len(rep.Warnings) != 1 {
		t.Errorf("status --json: %s", jsonOut)
	}
	stopB()
	testenv.Eventually(t, 20*time.Second, "one replica left", func() bool {
		out, errOut, _ = runAt(t, url, "status")
		return strings.Contains(out, "daemons: 1")
	})
	if strings.Contains(errOut, "warning:") {
		t.Errorf("status with one replica warns: %s", errOut)
	}
}
