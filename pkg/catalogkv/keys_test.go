package catalogkv_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalogkv"
)

// TestKeysBesidePuts: listing the databases (Store.Keys, as status and
// a worker's audit and re-projection do) while workers write catalogs
// beside names every database that has one, and none that was retired.
// nats.go's watch of the bucket ends where the server counts nothing
// pending, a count that drifts while puts replace entries: alone, it
// left out a database in about one listing of ten here. The race is the
// server's, so the test runs rounds until it shows.
func TestKeysBesidePuts(t *testing.T) {
	ctx := context.Background()
	js, kv := bucketWith(t)
	const dbs = 200
	entry := func(version int) []byte {
		b, err := catalogkv.Encode(sample(t, int64(version)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for i := range dbs {
		if _, err := kv.Put(ctx, fmt.Sprint("db", i), entry(1)); err != nil {
			t.Fatal(err)
		}
	}
	// Retired databases leave a delete or purge marker behind.
	for _, db := range []string{"retired-a", "retired-b"} {
		if _, err := kv.Put(ctx, db, entry(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "retired-a"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "retired-b"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range dbs {
		want = append(want, fmt.Sprint("db", i))
	}
	slices.Sort(want)

	store := catalogkv.New(kv, catalogkv.WithJetStream(js))
	for round := range 40 {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() { // workers writing catalogs, each a new version
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := kv.Put(ctx, fmt.Sprint("db", j%dbs), entry(2+round)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		got, err := store.Keys(ctx)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: listed %d databases, want the %d with a catalog (missing %v, extra %v)",
				round, len(got), len(want), missing(want, got), missing(got, want))
		}
	}
}

// missing is what of a is not in b.
func missing(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
