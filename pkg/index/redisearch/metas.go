package redisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Held metas. Every projection of a database's schema compares the
// chunks the catalog produces with the stored ones' hashes, and doc
// edits and deletes look up a doc's chunks: read from Redis each time,
// that was the database's whole id set and one HMGET per chunk (60 ms
// and 14 MB at 10,000 tables, for a one-table migration). A process
// keeps instead each database's metas as of a generation of its change
// log and reads only the chunks changed since, as the in-memory
// snapshots do (memory.go).
//
// What is held must never stand for a state Redis no longer has: a
// write it lost would otherwise look written, and a projection skip it
// for good. Redis loses acknowledged writes when it comes back empty
// (no persistence) or fails over to a replica that lagged; a replica
// holds a prefix of the primary's writes, and numbers the next
// generations again. So with the generation, in one MULTI, a catch-up
// reads:
//   - the database's incarnation, which the first write after the
//     generations hash went missing stamps anew (changeLog);
//   - the change log from the lowest of the fences: the last fenceCount
//     (id, generation) pairs the log held at the generation held. The
//     highest pair still in place anchors the history up to it; every
//     pair above it must have moved past the generation held (written
//     again since, so read again), and no other id may sit between.
//     A replica that lost writes has an id at an older generation, or
//     another id in their place.
//
// A check failing, the generation going back, or the log forgetting
// the generations needed, the metas are read whole again.

// fenceCount is how many change-log pairs a hold keeps as its fence: a
// doc's sections written again and again must not move every pair on.
const fenceCount = 16

// heldMetasMax bounds the metas held over all databases (about 350
// bytes each, so 35 MB); the databases used longest ago go first.
const heldMetasMax = 100_000

type metaCache struct {
	mu    sync.Mutex
	held  map[memKey]*metaHold
	total int // metas held, over all databases
	swept time.Time
}

// meta is what filtering and listing need of a stored chunk.
type meta struct {
	id, kind, schema, object string
	tags                     map[string]string
	hash                     string
	version                  int64
}

// logMark is where a holder of a database's chunks (metas here, a
// snapshot in memory.go) stands in its change log: the generation, the
// fence and the incarnation it read them at.
type logMark struct {
	gen         int64
	fence       []redis.Z // the log's last pairs at gen, by score
	incarnation string
}

// metaHold is one database's metas, as of its mark.
type metaHold struct {
	mu      sync.Mutex // one catch-up at a time
	byID    map[string]meta
	mark    logMark
	usedAt  time.Time // under metaCache.mu
	size    int       // under metaCache.mu
	dropped bool      // under metaCache.mu: no longer in the cache
}

// eachMeta calls fn with every chunk of db, brought up to the
// generation Redis holds. fn runs under the database's hold: it must
// not call the store.
func (s *Store) eachMeta(ctx context.Context, db string, fn func(meta)) error {
	v := s.ver()
	h := s.metaHold(v, db)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := s.catchUpMetas(ctx, v, db, h); err != nil {
		h.byID = nil // read whole next time
		s.sizeMetas(h)
		return err
	}
	for _, m := range h.byID {
		fn(m)
	}
	s.sizeMetas(h)
	return nil
}

// metaHold returns db's hold in version v, dropping the holds of other
// versions and of databases unused for snapshotIdle.
func (s *Store) metaHold(v int, db string) *metaHold {
	c := &s.metaCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = map[memKey]*metaHold{}
	}
	now := time.Now()
	if now.Sub(c.swept) > snapshotIdle/60 {
		c.swept = now
		for k, h := range c.held {
			if k.version != v || now.Sub(h.usedAt) > snapshotIdle {
				c.drop(k, h)
			}
		}
	}
	k := memKey{v, db}
	h := c.held[k]
	if h == nil {
		h = &metaHold{}
		c.held[k] = h
	}
	h.usedAt = now
	return h
}

// drop forgets one hold. c.mu held.
func (c *metaCache) drop(k memKey, h *metaHold) {
	c.total -= h.size
	h.size, h.dropped = 0, true
	delete(c.held, k)
}

// sizeMetas records h's size and, past heldMetasMax, drops the holds
// used longest ago (h last: one database over the bound is not held).
// h.mu held.
func (s *Store) sizeMetas(h *metaHold) {
	c := &s.metaCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.dropped {
		return // dropped while in use: its metas go with the call
	}
	c.total += len(h.byID) - h.size
	h.size = len(h.byID)
	if c.total <= heldMetasMax {
		return
	}
	keys := make([]memKey, 0, len(c.held))
	for k := range c.held {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b memKey) int { return c.held[a].usedAt.Compare(c.held[b].usedAt) })
	for _, k := range keys {
		if c.total <= heldMetasMax {
			return
		}
		if o := c.held[k]; o != h {
			c.drop(k, o) // its metas go when its next reader finds the hold new
		}
	}
	if c.total > heldMetasMax {
		c.total -= h.size
		h.size, h.byID = 0, nil
	}
}

// catchUpMetas brings h up to the generation Redis holds: the chunks the
// change log names since h's mark, or every chunk when the checks above
// fail or h holds nothing yet. h.mu held.
func (s *Store) catchUpMetas(ctx context.Context, v int, db string, h *metaHold) error {
	if h.byID != nil {
		st, err := s.logSince(ctx, v, db, h.mark)
		if err != nil {
			return err
		}
		if st.follows(h.mark) {
			return s.applyMetas(ctx, v, db, h, st, st.changed(h.mark.gen))
		}
	}
	st, err := s.logWhole(ctx, v, db)
	if err != nil {
		return err
	}
	h.byID = make(map[string]meta, len(st.ids))
	return s.applyMetas(ctx, v, db, h, st, st.ids)
}

// metaState is what one MULTI read of a database: its generation, the
// change log's horizon, the incarnation and landing mark, and either its
// whole id set or the log from a mark's fence on.
type metaState struct {
	gen, horizon int64
	incarnation  string
	landing      bool
	ids          []string  // read whole: every id
	log          []redis.Z // by score
}

// follows reports whether st, the log read from m's fence on, continues
// from m (above).
func (st metaState) follows(m logMark) bool {
	if st.gen < m.gen || m.gen < st.horizon || st.incarnation != m.incarnation {
		return false
	}
	if m.gen == 0 {
		return true // nothing was read: every change is in the log
	}
	fenced := make(map[string]int64, len(m.fence))
	for _, z := range m.fence {
		fenced[str(z.Member)] = int64(z.Score)
	}
	now := make(map[string]int64, len(st.log))
	var anchor int64 = -1
	for _, z := range st.log {
		id, score := str(z.Member), int64(z.Score)
		now[id] = score
		if score > m.gen {
			continue
		}
		if fenced[id] != score {
			return false // an id the fence did not hold, or held elsewhere
		}
		anchor = max(anchor, score)
	}
	if anchor < 0 {
		return false
	}
	for id, score := range fenced {
		if score > anchor && now[id] <= m.gen {
			return false
		}
	}
	return true
}

// changed are the ids st names as changed after generation since, in
// id order.
func (st metaState) changed(since int64) []string {
	var ids []string
	for _, z := range st.log {
		if int64(z.Score) > since {
			ids = append(ids, str(z.Member))
		}
	}
	slices.Sort(ids)
	return ids
}

// mark is where st stands: its generation, the last fenceCount pairs of
// its log, its incarnation.
func (st metaState) mark() logMark {
	return logMark{gen: st.gen, fence: slices.Clone(st.log[max(0, len(st.log)-fenceCount):]), incarnation: st.incarnation}
}

// logSince reads db's state with its change log from m's fence on (from
// its generation when it has no fence), in one MULTI.
func (s *Store) logSince(ctx context.Context, v int, db string, m logMark) (metaState, error) {
	from := m.gen
	if len(m.fence) > 0 {
		from = int64(m.fence[0].Score)
	}
	return s.readLog(ctx, v, db, func(pipe redis.Pipeliner) *redis.ZSliceCmd {
		return pipe.ZRangeByScoreWithScores(ctx, s.changesKeyAt(v, db), &redis.ZRangeBy{Min: strconv.FormatInt(from, 10), Max: "+inf"})
	}, nil)
}

// logWhole reads db's state with its whole id set (in id order: the
// snapshots number chunks so, whatever order the set gave) and the
// log's last pairs, in one MULTI.
func (s *Store) logWhole(ctx context.Context, v int, db string) (metaState, error) {
	var idsCmd *redis.StringSliceCmd
	st, err := s.readLog(ctx, v, db, func(pipe redis.Pipeliner) *redis.ZSliceCmd {
		idsCmd = pipe.SMembers(ctx, s.dbKeyAt(v, db))
		return pipe.ZRangeWithScores(ctx, s.changesKeyAt(v, db), -fenceCount, -1)
	}, func() []string { return idsCmd.Val() })
	slices.Sort(st.ids)
	return st, err
}

// readLog runs one MULTI of db's generations fields and what queue
// adds, and takes the ids from ids when given.
func (s *Store) readLog(ctx context.Context, v int, db string, queue func(redis.Pipeliner) *redis.ZSliceCmd, ids func() []string) (metaState, error) {
	pipe := s.rdb.TxPipeline()
	genCmd := pipe.HMGet(ctx, s.gensKeyAt(v, db), genFields(db)...)
	logCmd := queue(pipe)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return metaState{}, fmt.Errorf("read chunks of %s: %w", db, classify(err))
	}
	vals := genCmd.Val() // nil fields: nothing was ever written
	st := metaState{gen: intOf(vals[0]), horizon: intOf(vals[1]), landing: vals[2] != nil, incarnation: str(vals[3]), log: logCmd.Val()}
	if ids != nil {
		st.ids = ids()
	}
	return st, nil
}

// applyMetas reads chunks ids into h and moves h to st's generation. A
// chunk written after the MULTI is read as it is now; the log names it
// again after st.gen, so the next catch-up reads it again.
func (s *Store) applyMetas(ctx context.Context, v int, db string, h *metaHold, st metaState, ids []string) error {
	found, gone, err := s.readMetas(ctx, v, db, ids)
	if err != nil {
		return err
	}
	for _, id := range gone {
		delete(h.byID, id)
	}
	for _, m := range found {
		h.byID[m.id] = m
	}
	h.mark = st.mark()
	return nil
}

// readMetas reads the listing fields of chunks ids of db, in pipelined
// batches: those found, and the ids no chunk of db has any more.
func (s *Store) readMetas(ctx context.Context, v int, db string, ids []string) (found []meta, gone []string, err error) {
	want := hexTag(db)
	// A database's chunks share a few kinds and schemas: one string each.
	same := map[string]string{}
	intern := func(s string) string {
		if v, ok := same[s]; ok {
			return v
		}
		same[s] = s
		return s
	}
	for start := 0; start < len(ids); start += batchSize {
		batch := ids[start:min(start+batchSize, len(ids))]
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.HMGet(ctx, s.chunkKeyAt(v, id), fKind, fSchema, fObject, fTagMap, fHash, fVersion, fDB)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, nil, fmt.Errorf("read chunks of %s: %w", db, classify(err))
		}
		for i, c := range cmds {
			v := c.Val()
			if len(v) != 7 || v[6] == nil || str(v[6]) != want {
				gone = append(gone, batch[i])
				continue
			}
			m := meta{id: batch[i], kind: intern(unhexTag(str(v[0]))), schema: intern(unhexTag(str(v[1]))), object: str(v[2]), hash: str(v[4])}
			if t := str(v[3]); t != "" && t != "{}" {
				_ = json.Unmarshal([]byte(t), &m.tags)
			}
			m.version, _ = strconv.ParseInt(str(v[5]), 10, 64)
			found = append(found, m)
		}
	}
	return found, gone, nil
}
