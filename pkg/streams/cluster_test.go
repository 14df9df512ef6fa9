package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

var backing = []string{events.Stream, events.DeadLetterStream, "KV_" + events.CatalogBucket, "OBJ_" + events.ObjectBucket,
	"KV_" + events.SweepBucket, "KV_" + events.AttemptBucket}

// TestReplicasOnACluster: --stream-replicas sets every asset's replicas
// on a real three-node cluster, scales them in place when it changes,
// is kept by a process that does not set it, and is refused with a clear
// message beyond the cluster's size.
func TestReplicasOnACluster(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	nc, err := nats.Connect(testenv.ClusterURLs(servers))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	replicas := func() map[string]int {
		out := map[string]int{}
		for _, b := range backing {
			s, err := js.Stream(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out[b] = info.Config.Replicas
		}
		return out
	}
	ensure := func(n int, scaled *[]string) error {
		cfg := streams.DefaultConfig
		cfg.Replicas = n
		cfg.OnScale = func(asset string, from, to int) { *scaled = append(*scaled, asset) }
		_, err := streams.Ensure(ctx, js, cfg)
		return err
	}
	var scaled []string
	if err := ensure(3, &scaled); err != nil {
		t.Fatal(err)
	}
	for b, n := range replicas() {
		if n != 3 {
			t.Errorf("%s at %d replicas, want 3", b, n)
		}
	}
	// A process started without the setting keeps them.
	if err := ensure(0, &scaled); err != nil || len(scaled) != 0 {
		t.Fatalf("keep: %v, scaled %v", err, scaled)
	}
	for b, n := range replicas() {
		if n != 3 {
			t.Errorf("%s at %d replicas after a process without the setting, want 3 kept", b, n)
		}
	}
	if err := ensure(2, &scaled); err != nil || len(scaled) != len(backing) {
		t.Fatalf("scale to 2: %v, scaled %v", err, scaled)
	}
	for b, n := range replicas() {
		if n != 2 {
			t.Errorf("%s at %d replicas, want 2", b, n)
		}
	}
	if err := ensure(5, &scaled); err == nil || !strings.Contains(err.Error(), "at 5 replicas") || !strings.Contains(err.Error(), "must not exceed the servers that run JetStream") {
		t.Errorf("5 replicas on 3 servers: %v", err)
	}
}

// TestEnsureTogether: replicas that start at once (a StatefulSet's pods)
// all ensure the assets at three replicas on a cluster; each must get
// them, none time out on another's create.
func TestEnsureTogether(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := streams.DefaultConfig
	cfg.Replicas = 3
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			nc, err := nats.Connect(testenv.ClusterURLs(servers))
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			_, err = streams.Ensure(ctx, js, cfg)
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
