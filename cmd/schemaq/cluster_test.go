package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestServeSurvivesANodeLoss: two serve replicas on a three-node NATS
// cluster with every asset at three replicas. A node dies: the leader of
// the SCHEMAQ stream, or the leader of the catalog bucket, while 300
// migrations are being published or while searches run. The publish succeeds,
// every table is searchable on both replicas, nothing is dead-lettered,
// and at least 95% of the searches are answered, without a restart.
//
// The node is shut down in process: its clients and peers see it vanish
// as they would a killed process, though it closes its files first.
func TestServeSurvivesANodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node NATS cluster")
	}
	for _, tc := range []struct {
		name, asset string // the asset whose leader dies
		midIngest   bool   // while publishing (else after it, while searches run)
	}{
		{"the stream leader, mid-ingest", events.Stream, true},
		{"the stream leader, mid-search", events.Stream, false},
		{"the catalog bucket's leader, mid-ingest", "KV_" + events.CatalogBucket, true},
		{"the catalog bucket's leader, mid-search", "KV_" + events.CatalogBucket, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := testenv.NATSCluster(t, 3)
			urls := testenv.ClusterURLs(servers)
			vars := func(id string) map[string]string {
				return map[string]string{"SCHEMAQ_NATS_URL": urls, "SCHEMAQ_DATA_DIR": t.TempDir(), "SCHEMAQ_METRICS_ADDR": freePort(t),
					"SCHEMAQ_STREAM_REPLICAS": "3", "SCHEMAQ_REPLICA_ID": id}
			}
			for _, id := range []string{"a", "b"} {
				v := vars(id)
				startService(t, "serve "+id, []string{"serve"}, v)
				testenv.Eventually(t, 60*time.Second, "replica "+id+" ready", func() bool {
					_, err := runVars(t.Context(), []string{"healthcheck", "--addr", v["SCHEMAQ_METRICS_ADDR"], "--path", "/readyz"}, v)
					return err == nil
				})
			}
			nc := testenv.ClusterConnect(t, servers)
			js, _ := jetstream.New(nc)
			cli, _ := client.New(nc)

			dir := t.TempDir()
			ledgerMigrations(t, dir, 1, 300)
			var killedAt time.Time
			publishing := make(chan string, 1)
			start := func() {
				go func() {
					out, errOut, code := runAt(t, urls, "publish", "migrations", "--db", "ledger", "--wait", "120s", dir)
					publishing <- fmt.Sprintf("exit %d\n%s%s", code, out, errOut)
				}()
			}
			// The database exists before the searches count.
			one := t.TempDir()
			ledgerMigrations(t, one, 1, 1)
			if out, errOut, code := runAt(t, urls, "publish", "migrations", "--db", "ledger", "--wait", "30s", one); code != exitOK {
				t.Fatalf("the first migration: %s%s", out, errOut)
			}
			// Searches run from the first table on, one every 20 ms.
			load := startSearches(cli, "ledger", "amount booked in the ledger")
			start()
			if tc.midIngest {
				testenv.Eventually(t, 60*time.Second, "a hundred migrations in", func() bool {
					v, err := cli.CatalogVersion(t.Context(), "ledger")
					return err == nil && v >= 100
				})
				kill(t, js, servers, tc.asset)
				killedAt = time.Now()
			}
			select {
			case out := <-publishing:
				if !strings.HasPrefix(out, "exit 0") || !strings.Contains(out, "catalog ledger is at version 300") {
					t.Fatalf("publish: %s", out)
				}
				t.Logf("the publish retried %d time(s)", strings.Count(out, "retrying (attempt"))
			case <-time.After(3 * time.Minute):
				t.Fatal("the publish did not end within 3 minutes")
			}
			if !tc.midIngest {
				kill(t, js, servers, tc.asset)
				killedAt = time.Now()
			}
			// Every table is searchable, on whichever replica answers.
			testenv.Eventually(t, 60*time.Second, "ledger_300 found by both replicas", func() bool {
				found := 0
				for range 6 {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					r, err := cli.Tables(ctx, &events.TablesRequest{Database: "ledger", Table: "ledger_300"})
					cancel()
					if err == nil && r.Indexed == 300 {
						found++
					}
				}
				return found == 6
			})
			// Searches run for three seconds after the kill at least: through
			// the election, whatever the publish's pace.
			time.Sleep(time.Until(killedAt.Add(3 * time.Second)))
			out, errOut, code := runAt(t, urls, "dlq", "list", "--db", "ledger")
			if code != exitOK || !strings.Contains(out, "0 dead letter(s)") {
				t.Errorf("dead letters: %s%s", out, errOut)
			}
			load.end(t, 0.95, 30)
		})
	}
}

// kill shuts down the server leading asset's stream.
func kill(t *testing.T, js jetstream.JetStream, servers []*server.Server, asset string) {
	t.Helper()
	var leader string
	testenv.Eventually(t, 10*time.Second, asset+" has a leader", func() bool {
		s, err := js.Stream(t.Context(), asset)
		if err != nil {
			return false
		}
		info, err := s.Info(t.Context())
		if err == nil && info.Cluster != nil {
			leader = info.Cluster.Leader
		}
		return leader != ""
	})
	t.Logf("shutting down %s, the leader of %s", leader, asset)
	testenv.Kill(t, servers, leader)
}
