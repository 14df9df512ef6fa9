package retrieve

import (
	"slices"
	"sync"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
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
	// follows them with Config.InferJoins (bridges do not), and a
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

// expand adds bridge tables: a table not yet chosen that is linked by
// foreign keys to two chosen tables that are not linked to each other (the
// junction of a many-to-many, the middle of a chain). A question joining
// the two needs it even when it names neither. Each bridge goes right
// after the later of the two tables it joins.
func (r *Retriever) expand(cat *catalog.Catalog, items []Item, limit int, schemas []string) []Item {
	g := r.graphs.get(cat)
	pos := map[string]int{}
	for i, it := range items {
		if it.Kind == chunk.KindTable {
			pos[it.Name] = i
		}
	}
	type bridge struct {
		key    string
		a, b   string
		after  int
		reason string
	}
	// A bridge is a neighbour of a chosen table: look only there, not
	// through the whole graph.
	cands := map[string]bool{}
	for key := range pos {
		for n := range g.adj[key] {
			if _, chosen := pos[n]; !chosen {
				cands[n] = true
			}
		}
	}
	var found []bridge
	for key := range cands {
		nbrs := g.adj[key]
		if t := g.tables[key]; t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		best := bridge{after: 1 << 30}
		for a := range nbrs {
			ia, ok := pos[a]
			if !ok {
				continue
			}
			for b := range nbrs {
				ib, ok := pos[b]
				if !ok || a >= b || g.adj[a][b] {
					continue
				}
				if after := max(ia, ib); after < best.after {
					best = bridge{key: key, a: a, b: b, after: after}
				}
			}
		}
		if best.key != "" {
			best.reason = "joins " + best.a + " and " + best.b
			found = append(found, best)
		}
	}
	// Bridges between the best-ranked tables first; names break ties.
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && (found[j].after < found[j-1].after || (found[j].after == found[j-1].after && found[j].key < found[j-1].key)); j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	if len(found) > limit {
		found = found[:limit]
	}
	// Insert from the back so earlier positions stay valid.
	for i := len(found) - 1; i >= 0; i-- {
		b := found[i]
		t := g.tables[b.key]
		chunks := g.chunks.Table(t)
		it := Item{Bridge: b.reason, Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: b.key,
			Title: t.Name, Schema: t.Schema, Chunks: chunks}}
		for _, c := range chunks {
			it.Columns = append(it.Columns, c.Columns...)
			it.Text += c.Text
		}
		at := b.after + 1
		items = append(items[:at], append([]Item{it}, items[at:]...)...)
	}
	return items
}
