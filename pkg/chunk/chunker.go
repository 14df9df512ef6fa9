package chunk

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// Chunker chunks catalog after catalog of the same databases, as a worker
// projecting a history does. Catalogs share the objects a migration did
// not change (catalog.Apply), so a table that is the same object as in
// the catalog chunked before, with the same neighbours, has the same
// chunks: they are reused instead of rendered again, and a one-table
// migration renders one table. It is safe for concurrent use.
type Chunker struct {
	opts Options
	mu   sync.Mutex
	last map[string]*memo // per database, what the last call rendered
	// renders counts tables and views rendered, for tests.
	renders atomic.Int64
}

// memo is what one database's last catalog rendered, by object.
type memo struct {
	tables map[*catalog.Table]tableMemo
	views  map[*catalog.View]Chunk
}

// tableMemo is a table's chunks and what else they were rendered from:
// the hints of the foreign keys that point at it, its partitions and
// the keys they declare, and the labels of its enums.
type tableMemo struct {
	deps   string
	chunks []Chunk
	hints  []string // the table's own foreign keys as hints (hintsOf), for its neighbours' deps
}

// NewChunker returns a Chunker rendering with opts.
func NewChunker(opts Options) *Chunker {
	return &Chunker{opts: opts.withDefaults(), last: map[string]*memo{}}
}

// Catalog is Catalog(c, opts) for the Chunker's options, reusing what the
// last call for c.Database rendered wherever it still holds.
func (k *Chunker) Catalog(c *catalog.Catalog) []Chunk {
	k.mu.Lock()
	prev := k.last[c.Database]
	k.mu.Unlock()
	if prev == nil {
		prev = &memo{}
	}
	tables, views := c.Tables(), c.Views()
	next := &memo{tables: make(map[*catalog.Table]tableMemo, len(tables)), views: make(map[*catalog.View]Chunk, len(views))}
	// The incoming hints and partitions of every table, from each table's
	// own foreign keys (remembered with it: joinHint is not free).
	hints := make(map[*catalog.Table][]string, len(tables))
	for _, t := range tables {
		if m, ok := prev.tables[t]; ok {
			hints[t] = m.hints
		} else {
			hints[t] = hintsOf(t)
		}
	}
	g := catalog.NewGraph(c)
	remembered := func(t *catalog.Table) []string { return hints[t] }
	var out []Chunk
	for _, t := range tables {
		if t.PartitionOf != nil {
			next.tables[t] = tableMemo{hints: hints[t]}
			continue
		}
		near := aroundOf(c, g, t, remembered)
		deps := tableDeps(c, t, near)
		m, ok := prev.tables[t]
		if !ok || m.deps != deps || m.chunks == nil {
			m = tableMemo{deps: deps, chunks: table(c, t, near, k.opts)}
			k.renders.Add(1)
		}
		m.hints = hints[t]
		next.tables[t] = m
		out = appendVersioned(out, m.chunks, c.Version)
	}
	for _, v := range views {
		ch, ok := prev.views[v]
		if !ok {
			ch = View(c, v)
			k.renders.Add(1)
		}
		next.views[v] = ch
		out = appendVersioned(out, []Chunk{ch}, c.Version)
	}
	k.mu.Lock()
	k.last[c.Database] = next
	k.mu.Unlock()
	return out
}

// tableDeps is everything besides the table itself that its chunks are
// rendered from.
func tableDeps(c *catalog.Catalog, t *catalog.Table, near around) string {
	var b strings.Builder
	for _, h := range near.incoming {
		b.WriteString(h)
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, p := range near.partitions {
		b.WriteString(p)
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, h := range near.partJoins {
		b.WriteString(h)
		b.WriteByte(0)
	}
	for _, col := range t.Columns {
		if col.Enum == nil {
			continue
		}
		b.WriteByte(1)
		if e := c.Enum(*col.Enum); e != nil {
			b.WriteString(e.QualName().String())
			for _, l := range e.Labels {
				b.WriteByte(0)
				b.WriteString(l)
			}
		}
	}
	return b.String()
}

// appendVersioned appends chunks stamped with the catalog version they
// are written at (the version is not part of a chunk's hash).
func appendVersioned(out, chunks []Chunk, version int64) []Chunk {
	for _, ch := range chunks {
		ch.Version = version
		out = append(out, ch)
	}
	return out
}
