package redisearch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/index"
)

// Hash fields of a chunk. The TAG fields hold hex-encoded values, so no
// database, schema or tag can contain a separator or query syntax; the
// TEXT fields hold terms analysed by package text (index.SearchFields).
const (
	fID       = "id"
	fDB       = "db"     // TAG, hex
	fKind     = "kind"   // TAG, hex
	fSchema   = "schema" // TAG, hex
	fTags     = "tags"   // TAG, hex of key=value, comma-separated
	fName     = "name"   // TEXT: the table, view or doc title
	fSchemaT  = "schema_terms"
	fColumns  = "columns" // TEXT: column names
	fBody     = "body"    // TEXT: the chunk text
	fVector   = "embedding"
	fObject   = "object" // chunk.Name
	fPart     = "part"
	fTitle    = "title"
	fColList  = "column_list" // JSON
	fText     = "text"
	fTagMap   = "tag_map" // JSON
	fHash     = "hash"
	fVersion  = "version"
	batchSize = 200
)

// returned are the fields a search hydrates a chunk from.
var returned = []string{fID, fDB, fKind, fSchema, fObject, fPart, fTitle, fColList, fText, fTagMap, fHash, fVersion}

func hexTag(s string) string { return hex.EncodeToString([]byte(s)) }

func unhexTag(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	return string(b)
}

func tagPair(k, v string) string { return hexTag(k + "=" + v) }

// createArgs is the FT.CREATE of version v.
func (s *Store) createArgs(v int) (string, *redis.FTCreateOptions, []*redis.FieldSchema) {
	w := s.opt.Weights
	vec := &redis.FTVectorArgs{}
	if s.opt.Algorithm == "FLAT" {
		vec.FlatOptions = &redis.FTFlatOptions{Type: "FLOAT32", Dim: s.opt.Dimensions, DistanceMetric: "COSINE"}
	} else {
		vec.HNSWOptions = &redis.FTHNSWOptions{Type: "FLOAT32", Dim: s.opt.Dimensions, DistanceMetric: "COSINE"}
	}
	opts := &redis.FTCreateOptions{
		OnHash: true,
		Prefix: []any{s.chunkPrefix(v)},
		// Terms arrive analysed; the engine must neither drop nor stem them.
		StopWords: []any{},
	}
	schema := []*redis.FieldSchema{
		{FieldName: fDB, FieldType: redis.SearchFieldTypeTag},
		{FieldName: fKind, FieldType: redis.SearchFieldTypeTag},
		{FieldName: fSchema, FieldType: redis.SearchFieldTypeTag},
		{FieldName: fTags, FieldType: redis.SearchFieldTypeTag},
		{FieldName: fName, FieldType: redis.SearchFieldTypeText, NoStem: true, Weight: w.Name},
		{FieldName: fSchemaT, FieldType: redis.SearchFieldTypeText, NoStem: true, Weight: w.Schema},
		{FieldName: fColumns, FieldType: redis.SearchFieldTypeText, NoStem: true, Weight: w.Columns},
		{FieldName: fBody, FieldType: redis.SearchFieldTypeText, NoStem: true, Weight: w.Body},
		{FieldName: fVector, FieldType: redis.SearchFieldTypeVector, VectorArgs: vec},
	}
	return s.indexName(v), opts, schema
}

// hashFields is the hash of one record.
func hashFields(r index.Record) []any {
	f := index.SearchFields(r.Chunk)
	cols, _ := json.Marshal(r.Columns)
	tagMap := []byte("{}")
	if len(r.Tags) > 0 {
		tagMap, _ = json.Marshal(r.Tags)
	}
	keys := make([]string, 0, len(r.Tags))
	for k := range r.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([]string, len(keys))
	for i, k := range keys {
		pairs[i] = tagPair(k, r.Tags[k])
	}
	return []any{
		fID, r.ID, fDB, hexTag(r.Database), fKind, hexTag(r.Kind), fSchema, hexTag(r.Schema), fTags, strings.Join(pairs, ","),
		fName, f.Name, fSchemaT, f.Schema, fColumns, f.Columns, fBody, f.Body,
		fVector, index.EncodeVector(r.Vector),
		fObject, r.Name, fPart, r.Part, fTitle, r.Title, fColList, string(cols), fText, r.Text, fTagMap, string(tagMap),
		fHash, r.Hash, fVersion, r.Version,
	}
}

// changeLog is the Lua every write script shares: it records that a
// chunk of a database changed, in the database's change log (a sorted
// set of chunk ids scored by the generation of their last change), so
// that a process searching in memory catches up by reading only what
// changed since the generation it holds (memory.go). Every horizonEvery
// generations the log forgets what is older than logHorizon; a reader
// further behind loads the database whole. The first change of a
// generations hash that went missing (a Redis that came back empty)
// stamps it with a new incarnation, so that metas held from before are
// not taken for its (metas.go). KEYS[g]: generations hash, KEYS[g+1]:
// change log.
const changeLog = `
local function changed(g, db, id)
  if redis.call('HEXISTS', KEYS[g], 'i:' .. db) == 0 then
    local t = redis.call('TIME')
    redis.call('HSET', KEYS[g], 'i:' .. db, t[1] .. '.' .. t[2])
  end
  local gen = redis.call('HINCRBY', KEYS[g], 'g:' .. db, 1)
  redis.call('ZADD', KEYS[g+1], gen, id)
  if gen % 256 == 0 and gen > 4096 then
    redis.call('ZREMRANGEBYSCORE', KEYS[g+1], '-inf', gen - 4096)
    redis.call('HSET', KEYS[g], 'h:' .. db, gen - 4096)
  end
end
`

// logHorizon is how many generations a change log keeps (the 4096 of
// changeLog).
const logHorizon = 4096

// upsertScript writes a chunk's hash unless the stored one, or its
// object's mark (index.Marked), has a higher version, replacing every
// field (DEL first, so no old tag lingers), records its id in the
// database's set, the change in its log, and raises the mark. KEYS:
// chunk, db set, generations, change log, marks; ARGV: version, id, db,
// mark field (or "" for a kind without marks), then field/value pairs.
var upsertScript = redis.NewScript(changeLog + `
if ARGV[4] ~= '' then
  local m = redis.call('HGET', KEYS[5], ARGV[4])
  if m and tonumber(m) > tonumber(ARGV[1]) then return 0 end
end
local v = redis.call('HGET', KEYS[1], 'version')
if v and tonumber(v) > tonumber(ARGV[1]) then return 0 end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[5], ARGV[4], ARGV[1]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('SADD', KEYS[2], ARGV[2])
changed(3, ARGV[3], ARGV[2])
return 1
`)

// touchScript raises a chunk's version if it belongs to the database and
// is lower. KEYS: chunk, generations, change log; ARGV: hex db, version,
// db, id.
var touchScript = redis.NewScript(changeLog + `
local h = redis.call('HMGET', KEYS[1], 'db', 'version')
if not h[1] or h[1] ~= ARGV[1] or tonumber(h[2]) >= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2])
changed(2, ARGV[3], ARGV[4])
return 1
`)

// deleteScript removes a chunk of the database, when ARGV[3] is set only
// if its version is below it, so a delete decided on a stale read never
// removes a chunk a newer write put there. KEYS: chunk, db set,
// generations, change log; ARGV: hex db, id, below (or ""), db.
var deleteScript = redis.NewScript(changeLog + `
local h = redis.call('HMGET', KEYS[1], 'db', 'version')
if not h[1] then
  redis.call('SREM', KEYS[2], ARGV[2])
  return 0
end
if h[1] ~= ARGV[1] then return 0 end
if ARGV[3] ~= '' and tonumber(h[2]) >= tonumber(ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
changed(3, ARGV[4], ARGV[2])
return 1
`)

// markScript raises object marks, never lowering one. KEYS: marks;
// ARGV: field, version pairs.
var markScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local m = redis.call('HGET', KEYS[1], ARGV[i])
  if not m or tonumber(m) < tonumber(ARGV[i+1]) then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1]) end
end
return 0
`)

// markField is an object's field in its database's marks hash, or ""
// for a kind without marks.
func markField(kind, name string) string {
	if !index.Marked(kind) {
		return ""
	}
	return kind + ":" + name
}

// setMarks raises the marks a DeleteStale sets, before it deletes: an
// older write racing it either lands first and is deleted, or finds
// the mark and writes nothing.
func (s *Store) setMarks(ctx context.Context, db string, marks []index.Mark) error {
	for start := 0; start < len(marks); start += batchSize {
		args := make([]any, 0, 2*batchSize)
		for _, m := range marks[start:min(start+batchSize, len(marks))] {
			args = append(args, markField(m.Kind, m.Name), m.Version)
		}
		if err := markScript.Run(ctx, s.rdb, []string{s.marksKey(db)}, args...).Err(); err != nil && err != redis.Nil {
			return classify(err)
		}
	}
	return nil
}

// setProjectedScript raises a database's projected version, never lowers
// it. KEYS: projections hash; ARGV: db, version.
var setProjectedScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or tonumber(v) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0
`)

// runBatched runs one script call per item in pipelined batches and sums
// the integer replies. Scripts go as EVALSHA; the calls a server refuses
// with NOSCRIPT (it never had the script, or lost it in a restart) are
// the only ones not run, so the script is loaded and just those go again.
func (s *Store) runBatched(ctx context.Context, script *redis.Script, n int, call func(i int) ([]string, []any)) (int, error) {
	total := 0
	for start := 0; start < n; start += batchSize {
		idx := make([]int, 0, batchSize)
		for i := start; i < min(start+batchSize, n); i++ {
			idx = append(idx, i)
		}
		for loaded := false; len(idx) > 0; loaded = true {
			pipe := s.rdb.Pipeline()
			cmds := make([]*redis.Cmd, len(idx))
			for j, i := range idx {
				keys, args := call(i)
				cmds[j] = script.EvalSha(ctx, pipe, keys, args...)
			}
			_, _ = pipe.Exec(ctx) // every command carries its own error
			var again []int
			for j, c := range cmds {
				v, err := c.Int()
				switch {
				case err == nil:
					total += v
				case !loaded && redis.HasErrorPrefix(err, "NOSCRIPT"):
					again = append(again, idx[j])
				default:
					return total, classify(err)
				}
			}
			if len(again) > 0 {
				if err := script.Load(ctx, s.rdb).Err(); err != nil {
					return total, classify(err)
				}
			}
			idx = again
		}
	}
	return total, nil
}

// Upsert implements index.Store.
func (s *Store) Upsert(ctx context.Context, recs []index.Record) (n int, err error) {
	for _, r := range recs {
		if r.Database == "" {
			return 0, fmt.Errorf("upsert %s: %w", r.ID, index.ErrNoDatabase)
		}
		if len(r.Vector) != s.opt.Dimensions {
			return 0, fmt.Errorf("upsert %s: %w: got %d, index has %d", r.ID, index.ErrDimension, len(r.Vector), s.opt.Dimensions)
		}
	}
	if err := s.writableErr(); err != nil {
		return 0, fmt.Errorf("upsert %d chunks: %w", len(recs), err)
	}
	dbs := make([]string, len(recs))
	for i, r := range recs {
		dbs[i] = r.Database
	}
	defer s.announced(ctx, &err, dbs...)
	return s.upsert(ctx, recs)
}

func (s *Store) upsert(ctx context.Context, recs []index.Record) (int, error) {
	n, err := s.runBatched(ctx, upsertScript, len(recs), func(i int) ([]string, []any) { return s.upsertCall(recs[i]) })
	if err != nil {
		return n, fmt.Errorf("upsert %d chunks: %w", len(recs), err)
	}
	return n, nil
}

// Touch implements index.Store.
func (s *Store) Touch(ctx context.Context, db string, ids []string, version int64) (n int, err error) {
	if db == "" {
		return 0, index.ErrNoDatabase
	}
	defer s.announced(ctx, &err, db)
	n, err = s.runBatched(ctx, touchScript, len(ids), func(i int) ([]string, []any) {
		return []string{s.chunkKey(ids[i]), s.gensKey(db), s.changesKey(db)}, []any{hexTag(db), version, db, ids[i]}
	})
	if err != nil {
		return n, fmt.Errorf("touch %d chunks of %s: %w", len(ids), db, err)
	}
	return n, nil
}

// upsertCall is upsertScript's keys and arguments for one chunk.
func (s *Store) upsertCall(r index.Record) ([]string, []any) {
	return []string{s.chunkKey(r.ID), s.dbKey(r.Database), s.gensKey(r.Database), s.changesKey(r.Database), s.marksKey(r.Database)},
		append([]any{r.Version, r.ID, r.Database, markField(r.Kind, r.Name)}, hashFields(r)...)
}

// deleteCall is deleteScript's keys and arguments for one chunk of db.
func (s *Store) deleteCall(db, id, below string) ([]string, []any) {
	return []string{s.chunkKey(id), s.dbKey(db), s.gensKey(db), s.changesKey(db)}, []any{hexTag(db), id, below, db}
}

func (s *Store) deleteIDs(ctx context.Context, db string, ids []string, below string) (int, error) {
	return s.runBatched(ctx, deleteScript, len(ids), func(i int) ([]string, []any) { return s.deleteCall(db, ids[i], below) })
}

// Delete implements index.Store.
func (s *Store) Delete(ctx context.Context, db string, ids []string) (err error) {
	if db == "" {
		return index.ErrNoDatabase
	}
	defer s.announced(ctx, &err, db)
	if _, err := s.deleteIDs(ctx, db, ids, ""); err != nil {
		return fmt.Errorf("delete %d chunks of %s: %w", len(ids), db, err)
	}
	return nil
}

func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// DeleteName implements index.Store.
func (s *Store) DeleteName(ctx context.Context, db, kind, name string) (err error) {
	if db == "" {
		return index.ErrNoDatabase
	}
	defer s.announced(ctx, &err, db)
	var ids []string
	err = s.eachMeta(ctx, db, func(m meta) {
		if m.kind == kind && m.object == name {
			ids = append(ids, m.id)
		}
	})
	if err != nil {
		return fmt.Errorf("delete %s %s of %s: %w", kind, name, db, err)
	}
	if _, err := s.deleteIDs(ctx, db, ids, ""); err != nil {
		return fmt.Errorf("delete %s %s of %s: %w", kind, name, db, err)
	}
	return nil
}

// DeleteStale implements index.Store.
func (s *Store) DeleteStale(ctx context.Context, st index.Stale) (n int, err error) {
	if st.Database == "" {
		return 0, index.ErrNoDatabase
	}
	if len(st.Kinds) == 0 {
		return 0, nil
	}
	defer s.announced(ctx, &err, st.Database)
	if err := s.setMarks(ctx, st.Database, st.Marks()); err != nil {
		return 0, fmt.Errorf("delete stale chunks of %s: %w", st.Database, err)
	}
	var ids, below []string
	err = s.eachMeta(ctx, st.Database, func(m meta) {
		if st.Selects(m.kind, m.object, m.version) {
			b := st.Below
			if st.Names != nil {
				b = st.Names[m.object]
			}
			ids, below = append(ids, m.id), append(below, strconv.FormatInt(b, 10))
		}
	})
	if err != nil {
		return 0, fmt.Errorf("delete stale chunks of %s: %w", st.Database, err)
	}
	// Each is deleted only while still below its bound: a newer write
	// that landed since stays.
	n, err = s.runBatched(ctx, deleteScript, len(ids), func(i int) ([]string, []any) { return s.deleteCall(st.Database, ids[i], below[i]) })
	if err != nil {
		return n, fmt.Errorf("delete stale chunks of %s: %w", st.Database, err)
	}
	return n, nil
}

// DeleteDatabase implements index.Store.
func (s *Store) DeleteDatabase(ctx context.Context, db string) (err error) {
	if db == "" {
		return index.ErrNoDatabase
	}
	defer s.announced(ctx, &err, db)
	ids, err := s.rdb.SMembers(ctx, s.dbKey(db)).Result()
	if err == nil {
		_, err = s.deleteIDs(ctx, db, ids, "")
	}
	if err == nil {
		err = s.rdb.HDel(ctx, s.projectedKey(db), db).Err()
	}
	if err == nil {
		err = s.rdb.HDel(ctx, s.gensKey(db), "l:"+db).Err() // a failed landing goes with its database
	}
	if err == nil {
		err = s.rdb.Del(ctx, s.marksKey(db)).Err()
	}
	if err != nil {
		return fmt.Errorf("delete database %s: %w", db, classify(err))
	}
	return nil
}

// Count implements index.Store.
func (s *Store) Count(ctx context.Context, f index.Filter) (int, error) {
	if f.Database == "" {
		return 0, index.ErrNoDatabase
	}
	if len(f.Kinds) == 0 && len(f.Schemas) == 0 && len(f.Tags) == 0 {
		n, err := s.rdb.SCard(ctx, s.dbKey(f.Database)).Result()
		if err != nil {
			return 0, fmt.Errorf("count chunks of %s: %w", f.Database, classify(err))
		}
		return int(n), nil
	}
	n := 0
	err := s.eachMeta(ctx, f.Database, func(m meta) {
		if f.Admits(m.kind, m.schema, m.tags) {
			n++
		}
	})
	if err != nil {
		return 0, fmt.Errorf("count chunks of %s: %w", f.Database, err)
	}
	return n, nil
}

// Metas implements index.Store.
func (s *Store) Metas(ctx context.Context, f index.Filter) (map[string]index.Meta, error) {
	if f.Database == "" {
		return nil, index.ErrNoDatabase
	}
	out := map[string]index.Meta{}
	err := s.eachMeta(ctx, f.Database, func(m meta) {
		if f.Admits(m.kind, m.schema, m.tags) {
			out[m.id] = index.Meta{Hash: m.hash, Version: m.version}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list chunks of %s: %w", f.Database, err)
	}
	return out, nil
}

// Marks implements index.Store.
func (s *Store) Marks(ctx context.Context, db, kind string, names []string) (map[string]int64, error) {
	out := make(map[string]int64, len(names))
	if !index.Marked(kind) {
		return out, nil
	}
	for start := 0; start < len(names); start += batchSize {
		part := names[start:min(start+batchSize, len(names))]
		fields := make([]string, len(part))
		for i, n := range part {
			fields[i] = markField(kind, n)
		}
		vals, err := s.rdb.HMGet(ctx, s.marksKey(db), fields...).Result()
		if err != nil {
			return nil, fmt.Errorf("marks of %d %s objects of %s: %w", len(names), kind, db, classify(err))
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				continue // no mark
			}
			n, err := strconv.ParseInt(str, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("mark of %s %s of %s: %q is not a version", kind, part[i], db, str)
			}
			out[part[i]] = n
		}
	}
	return out, nil
}

// Projected implements index.Store.
func (s *Store) Projected(ctx context.Context, db string) (int64, error) {
	v, err := s.rdb.HGet(ctx, s.projectedKey(db), db).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("projected version of %s: %w", db, classify(err))
	}
	return v, nil
}

// SetProjected implements index.Store; it never lowers the version.
func (s *Store) SetProjected(ctx context.Context, db string, version int64) error {
	if err := setProjectedScript.Run(ctx, s.rdb, []string{s.projectedKey(db)}, db, version).Err(); err != nil && err != redis.Nil {
		return fmt.Errorf("set projected version of %s: %w", db, classify(err))
	}
	return nil
}

// GetVectors implements embed.CacheStore: one pipeline of GETs per
// batch (an MGET's keys would have to share a slot on Redis Cluster).
func (s *Store) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(keys))
	for start := 0; start < len(keys); start += batchSize {
		batch := keys[start:min(start+batchSize, len(keys))]
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(batch))
		for i, k := range batch {
			cmds[i] = pipe.Get(ctx, s.cacheKey(k))
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, fmt.Errorf("embedding cache: %w", classify(err))
		}
		for i, c := range cmds {
			if b, err := c.Bytes(); err == nil && len(b) > 0 {
				out[batch[i]] = index.DecodeVector(b)
			}
		}
	}
	return out, nil
}

// PutVectors implements embed.CacheStore, pipelined, with the TTL the
// options give.
func (s *Store) PutVectors(ctx context.Context, vecs map[string][]float32) error {
	pipe := s.rdb.Pipeline()
	n := 0
	for k, v := range vecs {
		pipe.Set(ctx, s.cacheKey(k), index.EncodeVector(v), s.opt.CacheTTL)
		if n++; n%batchSize == 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("embedding cache: %w", classify(err))
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("embedding cache: %w", classify(err))
	}
	return nil
}

// Projection locks: one projection of a database's schema writes at a
// time. A lock outlives a worker that dies by lockTTL at most; a live
// holder extends it every lockTTL/3.
const (
	lockTTL  = 30 * time.Second
	lockWait = 5 * time.Second
)

// unlockScript releases a lock still held by the token. KEYS: lock;
// ARGV: token.
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// extendScript extends a lock still held by the token. KEYS: lock; ARGV:
// token, milliseconds.
var extendScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// ReplaceSchema implements index.Replacer: only new and changed chunks
// are written, and the chunks the catalog no longer produces deleted.
// RediSearch re-indexes a whole document, vector included, on any write
// to its hash, so the other protocol (raising the version of every
// unchanged chunk, then deleting below it) cost a one-table migration
// a write of every chunk of the database.
//
// Projections of one database are serialised by a lock in Redis: while
// it is held, the projected version is checked against the one the
// caller read (ErrMoved when another landed), then the changes are
// written and the version raised. A projection of up to atomicChanges
// chunks (a migration's) goes as one MULTI, so searches see it whole or
// not at all, as the embedded store's transaction gives; a larger one (a
// database's first load, a bulk rewrite) goes in pipelined batches, so
// as not to hold every client of the server for its length: readers
// holding a lease see it when it is announced, at the end (lease.go),
// and the others may see it part written while it lands.
func (s *Store) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (_ index.Replaced, err error) {
	if r.Database == "" {
		return index.Replaced{}, index.ErrNoDatabase
	}
	for _, rec := range r.Upserts {
		if rec.Database != r.Database {
			return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: chunk %s is of database %q", r.Database, rec.ID, rec.Database)
		}
		if len(rec.Vector) != s.opt.Dimensions {
			return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: chunk %s: %w: got %d, index has %d", r.Database, rec.ID, index.ErrDimension, len(rec.Vector), s.opt.Dimensions)
		}
	}
	if err := s.writableErr(); err != nil {
		return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
	}
	release, err := s.lock(ctx, r.Database)
	if err != nil {
		return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
	}
	defer release()
	cur, err := s.Projected(ctx, r.Database)
	if err != nil {
		return index.Replaced{}, err
	}
	switch {
	case cur > r.Version:
		return index.Replaced{Skipped: true}, nil
	case cur != r.Since:
		return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: %w: projected version %d, read at %d", r.Database, index.ErrMoved, cur, r.Since)
	}
	// Announced under the lock, so that the next projection of db
	// starts after the readers know of this one; a skipped or refused
	// projection wrote nothing to announce.
	defer s.announced(ctx, &err, r.Database)
	prefix := r.Database + ":"
	var gone []string
	for _, id := range r.Remove {
		// Only chunks of this database and of Kinds: a stray id must not
		// remove a doc or another database's chunk.
		rest, ours := strings.CutPrefix(id, prefix)
		if kind, _, _ := strings.Cut(rest, ":"); ours && slices.Contains(r.Kinds, kind) {
			gone = append(gone, id)
		}
	}
	if len(r.Upserts)+len(gone) <= atomicChanges {
		out, err := s.replaceAtomically(ctx, r, gone)
		if err != nil {
			return out, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
		}
		return out, nil
	}
	// The landing mark goes first and stays until the last batch is in
	// and the projected version raised, in one call: searches in memory
	// keep the snapshot they hold meanwhile, and after a failure (the
	// writer's, or its Redis failing over with part of the batches) they
	// keep it until a projection lands whole.
	var out index.Replaced
	if err := s.rdb.HSet(ctx, s.gensKey(r.Database), "l:"+r.Database, r.Version).Err(); err != nil {
		return out, fmt.Errorf("replace schema chunks of %s: mark landing: %w", r.Database, classify(err))
	}
	if out.Written, err = s.upsert(ctx, r.Upserts); err != nil {
		return out, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
	}
	if out.Deleted, err = s.deleteIDs(ctx, r.Database, gone, ""); err != nil {
		return out, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
	}
	if err := landedScript.Run(ctx, s.rdb, []string{s.projectedKey(r.Database), s.gensKey(r.Database)}, r.Database, r.Version).Err(); err != nil {
		return out, fmt.Errorf("set projected version of %s: %w", r.Database, classify(err))
	}
	return out, nil
}

// landedScript raises db's projected version (never lowers it) and
// clears its landing mark: a projection written in batches has landed.
// KEYS: projected, generations; ARGV: db, version.
var landedScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or tonumber(v) < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('HDEL', KEYS[2], 'l:' .. ARGV[1])
return 0
`)

// atomicChanges is the most chunks a projection writes and deletes in
// one MULTI, during which Redis serves no other client. The query engine
// indexes each hash as it is written, vector included, so the batch bounds
// how long other clients wait (BenchmarkReplaceSchemaLive measures it;
// docs/redis.md has the figures), where a first load of thousands of
// tables in one MULTI would hold the server for seconds.
const atomicChanges = 128

// replaceAtomically writes a projection's upserts, deletions and
// projected version in one MULTI, clearing the landing mark a projection
// in batches that failed left. Its calls go as EVAL, with the script's
// text: an EVALSHA the server has no script for fails only when the MULTI
// runs, after the calls before it have run, and a MULTI is not undone.
func (s *Store) replaceAtomically(ctx context.Context, r index.SchemaReplace, gone []string) (index.Replaced, error) {
	db := r.Database
	pipe := s.rdb.TxPipeline()
	ups := make([]*redis.Cmd, len(r.Upserts))
	for i, rec := range r.Upserts {
		keys, args := s.upsertCall(rec)
		ups[i] = upsertScript.Eval(ctx, pipe, keys, args...)
	}
	dels := make([]*redis.Cmd, len(gone))
	for i, id := range gone {
		keys, args := s.deleteCall(db, id, "")
		dels[i] = deleteScript.Eval(ctx, pipe, keys, args...)
	}
	projected := landedScript.Eval(ctx, pipe, []string{s.projectedKey(db), s.gensKey(db)}, db, r.Version)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		// A call refused as it was queued aborts the MULTI (EXECABORT);
		// one that failed as it ran (out of memory) leaves the others
		// run, and the next projection, diffing against what is stored,
		// writes what is missing. The first failed call says why.
		for _, c := range append(append(ups, dels...), projected) {
			if e := c.Err(); e != nil && e != redis.Nil {
				return index.Replaced{}, classify(e)
			}
		}
		return index.Replaced{}, classify(err)
	}
	var out index.Replaced
	for _, c := range ups {
		n, _ := c.Int()
		out.Written += n
	}
	for _, c := range dels {
		n, _ := c.Int()
		out.Deleted += n
	}
	return out, nil
}

// lock takes the projection lock of db, waiting up to lockWait for
// another holder; it returns ErrMoved when it cannot, so that the caller
// reads the stored state again. release stops the extension and frees it.
func (s *Store) lock(ctx context.Context, db string) (release func(), err error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	token, key := hex.EncodeToString(b[:]), s.lockKey(db)
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := s.rdb.SetNX(ctx, key, token, lockTTL).Result()
		if err != nil {
			return nil, classify(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: another projection of %s holds its lock", index.ErrMoved, db)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(lockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				_ = extendScript.Run(context.Background(), s.rdb, []string{key}, token, lockTTL.Milliseconds()).Err()
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		// A fresh context: the caller's may be done, and a lock left
		// behind would hold the next projection for lockTTL.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = unlockScript.Run(ctx, s.rdb, []string{key}, token).Err()
	}, nil
}
