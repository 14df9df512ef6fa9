// Package indexer projects a catalog, docs and examples into an index
// store: chunk, embed (through the content-hash cache, so unchanged text
// costs nothing), write with the catalog version, and remove what the new
// version no longer produces. The worker and the benchmark both index
// through here.
package indexer

import (
	"context"
	"fmt"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
)

// Writer is the part of an index.Store indexing needs.
type Writer interface {
	Upsert(ctx context.Context, recs []index.Record) (int, error)
	DeleteStale(ctx context.Context, db string, kinds []string, version int64) (int, error)
	DeleteName(ctx context.Context, db, kind, name string) error
}

// Stats says what one indexing did.
type Stats struct {
	Chunks  int // chunks produced
	Written int // chunks written (older versions in the store are never replaced)
	Deleted int // stale chunks removed
}

// Batch bounds how many chunks are embedded and written at once.
const Batch = 256

// Catalog writes the chunks of every table and view of cat at cat.Version
// and deletes schema chunks of older versions. Re-running it is harmless,
// and a run with an older catalog than the store's changes nothing.
func Catalog(ctx context.Context, w Writer, e embed.Embedder, cat *catalog.Catalog, opts chunk.Options) (Stats, error) {
	chunks := chunk.Catalog(cat, opts)
	st, err := write(ctx, w, e, chunks)
	if err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	n, err := w.DeleteStale(ctx, cat.Database, []string{chunk.KindTable, chunk.KindView}, cat.Version)
	if err != nil {
		return st, fmt.Errorf("index catalog %s v%d: %w", cat.Database, cat.Version, err)
	}
	st.Deleted = n
	return st, nil
}

// Chunks embeds and writes chunks as they are (docs, examples).
func Chunks(ctx context.Context, w Writer, e embed.Embedder, chunks []chunk.Chunk) (Stats, error) {
	return write(ctx, w, e, chunks)
}

func write(ctx context.Context, w Writer, e embed.Embedder, chunks []chunk.Chunk) (Stats, error) {
	st := Stats{Chunks: len(chunks)}
	for start := 0; start < len(chunks); start += Batch {
		batch := chunks[start:min(start+Batch, len(chunks))]
		texts := make([]string, len(batch))
		for i, c := range batch {
			texts[i] = c.EmbedText()
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return st, fmt.Errorf("embed: %w", err)
		}
		recs := make([]index.Record, len(batch))
		for i, c := range batch {
			recs[i] = index.Record{Chunk: c, Vector: vecs[i]}
		}
		n, err := w.Upsert(ctx, recs)
		if err != nil {
			return st, err
		}
		st.Written += n
	}
	return st, nil
}
