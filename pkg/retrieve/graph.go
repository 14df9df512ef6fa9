package retrieve

import (
	"strings"
	"sync"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// graph is a catalog's foreign-key adjacency by table key (schema.table,
// lower case), built once per catalog version.
type graph struct {
	cat    *catalog.Catalog
	tables map[string]*catalog.Table
	views  map[string]*catalog.View
	names  *sqlguard.Names // places worked examples' SQL
	adj    map[string]map[string]bool
	// inferred lists each join the names imply where no key declares
	// it (inferJoins) under both of its tables' keys: propagation
	// follows them with Config.Propagate.InferJoins (bridges do not), and a
	// result lists those among its tables.
	inferred map[string][]keyedJoin
	chunks   *chunk.Tabler // renders bridge tables as the index would
	vocab    *vocab        // scores schemas for routing
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
	if prev != nil {
		pv = prev.vocab
	}
	g := &graph{cat: cat, tables: map[string]*catalog.Table{}, views: map[string]*catalog.View{}, names: sqlguard.NewNames(cat), adj: map[string]map[string]bool{}, chunks: chunk.NewTabler(cat, chunk.Options{}), vocab: newVocab(cat, pv)}
	link := func(a, b string) {
		if a == b {
			return
		}
		if g.adj[a] == nil {
			g.adj[a] = map[string]bool{}
		}
		g.adj[a][b] = true
	}
	for _, v := range cat.Views() {
		g.views[v.QualName().Key()] = v
	}
	for _, t := range cat.Tables() {
		g.tables[t.QualName().Key()] = t
		// A partition is its root table's rows, and only the root is
		// chunked and named by queries: the keys a partition declares
		// (pagila's payment declares none, its partitions do) are the
		// root's joins.
		key := cat.PartitionRoot(t).QualName().Key()
		for _, fk := range t.ForeignKeys {
			ref := fk.RefTable.Key()
			if rt := cat.Table(fk.RefTable); rt != nil {
				ref = cat.PartitionRoot(rt).QualName().Key()
			}
			link(key, ref)
			link(ref, key)
		}
	}
	g.inferred = map[string][]keyedJoin{}
	for _, j := range inferJoins(cat) {
		g.inferred[j.from] = append(g.inferred[j.from], j)
		g.inferred[j.to] = append(g.inferred[j.to], j)
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
		return g.chunks.Table(t)
	}
	if v := g.views[key]; v != nil {
		return []chunk.Chunk{chunk.View(g.cat, v)}
	}
	return nil
}
