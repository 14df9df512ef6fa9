package redisearch

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestHeldMetasFollowTheLog(t *testing.T) {
	z := func(pairs ...any) []redis.Z {
		var out []redis.Z
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, redis.Z{Member: pairs[i], Score: float64(pairs[i+1].(int))})
		}
		return out
	}
	held := logMark{gen: 5, incarnation: "i1", fence: z("a", 3, "b", 4, "c", 5)}
	tests := []struct {
		name string
		st   metaState
		want bool
	}{
		{"nothing since", metaState{gen: 5, incarnation: "i1", log: z("a", 3, "b", 4, "c", 5)}, true},
		{"new changes", metaState{gen: 7, incarnation: "i1", log: z("a", 3, "b", 4, "c", 5, "d", 6, "e", 7)}, true},
		{"the last pairs written again", metaState{gen: 7, incarnation: "i1", log: z("a", 3, "b", 6, "c", 7)}, true},
		{"every pair written again", metaState{gen: 8, incarnation: "i1", log: z("a", 6, "b", 7, "c", 8)}, false},
		{"lost the last write", metaState{gen: 4, incarnation: "i1", log: z("a", 3, "b", 4)}, false},
		{"lost it, then numbered again", metaState{gen: 6, incarnation: "i1", log: z("a", 3, "b", 4, "x", 5, "y", 6)}, false},
		{"lost it, its id at an older generation", metaState{gen: 6, incarnation: "i1", log: z("c", 2, "a", 3, "b", 4, "y", 5, "z", 6)}, false},
		{"lost it, numbered again by writes to a fenced id", metaState{gen: 6, incarnation: "i1", log: z("a", 3, "c", 4, "b", 6)}, false},
		{"another incarnation", metaState{gen: 7, incarnation: "i2", log: z("a", 3, "b", 4, "c", 5)}, false},
		{"the log forgot the generation held", metaState{gen: 9000, horizon: 4904, incarnation: "i1", log: z("a", 8999)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.st.follows(held); got != tc.want {
				t.Errorf("follows = %v, want %v", got, tc.want)
			}
		})
	}
	if !(metaState{gen: 3, log: z("a", 1, "b", 2, "c", 3)}).follows(logMark{}) {
		t.Error("a hold of nothing does not follow a log that starts at 1")
	}
}

// metasOf reads db's listing as a process that holds them does.
func metasOf(t *testing.T, s *Store, db string) map[string]index.Meta {
	t.Helper()
	ms, err := s.Metas(context.Background(), index.Filter{Database: db})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestHeldMetasSeeOtherWriters(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	a, b := bare(t, rdb), bare(t, rdb)
	if _, err := a.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil), rec("shop", chunk.KindTable, "public.items", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	if ms := metasOf(t, a, "shop"); len(ms) != 2 {
		t.Fatalf("held %v", ms)
	}
	if _, err := b.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 2, nil), rec("shop", chunk.KindDoc, "guide.md", 2, nil)}); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteName(ctx, "shop", chunk.KindTable, "public.items"); err != nil {
		t.Fatal(err)
	}
	ms := metasOf(t, a, "shop")
	if len(ms) != 2 || ms["shop:table:public.orders"].Hash != "h-public.orders-2" || ms["shop:doc:guide.md"].Version != 2 {
		t.Errorf("after another process wrote: %v", ms)
	}
}

// dumpKeys copies every key of the store, as a replica holds what the
// primary had written when it last caught up.
func dumpKeys(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "t:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = rdb.Dump(ctx, k).Val()
	}
	return out
}

// restoreKeys puts Redis back to a dump: a failover to the replica.
func restoreKeys(t *testing.T, rdb *redis.Client, dump map[string]string) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for k, v := range dump {
		if err := rdb.RestoreReplace(ctx, k, 0, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHeldMetasAfterLostWrites: a process that held metas through writes
// Redis then lost (a failover to a replica behind; a Redis back empty)
// reads what Redis holds, not what it remembers, even after other
// writers have numbered the generations past the one it held.
func TestHeldMetasAfterLostWrites(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	tables := func(version int64, names ...string) []index.Record {
		var out []index.Record
		for _, n := range names {
			out = append(out, rec("shop", chunk.KindTable, n, version, nil))
		}
		return out
	}
	t.Run("failover to a replica behind", func(t *testing.T) {
		rdb.FlushAll(ctx)
		a := bare(t, rdb)
		if _, err := a.Upsert(ctx, tables(1, "public.a", "public.b")); err != nil {
			t.Fatal(err)
		}
		replica := dumpKeys(t, rdb)
		if _, err := a.Upsert(ctx, tables(2, "public.lost", "public.gone")); err != nil {
			t.Fatal(err)
		}
		if ms := metasOf(t, a, "shop"); len(ms) != 4 {
			t.Fatalf("held %v", ms)
		}
		restoreKeys(t, rdb, replica)
		b := bare(t, rdb)
		if _, err := b.Upsert(ctx, tables(3, "public.c", "public.d", "public.e")); err != nil {
			t.Fatal(err)
		}
		got := metasOf(t, a, "shop")
		if _, ok := got["shop:table:public.lost"]; ok || len(got) != 5 || got["shop:table:public.c"].Version != 3 {
			t.Errorf("after the failover: %v; want a, b, c, d and e", keysOf(got))
		}
	})
	t.Run("a snapshot through the failover", func(t *testing.T) {
		rdb.FlushAll(ctx)
		a, reader := bare(t, rdb), inMemory(t, rdb, "t:", dim)
		if _, err := a.Upsert(ctx, tables(1, "public.a", "public.b")); err != nil {
			t.Fatal(err)
		}
		replica := dumpKeys(t, rdb)
		if _, err := a.Upsert(ctx, tables(2, "public.lost", "public.gone")); err != nil {
			t.Fatal(err)
		}
		if snap, err := reader.snapshot(ctx, "shop"); err != nil || len(snap.Metas(index.Filter{Database: "shop"})) != 4 {
			t.Fatalf("snapshot before: %v", err)
		}
		restoreKeys(t, rdb, replica)
		if _, err := bare(t, rdb).Upsert(ctx, tables(3, "public.c", "public.d", "public.e")); err != nil {
			t.Fatal(err)
		}
		snap, err := reader.snapshot(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		got := snap.Metas(index.Filter{Database: "shop"})
		if _, ok := got["shop:table:public.lost"]; ok || len(got) != 5 || got["shop:table:public.c"].Version != 3 {
			t.Errorf("snapshot after the failover: %v; want a, b, c, d and e", keysOf(got))
		}
	})
	t.Run("back empty, then the same writes again", func(t *testing.T) {
		rdb.FlushAll(ctx)
		a := bare(t, rdb)
		if _, err := a.Upsert(ctx, tables(1, "public.a", "public.b")); err != nil {
			t.Fatal(err)
		}
		if ms := metasOf(t, a, "shop"); ms["shop:table:public.b"].Version != 1 {
			t.Fatalf("held %v", ms)
		}
		rdb.FlushAll(ctx)
		b := bare(t, rdb)
		// The same ids in the same order: the log scores them as before.
		if _, err := b.Upsert(ctx, tables(5, "public.a", "public.b")); err != nil {
			t.Fatal(err)
		}
		if ms := metasOf(t, a, "shop"); ms["shop:table:public.b"].Version != 5 {
			t.Errorf("after Redis came back empty: %v; want version 5", ms)
		}
	})
}

func keysOf(ms map[string]index.Meta) string {
	var out []string
	for id := range ms {
		out = append(out, strings.TrimPrefix(id, "shop:table:"))
	}
	return fmt.Sprint(out)
}

// TestHeldMetasAreBounded: past heldMetasMax the databases used longest
// ago are dropped, and a database alone over it is not held.
func TestHeldMetasAreBounded(t *testing.T) {
	s := &Store{}
	for i, n := range []int{heldMetasMax / 2, heldMetasMax / 2, 10} {
		h := s.metaHold(1, fmt.Sprintf("db%d", i))
		h.byID = make(map[string]meta, n)
		for j := range n {
			h.byID[fmt.Sprint(j)] = meta{}
		}
		s.sizeMetas(h)
	}
	if _, ok := s.metaCache.held[memKey{1, "db0"}]; ok || s.metaCache.total != heldMetasMax/2+10 {
		t.Errorf("held %d metas, db0 held: %v", s.metaCache.total, ok)
	}
	h := s.metaHold(1, "huge")
	h.byID = make(map[string]meta, heldMetasMax+1)
	for j := range heldMetasMax + 1 {
		h.byID[fmt.Sprint(j)] = meta{}
	}
	s.sizeMetas(h)
	if h.byID != nil || s.metaCache.total != 0 {
		t.Errorf("a database over the bound is held: %d metas in all", s.metaCache.total)
	}
}

// TestHeldMetasReadOnlyWhatChanged: after the first read, a migration
// that changed one table of 2,000 reads that one chunk, not every chunk
// (counted by the server, not timed); and readers racing writers end
// where a fresh read does.
func TestHeldMetasReadOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client()
	s := bare(t, rdb)
	var recs []index.Record
	for i := range 2000 {
		recs = append(recs, rec("big", chunk.KindTable, fmt.Sprintf("public.t%d", i), 1, nil))
	}
	if _, err := s.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	metasOf(t, s, "big")
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upsert(ctx, []index.Record{rec("big", chunk.KindTable, "public.t7", 2, nil)}); err != nil {
		t.Fatal(err)
	}
	if ms := metasOf(t, s, "big"); ms["big:table:public.t7"].Version != 2 || len(ms) != 2000 {
		t.Fatalf("held %d metas, t7 at %d", len(ms), ms["big:table:public.t7"].Version)
	}
	if n := hmgets(t, rdb); n > 10 {
		t.Errorf("a one-table change read %d chunks' fields", n)
	}

	done := make(chan struct{})
	go func() {
		defer close(done)
		for v := int64(3); v < 60; v++ {
			if _, err := s.Upsert(ctx, []index.Record{rec("big", chunk.KindTable, fmt.Sprintf("public.t%d", v%5), v, nil)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 20 {
		if _, err := s.Metas(ctx, index.Filter{Database: "big"}); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	held, fresh := metasOf(t, s, "big"), metasOf(t, bare(t, rdb), "big")
	for id, m := range fresh {
		if held[id] != m {
			t.Errorf("%s held as %+v, stored %+v", id, held[id], m)
		}
	}
}
