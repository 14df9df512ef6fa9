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
	// renders counts tables and views rendered, and updates the catalogs
	// chunked by what changed (update), for tests.
	renders, updates atomic.Int64
}

// memo is what one database's last catalog rendered, by object.
type memo struct {
	cat    *catalog.Catalog // the catalog rendered
	graph  *catalog.Graph   // its graph, for the next catalog's to update
	tables map[*catalog.Table]tableMemo
	views  map[*catalog.View]Chunk
	enums  string // every enum's name and labels (enumsKey)
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
	next := &memo{cat: c, enums: enumsKey(c), views: make(map[*catalog.View]Chunk, len(views))}
	if !k.update(prev, next) {
		k.rebuild(prev, next, tables)
	}
	var out []Chunk
	if n := len(tables) + len(views); n > 0 {
		out = make([]Chunk, 0, n) // a table is one chunk unless it is wide
	}
	for _, t := range tables {
		if t.PartitionOf == nil {
			out = appendVersioned(out, next.tables[t].chunks, c.Version)
		}
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

// rebuild memoizes every table of next's catalog, rendering those whose
// chunks prev does not hold as they are now.
func (k *Chunker) rebuild(prev, next *memo, tables []*catalog.Table) {
	c := next.cat
	next.tables = make(map[*catalog.Table]tableMemo, len(tables))
	// The incoming hints and partitions of every table, from each table's
	// own foreign keys (remembered with it: joinHint is not free).
	for _, t := range tables {
		if m, ok := prev.tables[t]; ok {
			next.tables[t] = tableMemo{hints: m.hints}
		} else {
			next.tables[t] = tableMemo{hints: hintsOf(t)}
		}
	}
	g := next.graph // update's, when it built one
	if g == nil {
		g = catalog.NewGraph(c)
		next.graph = g
	}
	for _, t := range tables {
		if t.PartitionOf == nil {
			k.render(prev, next, g, t)
		}
	}
}

// render memoizes table t of next's catalog, whose own hints next holds
// already: prev's chunks where they were rendered from the same
// neighbours, else rendered now.
func (k *Chunker) render(prev, next *memo, g *catalog.Graph, t *catalog.Table) {
	c := next.cat
	hints := next.tables[t].hints
	near := aroundOf(c, g, t, func(t *catalog.Table) []string { return next.tables[t].hints })
	deps := tableDeps(c, t, near)
	m, ok := prev.tables[t]
	if !ok || m.deps != deps || m.chunks == nil {
		m = tableMemo{deps: deps, chunks: table(c, t, near, k.opts)}
		k.renders.Add(1)
	}
	m.hints = hints
	next.tables[t] = m
}

// enumsKey is every enum of c with its labels: the chunks of a table
// with an enum column show its labels.
func enumsKey(c *catalog.Catalog) string {
	var b strings.Builder
	for _, e := range c.Enums() {
		b.WriteString(e.QualName().String())
		for _, l := range e.Labels {
			b.WriteByte(0)
			b.WriteString(l)
		}
		b.WriteByte(1)
	}
	return b.String()
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
