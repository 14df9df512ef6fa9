package client_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// connect is a client on a fresh NATS server, and JetStream beside it.
func connect(t testing.TB) (jetstream.JetStream, *client.Client) {
	t.Helper()
	nc := testenv.Connect(t, testenv.NATS(t))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, cli
}

// Databases reads every form of catalog entry a bucket can hold (inline
// with a header, in the object store, and from before headers) without
// decoding a catalog, and refuses an entry that is none of them by name.
func TestDatabasesReadsEveryEntryForm(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	if got, err := cli.Databases(ctx); err != nil || len(got) != 0 {
		t.Fatalf("before any bucket: %v, %v; want none", got, err)
	}
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cli.Databases(ctx); err != nil || len(got) != 0 {
		t.Fatalf("empty bucket: %v, %v; want none", got, err)
	}
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	store := catalogkv.New(kv, catalogkv.WithObjects(obj))

	small := snapshot(t, "shop", 7, 3)
	if _, err := store.Put(ctx, small, 0); err != nil {
		t.Fatal(err)
	}
	// Big enough to live in the object store, referenced from its entry.
	big := snapshot(t, "warehouse", 12, 9000)
	if _, err := store.Put(ctx, big, 0); err != nil {
		t.Fatal(err)
	}
	if name, err := store.Object(ctx, "warehouse"); err != nil || name == "" {
		t.Fatalf("warehouse's catalog is not in the object store (%q, %v): the test covers nothing", name, err)
	}
	if _, err := kv.Put(ctx, "legacy", legacy(t, snapshot(t, "legacy", 41, 2))); err != nil {
		t.Fatal(err)
	}

	got, err := cli.Databases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []client.Database{{Name: "legacy", Version: 41}, {Name: "shop", Version: 7}, {Name: "warehouse", Version: 12}}
	if !slices.Equal(got, want) {
		t.Fatalf("Databases = %v, want %v", got, want)
	}

	// The history reads from each form too, the object's included.
	for _, want := range want {
		h, err := cli.History(ctx, want.Name)
		if err != nil || h.Version != want.Version || h.Database != want.Name {
			t.Errorf("History(%s) = %+v, %v", want.Name, h, err)
		}
	}
	if h, err := cli.History(ctx, "none"); err != nil || h.Version != 0 || len(h.History) != 0 {
		t.Errorf("History of a database without a catalog = %+v, %v", h, err)
	}

	if _, err := kv.Put(ctx, "junk", []byte("not a catalog")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Databases(ctx); err == nil || !strings.Contains(err.Error(), "catalog junk") {
		t.Fatalf("a junk entry: %v; want an error naming it", err)
	}
}

// TestDatabasesBesidePuts: the listing names every database with a
// catalog while workers write catalogs beside it, and none retired.
// nats.go's KeyValue.Keys left one out in about one listing of ten (see
// streams.KeyValueKeys); the race is the server's, so it runs rounds.
func TestDatabasesBesidePuts(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	const dbs = 200
	entry, err := catalogkv.Encode(snapshot(t, "db", 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	for i := range dbs {
		if _, err := kv.Put(ctx, fmt.Sprint("db", i), entry); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(ctx, "retired", entry); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "retired"); err != nil {
		t.Fatal(err)
	}
	for round := range 40 {
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { // workers writing catalogs
			defer close(done)
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := kv.Put(ctx, fmt.Sprint("db", j%dbs), entry); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		got, err := cli.Databases(ctx)
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != dbs || slices.ContainsFunc(got, func(d client.Database) bool { return d.Name == "retired" }) {
			t.Fatalf("round %d: listed %d databases, want the %d with a catalog and not the retired one", round, len(got), dbs)
		}
	}
}

// The Go client is for services that have no C compiler: it must build
// without cgo, so it may not reach the DDL parser.
func TestClientBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command(gobin, "build", "-o", t.TempDir()+"/client.a", ".")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./pkg/client: %v\n%s", err, out)
	}
}

func snapshot(t *testing.T, db string, version int64, tables int) *catalog.Catalog {
	t.Helper()
	// Random names, so that a big catalog does not compress away.
	rng := rand.New(rand.NewPCG(uint64(version), 9))
	var b strings.Builder
	for i := range tables {
		fmt.Fprintf(&b, "CREATE TABLE t_%x_%d (id bigint PRIMARY KEY", rng.Uint64(), i)
		for range 8 {
			fmt.Fprintf(&b, ", c_%x text", rng.Uint64())
		}
		b.WriteString(");\n")
	}
	c, err := catalog.Snapshot(db, db+".sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	c.Version = version
	return c
}

// legacy is an entry as written before entries had a header: gzip of the
// catalog's JSON.
func legacy(t *testing.T, c *catalog.Catalog) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(c); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := events.CatalogEntryVersion(buf.Bytes()); ok {
		t.Fatal("the legacy entry has a header")
	}
	return buf.Bytes()
}

// Planning reads the history the catalog records: what it applied is not
// published again, and the rest is numbered after it; a changed applied
// file is refused. A wait fails at once on a dead letter of the database.
func TestMigrationsPlanAndWait(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := []string{"CREATE TABLE a (id int);", "CREATE TABLE b (id int);", "CREATE TABLE c (id int);"}
	for i, sql := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d_t.sql", i+1)), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing applied yet: all three, from seq 1.
	evs, _, err := cli.MigrationEvents(ctx, "shop", []string{dir}, migrate.PlanOptions{}, time.Now())
	if err != nil || len(evs) != 3 || evs[0].Migration.Seq != 1 {
		t.Fatalf("first plan: %d events, %v", len(evs), err)
	}
	// The catalog records the first two as applied.
	found, err := migrate.Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := migrate.Read(found)
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.New("shop")
	for i, st := range steps[:2] {
		cat = cat.Clone().Record(catalog.Applied{Seq: int64(i + 1), ID: st.ID(), Source: st.Name, Checksum: st.Checksum})
	}
	if _, err := catalogkv.New(kv).Put(ctx, cat, 0); err != nil {
		t.Fatal(err)
	}
	evs, _, err = cli.MigrationEvents(ctx, "shop", []string{dir}, migrate.PlanOptions{}, time.Now())
	if err != nil || len(evs) != 1 || evs[0].Migration.Seq != 3 || evs[0].Migration.Source != "0003_t.sql" {
		t.Fatalf("second plan: %+v, %v", evs, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0002_t.sql"), []byte("CREATE TABLE b (id bigint);"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli.MigrationEvents(ctx, "shop", []string{dir}, migrate.PlanOptions{}, time.Now()); !errors.Is(err, migrate.ErrChanged) {
		t.Errorf("a changed applied file: %v", err)
	}

	since := time.Now()
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = deadletter.Publish(ctx, js, deadletter.Letter{Database: "shop", Subject: events.SchemaSubject("shop"), Source: "0003_t.sql",
			Kind: events.DLQKindRefused, Reason: "relation c already exists", StreamSeq: 1, EventSeq: 3, Data: []byte("{}")})
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = cli.WaitApplied(wctx, "shop", 3, since)
	var dl *client.DeadLetteredError
	if !errors.As(err, &dl) || !strings.Contains(err.Error(), "0003_t.sql was dead-lettered") || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("WaitApplied: %v", err)
	}
	// Without a letter and without a daemon, it waits for the deadline
	// and says what it saw.
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := cli.WaitApplied(short, "shop", 3, time.Now()); err == nil || !strings.Contains(err.Error(), "reached version 2, not 3") {
		t.Errorf("WaitApplied at the deadline: %v", err)
	}
}

// WaitIndexed fails at once on a dead letter of the database, and at its
// deadline names what it waited for and why.
func TestWaitIndexed(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	if _, err := streams.Ensure(ctx, js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	want := map[events.IndexedRef]int64{{Kind: "doc", Name: "guides/refunds.md"}: 7}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := cli.WaitIndexed(short, "shop", want, time.Now()); err == nil || !strings.Contains(err.Error(), "1 object(s) of shop not confirmed indexed (first: doc guides/refunds.md); no daemon answered") {
		t.Errorf("WaitIndexed without a daemon: %v", err)
	}
	since := time.Now()
	if err := deadletter.Publish(ctx, js, deadletter.Letter{Database: "shop", Subject: events.DocsSubject("shop"), Source: "guides/refunds.md",
		Kind: events.DLQKindInvalid, Reason: "field data.body: not UTF-8", StreamSeq: 7, Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	var dl *client.DeadLetteredError
	if err := cli.WaitIndexed(wctx, "shop", want, since); !errors.As(err, &dl) || !strings.Contains(err.Error(), "guides/refunds.md was dead-lettered") {
		t.Errorf("WaitIndexed after a dead letter: %v", err)
	}
}

// TestPublishRidesOutALeaderElection: on a three-node cluster with the
// stream at three replicas, the node leading the stream dies and 300
// events are published right away: each is stored once, the publishes
// retrying through the election.
func TestPublishRidesOutALeaderElection(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	nc := testenv.ClusterConnect(t, servers)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := streams.DefaultConfig
	cfg.Replicas = 3
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, events.Stream)
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream info: %v %+v", err, info)
	}
	testenv.Kill(t, servers, info.Cluster.Leader) // kill -9 of the leader, as far as the cluster can tell
	cli, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	retries := 0
	cli.OnPublishRetry(func(int, error) { retries++ })
	for i := 1; i <= 300; i++ {
		ev, err := events.New(fmt.Sprintf("shop-m%d", i), "shop", time.Now(), &events.Migration{Seq: int64(i), Source: fmt.Sprintf("%04d.sql", i), SQL: fmt.Sprintf("CREATE TABLE t%d (id int);", i)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Publish(ctx, ev); err != nil {
			t.Fatalf("publish %d after the leader died: %v", i, err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "300 events stored once", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 300
	})
	t.Logf("%d publishes retried during the election", retries)
}

// A wait that goes on says where it stands every few seconds: a publish
// --wait through a failover or a long history is not silent.
func TestWaitReportsProgress(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalogkv.New(kv).Put(ctx, snapshot(t, "shop", 3, 2), 0); err != nil {
		t.Fatal(err)
	}
	var reports []client.WaitProgress
	cli.OnWaitProgress(func(p client.WaitProgress) { reports = append(reports, p) })
	wctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	if _, err := cli.WaitApplied(wctx, "shop", 5, time.Now()); err == nil || !strings.Contains(err.Error(), "reached version 3, not 5") {
		t.Errorf("wait for a version never reached: %v", err)
	}
	if len(reports) == 0 || reports[0].Catalog != 3 || reports[0].Want != 5 || reports[0].Database != "shop" {
		t.Errorf("progress reports: %+v", reports)
	}
}

// A wait goes on asking the catalog after the dead-letter stream's leader
// dies. A request sent to a stream whose leader just died is never
// answered; a wait that read the letters under its own deadline stopped
// there, as a publish --wait once stopped for its two minutes after a
// node was killed.
func TestWaitOutlivesALetterStreamLeader(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	nc := testenv.ClusterConnect(t, servers)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := streams.DefaultConfig
	cfg.Replicas = 3
	kv, err := streams.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalogkv.New(kv).Put(ctx, snapshot(t, "shop", 3, 2), 0); err != nil {
		t.Fatal(err)
	}
	s, _ := js.Stream(ctx, events.DeadLetterStream)
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("dead-letter stream info: %v %+v", err, info)
	}
	testenv.Kill(t, servers, info.Cluster.Leader)

	cli, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var reports []client.WaitProgress
	cli.OnWaitProgress(func(p client.WaitProgress) { reports = append(reports, p) })
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := cli.WaitApplied(wctx, "shop", 5, time.Now()); err == nil || !strings.Contains(err.Error(), "reached version 3, not 5") {
		t.Errorf("wait after the letters' leader died: %v", err)
	}
	if len(reports) == 0 || reports[len(reports)-1].Catalog != 3 {
		t.Errorf("progress reports: %+v", reports)
	}
}

// TestPublishPastTheBound: an event past its database's bound comes back
// at once as a *FullError naming the database and kind, not retried as
// a stream without a leader; another database publishes on.
func TestPublishPastTheBound(t *testing.T) {
	ctx := context.Background()
	js, cli := connect(t)
	cfg := streams.DefaultConfig
	cfg.MaxEventsPerDatabase = 2
	if _, err := streams.Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	retries := 0
	cli.OnPublishRetry(func(int, error) { retries++ })
	doc := func(db string, i int) error {
		ev, err := events.New(fmt.Sprintf("%s-%d", db, i), db, time.Now(), &events.DocUpsert{DocID: fmt.Sprintf("d%d.md", i), Body: "# D"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cli.Publish(ctx, ev)
		return err
	}
	for i := range 2 {
		if err := doc("shop", i); err != nil {
			t.Fatal(err)
		}
	}
	err := doc("shop", 2)
	var full *client.FullError
	if !errors.As(err, &full) || full.Database != "shop" || full.Kind != "docs" || retries != 0 {
		t.Errorf("the third docs event of shop: %v (%d retries), want a FullError of shop's docs at once", err, retries)
	}
	if err := doc("other", 0); err != nil {
		t.Errorf("another database: %v", err)
	}
}
