// Package sqlite is the embedded index store: one SQLite file (WAL) holding
// the chunks with their analysed search fields and vectors, plus the
// embedding cache. It serves a single node: the tests, the demo, `schemaq
// up` and `serve` replicas.
//
// SQLite is the durable copy; searches run in memory, over a snapshot of
// each database's chunks (package memsearch: FTS5's BM25 and exact KNN).
// Every write bumps the database's generation and stamps the rows it
// writes with it, and leaves a tombstone for each row it deletes; a
// snapshot is brought up to date by applying the rows and tombstones
// newer than its generation, so the cost of a write to readers follows
// the write, in this process (the writer applies it at once) and in any
// other sharing the file (the next search applies it). A search never
// waits for another's load: it reads the snapshot it has.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // the pure-Go SQLite driver, with FTS5

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/memsearch"
)

// layoutVersion changes when the tables or the analysis change. An index
// file of another layout, or of other vector dimensions, is emptied and
// rebuilt (it is a projection of the catalogs and events), and Rebuilt
// reports it so the worker can re-project.
const layoutVersion = "4"

// tombstoneHorizon is how many generations of tombstones a database
// keeps; a reader further behind loads the database whole.
const tombstoneHorizon = 1024

// Store is the SQLite index. It is safe for concurrent use.
type Store struct {
	db      *sql.DB
	dim     int
	rebuilt bool

	writeMu sync.Mutex // one writer at a time: SQLite's rule, kept in Go to avoid SQLITE_BUSY
	// stmts are the write path's statements, prepared once: compiling
	// them on every row cost as much as writing it.
	stmts writeStmts

	mu    sync.Mutex
	cache map[string]*memsearch.Current // per database: the search snapshot
	// touched are databases whose snapshot may hold versions older than
	// the file's (Touch does not reach snapshots): their Metas are read
	// from the file.
	touched map[string]bool
}

var (
	_ index.Store      = (*Store)(nil)
	_ index.Pinner     = (*Store)(nil)
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
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("open index %s: %w", path, err)
		}
	}
	if err := private(path); err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	// busy_timeout first: another process opening the file at the same
	// moment holds the lock that setting WAL takes.
	dsn := fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(OFF)",
		path, busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	// Searches run in memory; connections serve the generation check,
	// writes and the worker's reads. Keeping them open keeps SQLite's
	// page cache warm instead of opening a file per request.
	db.SetMaxIdleConns(16)
	s := &Store{db: db, dim: dim, cache: map[string]*memsearch.Current{}, touched: map[string]bool{}}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	if err := s.stmts.prepare(ctx, db); err != nil {
		s.stmts.close()
		db.Close()
		return nil, fmt.Errorf("open index %s: %w", path, err)
	}
	return s, nil
}

// Rebuilt reports whether Open found an index of another layout or
// dimension and emptied it, so that its contents must be re-projected.
func (s *Store) Rebuilt() bool { return s.rebuilt }

// migrate creates or resets the tables, in one IMMEDIATE transaction,
// which waits for the busy timeout, and tries again for as long while
// SQLite says the file is busy. Two processes opening the file together
// (compose's worker and daemon on a shared data directory) failed at
// once with SQLITE_BUSY: a statement that reads the schema before it
// writes is refused without waiting when another writer commits in
// between, and so is setting WAL on a new connection while the other
// process sets it.
func (s *Store) migrate(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := s.migrateOnce(ctx)
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// busyTimeout is how long a statement waits for another process's lock
// (the DSN's busy_timeout).
const busyTimeout = 10 * time.Second

// busy reports whether err is SQLite's SQLITE_BUSY, whatever its
// extended code.
func busy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

func (s *Store) migrateOnce(ctx context.Context) (err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := s.createTables(ctx, conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	return nil
}

// createTables makes the file's tables what this release expects.
func (s *Store) createTables(ctx context.Context, conn *sql.Conn) error {
	if err := s.resetIfIncompatible(ctx, conn); err != nil {
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
			vector BLOB NOT NULL,
			f_name TEXT NOT NULL,
			f_schema TEXT NOT NULL,
			f_columns TEXT NOT NULL,
			f_body TEXT NOT NULL,
			wgen INTEGER NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS chunks_db_kind ON chunks (db, kind, name)`,
		`CREATE INDEX IF NOT EXISTS chunks_db_wgen ON chunks (db, wgen)`,
		`CREATE TABLE IF NOT EXISTS chunk_tags (chunk INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (chunk, key))`,
		`CREATE INDEX IF NOT EXISTS chunk_tags_kv ON chunk_tags (key, value)`,
		`CREATE TABLE IF NOT EXISTS generations (db TEXT PRIMARY KEY, gen INTEGER NOT NULL, horizon INTEGER NOT NULL DEFAULT 0)`,
		`CREATE TABLE IF NOT EXISTS tombstones (db TEXT NOT NULL, gen INTEGER NOT NULL, id TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS tombstones_db_gen ON tombstones (db, gen)`,
		`CREATE TABLE IF NOT EXISTS embed_cache (key TEXT PRIMARY KEY, vector BLOB NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS projections (db TEXT PRIMARY KEY, version INTEGER NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS object_marks (db TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL,
			PRIMARY KEY (db, kind, name))`,
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create tables: %w", err)
		}
	}
	for k, v := range s.wantMeta() {
		if _, err := conn.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, k, v); err != nil {
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
func (s *Store) resetIfIncompatible(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&n); err != nil {
		return fmt.Errorf("read meta: %w", err)
	}
	if n == 0 {
		return nil // a new file
	}
	for k, v := range s.wantMeta() {
		var have string
		err := conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, k).Scan(&have)
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
	for _, t := range []string{"chunks_fts", "chunk_tags", "chunks", "generations", "tombstones", "projections", "object_marks"} {
		if _, err := conn.ExecContext(ctx, `DROP TABLE IF EXISTS `+t); err != nil {
			return fmt.Errorf("reset index: %w", err)
		}
	}
	return nil
}

// Close implements index.Store.
func (s *Store) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// writeStmts are the statements every projection runs per row.
type writeStmts struct {
	rowByID, update, deleteTags, insert, insertTag, projected, setProjected, bumpGen *sql.Stmt
	mark, setMark                                                                    *sql.Stmt
}

func (w *writeStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		to *(*sql.Stmt)
		q  string
	}{
		{&w.rowByID, `SELECT rowid, version FROM chunks WHERE id = ?`},
		{&w.update, `UPDATE chunks SET db=?, kind=?, name=?, part=?, schema_name=?, title=?, columns=?, body=?, tags=?, hash=?, version=?, vector=?,
			f_name=?, f_schema=?, f_columns=?, f_body=?, wgen=? WHERE rowid=?`},
		{&w.deleteTags, `DELETE FROM chunk_tags WHERE chunk = ?`},
		{&w.insert, `INSERT INTO chunks (id, db, kind, name, part, schema_name, title, columns, body, tags, hash, version, vector,
			f_name, f_schema, f_columns, f_body, wgen) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`},
		{&w.insertTag, `INSERT INTO chunk_tags (chunk, key, value) VALUES (?,?,?)`},
		{&w.projected, `SELECT version FROM projections WHERE db = ?`},
		{&w.setProjected, `INSERT INTO projections (db, version) VALUES (?, ?)
			ON CONFLICT (db) DO UPDATE SET version = max(version, excluded.version)`},
		{&w.bumpGen, `INSERT INTO generations (db, gen) VALUES (?, 1) ON CONFLICT (db) DO UPDATE SET gen = gen + 1 RETURNING gen`},
		{&w.mark, `SELECT version FROM object_marks WHERE db = ? AND kind = ? AND name = ?`},
		{&w.setMark, `INSERT INTO object_marks (db, kind, name, version) VALUES (?, ?, ?, ?)
			ON CONFLICT (db, kind, name) DO UPDATE SET version = max(version, excluded.version)`},
	} {
		st, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", strings.Fields(p.q)[0]+" "+strings.Fields(p.q)[1], err)
		}
		*p.to = st
	}
	return nil
}

func (w *writeStmts) close() {
	for _, st := range []*sql.Stmt{w.rowByID, w.update, w.deleteTags, w.insert, w.insertTag, w.projected, w.setProjected, w.bumpGen, w.mark, w.setMark} {
		if st != nil {
			st.Close()
		}
	}
}

// Upsert implements index.Store.
func (s *Store) Upsert(ctx context.Context, recs []index.Record) (int, error) {
	if err := s.checkRecords(recs); err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		return 0, nil
	}
	written := map[string][]memsearch.Doc{}
	gens, err := s.write(ctx, dbsOf(recs), func(tx *sql.Tx, gens map[string]int64) error {
		clear(written)
		marks := map[objectKey]int64{}
		for _, r := range recs {
			d, ok, err := s.upsertRow(ctx, tx, r, gens[r.Database], marks)
			if err != nil {
				return err
			}
			if ok {
				written[r.Database] = append(written[r.Database], d)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("upsert %d chunks: %w", len(recs), err)
	}
	n := 0
	for db, gen := range gens {
		s.applied(db, gen, written[db], nil)
		n += len(written[db])
	}
	return n, nil
}

func (s *Store) checkRecords(recs []index.Record) error {
	for _, r := range recs {
		if r.Database == "" {
			return fmt.Errorf("upsert %s: %w", r.ID, index.ErrNoDatabase)
		}
		if len(r.Vector) != s.dim {
			return fmt.Errorf("upsert %s: %w: got %d, index has %d", r.ID, index.ErrDimension, len(r.Vector), s.dim)
		}
	}
	return nil
}

// markAbove reports whether r's object has a mark above r's version (a
// newer edit or a delete was applied), and otherwise raises the mark to
// it.
//
// A doc's sections come together, so seen keeps the marks one
// transaction has read or set: one lookup per doc, not per section.
func (s *Store) markAbove(ctx context.Context, tx *sql.Tx, r index.Record, seen map[objectKey]int64) (bool, error) {
	key := objectKey{r.Database, r.Kind, r.Name}
	mark, ok := seen[key]
	if !ok {
		err := tx.StmtContext(ctx, s.stmts.mark).QueryRowContext(ctx, r.Database, r.Kind, r.Name).Scan(&mark)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, err
		}
	}
	seen[key] = max(mark, r.Version)
	if mark >= r.Version {
		return mark > r.Version, nil
	}
	return false, setMarks(ctx, tx, s.stmts.setMark, r.Database, []index.Mark{{Kind: r.Kind, Name: r.Name, Version: r.Version}})
}

// objectKey names a doc or an example of a database.
type objectKey struct{ db, kind, name string }

// setMarks raises the marks of db's objects, never lowering one.
func setMarks(ctx context.Context, tx *sql.Tx, set *sql.Stmt, db string, marks []index.Mark) error {
	for _, m := range marks {
		if _, err := tx.StmtContext(ctx, set).ExecContext(ctx, db, m.Kind, m.Name, m.Version); err != nil {
			return err
		}
	}
	return nil
}

// upsertRow writes one chunk stamped with gen, unless a newer version
// of it is stored, and returns it as the search snapshot takes it.
func (s *Store) upsertRow(ctx context.Context, tx *sql.Tx, r index.Record, gen int64, marks map[objectKey]int64) (memsearch.Doc, bool, error) {
	if index.Marked(r.Kind) {
		if newer, err := s.markAbove(ctx, tx, r, marks); newer || err != nil {
			return memsearch.Doc{}, false, err
		}
	}
	var rowid, version int64
	err := tx.StmtContext(ctx, s.stmts.rowByID).QueryRowContext(ctx, r.ID).Scan(&rowid, &version)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return memsearch.Doc{}, false, err
	}
	if exists && version > r.Version {
		return memsearch.Doc{}, false, nil // never replace a newer catalog's chunk
	}
	cols, _ := json.Marshal(r.Columns)
	tags, _ := json.Marshal(r.Tags)
	if r.Tags == nil {
		tags = []byte("{}")
	}
	f := index.SearchFields(r.Chunk)
	if exists {
		if _, err := tx.StmtContext(ctx, s.stmts.update).ExecContext(ctx,
			r.Database, r.Kind, r.Name, r.Part, r.Schema, r.Title, string(cols), r.Text, string(tags), r.Hash, r.Version, index.EncodeVector(r.Vector),
			f.Name, f.Schema, f.Columns, f.Body, gen, rowid); err != nil {
			return memsearch.Doc{}, false, err
		}
		if _, err := tx.StmtContext(ctx, s.stmts.deleteTags).ExecContext(ctx, rowid); err != nil {
			return memsearch.Doc{}, false, err
		}
	} else {
		res, err := tx.StmtContext(ctx, s.stmts.insert).ExecContext(ctx,
			r.ID, r.Database, r.Kind, r.Name, r.Part, r.Schema, r.Title, string(cols), r.Text, string(tags), r.Hash, r.Version, index.EncodeVector(r.Vector),
			f.Name, f.Schema, f.Columns, f.Body, gen)
		if err != nil {
			return memsearch.Doc{}, false, err
		}
		rowid, _ = res.LastInsertId()
	}
	for k, v := range r.Tags {
		if _, err := tx.StmtContext(ctx, s.stmts.insertTag).ExecContext(ctx, rowid, k, v); err != nil {
			return memsearch.Doc{}, false, err
		}
	}
	c := r.Chunk
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	return memsearch.Doc{Chunk: c, Vector: r.Vector, Fields: f}, true, nil
}

// ReplaceSchema implements index.Replacer: in one transaction, unless
// another projection of the database landed since r.Since, it writes the
// changed chunks, deletes the chunks of r.Kinds the catalog no longer
// has and records r.Version as projected. Unchanged chunks are not
// touched at all, so a one-table migration writes one table.
func (s *Store) ReplaceSchema(ctx context.Context, r index.SchemaReplace) (index.Replaced, error) {
	if r.Database == "" {
		return index.Replaced{}, index.ErrNoDatabase
	}
	if err := s.checkRecords(r.Upserts); err != nil {
		return index.Replaced{}, err
	}
	remove, _ := json.Marshal(r.Remove)
	var out index.Replaced
	var docs []memsearch.Doc
	var gone []string
	gens, err := s.write(ctx, []string{r.Database}, func(tx *sql.Tx, gens map[string]int64) error {
		out, docs, gone = index.Replaced{}, nil, nil
		var cur int64
		err := tx.StmtContext(ctx, s.stmts.projected).QueryRowContext(ctx, r.Database).Scan(&cur)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		switch {
		case cur > r.Version:
			out.Skipped = true
			return nil
		case cur != r.Since:
			return fmt.Errorf("%w: projected version %d, read at %d", index.ErrMoved, cur, r.Since)
		}
		gen := gens[r.Database]
		for _, rec := range r.Upserts {
			d, ok, err := s.upsertRow(ctx, tx, rec, gen, map[objectKey]int64{})
			if err != nil {
				return err
			}
			if ok {
				docs = append(docs, d)
			}
		}
		if len(r.Remove) > 0 && len(r.Kinds) > 0 {
			// By id through the unique index; the kinds keep a stray id
			// from removing a doc or an example.
			where := `id IN (SELECT value FROM json_each(?)) AND db = ? AND kind IN (` + placeholders(len(r.Kinds)) + `)`
			args := []any{string(remove), r.Database}
			for _, k := range r.Kinds {
				args = append(args, k)
			}
			if gone, err = deleteRows(ctx, tx, r.Database, gen, where, args...); err != nil {
				return err
			}
		}
		_, err = tx.StmtContext(ctx, s.stmts.setProjected).ExecContext(ctx, r.Database, r.Version)
		return err
	})
	if err != nil {
		return index.Replaced{}, fmt.Errorf("replace schema chunks of %s: %w", r.Database, err)
	}
	out.Written, out.Deleted = len(docs), len(gone)
	s.applied(r.Database, gens[r.Database], docs, gone)
	return out, nil
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

// write runs fn in one transaction with the new generation of every
// database in dbs, bumped first so that the rows fn writes carry it, and
// returns those generations once committed.
func (s *Store) write(ctx context.Context, dbs []string, fn func(tx *sql.Tx, gens map[string]int64) error) (map[string]int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, wrapUnavailable(err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	gens := make(map[string]int64, len(dbs))
	for _, db := range dbs {
		var gen int64
		if err := tx.StmtContext(ctx, s.stmts.bumpGen).QueryRowContext(ctx, db).Scan(&gen); err != nil {
			return nil, err
		}
		gens[db] = gen
		if gen%256 == 0 && gen > tombstoneHorizon {
			// Readers further behind than the horizon reload whole.
			if _, err := tx.ExecContext(ctx, `DELETE FROM tombstones WHERE db = ? AND gen <= ?`, db, gen-tombstoneHorizon); err != nil {
				return nil, err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE generations SET horizon = ? WHERE db = ?`, gen-tombstoneHorizon, db); err != nil {
				return nil, err
			}
		}
	}
	if err := fn(tx, gens); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, wrapUnavailable(err)
	}
	return gens, nil
}

// applied brings this process's snapshot of db to gen after its own
// write, when the snapshot was current before it (or the write was the
// database's first, so the first search of a database being ingested
// finds it built); otherwise the next search catches up from the stored
// rows and tombstones.
func (s *Store) applied(db string, gen int64, upserts []memsearch.Doc, removed []string) {
	s.current(db).Advance(s.dim, gen, upserts, removed)
}

// current is db's snapshot holder.
func (s *Store) current(db string) *memsearch.Current {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cache[db]
	if c == nil {
		c = memsearch.NewCurrent()
		s.cache[db] = c
	}
	return c
}

func wrapUnavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %v", index.ErrUnavailable, err)
}

// deleteWhere removes chunks matching a WHERE clause over chunks,
// leaving a tombstone for each.
func (s *Store) deleteWhere(ctx context.Context, db string, marks []index.Mark, where string, args ...any) (int, error) {
	if db == "" {
		return 0, index.ErrNoDatabase
	}
	var ids []string
	gens, err := s.write(ctx, []string{db}, func(tx *sql.Tx, gens map[string]int64) error {
		if err := setMarks(ctx, tx, s.stmts.setMark, db, marks); err != nil {
			return err
		}
		var err error
		ids, err = deleteRows(ctx, tx, db, gens[db], where, args...)
		return err
	})
	if err != nil {
		return 0, err
	}
	s.applied(db, gens[db], nil, ids)
	return len(ids), nil
}

// deleteRows deletes the chunks a WHERE clause matches, with a tombstone
// at gen for each, and returns their ids.
func deleteRows(ctx context.Context, tx *sql.Tx, db string, gen int64, where string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM chunks WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO tombstones (db, gen, id) SELECT db, ?, id FROM chunks WHERE `+where, append([]any{gen}, args...)...); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunk_tags WHERE chunk IN (SELECT rowid FROM chunks WHERE `+where+`)`, args...); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE `+where, args...); err != nil {
		return nil, err
	}
	return ids, nil
}

// Touch implements index.Store.
func (s *Store) Touch(ctx context.Context, db string, ids []string, version int64) (int, error) {
	if db == "" {
		return 0, index.ErrNoDatabase
	}
	n := 0
	// A version is not searched: raising it is no change to the search
	// snapshots, so it bumps no generation.
	_, err := s.write(ctx, nil, func(tx *sql.Tx, _ map[string]int64) error {
		for start := 0; start < len(ids); start += 500 {
			batch := ids[start:min(start+500, len(ids))]
			args := []any{version, db, version}
			for _, id := range batch {
				args = append(args, id)
			}
			res, err := tx.ExecContext(ctx, `UPDATE chunks SET version = ? WHERE db = ? AND version < ? AND id IN (`+
				placeholders(len(batch))+`)`, args...)
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
	s.mu.Lock()
	s.touched[db] = true
	s.mu.Unlock()
	return n, nil
}

// Delete implements index.Store.
func (s *Store) Delete(ctx context.Context, db string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ph := placeholders(len(ids))
	args := []any{db}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := s.deleteWhere(ctx, db, nil, `db = ? AND id IN (`+ph+`)`, args...); err != nil {
		return fmt.Errorf("delete %d chunks of %s: %w", len(ids), db, err)
	}
	return nil
}

// DeleteName implements index.Store.
func (s *Store) DeleteName(ctx context.Context, db, kind, name string) error {
	if _, err := s.deleteWhere(ctx, db, nil, `db = ? AND kind = ? AND name = ?`, db, kind, name); err != nil {
		return fmt.Errorf("delete %s %s of %s: %w", kind, name, db, err)
	}
	return nil
}

// DeleteStale implements index.Store.
func (s *Store) DeleteStale(ctx context.Context, st index.Stale) (int, error) {
	if len(st.Kinds) == 0 {
		return 0, nil
	}
	where := `db = ? AND version < ? AND kind IN (` + placeholders(len(st.Kinds)) + `)`
	args := []any{st.Database, st.Below}
	for _, k := range st.Kinds {
		args = append(args, k)
	}
	if st.Names != nil {
		return s.deleteStaleNames(ctx, st)
	}
	if st.Name != "" {
		where += ` AND name = ?`
		args = append(args, st.Name)
	}
	n, err := s.deleteWhere(ctx, st.Database, st.Marks(), where, args...)
	if err != nil {
		return 0, fmt.Errorf("delete stale chunks of %s: %w", st.Database, err)
	}
	return n, nil
}

// Marks implements index.Store.
func (s *Store) Marks(ctx context.Context, db, kind string, names []string) (map[string]int64, error) {
	out := make(map[string]int64, len(names))
	for start := 0; start < len(names); start += staleNamesPerStatement {
		part := names[start:min(start+staleNamesPerStatement, len(names))]
		args := []any{db, kind}
		for _, n := range part {
			args = append(args, n)
		}
		if err := s.readMarks(ctx, out, `SELECT name, version FROM object_marks WHERE db = ? AND kind = ? AND name IN (`+
			placeholders(len(part))+`)`, args...); err != nil {
			return nil, fmt.Errorf("marks of %d %s objects of %s: %w", len(names), kind, db, wrapUnavailable(err))
		}
	}
	return out, nil
}

func (s *Store) readMarks(ctx context.Context, into map[string]int64, query string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return err
		}
		into[name] = v
	}
	return rows.Err()
}

// placeholders is the list of n SQL parameters, for an IN (…).
func placeholders(n int) string { return strings.TrimSuffix(strings.Repeat("?,", n), ",") }

// staleNamesPerStatement bounds the (name, version) pairs of one DELETE,
// well inside SQLite's limit on a statement's parameters.
const staleNamesPerStatement = 200

// deleteStaleNames is DeleteStale of named objects, each below its own
// version, a statement per 200 of them.
func (s *Store) deleteStaleNames(ctx context.Context, st index.Stale) (int, error) {
	names := slices.Sorted(maps.Keys(st.Names))
	total := 0
	for start := 0; start < len(names); start += staleNamesPerStatement {
		part := names[start:min(start+staleNamesPerStatement, len(names))]
		// name IN (…) keeps to the (db, kind, name) index; an OR of
		// (name, version) pairs had SQLite scan every chunk of the
		// database, each run.
		where := `db = ? AND kind IN (` + placeholders(len(st.Kinds)) + `) AND name IN (` +
			placeholders(len(part)) + `) AND version < CASE name` + strings.Repeat(" WHEN ? THEN ?", len(part)) + ` END`
		args := []any{st.Database}
		for _, k := range st.Kinds {
			args = append(args, k)
		}
		for _, n := range part {
			args = append(args, n)
		}
		for _, n := range part {
			args = append(args, n, st.Names[n])
		}
		n, err := s.deleteWhere(ctx, st.Database, index.Stale{Kinds: st.Kinds, Names: partOf(st.Names, part)}.Marks(), where, args...)
		total += n
		if err != nil {
			return total, fmt.Errorf("delete stale chunks of %d objects of %s: %w", len(names), st.Database, err)
		}
	}
	return total, nil
}

// partOf is names restricted to the keys in part.
func partOf(names map[string]int64, part []string) map[string]int64 {
	out := make(map[string]int64, len(part))
	for _, n := range part {
		out[n] = names[n]
	}
	return out
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
	_, err := s.write(ctx, nil, func(tx *sql.Tx, _ map[string]int64) error {
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
	if _, err := s.deleteWhere(ctx, db, nil, `db = ?`, db); err != nil {
		return fmt.Errorf("delete database %s: %w", db, err)
	}
	for _, table := range []string{"projections", "object_marks"} {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM `+table+` WHERE db = ?`, db); err != nil {
			return fmt.Errorf("delete database %s: %w", db, wrapUnavailable(err))
		}
	}
	return nil
}

// filterSQL renders a Filter as a WHERE fragment over chunks aliased c.
func filterSQL(f index.Filter) (string, []any) {
	where := []string{"c.db = ?"}
	args := []any{f.Database}
	if len(f.Kinds) > 0 {
		where = append(where, "c.kind IN ("+placeholders(len(f.Kinds))+")")
		for _, k := range f.Kinds {
			args = append(args, k)
		}
	}
	if len(f.Schemas) > 0 {
		where = append(where, "c.schema_name IN ("+placeholders(len(f.Schemas))+")")
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
	// The snapshot, when current, answers without reading every row of
	// the database from the file (what the worker asks before each
	// projection).
	var gen int64
	err := s.db.QueryRowContext(ctx, `SELECT gen FROM generations WHERE db = ?`, f.Database).Scan(&gen)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("list chunks of %s: %w", f.Database, wrapUnavailable(err))
	}
	s.mu.Lock()
	touched := s.touched[f.Database]
	s.mu.Unlock()
	if snap, at := s.current(f.Database).Snapshot(); snap != nil && at == gen && !touched {
		return snap.Metas(f), nil
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

// SearchText implements index.Store.
func (s *Store) SearchText(ctx context.Context, q index.TextQuery) ([]index.Hit, error) {
	if q.Database == "" {
		return nil, index.ErrNoDatabase
	}
	if q.Limit <= 0 || len(q.Match()) == 0 {
		return nil, nil
	}
	snap, err := s.snapshot(ctx, q.Database)
	if err != nil {
		return nil, fmt.Errorf("text search in %s: %w", q.Database, err)
	}
	return snap.SearchText(q), nil
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
	snap, err := s.snapshot(ctx, q.Database)
	if err != nil {
		return nil, fmt.Errorf("vector search in %s: %w", q.Database, err)
	}
	return snap.SearchVector(q), nil
}

// Pin implements index.Pinner: a request's searches read one snapshot,
// brought up to date once.
func (s *Store) Pin(ctx context.Context, db string) (index.Searcher, error) {
	if db == "" {
		return nil, index.ErrNoDatabase
	}
	snap, err := s.snapshot(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("search in %s: %w", db, err)
	}
	return snap.Pin(db), nil
}

// snapshot returns db's search snapshot, brought up to the stored
// generation. While one search brings it up to date, others that need
// the new generation wait for it (memsearch.Current).
func (s *Store) snapshot(ctx context.Context, db string) (*memsearch.Snapshot, error) {
	var gen int64
	err := s.db.QueryRowContext(ctx, `SELECT gen FROM generations WHERE db = ?`, db).Scan(&gen)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, wrapUnavailable(err)
	}
	snap, _, err := s.current(db).Get(gen, func(base *memsearch.Snapshot, since int64) (*memsearch.Snapshot, int64, error) {
		return s.catchUp(ctx, db, base, since)
	})
	return snap, err
}

// catchUp reads what changed in db since generation since into base
// (everything, when base is nil or older than the tombstones kept) in one
// read transaction, so the generation and the rows agree.
func (s *Store) catchUp(ctx context.Context, db string, base *memsearch.Snapshot, since int64) (*memsearch.Snapshot, int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, wrapUnavailable(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var gen, horizon int64
	err = tx.QueryRowContext(ctx, `SELECT gen, horizon FROM generations WHERE db = ?`, db).Scan(&gen, &horizon)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, 0, wrapUnavailable(err)
	}
	if base == nil || since < horizon {
		base, since = memsearch.New(s.dim), -1
	}
	var removed []string
	if since >= 0 {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM tombstones WHERE db = ? AND gen > ?`, db, since)
		if err != nil {
			return nil, 0, wrapUnavailable(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, 0, err
			}
			removed = append(removed, id)
		}
		rows.Close()
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, kind, name, part, schema_name, title, columns, body, tags, hash, version, vector,
		f_name, f_schema, f_columns, f_body FROM chunks WHERE db = ? AND wgen > ? ORDER BY rowid`, db, since)
	if err != nil {
		return nil, 0, wrapUnavailable(err)
	}
	defer rows.Close()
	var docs []memsearch.Doc
	for rows.Next() {
		var cols, tags string
		var vec []byte
		d := memsearch.Doc{Chunk: chunk.Chunk{Database: db}}
		ch, f := &d.Chunk, &d.Fields
		if err := rows.Scan(&ch.ID, &ch.Kind, &ch.Name, &ch.Part, &ch.Schema, &ch.Title, &cols, &ch.Text, &tags, &ch.Hash, &ch.Version, &vec,
			&f.Name, &f.Schema, &f.Columns, &f.Body); err != nil {
			return nil, 0, fmt.Errorf("load %s: %w", db, err)
		}
		_ = json.Unmarshal([]byte(cols), &ch.Columns)
		_ = json.Unmarshal([]byte(tags), &ch.Tags)
		if len(ch.Tags) == 0 {
			ch.Tags = nil
		}
		d.Vector = index.DecodeVector(vec)
		docs = append(docs, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("load %s: %w", db, err)
	}
	return base.With(docs, removed), gen, nil
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
		rows, err := s.db.QueryContext(ctx, `SELECT key, vector FROM embed_cache WHERE key IN (`+placeholders(len(batch))+`)`, args...)
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
	_, err := s.write(ctx, nil, func(tx *sql.Tx, _ map[string]int64) error {
		for k, v := range vecs {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO embed_cache (key, vector) VALUES (?, ?)`, k, index.EncodeVector(v)); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// private makes the index file readable by its owner alone, creating it
// when it does not exist: the index holds every schema, doc and example
// published. SQLite gives its WAL and shared-memory files the mode of the
// database file, so they follow.
func private(path string) error {
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Chmod(path, 0o600) // an index made by an older schemaq
}
