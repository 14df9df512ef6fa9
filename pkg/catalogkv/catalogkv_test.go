package catalogkv_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/natstest"
	"github.com/schemaq/schemaq/pkg/streams"
)

func bucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	ns := natstest.Server(t)
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := streams.Ensure(context.Background(), js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func sample(t *testing.T, version int64) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Snapshot("shop", "s.sql", "CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int REFERENCES a);")
	if err != nil {
		t.Fatal(err)
	}
	return c.Record(catalog.Applied{Seq: version, ID: "1", Source: "1.sql", Checksum: catalog.Checksum("x")})
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
	natstest.Eventually(t, 5*time.Second, "version 20", func() bool { c := w.Catalog("shop"); return c != nil && c.Version == 20 })
	// A corrupt entry is reported and the last good catalog stays.
	if _, err := kv.Put(ctx, "shop", []byte("sqcat1\x00\x00\x00\x00\x00\x00\x00\x15not gzip")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "the corrupt entry reported", func() bool {
		c := w.Catalog("shop")
		mu.Lock()
		defer mu.Unlock()
		return c != nil && c.Version == 20 && len(bad) == 1 && bad[0] == "shop"
	})
	if err := kv.Delete(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, "deleted", func() bool { return w.Catalog("shop") == nil })
}
