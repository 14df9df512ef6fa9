package redisearch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/memsearch"
)

// Where searches run (Options.Search).
const (
	// SearchMemory keeps each database's chunks in this process, loaded
	// from Redis and brought up to date from the database's change log
	// before each search, and ranks them with the embedded store's own
	// code (package memsearch): both stores return the same results, and
	// a search costs no round trip while the process holds its lease
	// (lease.go), and one (the generation check) otherwise, instead of
	// two queries. It needs the memory of the databases searched (10-15
	// MB of heap per 1,000 tables at 512 dimensions).
	SearchMemory = "memory"
	// SearchServer sends every search to the query engine (FT.SEARCH,
	// BM25STD and KNN) and holds nothing in the process.
	SearchServer = "server"
)

// memCache holds the in-memory snapshots of SearchMemory, per index
// version and database.
type memCache struct {
	mu  sync.Mutex
	dbs map[memKey]*memSnap
	// swept is when snapshots idle for snapshotIdle were last dropped;
	// now is the clock (time.Now; tests set it).
	swept time.Time
	now   func() time.Time
}

// snapshotIdle is how long a database's snapshot is kept without a
// search: a daemon that served a database once does not hold it for
// ever. The next search loads it again.
const snapshotIdle = time.Hour

type memKey struct {
	version int
	db      string
}

// memSnap is one database's snapshot, kept at the generation of its
// change log.
type memSnap struct {
	cur *memsearch.Current
	// mark is where the snapshot stands in the change log; only a
	// catch-up, one at a time (cur's), reads and moves it.
	mark logMark
	// changedAt is when a check last found the database changed, and
	// usedAt the last search (both under mem.mu).
	changedAt time.Time
	usedAt    time.Time
	// checked is when the last check that found the snapshot current
	// began, as the lease's checkStart counts, and confirmedAt the wall
	// time of the last check or lease that vouched for it (under mem.mu).
	checked     uint64
	confirmedAt time.Time
}

// setChecked records a check that began at start and found the snapshot
// current.
func (s *Store) setChecked(c *memSnap, start uint64) {
	s.mem.mu.Lock()
	c.checked = max(c.checked, start)
	c.confirmedAt = time.Now()
	s.mem.mu.Unlock()
}

// leased returns c's snapshot when the lease lets it serve db unchecked.
func (s *Store) leased(c *memSnap, db string) *memsearch.Snapshot {
	s.mem.mu.Lock()
	checked := c.checked
	s.mem.mu.Unlock()
	if !s.watching().fresh(db, checked) {
		return nil
	}
	s.mem.mu.Lock()
	c.confirmedAt = time.Now()
	s.mem.mu.Unlock()
	snap, _ := c.cur.Snapshot()
	return snap
}

// staleSnapshot is db's snapshot in version v to serve after err, when
// err says Redis cannot be reached and Redis confirmed the snapshot
// within StaleReads; nil otherwise.
func (s *Store) staleSnapshot(v int, db string, err error) *memsearch.Snapshot {
	if s.opt.StaleReads <= 0 || !errors.Is(classify(err), index.ErrUnavailable) {
		return nil
	}
	s.mem.mu.Lock()
	c := s.mem.dbs[memKey{v, db}]
	var at time.Time
	if c != nil {
		at = c.confirmedAt
	}
	s.mem.mu.Unlock()
	if c == nil || at.IsZero() || time.Since(at) > s.opt.StaleReads {
		return nil
	}
	snap, _ := c.cur.Snapshot()
	if snap != nil {
		s.leaseStats.stale.Add(1)
	}
	return snap
}

// servesStale reports whether some snapshot may still be served while
// Redis cannot be reached (StaleReads), so that the process stays ready.
func (s *Store) servesStale() bool {
	if s.opt.StaleReads <= 0 || s.opt.Search != SearchMemory {
		return false
	}
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	for _, c := range s.mem.dbs {
		if !c.confirmedAt.IsZero() && time.Since(c.confirmedAt) <= s.opt.StaleReads {
			return true
		}
	}
	return false
}

// hydrated are the hash fields a snapshot document is built from.
var hydrated = append(append([]string{}, returned...), fName, fSchemaT, fColumns, fBody, fVector)

// Pin implements index.Pinner. Searching in memory, a request's searches
// read one snapshot, brought up to date with one round trip; searching on
// the server there is nothing to pin, and the store serves as it is.
func (s *Store) Pin(ctx context.Context, db string) (index.Searcher, error) {
	if db == "" {
		return nil, index.ErrNoDatabase
	}
	if s.opt.Search != SearchMemory {
		return s, nil
	}
	if err := s.servableErr(ctx); err != nil {
		return nil, fmt.Errorf("search in %s: %w", db, err)
	}
	v := s.ver()
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		if held := s.staleSnapshot(v, db, err); held != nil {
			return held.Pin(db), nil
		}
		return nil, fmt.Errorf("search in %s: %w", db, err)
	}
	return snap.Pin(db), nil
}

// speculateQuiet is how long a database must have gone without a write
// seen by a check before searches speculate on its snapshot: while
// writes arrive, most speculations would fail and the search run twice.
const speculateQuiet = time.Second

// PinSpeculative implements index.SpeculativePinner: when this process
// holds a snapshot of db and has seen no write to it for a while, it
// returns that snapshot at once and checks the generation meanwhile;
// Confirm says whether it was current. Otherwise it is Pin.
func (s *Store) PinSpeculative(ctx context.Context, db string) (index.Searcher, error) {
	if db == "" {
		return nil, index.ErrNoDatabase
	}
	if s.opt.Search != SearchMemory {
		return s, nil
	}
	if err := s.servableErr(ctx); err != nil {
		return nil, fmt.Errorf("search in %s: %w", db, err)
	}
	v := s.ver()
	c := s.memSnap(v, db)
	if snap := s.leased(c, db); snap != nil {
		return snap.Pin(db), nil
	}
	snap, gen := c.cur.Snapshot()
	s.mem.mu.Lock()
	if time.Since(c.changedAt) <= speculateQuiet {
		snap = nil
	}
	s.mem.mu.Unlock()
	if snap == nil {
		return s.Pin(ctx, db)
	}
	check := make(chan error, 1)
	sp := &speculation{Pinned: snap.Pin(db), check: check,
		held: func(err error) bool { return s.staleSnapshot(v, db, err) != nil }}
	start := s.watching().checkStart()
	go func() {
		now, _, _, err := s.readGen(ctx, v, db)
		switch {
		case err != nil:
		case now != gen: // newer, or older: Redis lost its data
			sp.stale = true
			s.mem.mu.Lock()
			c.changedAt = time.Now()
			s.mem.mu.Unlock()
		default:
			s.setChecked(c, start)
		}
		check <- err
	}()
	return sp, nil
}

// speculation is a snapshot served before its generation was checked.
type speculation struct {
	memsearch.Pinned
	check chan error
	stale bool // set before check is sent on
	err   error
	done  bool
	// held says whether the snapshot may be served after the check
	// failed with err (StaleReads).
	held func(err error) bool
}

// Confirm implements index.Confirmer. It is called once per request.
func (sp *speculation) Confirm(ctx context.Context) (bool, error) {
	if !sp.done {
		select {
		case sp.err = <-sp.check:
		case <-ctx.Done():
			return false, ctx.Err()
		}
		sp.done = true
	}
	if sp.err != nil {
		if sp.held(sp.err) {
			return true, nil
		}
		return false, fmt.Errorf("search: %w", classify(sp.err))
	}
	return !sp.stale, nil
}

// genFields are db's fields in the generations hash: its generation,
// its change log's horizon, its landing mark, set while a projection
// too big for one MULTI is written in batches (ReplaceSchema) and
// cleared with the projected version when it has landed whole, and its
// incarnation (changeLog).
func genFields(db string) []string { return []string{"g:" + db, "h:" + db, "l:" + db, "i:" + db} }

// readGen reads db's generation, change-log horizon and landing mark in
// version v.
func (s *Store) readGen(ctx context.Context, v int, db string) (gen, horizon int64, landing bool, err error) {
	vals, err := s.rdb.HMGet(ctx, s.gensKeyAt(v, db), genFields(db)...).Result()
	if err != nil {
		return 0, 0, false, err
	}
	return intOf(vals[0]), intOf(vals[1]), vals[2] != nil, nil
}

// snapshot returns db's snapshot, brought up to the generation Redis
// holds, or at once while the lease vouches for it. While one search
// brings it up to date, the others wait for it, as in the SQLite store.
func (s *Store) snapshot(ctx context.Context, db string) (*memsearch.Snapshot, error) {
	v := s.ver()
	c := s.memSnap(v, db)
	if snap := s.leased(c, db); snap != nil {
		return snap, nil
	}
	start := s.watching().checkStart()
	gen, horizon, landing, err := s.readGen(ctx, v, db)
	if err != nil {
		return nil, classify(err)
	}
	held, heldGen := c.cur.Snapshot()
	if held != nil && gen < heldGen {
		// Redis holds an older generation than this snapshot: it lost
		// its data (a restart without persistence) and numbers from the
		// start again. Load what it has now.
		c, held = s.forget(v, db), nil
	}
	if held != nil && landing && gen != heldGen {
		// A projection is landing in batches (or one that was landing
		// when its writer or its Redis died waits to be written again):
		// the snapshot held stays whole until it has landed.
		return held, nil
	}
	snap, caughtUp, err := c.cur.Get(gen, func(base *memsearch.Snapshot, since int64) (*memsearch.Snapshot, int64, error) {
		if base == nil || since < horizon {
			base, since = memsearch.New(s.opt.Dimensions), -1
		}
		return s.catchUp(ctx, v, db, c, base, since)
	})
	if caughtUp && held != nil { // a write since the last check, not the first load
		s.mem.mu.Lock()
		c.changedAt = time.Now()
		s.mem.mu.Unlock()
	}
	// A failed catch-up serves the snapshot before it: only one at the
	// generation read counts as checked.
	if _, at := c.cur.Snapshot(); err == nil && at >= gen {
		s.setChecked(c, start)
	}
	return snap, err
}

// forget drops db's snapshot in version v and returns a new, empty
// holder for it.
func (s *Store) forget(v int, db string) *memSnap {
	s.mem.mu.Lock()
	delete(s.mem.dbs, memKey{v, db})
	s.mem.mu.Unlock()
	return s.memSnap(v, db)
}

// memSnap returns the holder of db's snapshot in index version v.
func (s *Store) memSnap(v int, db string) *memSnap {
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	if s.mem.dbs == nil {
		s.mem.dbs = map[memKey]*memSnap{}
	}
	if s.mem.now == nil {
		s.mem.now = time.Now
	}
	now := s.mem.now()
	if now.Sub(s.mem.swept) > snapshotIdle/60 {
		s.mem.swept = now
		for k, c := range s.mem.dbs {
			if now.Sub(c.usedAt) > snapshotIdle {
				delete(s.mem.dbs, k)
			}
		}
	}
	key := memKey{v, db}
	c := s.mem.dbs[key]
	if c == nil {
		c = &memSnap{cur: memsearch.NewCurrent()}
		s.mem.dbs[key] = c
		s.dropOtherVersions(v)
	}
	c.usedAt = now
	return c
}

// dropOtherVersions forgets the snapshots of index versions other than
// v: once the alias has moved, they are never read again. mem.mu held.
func (s *Store) dropOtherVersions(v int) {
	for k := range s.mem.dbs {
		if k.version != v {
			delete(s.mem.dbs, k)
		}
	}
}

// catchUpPasses bounds how often catchUp reads again what changed while
// it read: under a steady stream of writes it settles for a snapshot the
// next catch-up completes.
const catchUpPasses = 4

// catchUp reads what changed in db since generation since (everything,
// when since is -1) into base. Each batch of chunks is read in a MULTI
// with the database's generation; when a write moved the generation
// while they were read, some chunks may be newer than the rest, so what
// changed since the generation the pass began at is read again. A
// snapshot therefore reflects one generation, and a projection written
// in one MULTI is in it whole or not at all. Like held metas (metas.go),
// a snapshot goes on from its mark only while the log continues from
// it: after writes Redis lost it is loaded whole.
func (s *Store) catchUp(ctx context.Context, v int, db string, c *memSnap, base *memsearch.Snapshot, since int64) (*memsearch.Snapshot, int64, error) {
	for pass := 1; ; pass++ {
		var st metaState
		var err error
		var ids []string
		if since >= 0 {
			if st, err = s.logSince(ctx, v, db, c.mark); err == nil && !st.follows(c.mark) {
				// The change log does not go on from the snapshot.
				base, since = memsearch.New(s.opt.Dimensions), -1
				continue
			}
			ids = st.changed(since)
		} else {
			st, err = s.logWhole(ctx, v, db)
			ids = st.ids
		}
		if err != nil {
			return nil, 0, err
		}
		if st.landing && since >= 0 {
			return base, since, nil // whole as it is, until the projection has landed
		}
		docs, removed, moved, landed, err := s.readChunks(ctx, v, db, ids, st.gen)
		if err != nil {
			return nil, 0, err
		}
		if landed && since >= 0 {
			return base, since, nil // a projection began landing as this pass read
		}
		base, c.mark = base.With(docs, removed), st.mark()
		if !moved || pass == catchUpPasses {
			return base, st.gen, nil
		}
		since = st.gen
	}
}

// readChunks reads the chunks ids of db, in batches, and reports whether
// the generation moved from gen while it did, and whether a projection
// was landing.
func (s *Store) readChunks(ctx context.Context, v int, db string, ids []string, gen int64) (docs []memsearch.Doc, removed []string, moved, landing bool, err error) {
	want := hexTag(db)
	for start := 0; start < len(ids); start += batchSize {
		batch := ids[start:min(start+batchSize, len(ids))]
		pipe := s.rdb.TxPipeline()
		cmds := make([]*redis.SliceCmd, len(batch))
		for i, id := range batch {
			cmds[i] = pipe.HMGet(ctx, s.chunkKeyAt(v, id), hydrated...)
		}
		genCmd := pipe.HMGet(ctx, s.gensKeyAt(v, db), genFields(db)...)
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, nil, false, false, fmt.Errorf("load %s: %w", db, classify(err))
		}
		if g := genCmd.Val(); intOf(g[0]) != gen {
			moved = true
			landing = landing || g[2] != nil
		}
		for i, c := range cmds {
			vals := c.Val()
			f := make(map[string]string, len(hydrated))
			for j, name := range hydrated {
				if j < len(vals) && vals[j] != nil {
					f[name] = str(vals[j])
				}
			}
			if f[fDB] != want {
				removed = append(removed, batch[i]) // deleted since, or never this database's
				continue
			}
			ch, err := chunkOf(f)
			if err != nil {
				return nil, nil, false, false, fmt.Errorf("load %s: chunk %s: %w", db, batch[i], err)
			}
			if len(ch.Tags) == 0 {
				ch.Tags = nil
			}
			docs = append(docs, memsearch.Doc{Chunk: ch, Vector: index.DecodeVector([]byte(f[fVector])),
				Fields: index.Fields{Name: f[fName], Schema: f[fSchemaT], Columns: f[fColumns], Body: f[fBody]}})
		}
	}
	return docs, removed, moved, landing, nil
}

func intOf(v any) int64 {
	n, _ := strconv.ParseInt(str(v), 10, 64)
	return n
}
