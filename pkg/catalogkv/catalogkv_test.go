package catalogkv_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func bucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	_, kv := bucketWith(t)
	return kv
}

// bucketWith is the catalog bucket on a server of its own, and JetStream
// beside it.
func bucketWith(t *testing.T) (jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	js, err := jetstream.New(testenv.Connect(t, testenv.NATS(t)))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := streams.Ensure(context.Background(), js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	return js, kv
}

func sample(t *testing.T, version int64) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Snapshot("shop", "s.sql", "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int REFERENCES a);")
	if err != nil {
		t.Fatal(err)
	}
	return c.Record(catalog.Applied{Seq: version, ID: "1", Source: "1.sql", Checksum: events.Checksum("x")})
}

// legacy is a catalog as stored before values had a header: plain gzip.
func legacy(t *testing.T, c *catalog.Catalog) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(c); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func TestVersionWithoutDecoding(t *testing.T) {
	ctx := context.Background()
	kv := bucket(t)
	s := catalogkv.New(kv)
	if v, rev, err := s.Version(ctx, "shop"); v != 0 || rev != 0 || err != nil {
		t.Fatalf("no catalog: %d %d %v", v, rev, err)
	}
	rev, err := s.Put(ctx, sample(t, 7), 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, r, err := s.Version(ctx, "shop"); v != 7 || r != rev || err != nil {
		t.Errorf("version %d revision %d (want 7, %d): %v", v, r, rev, err)
	}
	// A value written before the header existed still reads, version and all.
	if _, err := kv.Put(ctx, "old", legacy(t, sample(t, 3))); err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.Version(ctx, "old"); v != 3 || err != nil {
		t.Errorf("legacy version %d: %v", v, err)
	}
	c, _, err := s.Get(ctx, "old")
	if err != nil || c.Version != 3 || len(c.Tables()) != 2 || len(c.History()) != 1 {
		t.Errorf("legacy catalog: %+v %v", c, err)
	}
	if _, err := s.Put(ctx, sample(t, 8), rev-1); !errors.Is(err, catalogkv.ErrConflict) {
		t.Errorf("a stale revision: %v", err)
	}
}

func TestWatcherDecodesOnDemand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := bucket(t)
	s := catalogkv.New(kv)
	if _, err := s.Put(ctx, sample(t, 1), 0); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bad []string
	w, err := catalogkv.Watch(ctx, kv, func(key string, err error) { mu.Lock(); bad = append(bad, key); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("not ready")
	}
	if c := w.Catalog("shop"); c == nil || c.Version != 1 {
		t.Fatalf("initial catalog: %+v", c)
	}
	// Many writes, one read: the read sees the last.
	rev, _ := s.Revision(ctx, "shop")
	for v := int64(2); v <= 20; v++ {
		if rev, err = s.Put(ctx, sample(t, v), rev); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 5*time.Second, "version 20", func() bool { c := w.Catalog("shop"); return c != nil && c.Version == 20 })
	// A corrupt entry is reported and the last good catalog stays.
	if _, err := kv.Put(ctx, "shop", []byte("sqcat1\x00\x00\x00\x00\x00\x00\x00\x15not gzip")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "the corrupt entry reported", func() bool {
		c := w.Catalog("shop")
		mu.Lock()
		defer mu.Unlock()
		return c != nil && c.Version == 20 && len(bad) == 1 && bad[0] == "shop"
	})
	if err := kv.Delete(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "deleted", func() bool { return w.Catalog("shop") == nil })
}

// big makes a catalog whose encoding is larger than an entry holds: many
// tables with random names, so it does not compress away.
func big(t *testing.T, version int64, tables int) *catalog.Catalog {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(version), 9))
	var b strings.Builder
	for i := range tables {
		fmt.Fprintf(&b, "CREATE TABLE t_%x_%d (id bigint PRIMARY KEY", rng.Uint64(), i)
		for range 8 {
			fmt.Fprintf(&b, ", c_%x text", rng.Uint64())
		}
		b.WriteString(");\n")
	}
	c, err := catalog.Snapshot("big", "big.sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	c.Version = version
	return c
}

// A catalog too large for an entry lives in the object store, referenced
// from its entry; readers with the object store read it, the one it
// replaces is deleted, and a store without one refuses with the reason.
func TestBigCatalogInObjectStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := testenv.NATS(t)
	js, err := jetstream.New(testenv.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	v1 := big(t, 1, 9_000)
	if enc, _ := catalogkv.Encode(v1); len(enc) <= catalogkv.MaxInline {
		t.Fatalf("the fixture encodes to %d bytes, not more than an entry holds", len(enc))
	}
	if _, err := catalogkv.New(kv).Put(ctx, v1, 0); err == nil || !strings.Contains(err.Error(), "no object store") {
		t.Fatalf("a store without objects wrote a %d-table catalog: %v", len(v1.Tables()), err)
	}
	s := catalogkv.New(kv, catalogkv.WithObjects(obj))
	rev, err := s.Put(ctx, v1, 0)
	if err != nil {
		t.Fatal(err)
	}
	objects := func() []string {
		var names []string
		list, _ := obj.List(ctx)
		for _, o := range list {
			names = append(names, o.Name)
		}
		return names
	}
	if names := objects(); len(names) != 1 || !strings.HasPrefix(names[0], "catalogs/big/1-") {
		t.Fatalf("objects after the first write: %v", names)
	}
	// A fresh reader (another worker) decodes it through the reference,
	// and reads its version from the entry alone.
	other := catalogkv.New(kv, catalogkv.WithObjects(obj))
	got, gotRev, err := other.Get(ctx, "big")
	if err != nil || gotRev != rev || len(got.Tables()) != 9_000 {
		t.Fatalf("read back: %d tables at revision %d (want %d): %v", len(got.Tables()), gotRev, rev, err)
	}
	if v, _, err := other.Version(ctx, "big"); err != nil || v != 1 {
		t.Errorf("version from the entry: %d %v", v, err)
	}
	w, err := catalogkv.Watch(ctx, kv, nil, catalogkv.WithObjects(obj))
	if err != nil {
		t.Fatal(err)
	}
	<-w.Ready()
	if c := w.Catalog("big"); c == nil || len(c.Tables()) != 9_000 {
		t.Fatalf("the watcher's catalog: %v", c)
	}
	// The next version replaces the object; the watcher follows.
	if _, err := other.Put(ctx, big(t, 2, 9_001), gotRev); err != nil {
		t.Fatal(err)
	}
	if names := objects(); len(names) != 1 || !strings.HasPrefix(names[0], "catalogs/big/2-") {
		t.Errorf("objects after the second write: %v, want only version 2's", names)
	}
	testenv.Eventually(t, 10*time.Second, "the watcher at version 2", func() bool {
		c := w.Catalog("big")
		return c != nil && c.Version == 2 && len(c.Tables()) == 9_001
	})
	// A reader without the object store says why it cannot read it.
	if _, _, err := catalogkv.New(kv).Get(ctx, "big"); err == nil || !strings.Contains(err.Error(), "no object store") {
		t.Errorf("a reader without objects: %v", err)
	}
}

// TestWatcherSharesWhatDidNotChange: a watcher in the writer's process
// takes the catalog as written; one elsewhere decodes it, and what did
// not change is still the object it held before, so work keyed by table
// is not redone.
func TestWatcherSharesWhatDidNotChange(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := bucket(t)
	s := catalogkv.New(kv)
	v1 := sample(t, 1)
	rev, err := s.Put(ctx, v1, 0)
	if err != nil {
		t.Fatal(err)
	}
	local, err := catalogkv.Watch(ctx, kv, nil, catalogkv.WithLocal(s))
	if err != nil {
		t.Fatal(err)
	}
	remote, err := catalogkv.Watch(ctx, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-local.Ready()
	<-remote.Ready()
	if c := local.Catalog("shop"); c != v1 {
		t.Fatalf("the local watcher decoded the catalog its process wrote: %p, want %p", c, v1)
	}
	r1 := remote.Catalog("shop")
	if r1 == v1 || r1 == nil || r1.Version != 1 {
		t.Fatalf("remote v1: %+v", r1)
	}
	v2, err := v1.Apply("2.sql", "ALTER TABLE b ADD COLUMN note text")
	if err != nil {
		t.Fatal(err)
	}
	v2 = v2.Record(catalog.Applied{Seq: 2, ID: "2", Source: "2.sql", Checksum: events.Checksum("y")})
	if _, err := s.Put(ctx, v2, rev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "version 2 everywhere", func() bool {
		l, r := local.Catalog("shop"), remote.Catalog("shop")
		return l != nil && l.Version == 2 && r != nil && r.Version == 2
	})
	if local.Catalog("shop") != v2 {
		t.Error("the local watcher decoded version 2")
	}
	a, b := catalog.QualName{Schema: "public", Name: "a"}, catalog.QualName{Schema: "public", Name: "b"}
	r2 := remote.Catalog("shop")
	if r2.Table(a) != r1.Table(a) {
		t.Error("the remote watcher's unchanged table a is a new object")
	}
	if r2.Table(b) == r1.Table(b) || r2.Table(b).Column("note") == nil {
		t.Error("the remote watcher's changed table b is the old object")
	}
	// Another writer's entry, in the local watcher's process or not, is decoded.
	other := catalogkv.New(kv)
	r, _ := s.Revision(ctx, "shop")
	v3 := sample(t, 3)
	if _, err := other.Put(ctx, v3, r); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 5*time.Second, "version 3", func() bool { c := local.Catalog("shop"); return c != nil && c.Version == 3 })
	if local.Catalog("shop") == v3 {
		t.Error("the local watcher took another store's catalog as its own")
	}
}

// A write at a stale revision is a conflict on a replicated bucket too,
// where JetStream reports it with another error code (10164) than on one
// replica (10071): serve replicas lose that race on every event they
// both apply.
func TestConflictOnAReplicatedBucket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	servers := testenv.NATSCluster(t, 3)
	nc := testenv.Connect(t, servers[0])
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := streams.DefaultConfig
	cfg.Replicas = 3
	kv, err := streams.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := catalogkv.New(kv)
	tests := []struct {
		name string
		rev  func(first uint64) uint64
	}{
		{"created twice", func(uint64) uint64 { return 0 }},
		{"updated from a stale revision", func(first uint64) uint64 { return first - 1 }},
	}
	first, err := s.Put(ctx, sample(t, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	if first, err = s.Put(ctx, sample(t, 2), first); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		_, err := s.Put(ctx, sample(t, 3), tt.rev(first))
		if !errors.Is(err, catalogkv.ErrConflict) {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// One database's slow hook (a daemon warming a huge catalog's
// vocabulary) must not keep another database's new catalog from its
// requests: the hooks run beside the decoding, one database's at a
// time, the newest catalog first.
func TestSlowHookHoldsUpNoOtherDatabase(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kv := bucket(t)
	s := catalogkv.New(kv)
	named := func(db string, version int64) *catalog.Catalog {
		c, err := catalog.Snapshot(db, "s.sql", "CREATE TABLE a (id int PRIMARY KEY);")
		if err != nil {
			t.Fatal(err)
		}
		return c.Record(catalog.Applied{Seq: version, ID: fmt.Sprint(version), Source: "1.sql", Checksum: events.Checksum("x")})
	}
	revs := map[string]uint64{}
	put := func(db string, version int64) {
		rev, err := s.Put(ctx, named(db, version), revs[db])
		if err != nil {
			t.Fatal(err)
		}
		revs[db] = rev
	}
	put("slow", 1)
	put("fast", 1)
	w, err := catalogkv.Watch(ctx, kv, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-w.Ready()
	entered, release := make(chan struct{}, 10), make(chan struct{})
	var mu sync.Mutex
	warmed := map[string]int64{}
	w.OnCatalog(func(c *catalog.Catalog) {
		if c.Database == "slow" && c.Version >= 2 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
		}
		mu.Lock()
		warmed[c.Database] = c.Version
		mu.Unlock()
	})
	for _, db := range []string{"slow", "fast"} {
		if c := w.Catalog(db); c == nil || c.Version != 1 {
			t.Fatalf("%s: %+v", db, c)
		}
	}
	put("slow", 2)
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow database's hook never ran")
	}
	put("fast", 2)
	testenv.Eventually(t, 5*time.Second, "fast's version 2 while slow's hook runs", func() bool {
		c := w.Catalog("fast")
		mu.Lock()
		defer mu.Unlock()
		return c != nil && c.Version == 2 && warmed["fast"] == 2
	})
	// Versions that came while a hook ran are decoded and warmed after
	// it, once, the newest; until then the database's requests keep the
	// catalog being warmed.
	put("slow", 3)
	put("slow", 4)
	time.Sleep(200 * time.Millisecond)
	if c := w.Catalog("slow"); c == nil || c.Version != 2 {
		t.Fatalf("slow's catalog while its hook runs: %+v, want version 2", c)
	}
	// The request's nudge to decode is spent while the hook still runs.
	time.Sleep(200 * time.Millisecond)
	close(release)
	// No request asks meanwhile: the hook's end is what has it decoded.
	testenv.Eventually(t, 5*time.Second, "slow's version 4 warmed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return warmed["slow"] == 4
	})
	if c := w.Catalog("slow"); c == nil || c.Version != 4 {
		t.Errorf("slow's catalog once warmed: %+v, want version 4", c)
	}
	if n := len(entered); n != 1 {
		t.Errorf("slow's hook ran %d more times after version 2, want once (version 4)", n)
	}
}
