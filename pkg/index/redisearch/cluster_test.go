package redisearch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/indextest"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// The whole Store contract on a three-primary Redis Cluster, searching in
// memory: every database's keys share its hash tag, so its scripts and
// MULTIs run on one slot.
func TestConformanceOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node Redis Cluster")
	}
	rdb := testenv.ClusterClient(t, testenv.StartRedisCluster(t, 3))
	indextest.Run(t, func(t *testing.T) index.Store {
		return openLive(t, rdb, Options{Dimensions: indextest.Dimensions, Model: "local", Search: SearchMemory})
	})
}

// On a cluster: databases spread over the primaries, a batched
// projection lands whole, a reader follows a writer through its change
// log and its lease, and searching in the server is refused at start.
func TestClusterSpreadsDatabases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node Redis Cluster")
	}
	ctx := context.Background()
	nodes := testenv.StartRedisCluster(t, 3)
	rdb := testenv.ClusterClient(t, nodes)
	if _, err := Open(ctx, rdb, Options{Dimensions: dim, Search: SearchServer}); err == nil || !strings.Contains(err.Error(), "coordinator") {
		t.Errorf("searching in the server on a cluster: %v", err)
	}
	writer := openLive(t, rdb, Options{Dimensions: dim, Model: "a"})
	reader, err := Open(ctx, rdb, Options{Prefix: writer.opt.Prefix, Dimensions: dim, Model: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	kinds := []string{chunk.KindTable, chunk.KindView}
	for d := range 12 {
		db := fmt.Sprintf("db%02d", d)
		var recs []index.Record
		for i := range 150 { // past atomicChanges: in batches
			recs = append(recs, rec(db, chunk.KindTable, fmt.Sprintf("public.t%03d", i), 1, nil))
		}
		if _, err := writer.ReplaceSchema(ctx, index.SchemaReplace{Database: db, Version: 1, Kinds: kinds, Upserts: recs}); err != nil {
			t.Fatalf("%s: %v", db, err)
		}
		hits, err := reader.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: db}, Terms: []string{"t042"}, Limit: 3})
		if err != nil || len(hits) == 0 || hits[0].Chunk.Name != "public.t042" {
			t.Errorf("%s: search: %v %v", db, hits, err)
		}
		if p, err := reader.Projected(ctx, db); err != nil || p != 1 {
			t.Errorf("%s: projected %d %v", db, p, err)
		}
	}
	// The embedding cache's keys spread over the slots too.
	vecs := map[string][]float32{}
	for i := range 300 {
		vecs[fmt.Sprintf("model/%d/%d", dim, i)] = make([]float32, dim)
	}
	if err := writer.PutVectors(ctx, vecs); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(vecs)+1)
	for k := range vecs {
		keys = append(keys, k)
	}
	got, err := reader.GetVectors(ctx, append(keys, "model/absent"))
	if err != nil || len(got) != len(vecs) {
		t.Errorf("embedding cache on a cluster: %d of %d, %v", len(got), len(vecs), err)
	}
	// Every primary holds some databases' keys.
	for _, n := range nodes {
		keys, err := n.Client().DBSize(ctx).Result()
		if err != nil || keys == 0 {
			t.Errorf("%s holds %d keys (%v): the hash tags put everything on one slot", n, keys, err)
		}
	}
	if err := writer.DeleteDatabase(ctx, "db03"); err != nil {
		t.Fatal(err)
	}
	if n, err := reader.Count(ctx, index.Filter{Database: "db03"}); err != nil || n != 0 {
		t.Errorf("after deleting db03: %d chunks, %v", n, err)
	}
	// A reader still open renews its lease and would write its
	// registration again after the drop: every process is gone first,
	// as when an operator drops an index.
	reader.Close()
	if err := writer.DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if keys, _ := n.Client().Keys(ctx, writer.opt.Prefix+"*").Result(); len(keys) > 0 {
			t.Errorf("%s kept %d keys after DropAll: %v", n, len(keys), keys[:min(3, len(keys))])
		}
	}
}
