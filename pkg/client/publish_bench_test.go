package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// BenchmarkPublish is the cost of one acknowledged migration event: on
// one server, on a three-node cluster at three replicas, and on that
// cluster flushing every write before its ack (sync_interval: always, as
// k8s/nats-cluster and the compose cluster profile run). Publishes are
// one at a time, as schemaq publish sends a history.
func BenchmarkPublish(b *testing.B) {
	for _, tc := range []struct {
		name  string
		nodes int
		opts  []testenv.ClusterOption
	}{
		{"nodes=1", 1, nil},
		{"nodes=3", 3, nil},
		{"nodes=3/sync=always", 3, []testenv.ClusterOption{testenv.ClusterSyncAlways()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := testenv.NATS(b).ClientURL() // one server, not clustered
			if tc.nodes > 1 {
				url = testenv.ClusterURLs(testenv.NATSCluster(b, tc.nodes, tc.opts...))
			}
			nc, err := nats.Connect(url)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			cfg := streams.DefaultConfig
			cfg.Replicas = tc.nodes
			ctx := context.Background()
			if _, err := streams.Ensure(ctx, js, cfg); err != nil {
				b.Fatal(err)
			}
			cli, _ := client.New(nc)
			sql := "CREATE TABLE ledger (id bigint PRIMARY KEY, amount numeric, booked_at timestamptz);"
			b.ResetTimer()
			for i := range b.N {
				ev, err := events.New(fmt.Sprintf("b-%s-%d", tc.name, i), "bench", time.Now(), &events.Migration{Seq: int64(i + 1), Source: "x.sql", SQL: sql})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := cli.Publish(ctx, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
