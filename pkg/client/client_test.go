package client_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/natstest"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Databases reads every form of catalog entry a bucket can hold (inline
// with a header, in the object store, and from before headers) without
// decoding a catalog, and refuses an entry that is none of them by name.
func TestDatabasesReadsEveryEntryForm(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Server(t)
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
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

	if _, err := kv.Put(ctx, "junk", []byte("not a catalog")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Databases(ctx); err == nil || !strings.Contains(err.Error(), "catalog junk") {
		t.Fatalf("a junk entry: %v; want an error naming it", err)
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
