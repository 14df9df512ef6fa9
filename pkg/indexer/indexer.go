// Package indexer projects a catalog, docs and examples into an index
// store: chunk, embed (through the content-hash cache, so unchanged text
// costs nothing), write with the catalog version, and remove what the new
// version no longer produces. The worker and the benchmark both index
// through here.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
)

// Writer is the part of an index.Store indexing needs.
type Writer interface {
	Upsert(ctx context.Context, recs []index.Record) (int, error)
	Touch(ctx context.Context, db string, ids []string, version int64) (int, error)
	Metas(ctx context.Context, f index.Filter) (map[string]index.Meta, error)
	DeleteStale(ctx context.Context, s index.Stale) (int, error)
	Projected(ctx context.Context, db string) (int64, error)
	SetProjected(ctx context.Context, db string, version int64) error
}

// Chunker renders a catalog's chunks: a chunk.Chunker, which reuses the
// chunks of what did not change since its last catalog of the database.
type Chunker interface {
	Catalog(c *catalog.Catalog) []chunk.Chunk
}

// Stats says what one indexing did.
type Stats struct {
	Chunks  int // chunks produced
	Written int // chunks written (older versions in the store are never replaced)
	Touched int // unchanged chunks whose version was raised
	Deleted int // stale chunks removed
}

// Batch bounds how many chunks are embedded and written at once.
const Batch = 256

// Catalog brings the schema chunks of cat.Database to cat.Version: chunks
// whose content changed are embedded and written, unchanged ones only get
// the new version, and chunks the catalog no longer produces are deleted.
// Re-running it is harmless, and a run with an older catalog than the
// index already reflects changes nothing.
//
// Two writers may index one database at once (a slow worker still on
// version V-1 while another indexes V). Upsert never replaces a newer
// chunk, but the slow writer could re-create a chunk V dropped. So the
// run ends by raising the projected version and then deleting every
// schema chunk below the projected version as it reads it then: whichever
// writer finishes last removes what the other left behind.
func Catalog(ctx context.Context, w Writer, e embed.Embedder, cat *catalog.Catalog, ck Chunker) (Stats, error) {
	if r, ok := w.(index.Replacer); ok {
		return replace(ctx, w, r, e, cat, ck)
	}
	kinds := []string{chunk.KindTable, chunk.KindView}
	if p, err := w.Projected(ctx, cat.Database); err != nil {
		return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	} else if p > cat.Version {
		return Stats{}, nil // the index already reflects a newer catalog
	}
	stored, err := w.Metas(ctx, index.Filter{Database: cat.Database, Kinds: kinds})
	if err != nil {
		return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	var changed []chunk.Chunk
	var same []string
	for _, c := range ck.Catalog(cat) {
		if m, ok := stored[c.ID]; ok && m.Hash == c.Hash {
			same = append(same, c.ID)
		} else {
			changed = append(changed, c)
		}
	}
	st, err := write(ctx, w, e, changed)
	st.Chunks += len(same)
	if err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	if st.Touched, err = w.Touch(ctx, cat.Database, same, cat.Version); err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	// The projection is complete only once every write is done.
	if err := w.SetProjected(ctx, cat.Database, cat.Version); err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	p, err := w.Projected(ctx, cat.Database)
	if err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	if st.Deleted, err = w.DeleteStale(ctx, index.Stale{Database: cat.Database, Kinds: kinds, Below: p}); err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	return st, nil
}

// replace is Catalog on a store that swaps schema chunks atomically: only
// new and changed chunks are embedded and written, in one step with the
// deletions and the projected version, retried when another projection
// lands in between.
func replace(ctx context.Context, w Writer, r index.Replacer, e embed.Embedder, cat *catalog.Catalog, ck Chunker) (Stats, error) {
	kinds := []string{chunk.KindTable, chunk.KindView}
	chunks := ck.Catalog(cat)
	produced := make(map[string]bool, len(chunks))
	for _, c := range chunks {
		produced[c.ID] = true
	}
	for attempt := 0; ; attempt++ {
		p, err := w.Projected(ctx, cat.Database)
		if err != nil {
			return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
		}
		if p > cat.Version {
			return Stats{}, nil // the index already reflects a newer catalog
		}
		stored, err := w.Metas(ctx, index.Filter{Database: cat.Database, Kinds: kinds})
		if err != nil {
			return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
		}
		var changed []chunk.Chunk
		for _, c := range chunks {
			if m, ok := stored[c.ID]; !ok || m.Hash != c.Hash {
				changed = append(changed, c)
			}
		}
		var remove []string
		for id := range stored {
			if !produced[id] {
				remove = append(remove, id)
			}
		}
		slices.Sort(remove)
		recs, err := embedChunks(ctx, e, changed)
		if err != nil {
			return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
		}
		res, err := r.ReplaceSchema(ctx, index.SchemaReplace{Database: cat.Database, Version: cat.Version, Since: p,
			Kinds: kinds, Upserts: recs, Remove: remove})
		if errors.Is(err, index.ErrMoved) && attempt < 5 {
			continue
		}
		if err != nil {
			return Stats{}, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
		}
		return Stats{Chunks: len(chunks), Written: res.Written, Deleted: res.Deleted}, nil
	}
}

// embedChunks embeds chunks in batches into records.
func embedChunks(ctx context.Context, e embed.Embedder, chunks []chunk.Chunk) ([]index.Record, error) {
	recs := make([]index.Record, 0, len(chunks))
	for start := 0; start < len(chunks); start += Batch {
		batch := chunks[start:min(start+Batch, len(chunks))]
		texts := make([]string, len(batch))
		for i, c := range batch {
			texts[i] = c.EmbedText()
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		for i, c := range batch {
			recs = append(recs, index.Record{Chunk: c, Vector: vecs[i]})
		}
	}
	return recs, nil
}

// Chunks embeds and writes chunks as they are (docs, examples).
func Chunks(ctx context.Context, w Writer, e embed.Embedder, chunks []chunk.Chunk) (Stats, error) {
	return write(ctx, w, e, chunks)
}

// DocEdit is one doc's new sections, at its event's stream sequence.
type DocEdit struct {
	ID       string
	Sections []chunk.Chunk
	Version  int64
}

// Docs replaces the sections of docs of db, each named at most once:
// each doc's new sections are written at its version (the event's stream
// sequence, which orders edits of one doc), and sections of older
// versions are removed, so a doc that shrank loses its tail and a
// redelivered older edit changes nothing. The sections of all are
// embedded and written together, then the older ones removed together:
// two writes for a run of docs, where each doc on its own was two.
func Docs(ctx context.Context, w Writer, e embed.Embedder, db string, docs []DocEdit) (Stats, error) {
	var sections []chunk.Chunk
	for _, d := range docs {
		for i := range d.Sections {
			d.Sections[i].Version = d.Version
		}
		sections = append(sections, d.Sections...)
	}
	st, err := write(ctx, w, e, sections)
	if err != nil {
		return st, fmt.Errorf("index %s of %s: %w", docNames(docs), db, err)
	}
	names := make(map[string]int64, len(docs))
	for _, d := range docs {
		names[d.ID] = d.Version
	}
	if st.Deleted, err = w.DeleteStale(ctx, index.Stale{Database: db, Kinds: []string{chunk.KindDoc}, Names: names}); err != nil {
		return st, fmt.Errorf("index %s of %s: %w", docNames(docs), db, err)
	}
	return st, nil
}

// docNames names docs in an error: the one, or how many and the first.
func docNames(docs []DocEdit) string {
	switch len(docs) {
	case 0:
		return "no doc"
	case 1:
		return "doc " + docs[0].ID
	}
	return fmt.Sprintf("%d docs from %s", len(docs), docs[0].ID)
}

func write(ctx context.Context, w Writer, e embed.Embedder, chunks []chunk.Chunk) (Stats, error) {
	st := Stats{Chunks: len(chunks)}
	for start := 0; start < len(chunks); start += Batch {
		recs, err := embedChunks(ctx, e, chunks[start:min(start+Batch, len(chunks))])
		if err != nil {
			return st, err
		}
		n, err := w.Upsert(ctx, recs)
		if err != nil {
			return st, err
		}
		st.Written += n
	}
	return st, nil
}
