// Package index defines the Store that holds chunks with their vectors and
// answers BM25 and KNN queries, and the types both sides of it share. The
// embedded SQLite store lives in index/sqlite; every Store passes the
// conformance suite in index/indextest.
package index

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"

	"github.com/schemaq/schemaq/pkg/chunk"
)

// Record is a chunk and its embedding, as written.
type Record struct {
	chunk.Chunk
	Vector []float32
}

// Filter scopes a query or a count. Database is required: a query never
// crosses databases.
type Filter struct {
	Database string
	Kinds    []string          // empty: every kind
	Schemas  []string          // empty: every schema; else tables and views of these schemas only
	Tags     map[string]string // every pair must match
}

// Admits reports whether an object of this kind, schema and tags passes
// f's kinds, schemas and tags (its database is the caller's to check).
func (f Filter) Admits(kind, schema string, tags map[string]string) bool {
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, kind) {
		return false
	}
	if len(f.Schemas) > 0 && !slices.Contains(f.Schemas, schema) {
		return false
	}
	for k, v := range f.Tags {
		if tags[k] != v {
			return false
		}
	}
	return true
}

// Weights are BM25 field weights: how much a match in each field counts.
type Weights struct {
	Name, Schema, Columns, Body float64
}

// DefaultWeights put the object's own name first, then its column names,
// its schema's name and the rest of its text; tuned on the retrieval
// benchmark (docs/retrieval.md).
var DefaultWeights = Weights{Name: 4, Schema: 1.5, Columns: 2, Body: 1}

// TextQuery is a BM25 query. Terms are analysed query terms (package
// text); a store quotes each one, so no term can become query syntax, and
// matches any of them (OR), ranking by BM25.
type TextQuery struct {
	Filter
	Terms []string
	// NoCompounds are compounds of adjacent terms (MatchTerms) not to
	// search: the retriever leaves out a phrase whose head word most
	// tables use ("full name": fullname counts the name a third time).
	NoCompounds []string
	Weights     Weights
	Limit       int
}

// VectorQuery is a KNN query by cosine similarity.
type VectorQuery struct {
	Filter
	Vector []float32
	Limit  int
}

// Hit is a chunk a query found, with its score (higher is better; BM25
// scores and cosines are not comparable with each other).
type Hit struct {
	Chunk chunk.Chunk
	Score float64
}

// Meta is what the writer needs to know about a stored chunk.
type Meta struct {
	Hash    string
	Version int64
}

// Errors a Store returns; match with errors.Is.
var (
	// ErrUnavailable: the store cannot be reached; retry later.
	ErrUnavailable = errors.New("index store unavailable")
	// ErrDimension: a vector does not have the index's dimension.
	ErrDimension = errors.New("vector dimension mismatch")
	// ErrNoDatabase: a query or write without a database.
	ErrNoDatabase = errors.New("database is required")
	// ErrMoved: another projection of the database landed while a
	// ReplaceSchema was prepared; read the stored chunks again.
	ErrMoved = errors.New("the projection moved on")
)

// Store is the whole index interface. Consumers declare the subset they use
// (a retriever needs only the two searches).
//
// Writes are idempotent and ordered by chunk version: Upsert never replaces
// a stored chunk with one of a lower Version, so a slow writer holding an
// old catalog cannot undo a newer one. Docs and examples (Marked kinds)
// are also ordered as whole objects: the store keeps each one's newest
// version written or deleted below (its mark), and Upsert writes none of
// its chunks at a lower version, so a late older edit neither undoes a
// delete nor leaves sections a newer edit dropped. DeleteDatabase drops
// the database's marks with its chunks.
type Store interface {
	// Upsert writes records, skipping any whose stored version is newer,
	// and returns how many it wrote.
	Upsert(ctx context.Context, recs []Record) (int, error)
	// Touch raises the version of stored chunks whose content has not
	// changed, without rewriting them; chunks at a higher version are left
	// alone. It returns how many it raised.
	Touch(ctx context.Context, db string, ids []string, version int64) (int, error)
	// Delete removes chunks by id.
	Delete(ctx context.Context, db string, ids []string) error
	// DeleteName removes every chunk of one object (all parts of a table,
	// all sections of a doc).
	DeleteName(ctx context.Context, db, kind, name string) error
	// DeleteStale removes chunks of the given kinds (and, when name is
	// set, of that object only) whose version is below version: what a
	// newer catalog or a newer doc no longer produces. With names, of
	// each of those objects below its own version. A named object of a
	// Marked kind keeps its bound as its mark.
	DeleteStale(ctx context.Context, s Stale) (int, error)
	// Marks returns the marks of db's objects of a Marked kind among
	// names: each one's newest version written or deleted. An object
	// without a mark is left out.
	Marks(ctx context.Context, db, kind string, names []string) (map[string]int64, error)
	// DeleteDatabase removes every chunk of db.
	DeleteDatabase(ctx context.Context, db string) error
	// SearchText runs a BM25 query.
	SearchText(ctx context.Context, q TextQuery) ([]Hit, error)
	// SearchVector runs a KNN query.
	SearchVector(ctx context.Context, q VectorQuery) ([]Hit, error)
	// Count counts chunks matching f.
	Count(ctx context.Context, f Filter) (int, error)
	// Metas returns hash and version of every chunk matching f, by id.
	Metas(ctx context.Context, f Filter) (map[string]Meta, error)
	// Projected returns the catalog version db's schema chunks reflect (0
	// when none), and SetProjected raises it. The worker compares it with
	// the catalog's version to repair a crash between the two writes.
	Projected(ctx context.Context, db string) (int64, error)
	SetProjected(ctx context.Context, db string, version int64) error
	// Close releases the store.
	Close() error
}

// Stale selects chunks for DeleteStale.
type Stale struct {
	Database string
	Kinds    []string
	Name     string // optional: one object only
	Below    int64  // versions strictly below this go
	// Names, when set, selects these objects only, each below its own
	// version (Name and Below are then unused): a run of docs, each at
	// its own event's stream sequence, in one deletion.
	Names map[string]int64
}

// Marked reports whether chunks of kind are ordered as whole objects by
// a mark (Store): the kinds events write one object at a time, docs and
// examples. Tables and views follow their catalog's version instead.
func Marked(kind string) bool { return kind == chunk.KindDoc || kind == chunk.KindExample }

// Marks are the object marks a Stale sets: for each Marked kind, each
// named object at its bound. An unnamed Stale sets none.
func (s Stale) Marks() []Mark {
	named := s.Named()
	var out []Mark
	for _, k := range s.Kinds {
		if !Marked(k) {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(named)) {
			out = append(out, Mark{Kind: k, Name: n, Version: named[n]})
		}
	}
	return out
}

// Named is the objects s names, each with its bound: Names, or Name at
// Below; nil for a Stale of whole kinds.
func (s Stale) Named() map[string]int64 {
	if s.Names == nil && s.Name != "" {
		return map[string]int64{s.Name: s.Below}
	}
	return s.Names
}

// Mark is an object's newest version: no chunk of it below is written.
type Mark struct {
	Kind, Name string
	Version    int64
}

// Selects reports whether a chunk of kind, object and version is one s
// selects (its database is the caller's to check).
func (s Stale) Selects(kind, object string, version int64) bool {
	if !slices.Contains(s.Kinds, kind) {
		return false
	}
	if s.Names != nil {
		below, ok := s.Names[object]
		return ok && version < below
	}
	return version < s.Below && (s.Name == "" || object == s.Name)
}

// Replacer is a store that can swap a database's schema chunks for a
// catalog's in one atomic step. With it the indexer writes only what
// changed and leaves unchanged chunks alone; without it, it raises their
// versions (Touch) so that deleting below the projected version is safe
// while two projections of one database race.
type Replacer interface {
	ReplaceSchema(ctx context.Context, r SchemaReplace) (Replaced, error)
}

// SchemaReplace is one projection of a catalog.
type SchemaReplace struct {
	Database string
	Version  int64 // the catalog version projected
	// Since is the projected version the caller read the stored chunks
	// at: if another projection landed since, the store refuses with
	// ErrMoved and the caller reads again.
	Since   int64
	Kinds   []string // the kinds a catalog produces (table, view)
	Upserts []Record // chunks that are new or changed
	// Remove lists the chunks of Kinds stored at Since that the catalog
	// no longer produces. The caller read them with the stored hashes, so
	// the store deletes by id rather than scanning the database for what
	// is not kept (the scan was most of a one-table projection's cost).
	// Since guarantees the list is still whole.
	Remove []string
}

// Replaced says what a ReplaceSchema did.
type Replaced struct {
	Written, Deleted int
	// Skipped: the index already reflects a newer catalog.
	Skipped bool
}

// EncodeVector is a vector as little-endian FLOAT32 bytes, the layout
// both SQLite blobs and RediSearch VECTOR fields hold.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reverses EncodeVector; a trailing partial float is dropped.
func DecodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// Searcher is the search half of a Store.
type Searcher interface {
	SearchText(ctx context.Context, q TextQuery) ([]Hit, error)
	SearchVector(ctx context.Context, q VectorQuery) ([]Hit, error)
}

// Pinner is a store that can serve one request's searches from a single
// view of a database: they all read one consistent state, and the store
// checks for new writes once per request instead of once per search.
type Pinner interface {
	Pin(ctx context.Context, db string) (Searcher, error)
}

// SpeculativePinner is a Pinner that can hand out a view before it has
// confirmed the view current, so that the check (a round trip for a
// shared store) overlaps the searches instead of preceding them. The view
// implements Confirmer; when Confirm reports it was not current, the
// caller searches again with a view from Pin.
type SpeculativePinner interface {
	Pinner
	PinSpeculative(ctx context.Context, db string) (Searcher, error)
}

// Confirmer is a speculative view: Confirm waits for the store's check
// and reports whether the view was current when the request began.
type Confirmer interface {
	Confirm(ctx context.Context) (bool, error)
}
