package retrieve

import (
	"slices"
	"strings"
	"sync"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/kept"
	"github.com/schemaq/schemaq/pkg/sqlguard"
	"github.com/schemaq/schemaq/pkg/text"
)

// graph is what retrieval derives from a catalog, built once per catalog
// version: its joins (catalog.Graph: propagation follows the declared
// ones and, with Config.Propagate.InferJoins, the inferred ones; bridges
// the declared ones only; a result lists the inferred ones among its
// tables), its tables and views by key, and its vocabulary.
type graph struct {
	*catalog.Graph
	cat    *catalog.Catalog
	tables map[string]*catalog.Table
	views  map[string]*catalog.View
	names  *sqlguard.Names // places worked examples' SQL
	chunks *chunk.Tabler   // renders bridge tables as the index would
	vocab  *vocab          // scores schemas for routing
	// rendered keeps tables rendered for this catalog version:
	// propagation renders the neighbours of the best tables for every
	// question, mostly the same ones.
	rendered kept.Map[[]chunk.Chunk]
	// tableWords keeps the analysed words of table names, which named
	// targets compare for the neighbours of the best tables.
	tableWords kept.Map[[]string]
	// keyWords keeps the words tables have only in their join columns,
	// which coverage gaps do not count as covered there.
	keyWords kept.Map[[]string]
}

// maxRendered bounds the tables kept rendered.
const maxRendered = 2048

// nameTerms are the analysed words of the name of the table keyed key
// (product_category → product, category), kept per catalog version.
// The slice is the cache's: callers must not write it.
func (g *graph) nameTerms(key string) []string {
	return g.tableWords.Get(key, func() []string {
		if t := g.tables[key]; t != nil {
			return text.Terms(t.Name)
		}
		return nil
	})
}

// tableChunks returns the chunks of t as the index holds them, rendered
// once per catalog version (up to maxRendered tables). The slice is the
// cache's: callers may append to it but not write its elements.
func (g *graph) tableChunks(t *catalog.Table) []chunk.Chunk {
	return slices.Clip(g.rendered.Get(t.QualName().Key(), func() []chunk.Chunk { return g.chunks.Table(t) }))
}

// graphCache keeps the graph of the latest catalog seen per database.
type graphCache struct {
	mu sync.Mutex
	m  map[string]*graphEntry
}

type graphEntry struct {
	cat      *catalog.Catalog
	g        *graph
	building *catalog.Catalog // being built now, by the first to ask for it
	done     chan struct{}    // closed when building is done
}

func newGraphCache() *graphCache { return &graphCache{m: map[string]*graphEntry{}} }

// get returns cat's graph. One caller builds it, outside the lock; the
// others use the previous catalog's graph meanwhile rather than wait or
// build it again, and wait only when there is none.
func (gc *graphCache) get(cat *catalog.Catalog) *graph {
	for {
		gc.mu.Lock()
		e := gc.m[cat.Database]
		if e == nil {
			e = &graphEntry{}
			gc.m[cat.Database] = e
		}
		switch {
		case e.cat == cat || (e.cat != nil && e.cat.Version > cat.Version):
			g := e.g
			gc.mu.Unlock()
			return g
		case e.building != nil && e.g != nil:
			g := e.g
			gc.mu.Unlock()
			return g
		case e.building != nil:
			done := e.done
			gc.mu.Unlock()
			<-done
			continue
		}
		e.building, e.done = cat, make(chan struct{})
		prev := e.g // the previous version's, which the new one updates
		gc.mu.Unlock()
		g := buildGraph(cat, prev)
		gc.mu.Lock()
		e.cat, e.g, e.building = cat, g, nil
		close(e.done)
		gc.mu.Unlock()
		return g
	}
}

func buildGraph(cat *catalog.Catalog, prev *graph) *graph {
	var pv *vocab
	var cg *catalog.Graph
	if prev != nil {
		pv, cg = prev.vocab, prev.Next(cat)
	} else {
		cg = catalog.NewGraph(cat)
	}
	g := &graph{Graph: cg, cat: cat, tables: map[string]*catalog.Table{}, views: map[string]*catalog.View{}, names: sqlguard.NewNames(cat),
		chunks: chunk.NewTabler(cg, chunk.Options{}), vocab: newVocab(cat, pv), rendered: kept.Map[[]chunk.Chunk]{Max: maxRendered},
		tableWords: kept.Map[[]string]{Max: maxRendered}, keyWords: kept.Map[[]string]{Max: maxRendered}}
	for _, v := range cat.Views() {
		g.views[v.QualName().Key()] = v
	}
	for _, t := range cat.Tables() {
		g.tables[t.QualName().Key()] = t
	}
	return g
}

// qualified resolves a.b: the table or view a.b, else the tables and
// views named a that have a column b.
func (g *graph) qualified(name string) identifierRef {
	if g.tables[name] != nil || g.views[name] != nil {
		return identifierRef{name: name, tables: []string{name}}
	}
	relation, column, _ := strings.Cut(name, ".")
	ref := identifierRef{name: name}
	for _, key := range g.vocab.owners(column) {
		if _, n := g.relation(key); strings.EqualFold(n, relation) {
			ref.tables = append(ref.tables, key)
		}
	}
	return ref
}

// relation returns the schema and name of the table or view key names
// ("" when the catalog has neither).
func (g *graph) relation(key string) (schema, name string) {
	if t := g.tables[key]; t != nil {
		return t.Schema, t.Name
	}
	if v := g.views[key]; v != nil {
		return v.Schema, v.Name
	}
	return "", ""
}

// render returns the chunks of the table or view key names, as the index
// holds them.
func (g *graph) render(key string) []chunk.Chunk {
	if t := g.tables[key]; t != nil {
		return g.tableChunks(t)
	}
	if v := g.views[key]; v != nil {
		return []chunk.Chunk{chunk.View(g.cat, v)}
	}
	return nil
}
