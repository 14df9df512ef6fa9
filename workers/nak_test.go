package workers_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// stallingStore holds the first projection until released, then fails
// it: a passing failure, which the worker retries with a nak.
type stallingStore struct {
	*sqlite.Store
	entered, release chan struct{}
	once             sync.Once
}

func (s *stallingStore) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.entered)
		<-s.release
		return index.Replaced{}, errors.New("store unavailable for a moment")
	}
	return s.Store.ReplaceSchema(ctx, r)
}

// A retry's nak sent just after the consumer's leader died lands once a
// new leader is elected: the event comes back after its delay and the
// election, not after the ack wait, which a lost nak costs (30 s here,
// with the database's every event waiting behind it).
func TestRetryOutlivesTheConsumerLeader(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	nc := testenv.ClusterConnect(t, servers)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	scfg := streams.DefaultConfig
	scfg.Replicas = 3
	kv, err := streams.Ensure(ctx, js, scfg)
	if err != nil {
		t.Fatal(err)
	}
	emb := embed.NewLocal(64)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "index.db"), emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := &env{t: t, nc: nc, js: js, kv: kv, cats: catalogkv.New(kv), store: st, emb: emb}
	store := &stallingStore{Store: st, entered: make(chan struct{}), release: make(chan struct{})}
	cfg := testConfig()
	cfg.Consumer.AckWait = 30 * time.Second
	cfg.MessageTimeout = 20 * time.Second
	cfg.GapTimeout = time.Minute
	e.startWorker(cfg, store)

	e.publish(migration(t, "shop", 1, "CREATE TABLE orders (id int);"))
	select {
	case <-store.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the projection never started")
	}
	// The event was delivered before this: a lost nak has it back an ack
	// wait after its delivery, so anything sooner is the nak's doing,
	// however long the election took on a loaded machine.
	lostNak := time.Now().Add(cfg.Consumer.AckWait)
	cons, err := js.Consumer(ctx, events.Stream, streams.Durable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("consumer info: %v %+v", err, info)
	}
	testenv.Kill(t, servers, info.Cluster.Leader)
	close(store.release) // the projection fails now: a nak, mid-election
	failed := time.Now()
	testenv.Eventually(t, time.Until(lostNak.Add(-3*time.Second)), "the event projected on its redelivery, before a lost nak's ack wait", func() bool {
		p, err := st.Projected(context.Background(), "shop")
		return err == nil && p == 1
	})
	t.Logf("projected %v after the retry", time.Since(failed).Round(time.Millisecond))
}
