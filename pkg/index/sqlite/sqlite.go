// Package sqlite is the embedded index store: one SQLite file (WAL) holding
// chunks, an FTS5 table for BM25 and the vectors, plus the embedding cache.
// It serves a single node: the tests, the demo and `schemaq up`.
//
// BM25 runs in FTS5 over fields analysed in Go (package text), so
// tokenisation matches the rest of schemaq; every query term is quoted, so
// user text never reaches FTS5 syntax. KNN is exact: each database's
// vectors are held in memory and scanned, which for schema-sized indexes
// (thousands of chunks) takes well under a millisecond. A generation
// counter per database, bumped by every write, tells searchers in any
// process sharing the file when to reload.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, with FTS5

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
)

// layoutVersion changes when the tables or the analysis change. An index
// file of another layout, or of other vector dimensions, is emptied and
// rebuilt (it is a projection of the catalogs and events), and Rebuilt
// reports it so the worker can re-project.
const layoutVersion = "3"

// Store is the SQLite index. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dim     int
	rebuilt bool

	writeMu sync.Mutex // one writer at a time: SQLite's rule, kept in Go to avoid SQLITE_BUSY

	mu    sync.Mutex
	cache map[string]*dbCache // per database, for KNN and hit hydration
}

type entry struct {
	chunk chunk.Chunk
	vec   []float32
}

type dbCache struct {
	gen     int64
	entries map[int64]*entry
	list    []*entry  // rowid order, for the KNN scan
	vecs    []float32 // every vector back to back, in list order: one cache-friendly scan
}

var (
	_ index.Store      = (*Store)(nil)
	_ embed.CacheStore = (*Store)(nil)
)

// Open opens or creates the index file at path for vectors of dim
// dimensions. An existing index with other dimensions is an error that
// says how to rebuild.
func Open(ctx context.Context, path string, dim int) (*Store, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("open index %s: dimensions must be positive, got %d", path, dim)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open index %s: %w", path, err)
		}
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(OFF)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	s := &Store{db: db, dim: dim, cache: map[string]*dbCache{}}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return s, nil
}

// Rebuilt reports whether Open found an index of another layout or
// dimension and emptied it, so that its contents must be re-projected.
func (s *Store) Rebuilt() bool { return s.rebuilt }

func (s *Store) migrate(ctx context.Context) error {
	if err := s.resetIfIncompatible(ctx); err != nil {
		return err
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS chunks (
			rowid INTEGER PRIMARY KEY,
			id TEXT NOT NULL UNIQUE,
			db TEXT NOT NULL,
			kind TEXT NOT NULL,
			name TEXT NOT NULL,
			part INTEGER NOT NULL,
			schema_name TEXT NOT NULL,
			title TEXT NOT NULL,
			columns TEXT NOT NULL,
			body TEXT NOT NULL,
			tags TEXT NOT NULL,
			hash TEXT NOT NULL,
			version INTEGER NOT NULL,
			vector BLOB NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS chunks_db_kind ON chunks (db, kind, name)`,
		`CREATE TABLE IF NOT EXISTS chunk_tags (chunk INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (chunk, key))`,
		`CREATE INDEX IF NOT EXISTS chunk_tags_kv ON chunk_tags (key, value)`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(name, schema, columns, body, tokenize = 'unicode61 remove_diacritics 2')`,
		`CREATE TABLE IF NOT EXISTS generations (db TEXT PRIMARY KEY, gen INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS embed_cache (key TEXT PRIMARY KEY, vector BLOB NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS projections (db TEXT PRIMARY KEY, version INTEGER NOT NULL)`,
	}
	for _, q := range stmts {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
	}
	for k, v := range s.wantMeta() {
		if _, err := s.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
			return fmt.Errorf("write %s: %w", k, err)
		}
	}
	return nil
}

func (s *Store) wantMeta() map[string]string {
	return map[string]string{"layout": layoutVersion, "dimensions": fmt.Sprint(s.dim)}
}

// resetIfIncompatible drops the projection tables of an index built with
// another layout or other dimensions. The embedding cache stays: its keys
// name model and dimensions.
func (s *Store) resetIfIncompatible(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n); err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	if n == 0 {
		return nil // a new file
	}
	for k, v := range s.wantMeta() {
		var have string
		err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, k).Scan(&have)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read %s: %w", k, err)
		}
		if have != v {
			s.rebuilt = true
		}
	}
	if !s.rebuilt {
		return nil
	}
	for _, t := range []string{"chunks_fts", "chunk_tags", "chunks", "generations", "projections"} {
		if _, err := s.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
			return fmt.Errorf("reset index: %w", err)
		}
	}
	return nil
}

// Close implements index.Store.
func (s *Store) Close() error { return s.db.Close() }

// Upsert implements index.Store.
func (s *Store) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	for _, r := range recs {
		if r.Database == "" {
			return 0, fmt.Errorf("upsert %s: %w", r.ID, index.ErrNoDatabase)
		}
		if len(r.Vector) != s.dim {
			return 0, fmt.Errorf("upsert %s: %w: got %d, index has %d", r.ID, index.ErrDimension, len(r.Vector), s.dim)
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	written := 0
	err := s.write(ctx, dbsOf(recs), func(tx *sql.Tx) error {
		for _, r := range recs {
			var rowid, version int64
			err := tx.QueryRowContext(ctx, `SELECT rowid, version FROM chunks WHERE id = ?`, r.ID).Scan(&rowid, &version)
			exists := err == nil
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if exists && version > r.Version {
				continue // never replace a newer catalog's chunk
			}
			cols, _ := json.Marshal(r.Columns)
			tags, _ := json.Marshal(r.Tags)
			if r.Tags == nil {
				tags = []byte("{}")
			}
			if exists {
				if _, err := tx.ExecContext(ctx, `UPDATE chunks SET db=?, kind=?, name=?, part=?, schema_name=?, title=?, columns=?, body=?, tags=?, hash=?, version=?, vector=? WHERE rowid=?`,
					r.Database, r.Kind, r.Name, r.Part, r.Schema, r.Title, string(cols), r.Text, string(tags), r.Hash, r.Version, index.EncodeVector(r.Vector), rowid); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM chunks_fts WHERE rowid = ?`, rowid); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM chunk_tags WHERE chunk = ?`, rowid); err != nil {
					return err
				}
			} else {
				res, err := tx.ExecContext(ctx, `INSERT INTO chunks (id, db, kind, name, part, schema_name, title, columns, body, tags, hash, version, vector) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`,
					r.ID, r.Database, r.Kind, r.Name, r.Part, r.Schema, r.Title, string(cols), r.Text, string(tags), r.Hash, r.Version, index.EncodeVector(r.Vector))
				if err != nil {
					return err
				}
				rowid, _ = res.LastInsertId()
			}
			f := index.SearchFields(r.Chunk)
			if _, err := tx.ExecContext(ctx, `INSERT INTO chunks_fts (rowid, name, schema, columns, body) VALUES (?,?,?,?,?)`,
				rowid, f.Name, f.Schema, f.Columns, f.Body); err != nil {
				return err
			}
			for k, v := range r.Tags {
				if _, err := tx.ExecContext(ctx, `INSERT INTO chunk_tags (chunk, key, value) VALUES (?,?,?)`, rowid, k, v); err != nil {
					return err
				}
			}
			written++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert %d chunks: %w", len(recs), err)
	}
	return written, nil
}

func dbsOf(recs []index.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if !seen[r.Database] {
			seen[r.Database] = true
			out = append(out, r.Database)
		}
	}
	return out
}

// write runs fn in one transaction and bumps the generation of every
// database it touches, so cached searchers reload.
func (s *Store) write(ctx context.Context, dbs []string, fn func(tx *sql.Tx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return wrapUnavailable(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := fn(tx); err != nil {
		return err
	}
	for _, db := range dbs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO generations (db, gen) VALUES (?, 1) ON CONFLICT (db) DO UPDATE SET gen = gen + 1`, db); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func wrapUnavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %v", index.ErrUnavailable, err)
}

// deleteWhere removes chunks matching a WHERE clause over chunks.
func (s *Store) deleteWhere(ctx context.Context, db, where string, args ...any) (int, error) {
	if db == "" {
		return 0, index.ErrNoDatabase
	}
	var n int
	err := s.write(ctx, []string{db}, func(tx *sql.Tx) error {
		for _, q := range []string{
			`DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE ` + where + `)`,
			`DELETE FROM chunk_tags WHERE chunk IN (SELECT rowid FROM chunks WHERE ` + where + `)`,
		} {
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE `+where, args...)
		if err != nil {
			return err
		}
		affected, _ := res.RowsAffected()
		n = int(affected)
		return nil
	})
	return n, err
}

// Touch implements index.Store.
func (s *Store) Touch(ctx context.Context, db string, ids []string, version int64) (int, error) {
	if db == "" {
		return 0, index.ErrNoDatabase
	}
	n := 0
	err := s.write(ctx, []string{db}, func(tx *sql.Tx) error {
		for start := 0; start < len(ids); start += 500 {
			batch := ids[start:min(start+500, len(ids))]
			args := []any{version, db, version}
			for _, id := range batch {
				args = append(args, id)
			}
			res, err := tx.ExecContext(ctx, `UPDATE chunks SET version = ? WHERE db = ? AND version < ? AND id IN (`+
				strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+`)`, args...)
			if err != nil {
				return err
			}
			affected, _ := res.RowsAffected()
			n += int(affected)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("touch %d chunks of %s: %w", len(ids), db, err)
	}
	return n, nil
}

// Delete implements index.Store.
func (s *Store) Delete(ctx context.Context, db string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := []any{db}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := s.deleteWhere(ctx, db, `db = ? AND id IN (`+ph+`)`, args...); err != nil {
		return fmt.Errorf("delete %d chunks of %s: %w", len(ids), db, err)
	}
	return nil
}

// DeleteName implements index.Store.
func (s *Store) DeleteName(ctx context.Context, db, kind, name string) error {
	if _, err := s.deleteWhere(ctx, db, `db = ? AND kind = ? AND name = ?`, db, kind, name); err != nil {
		return fmt.Errorf("delete %s %s of %s: %w", kind, name, db, err)
	}
	return nil
}

// DeleteStale implements index.Store.
func (s *Store) DeleteStale(ctx context.Context, st index.Stale) (int, error) {
	if len(st.Kinds) == 0 {
		return 0, nil
	}
	where := `db = ? AND version < ? AND kind IN (` + strings.TrimSuffix(strings.Repeat("?,", len(st.Kinds)), ",") + `)`
	args := []any{st.Database, st.Below}
	for _, k := range st.Kinds {
		args = append(args, k)
	}
	if st.Name != "" {
		where += ` AND name = ?`
		args = append(args, st.Name)
	}
	n, err := s.deleteWhere(ctx, st.Database, where, args...)
	if err != nil {
		return 0, fmt.Errorf("delete stale chunks of %s: %w", st.Database, err)
	}
	return n, nil
}

// Projected implements index.Store.
func (s *Store) Projected(ctx context.Context, db string) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT version FROM projections WHERE db = ?`, db).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("projected version of %s: %w", db, wrapUnavailable(err))
	}
	return v, nil
}

// SetProjected implements index.Store; it never lowers the version.
func (s *Store) SetProjected(ctx context.Context, db string, version int64) error {
	err := s.write(ctx, nil, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO projections (db, version) VALUES (?, ?)
			ON CONFLICT (db) DO UPDATE SET version = max(version, excluded.version)`, db, version)
		return err
	})
	if err != nil {
		return fmt.Errorf("set projected version of %s: %w", db, err)
	}
	return nil
}

// DeleteDatabase implements index.Store.
func (s *Store) DeleteDatabase(ctx context.Context, db string) error {
	if _, err := s.deleteWhere(ctx, db, `db = ?`, db); err != nil {
		return fmt.Errorf("delete database %s: %w", db, err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM projections WHERE db = ?`, db); err != nil {
		return fmt.Errorf("delete database %s: %w", db, wrapUnavailable(err))
	}
	return nil
}

// filterSQL renders a Filter as a WHERE fragment over chunks aliased c.
func filterSQL(f index.Filter) (string, []any) {
	where := []string{"c.db = ?"}
	args := []any{f.Database}
	if len(f.Kinds) > 0 {
		where = append(where, "c.kind IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Kinds)), ",")+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	if len(f.Schemas) > 0 {
		where = append(where, "c.schema_name IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Schemas)), ",")+")")
		for _, s := range f.Schemas {
			args = append(args, s)
		}
	}
	keys := make([]string, 0, len(f.Tags))
	for k := range f.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		where = append(where, "EXISTS (SELECT 1 FROM chunk_tags t WHERE t.chunk = c.rowid AND t.key = ? AND t.value = ?)")
		args = append(args, k, f.Tags[k])
	}
	return strings.Join(where, " AND "), args
}

// Count implements index.Store.
func (s *Store) Count(ctx context.Context, f index.Filter) (int, error) {
	if f.Database == "" {
		return 0, index.ErrNoDatabase
	}
	where, args := filterSQL(f)
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM chunks c WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count chunks of %s: %w", f.Database, wrapUnavailable(err))
	}
	return n, nil
}

// Metas implements index.Store.
func (s *Store) Metas(ctx context.Context, f index.Filter) (map[string]index.Meta, error) {
	if f.Database == "" {
		return nil, index.ErrNoDatabase
	}
	where, args := filterSQL(f)
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.hash, c.version FROM chunks c WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("list chunks of %s: %w", f.Database, wrapUnavailable(err))
	}
	defer rows.Close()
	out := map[string]index.Meta{}
	for rows.Next() {
		var id string
		var m index.Meta
		if err := rows.Scan(&id, &m.Hash, &m.Version); err != nil {
			return nil, err
		}
		out[id] = m
	}
	return out, rows.Err()
}

// ftsQuery quotes every term (doubling any quote inside) and ORs them, so
// no input can become FTS5 syntax: a quoted string is always a phrase.
func ftsQuery(terms []string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(parts, " OR ")
}

// SearchText implements index.Store.
func (s *Store) SearchText(ctx context.Context, q index.TextQuery) ([]index.Hit, error) {
	if q.Database == "" {
		return nil, index.ErrNoDatabase
	}
	match := ftsQuery(index.MatchTerms(q.Terms))
	if match == "" || q.Limit <= 0 {
		return nil, nil
	}
	w := q.Weights
	if w == (index.Weights{}) {
		w = index.DefaultWeights
	}
	cache, err := s.snapshot(ctx, q.Database)
	if err != nil {
		return nil, err
	}
	where, args := filterSQL(q.Filter)
	query := `SELECT c.rowid, bm25(chunks_fts, ?, ?, ?, ?) AS score
		FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
		WHERE chunks_fts MATCH ? AND ` + where + `
		ORDER BY score LIMIT ?`
	all := append([]any{w.Name, w.Schema, w.Columns, w.Body, match}, args...)
	all = append(all, q.Limit)
	rows, err := s.db.QueryContext(ctx, query, all...)
	if err != nil {
		return nil, fmt.Errorf("text search in %s: %w", q.Database, wrapUnavailable(err))
	}
	defer rows.Close()
	var hits []index.Hit
	for rows.Next() {
		var rowid int64
		var score float64
		if err := rows.Scan(&rowid, &score); err != nil {
			return nil, err
		}
		if e := cache.entries[rowid]; e != nil {
			// FTS5's bm25() is lower-is-better; negate so higher is better.
			hits = append(hits, index.Hit{Chunk: e.chunk, Score: -score})
		}
	}
	return hits, rows.Err()
}

// SearchVector implements index.Store.
func (s *Store) SearchVector(ctx context.Context, q index.VectorQuery) ([]index.Hit, error) {
	if q.Database == "" {
		return nil, index.ErrNoDatabase
	}
	if len(q.Vector) != s.dim {
		return nil, fmt.Errorf("vector search in %s: %w: got %d, index has %d", q.Database, index.ErrDimension, len(q.Vector), s.dim)
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	cache, err := s.snapshot(ctx, q.Database)
	if err != nil {
		return nil, err
	}
	top := newTopK(q.Limit)
	for i, e := range cache.list {
		if !q.Filter.Admits(e.chunk.Kind, e.chunk.Schema, e.chunk.Tags) {
			continue
		}
		top.offer(i, embed.Cosine(q.Vector, cache.vecs[i*s.dim:(i+1)*s.dim]))
	}
	best := top.sorted()
	hits := make([]index.Hit, len(best))
	for i, b := range best {
		hits[i] = index.Hit{Chunk: cache.list[b.i].chunk, Score: float64(b.score)}
	}
	return hits, nil
}

// topK keeps the k best scores seen in a min-heap: O(n log k) instead of
// sorting all n. Ties keep the earlier index, so results are stable.
type topK struct {
	k    int
	heap []scored
}

type scored struct {
	i     int
	score float32
}

func newTopK(k int) *topK { return &topK{k: k, heap: make([]scored, 0, k)} }

// worse orders the heap: lower score, or the same score seen later.
func worse(a, b scored) bool { return a.score < b.score || (a.score == b.score && a.i > b.i) }

func (t *topK) offer(i int, score float32) {
	s := scored{i, score}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, s)
		for c := len(t.heap) - 1; c > 0; {
			p := (c - 1) / 2
			if !worse(t.heap[c], t.heap[p]) {
				break
			}
			t.heap[c], t.heap[p] = t.heap[p], t.heap[c]
			c = p
		}
		return
	}
	if !worse(t.heap[0], s) {
		return
	}
	t.heap[0] = s
	for p := 0; ; {
		l, r, m := 2*p+1, 2*p+2, p
		if l < len(t.heap) && worse(t.heap[l], t.heap[m]) {
			m = l
		}
		if r < len(t.heap) && worse(t.heap[r], t.heap[m]) {
			m = r
		}
		if m == p {
			return
		}
		t.heap[p], t.heap[m] = t.heap[m], t.heap[p]
		p = m
	}
}

func (t *topK) sorted() []scored {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

// snapshot returns the in-memory copy of db's chunks, reloading it when
// any process has written since it was loaded.
func (s *Store) snapshot(ctx context.Context, db string) (*dbCache, error) {
	var gen int64
	err := s.db.QueryRowContext(ctx, `SELECT gen FROM generations WHERE db = ?`, db).Scan(&gen)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("search %s: %w", db, wrapUnavailable(err))
	}
	s.mu.Lock()
	c := s.cache[db]
	s.mu.Unlock()
	if c != nil && c.gen == gen {
		return c, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT rowid, id, kind, name, part, schema_name, title, columns, body, tags, hash, version, vector FROM chunks WHERE db = ? ORDER BY rowid`, db)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", db, wrapUnavailable(err))
	}
	defer rows.Close()
	c = &dbCache{gen: gen, entries: map[int64]*entry{}}
	for rows.Next() {
		var rowid int64
		var cols, tags string
		var vec []byte
		e := &entry{chunk: chunk.Chunk{Database: db}}
		ch := &e.chunk
		if err := rows.Scan(&rowid, &ch.ID, &ch.Kind, &ch.Name, &ch.Part, &ch.Schema, &ch.Title, &cols, &ch.Text, &tags, &ch.Hash, &ch.Version, &vec); err != nil {
			return nil, fmt.Errorf("load %s: %w", db, err)
		}
		_ = json.Unmarshal([]byte(cols), &ch.Columns)
		_ = json.Unmarshal([]byte(tags), &ch.Tags)
		if len(ch.Tags) == 0 {
			ch.Tags = nil
		}
		e.vec = index.DecodeVector(vec)
		c.entries[rowid] = e
		c.list = append(c.list, e)
		c.vecs = append(c.vecs, e.vec...)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", db, err)
	}
	s.mu.Lock()
	s.cache[db] = c
	s.mu.Unlock()
	return c, nil
}

// GetVectors implements embed.CacheStore over the same file, so cached
// embeddings survive restarts.
func (s *Store) GetVectors(ctx context.Context, keys []string) (map[string][]float32, error) {
	out := map[string][]float32{}
	for start := 0; start < len(keys); start += 500 {
		batch := keys[start:min(start+500, len(keys))]
		args := make([]any, len(batch))
		for i, k := range batch {
			args[i] = k
		}
		rows, err := s.db.QueryContext(ctx, `SELECT key, vector FROM embed_cache WHERE key IN (`+strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+`)`, args...)
		if err != nil {
			return nil, wrapUnavailable(err)
		}
		for rows.Next() {
			var k string
			var v []byte
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = index.DecodeVector(v)
		}
		rows.Close()
	}
	return out, nil
}

// PutVectors implements embed.CacheStore.
func (s *Store) PutVectors(ctx context.Context, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	return s.write(ctx, nil, func(tx *sql.Tx) error {
		for k, v := range vecs {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO embed_cache (key, vector) VALUES (?, ?)`, k, index.EncodeVector(v)); err != nil {
				return err
			}
		}
		return nil
	})
}
