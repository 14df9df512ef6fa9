// Package redisearch is the shared index store: chunks as Redis hashes,
// indexed by the Redis query engine (RediSearch) for BM25 and vector
// search, so that many workers and daemons on many hosts use one index.
//
// Everything that does not need the query engine (the writes and their
// version guard, counts, deletes, projections, the embedding cache) is
// plain Redis: hashes, one set of chunk ids per database, and Lua scripts
// that make each guarded write atomic. Only the two searches and the
// index definitions use FT.* commands. Searching in memory (the default)
// needs neither, so that mode runs on a Redis without the query engine
// (Debian's, Valkey, a managed cache): the store then writes the same
// hashes and skips the index definitions.
//
// The index is versioned behind an alias. A process whose configuration
// (embedding model, dimensions, layout, weights) matches the index the
// alias names uses it. A worker with a new configuration builds the next
// version beside it from the stored catalogs and events, and swaps the
// alias with FT.ALIASUPDATE once it has caught up, so asks never see a
// half-built index (docs/redis.md).
package redisearch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
)

// layoutVersion changes when the hash fields, the index schema or the
// analysis change; a new one makes workers build the next index version.
const layoutVersion = "3" // 3: every key of a database carries its hash tag

// Version thresholds of the search module, as MODULE LIST reports them
// (major*10000 + minor*100 + patch).
const (
	minModuleVersion     = 20800 // vectors with DIALECT 2 and PARAMS, query attributes
	bm25stdModuleVersion = 21000 // SCORER BM25STD
	hybridModuleVersion  = 80400 // FT.HYBRID
)

// DefaultStaleReads is Options.StaleReads of the roles: longer than a
// Sentinel failover with down-after-milliseconds at its usual 5-10 s,
// short enough that a partitioned daemon does not serve an old schema
// for long.
const DefaultStaleReads = 30 * time.Second

// Requirement names what the store needs of the server, for errors.
const Requirement = "Redis 8 with the query engine, or Redis Stack / RediSearch ≥ 2.8"

// Options configure a Store. Dimensions is required.
type Options struct {
	// Prefix of every key, index and alias; "schemaq:" when empty. Two
	// deployments can share one Redis under different prefixes.
	Prefix string
	// Dimensions of the vectors, and Model the embedder's name: both are
	// part of the index's identity.
	Dimensions int
	Model      string
	// Algorithm of the vector index: "HNSW" (default) or "FLAT" (exact,
	// fine up to some tens of thousands of chunks).
	Algorithm string
	// Weights of the BM25 fields, set on the index's TEXT fields;
	// index.DefaultWeights when zero.
	Weights index.Weights
	// Writer marks a worker: when the current index does not match the
	// options, a writer builds the next version instead of failing.
	Writer bool
	// CacheTTL expires embedding cache entries; zero keeps them.
	CacheTTL time.Duration
	// Search is where searches run: SearchMemory (the default) or
	// SearchServer.
	Search string
	// Lease is how long a process searching in memory may serve its
	// snapshots without checking them, renewed a quarter lease apart,
	// while writes announce their changes to it (lease.go): DefaultLease
	// when zero; negative checks before every search instead.
	Lease time.Duration
	// StaleReads is how long, searching in memory, a process serves the
	// snapshots it holds while Redis cannot be reached (a failover, a
	// partition), counted from the last time Redis confirmed each one;
	// zero fails those searches instead. Writes cannot land meanwhile
	// on the Redis this process last saw, so what it serves is what
	// that Redis held.
	StaleReads time.Duration
}

// Store is the RediSearch index. It is safe for concurrent use.
type Store struct {
	rdb  redis.UniversalClient
	opt  Options
	spec string // the index identity this process needs

	moduleVersion int
	engine        bool   // the query engine is loaded: index definitions are kept
	scorer        string // BM25STD, or BM25 on servers without it
	hybrid        bool   // the server has FT.HYBRID

	// version is the index version this process reads and writes. It
	// is atomic because a reader that started before any index existed
	// adopts one later, while requests read it.
	version atomic.Int64
	rebuilt bool // this Open created version (fresh, or the next one)

	mu        sync.Mutex
	waiting   bool  // a reader with no index of its configuration yet
	pending   bool  // version is a build the alias does not name yet
	servable  error // nil when searches may run; else why not
	hybridOff bool  // FT.HYBRID failed once: fuse client-side from then on
	checkedAt time.Time

	mem        memCache  // SearchMemory's snapshots
	metaCache  metaCache // every chunk's listing fields, per database (metas.go)
	watch      watch     // SearchMemory's lease
	leaseStats struct{ announcements, waited, stale atomic.Int64 }
}

var (
	_ index.Store      = (*Store)(nil)
	_ embed.CacheStore = (*Store)(nil)
	_ index.Replacer   = (*Store)(nil)
	_ index.Pinner     = (*Store)(nil)
)

// Open checks the server, then finds or creates the index version that
// matches opt. Errors name what is wrong: an unreachable server, no or
// too old a search module, or an index built for another configuration.
func Open(ctx context.Context, rdb redis.UniversalClient, opt Options) (*Store, error) {
	if opt.Dimensions <= 0 {
		return nil, fmt.Errorf("redisearch: dimensions must be positive, got %d", opt.Dimensions)
	}
	if opt.Prefix == "" {
		opt.Prefix = "schemaq:"
	}
	if opt.Algorithm == "" {
		opt.Algorithm = "HNSW"
	}
	opt.Algorithm = strings.ToUpper(opt.Algorithm)
	if opt.Algorithm != "HNSW" && opt.Algorithm != "FLAT" {
		return nil, fmt.Errorf("redisearch: vector algorithm must be HNSW or FLAT, got %q", opt.Algorithm)
	}
	if opt.Weights == (index.Weights{}) {
		opt.Weights = index.DefaultWeights
	}
	switch opt.Search {
	case "":
		opt.Search = SearchMemory
	case SearchMemory, SearchServer:
	default:
		return nil, fmt.Errorf("redisearch: search must be %q or %q, got %q", SearchMemory, SearchServer, opt.Search)
	}
	s := &Store{rdb: rdb, opt: opt, spec: specOf(opt)}
	if _, cluster := rdb.(*redis.ClusterClient); cluster && opt.Search == SearchServer {
		// Each shard's query engine indexes only its own slots; one
		// search over all of them needs the engine's coordinator, which
		// schemaq does not drive and could not test.
		return nil, fmt.Errorf("redis cluster: --redis-search server needs the query engine's cluster coordinator, which schemaq does not support; --redis-search memory (the default) runs on Redis Cluster")
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redis %s unreachable: %w", addrOf(rdb), classify(err))
	}
	v, err := moduleVersion(ctx, rdb)
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", addrOf(rdb), err)
	}
	if err := s.setCapabilities(v); err != nil {
		return nil, fmt.Errorf("redis %s: %w", addrOf(rdb), err)
	}
	if _, cluster := rdb.(*redis.ClusterClient); cluster {
		s.engine = false // a shard's index definitions would cover its own slots only
	}
	if err := s.resolveVersion(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// setCapabilities checks the module version and picks the scorer and the
// hybrid path from it. Searching in the server needs the query engine;
// searching in memory runs without one, or beside one too old to use,
// and keeps no index definitions then.
func (s *Store) setCapabilities(v int) error {
	var missing error
	switch {
	case v == 0:
		missing = fmt.Errorf("no search module loaded: --redis-search server needs %s; --redis-search memory (the default) needs none", Requirement)
	case v < minModuleVersion:
		missing = fmt.Errorf("search module %s is too old: --redis-search server needs %s; --redis-search memory (the default) runs without it", formatModuleVersion(v), Requirement)
	}
	if missing != nil {
		if s.opt.Search == SearchServer {
			return missing
		}
		return nil
	}
	s.moduleVersion, s.engine = v, true
	s.scorer = "BM25STD"
	if v < bm25stdModuleVersion {
		// The legacy BM25 scores far worse over one hash per table
		// (docs/redis.md), but it is what such a server has.
		s.scorer = "BM25"
	}
	s.hybrid = v >= hybridModuleVersion
	return nil
}

// specOf is the identity of the index opt needs: two processes share an
// index version only when their specs are equal.
func specOf(opt Options) string {
	w := opt.Weights
	return fmt.Sprintf("layout=%s dim=%d model=%s algorithm=%s weights=%g,%g,%g,%g",
		layoutVersion, opt.Dimensions, opt.Model, opt.Algorithm, w.Name, w.Schema, w.Columns, w.Body)
}

// Key names. Every version has its own hashes, id sets and projections,
// so a version under construction never touches the one being served.
// Every key of one database carries the database as its hash tag
// ({shop}), so that on Redis Cluster they share a slot and the scripts
// and MULTIs that touch several of them stay atomic; the lease's keys
// share the tag {lease}. Database names are [a-z0-9_-], so a tag never
// holds a brace.
func (s *Store) metaKey() string            { return s.opt.Prefix + "meta" }
func (s *Store) alias() string              { return s.opt.Prefix + "idx" }
func (s *Store) indexName(v int) string     { return s.opt.Prefix + "idx:v" + strconv.Itoa(v) }
func (s *Store) versionPrefix(v int) string { return s.opt.Prefix + "v" + strconv.Itoa(v) + ":" }
func (s *Store) chunkPrefix(v int) string   { return s.versionPrefix(v) + "c:" }
func dbTag(db string) string                { return "{" + db + "}" }

func (s *Store) chunkKey(id string) string         { return s.chunkKeyAt(s.ver(), id) }
func (s *Store) dbKey(db string) string            { return s.dbKeyAt(s.ver(), db) }
func (s *Store) gensKey(db string) string          { return s.gensKeyAt(s.ver(), db) }
func (s *Store) changesKey(db string) string       { return s.changesKeyAt(s.ver(), db) }
func (s *Store) projectedKey(db string) string     { return s.projectedKeyAt(s.ver(), db) }
func (s *Store) lockKey(db string) string          { return s.lockKeyAt(s.ver(), db) }
func (s *Store) marksKey(db string) string         { return s.versionPrefix(s.ver()) + "marks:" + dbTag(db) }
func (s *Store) dbKeyAt(v int, db string) string   { return s.versionPrefix(v) + "db:" + dbTag(db) }
func (s *Store) gensKeyAt(v int, db string) string { return s.versionPrefix(v) + "gens:" + dbTag(db) }
func (s *Store) lockKeyAt(v int, db string) string { return s.versionPrefix(v) + "lock:" + dbTag(db) }

// The same keys in a given version: a search in memory reads one version
// throughout, whatever the alias does meanwhile.
func (s *Store) changesKeyAt(v int, db string) string {
	return s.versionPrefix(v) + "changes:" + dbTag(db)
}

func (s *Store) projectedKeyAt(v int, db string) string {
	return s.versionPrefix(v) + "projected:" + dbTag(db)
}

// chunkKeyAt is the hash of chunk id, whose id begins with its database
// (db:kind:name[:part]).
func (s *Store) chunkKeyAt(v int, id string) string {
	db, rest, ok := strings.Cut(id, ":")
	if !ok {
		return s.chunkPrefix(v) + id
	}
	return s.chunkPrefix(v) + dbTag(db) + ":" + rest
}

func (s *Store) cacheKey(k string) string { return s.opt.Prefix + "emb:" + k }

// Version is the index version this store reads and writes.
func (s *Store) Version() int { return s.ver() }

func (s *Store) ver() int { return int(s.version.Load()) }

// Rebuilt reports whether Open created the index version, so that its
// contents must be projected from the stored catalogs and events.
func (s *Store) Rebuilt() bool { return s.rebuilt }

// Close implements index.Store. It ends this process's lease, so that
// writes stop waiting for it; the client belongs to the caller.
func (s *Store) Close() error {
	s.closeWatch()
	return nil
}

// claimScript decides, atomically across every process opening the
// store, which index version matches a spec:
//
//	{version, "current"} the alias names a version of this spec;
//	{version, "next"}    a version of this spec is being built;
//	{version, "new"}     the caller must create this version (writers);
//	{version, "other"}   the alias names a version of another spec
//	                     (readers; version is the current one).
//
// KEYS[1] meta; ARGV[1] spec, ARGV[2] "1" for a writer.
var claimScript = redis.NewScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], 'current') or '0')
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
if cur > 0 and redis.call('HGET', KEYS[1], 'spec:' .. cur) == ARGV[1] then
  return {cur, 'current'}
end
if nxt > 0 and redis.call('HGET', KEYS[1], 'spec:' .. nxt) == ARGV[1] then
  return {nxt, 'next'}
end
if ARGV[2] ~= '1' then
  return {cur, 'other'}
end
local v = math.max(cur, nxt) + 1
redis.call('HSET', KEYS[1], 'spec:' .. v, ARGV[1])
if cur == 0 then
  redis.call('HSET', KEYS[1], 'current', v)
else
  if nxt > 0 then redis.call('HSET', KEYS[1], 'abandoned', nxt) end
  redis.call('HSET', KEYS[1], 'next', v)
end
return {v, 'new'}
`)

// claim runs claimScript for this store's spec, as a writer or a reader.
func (s *Store) claim(ctx context.Context, writer bool) (version int64, state string, err error) {
	w := "0"
	if writer {
		w = "1"
	}
	res, err := claimScript.Run(ctx, s.rdb, []string{s.metaKey()}, s.spec, w).Slice()
	if err != nil {
		return 0, "", fmt.Errorf("redisearch: read index versions: %w", classify(err))
	}
	if len(res) != 2 {
		return 0, "", fmt.Errorf("redisearch: read index versions: unexpected reply %v", res)
	}
	version, _ = res[0].(int64)
	state, _ = res[1].(string)
	return version, state, nil
}

// stillBuilding is why a reader of version v does not serve yet.
func stillBuilding(v int64) error {
	return fmt.Errorf("%w: index version %d for this configuration is still being built; asks start once the workers switch the alias", index.ErrUnavailable, v)
}

func (s *Store) resolveVersion(ctx context.Context) error {
	v, state, err := s.claim(ctx, s.opt.Writer)
	if err != nil {
		return err
	}
	s.version.Store(v)
	switch state {
	case "current":
		// The index may be gone (FLUSHALL, a manual drop): recreate it.
		if err := s.createIndex(ctx, s.ver()); err != nil {
			return err
		}
		return s.pointAlias(ctx, false)
	case "next":
		s.pending = true
		if !s.opt.Writer {
			s.servable = stillBuilding(v)
		}
		s.rebuilt = s.opt.Writer
		return s.createIndex(ctx, s.ver())
	case "new":
		s.rebuilt = true
		if err := s.createIndex(ctx, s.ver()); err != nil {
			return err
		}
		// A build of another configuration this one took over from.
		if ab, err := s.rdb.HGet(ctx, s.metaKey(), "abandoned").Int(); err == nil && ab > 0 {
			if err := s.dropVersion(ctx, ab); err != nil {
				return err
			}
			s.rdb.HDel(ctx, s.metaKey(), "abandoned")
		}
		cur, err := s.rdb.HGet(ctx, s.metaKey(), "current").Int()
		if err != nil {
			return fmt.Errorf("redisearch: read index versions: %w", classify(err))
		}
		if cur == s.ver() {
			return s.pointAlias(ctx, false) // the first index: nothing to hide it from
		}
		s.pending = true
		return nil
	default:
		// A reader finds no index of its configuration: none yet (no
		// worker has started), or one built for another configuration
		// (the workers have not been redeployed with this one). Either
		// may change any moment, so the reader starts unready rather
		// than failing, and adopts the version once a worker makes it;
		// its health check says why meanwhile.
		s.servable = s.noIndexErr(ctx, s.ver())
		s.version.Store(0)
		s.waiting = true
		return nil
	}
}

// noIndexErr says why there is no index version for this store's spec:
// the store is unavailable until a worker makes one.
func (s *Store) noIndexErr(ctx context.Context, cur int) error {
	if cur == 0 {
		return fmt.Errorf("%w: redisearch: no index under %q yet: start a worker (schemaq worker); it creates the index", index.ErrUnavailable, s.alias())
	}
	spec, _ := s.rdb.HGet(ctx, s.metaKey(), fmt.Sprintf("spec:%d", cur)).Result()
	return fmt.Errorf("%w: redisearch: index %s (version %d) was built for %q, but this process needs %q (vector dimension or model mismatch): start the workers with the new configuration; they build version %d from the stored catalogs and switch the alias when it is complete (docs/redis.md, \"Re-indexing\")",
		index.ErrUnavailable, s.alias(), cur, spec, s.spec, cur+1)
}

// adopt looks again, for a reader that started without an index of its
// configuration, whether a worker has made one; once one exists the
// reader takes its version (served, or still being built).
func (s *Store) adopt(ctx context.Context) {
	v, state, err := s.claim(ctx, false)
	if err != nil {
		return // the server's trouble surfaces in Check and in queries
	}
	var why error
	if state == "other" {
		why = s.noIndexErr(ctx, int(v))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case "current":
		s.waiting, s.pending, s.servable = false, false, nil
		s.version.Store(v)
	case "next":
		s.waiting, s.pending = false, true
		s.version.Store(v)
		s.servable = stillBuilding(v)
	default:
		s.servable = why
	}
}

// createIndex runs FT.CREATE for version v, accepting an index that
// already exists (another process created it first).
func (s *Store) createIndex(ctx context.Context, v int) error {
	if !s.engine {
		return nil
	}
	name, opts, schema := s.createArgs(v)
	err := s.rdb.FTCreate(ctx, name, opts, schema...).Err()
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "index already exists") {
		return fmt.Errorf("redisearch: create index %s: %w", name, classify(err))
	}
	return nil
}

// pointAlias makes the alias name this store's version. FT.ALIASUPDATE
// moves it atomically (Promote); FT.ALIASADD only creates it, so that a
// process opening an older current version can never move the alias back
// while a promotion is under way.
func (s *Store) pointAlias(ctx context.Context, move bool) error {
	if !s.engine {
		return nil // searches in memory read the version from meta
	}
	name := s.indexName(s.ver())
	var err error
	if move {
		err = s.rdb.FTAliasUpdate(ctx, name, s.alias()).Err()
	} else if err = s.rdb.FTAliasAdd(ctx, name, s.alias()).Err(); err != nil && strings.Contains(strings.ToLower(err.Error()), "alias already exists") {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("redisearch: point alias %s at %s: %w", s.alias(), name, classify(err))
	}
	return nil
}

// promoteScript makes version ARGV[1] current if it is still the one
// being built, and returns the version it replaced (0 when none, -1 when
// ARGV[1] is not the next version any more).
var promoteScript = redis.NewScript(`
local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
local cur = tonumber(redis.call('HGET', KEYS[1], 'current') or '0')
local v = tonumber(ARGV[1])
if cur == v then return 0 end
if nxt ~= v then return -1 end
redis.call('HSET', KEYS[1], 'current', v)
redis.call('HDEL', KEYS[1], 'next')
return cur
`)

// Promote switches the alias to the version this store built, once its
// writer has projected every catalog and event into it, then drops the
// version it replaced with its keys. It does nothing when the store's
// version is already current, so every worker of a rebuild may call it.
func (s *Store) Promote(ctx context.Context) (bool, error) {
	s.mu.Lock()
	pending := s.pending
	s.mu.Unlock()
	if !pending {
		return false, nil
	}
	// Record the new current version first, then move the alias: a
	// process opening in between sees the new version as current and
	// does not touch the alias. A failed move is retried by the next
	// Promote, which finds the version current and moves it again.
	old, err := promoteScript.Run(ctx, s.rdb, []string{s.metaKey()}, s.ver()).Int()
	if err != nil {
		return false, fmt.Errorf("redisearch: promote version %d: %w", s.ver(), classify(err))
	}
	if old < 0 {
		return false, fmt.Errorf("redisearch: version %d is no longer the one being built (another configuration took over)", s.ver())
	}
	if err := s.pointAlias(ctx, true); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.pending, s.servable = false, nil
	s.mu.Unlock()
	if old > 0 {
		if err := s.dropVersion(ctx, old); err != nil {
			return true, err
		}
	}
	return true, nil
}

// dropVersion removes an index version and every key under its prefix.
func (s *Store) dropVersion(ctx context.Context, v int) error {
	if err := s.dropIndex(ctx, s.indexName(v)); err != nil {
		return err
	}
	if err := s.unlinkMatching(ctx, s.versionPrefix(v)+"*"); err != nil {
		return fmt.Errorf("redisearch: drop version %d: %w", v, err)
	}
	return s.rdb.HDel(ctx, s.metaKey(), fmt.Sprintf("spec:%d", v)).Err()
}

// dropIndex drops an index with the hashes it indexed; one already gone
// is fine.
func (s *Store) dropIndex(ctx context.Context, name string) error {
	if !s.engine {
		return nil
	}
	err := s.rdb.FTDropIndexWithArgs(ctx, name, &redis.FTDropIndexOptions{DeleteDocs: true}).Err()
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "unknown index name") {
		return fmt.Errorf("redisearch: drop index %s: %w", name, classify(err))
	}
	return nil
}

// unlinkMatching removes every key matching pattern, scanning and
// unlinking a thousand at a time so the server is never blocked long. On
// Redis Cluster every primary is scanned, and keys are unlinked one per
// command, as a command's keys must share a slot there.
func (s *Store) unlinkMatching(ctx context.Context, pattern string) error {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return unlinkOn(ctx, c, pattern, true)
		})
	}
	return unlinkOn(ctx, s.rdb, pattern, false)
}

func unlinkOn(ctx context.Context, rdb redis.Cmdable, pattern string, oneByOne bool) error {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	keys := make([]string, 0, 1000)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		var err error
		if oneByOne {
			pipe := rdb.Pipeline()
			for _, k := range keys {
				pipe.Unlink(ctx, k)
			}
			_, err = pipe.Exec(ctx)
		} else {
			err = rdb.Unlink(ctx, keys...).Err()
		}
		keys = keys[:0]
		return classify(err)
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == cap(keys) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return classify(err)
	}
	return flush()
}

// Check is the readiness probe: the server answers, and the alias names
// the version this process needs. A reader waiting for a rebuild becomes
// ready once a worker promotes it; one whose version was replaced by
// another configuration stops being ready.
func (s *Store) Check(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		if s.servesStale() {
			return nil // searches of what it holds go on (StaleReads)
		}
		return fmt.Errorf("redis %s: %w", addrOf(s.rdb), classify(err))
	}
	if err := s.checkVersion(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opt.Writer && s.pending {
		return nil // a writer building the next version is working, not broken
	}
	return s.servable
}

// checkVersion compares the current version in meta with this store's.
func (s *Store) checkVersion(ctx context.Context) error {
	s.mu.Lock()
	waiting := s.waiting
	s.checkedAt = time.Now()
	s.mu.Unlock()
	if waiting {
		s.adopt(ctx)
		return nil
	}
	cur, err := s.rdb.HGet(ctx, s.metaKey(), "current").Int()
	if errors.Is(err, redis.Nil) {
		return s.versionsLost(ctx)
	}
	if err != nil {
		return fmt.Errorf("redis %s: read index versions: %w", addrOf(s.rdb), classify(err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkedAt = time.Now()
	switch {
	case cur == s.ver():
		s.pending, s.servable = false, nil
	case s.pending:
		// still building; servable already says so for readers
	default:
		s.servable = fmt.Errorf("%w: the alias now names index version %d, built for another configuration; restart with that configuration", index.ErrUnavailable, cur)
	}
	return nil
}

// restoreScript records version ARGV[1] of spec ARGV[2] as current,
// unless meta names a current or next version: the writer's own record,
// put back into a Redis that lost it. KEYS[1] meta.
var restoreScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'current') == 1 or redis.call('HEXISTS', KEYS[1], 'next') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'current', ARGV[1], 'spec:' .. ARGV[1], ARGV[2])
return 1
`)

// versionsLost handles a Redis that no longer knows which index version
// is current: its data went with a primary whose replica had not synced,
// or it restarted without persistence. A writer serving its version
// puts the record back (and the index definition), and the workers'
// audit then re-projects every database, whose projected versions are
// gone too. A reader stops serving and waits for that, as it does for a
// first index.
func (s *Store) versionsLost(ctx context.Context) error {
	s.mu.Lock()
	writer := s.opt.Writer && !s.pending && s.ver() > 0
	s.mu.Unlock()
	if writer {
		if err := restoreScript.Run(ctx, s.rdb, []string{s.metaKey()}, s.ver(), s.spec).Err(); err != nil {
			return fmt.Errorf("redis %s: restore index versions: %w", addrOf(s.rdb), classify(err))
		}
		if err := s.createIndex(ctx, s.ver()); err != nil {
			return err
		}
		if err := s.pointAlias(ctx, false); err != nil {
			return err
		}
		s.mu.Lock()
		s.checkedAt, s.servable = time.Now(), nil
		s.mu.Unlock()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkedAt = time.Now()
	s.waiting = true
	s.servable = fmt.Errorf("%w: redisearch: %s no longer records an index version (a failover to a replica that had not synced, or a restart without persistence); searches resume once a worker restores it and re-projects the catalogs", index.ErrUnavailable, addrOf(s.rdb))
	return nil
}

// servableErr says whether searches may run. It re-reads the current
// version now and then (every second while waiting, every 5 s otherwise),
// so a process without readiness probes still notices a promotion.
func (s *Store) servableErr(ctx context.Context) error {
	s.mu.Lock()
	every := 5 * time.Second
	if s.servable != nil || s.pending {
		every = time.Second
	}
	due := time.Since(s.checkedAt) > every
	s.mu.Unlock()
	if due {
		_ = s.checkVersion(ctx) // an unreachable server surfaces in the query itself
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servable
}

// writableErr refuses writes once the alias names another configuration's
// version: this one is dropped, and writing would only leave stray keys.
func (s *Store) writableErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		return nil
	}
	return s.servable
}

// moduleVersion reads the search module's version from MODULE LIST (0 when
// no search module is loaded). The reply is an array of arrays in RESP2
// and an array of maps in RESP3.
func moduleVersion(ctx context.Context, rdb redis.UniversalClient) (int, error) {
	res, err := rdb.Do(ctx, "MODULE", "LIST").Result()
	if err != nil {
		return 0, fmt.Errorf("list modules: %w", classify(err))
	}
	return parseModuleList(res), nil
}

func parseModuleList(res any) int {
	list, _ := res.([]any)
	for _, m := range list {
		fields := map[string]any{}
		switch m := m.(type) {
		case []any:
			for i := 0; i+1 < len(m); i += 2 {
				if k, ok := m[i].(string); ok {
					fields[strings.ToLower(k)] = m[i+1]
				}
			}
		case map[any]any:
			for k, v := range m {
				if k, ok := k.(string); ok {
					fields[strings.ToLower(k)] = v
				}
			}
		}
		name, _ := fields["name"].(string)
		if n := strings.ToLower(name); n != "search" && n != "ft" && n != "searchlight" {
			continue
		}
		switch v := fields["ver"].(type) {
		case int64:
			return int(v)
		case string:
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func formatModuleVersion(v int) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// classify marks errors that mean "Redis cannot serve now" as
// index.ErrUnavailable, so that asks reply store_unavailable and workers
// retry. Replies that are Redis errors about the command itself (a syntax
// error, a wrong type) are bugs or bad data and stay as they are.
func classify(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, index.ErrUnavailable) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "NOREPLICAS"} {
			if strings.HasPrefix(msg, p) {
				return fmt.Errorf("%w: %v", index.ErrUnavailable, err)
			}
		}
		return err
	}
	var nerr net.Error
	if errors.As(err, &nerr) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection") {
		return fmt.Errorf("%w: %v", index.ErrUnavailable, err)
	}
	return err
}

func addrOf(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	}
	return "server"
}

// DropAll removes everything under the store's prefix: every index
// version, the alias, the hashes, the embedding cache. For benchmarks and
// tests that open a store of their own; never run against a prefix that
// serves.
func (s *Store) DropAll(ctx context.Context) error {
	if !s.engine {
		return s.dropKeys(ctx)
	}
	names, err := s.rdb.FT_List(ctx).Result()
	if err != nil {
		return fmt.Errorf("redisearch: list indexes: %w", classify(err))
	}
	_ = s.rdb.FTAliasDel(ctx, s.alias()).Err() // absent is fine
	for _, n := range names {
		if strings.HasPrefix(n, s.opt.Prefix+"idx:v") {
			if err := s.dropIndex(ctx, n); err != nil {
				return err
			}
		}
	}
	return s.dropKeys(ctx)
}

func (s *Store) dropKeys(ctx context.Context) error {
	if err := s.unlinkMatching(ctx, s.opt.Prefix+"*"); err != nil {
		return fmt.Errorf("redisearch: drop keys: %w", err)
	}
	return nil
}
