package catalog

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Graph is how a catalog's tables join: the foreign keys, both ways, with
// partitions folded into their root table (a partition's rows are its
// root's, and only the root is named by queries: the keys a partition
// declares, as pagila's payment partitions do, are the root's joins), and
// the joins the names imply where no key declares them. Build it once
// per catalog version: NewGraph is linear in the catalog.
type Graph struct {
	cat *Catalog
	// incoming lists, per table, the keys that reference it (its own
	// included), in catalog order.
	incoming map[QualName][]Incoming
	// partitions lists each partitioned table's partitions, in catalog
	// order.
	partitions map[QualName][]*Table
	// partitionKeys lists, per partitioned root, the keys its partitions
	// declare of their own (each once): the root's joins.
	partitionKeys map[QualName][]ForeignKey

	// The adjacency and the inferred joins are built on first use: a
	// worker chunking a catalog needs neither.
	adjOnce sync.Once
	// adj counts, by table key (QualName.Key; roots for partitions), the
	// declared keys between each pair of tables, either way.
	adj map[string]map[string]int
	// lent is the previous version's adjacency, lent like base below.
	lent *lentAdjacency
	// built is the adjacency once it is built, for the next version.
	built   atomic.Pointer[lentAdjacency]
	infOnce sync.Once
	// inferred lists each inferred join under both of its tables' keys.
	inferred map[string][]InferredJoin
	// found is the inferred joins by schema once they are found, for the
	// next version's graph (Next) to take over; base is the previous
	// version's, lent to inferredJoins and then let go, so that no graph
	// holds a chain of older versions.
	found atomic.Pointer[map[string]*schemaJoins]
	base  map[string]*schemaJoins
	// changes are the tables that changed since the version whose graph
	// this one was built from (Next), when no partition is among them.
	changes  *changes
	keysOnce sync.Once
	byKey    map[string]*Table
}

// Incoming is From's foreign key From.ForeignKeys[Index], which
// references a table.
type Incoming struct {
	From  *Table
	Index int
	Key   ForeignKey
}

// NewGraph builds cat's graph.
func NewGraph(cat *Catalog) *Graph {
	g := &Graph{cat: cat, incoming: map[QualName][]Incoming{}, partitions: map[QualName][]*Table{}, partitionKeys: map[QualName][]ForeignKey{}}
	type partitionKey struct {
		root, ref        QualName
		cols, refColumns string
	}
	seen := map[partitionKey]bool{}
	for _, t := range cat.Tables() {
		if t.PartitionOf != nil {
			g.partitions[*t.PartitionOf] = append(g.partitions[*t.PartitionOf], t)
		}
		root := t
		if t.PartitionOf != nil {
			root = cat.PartitionRoot(t)
		}
		for i, fk := range t.ForeignKeys {
			g.incoming[fk.RefTable] = append(g.incoming[fk.RefTable], Incoming{From: t, Index: i, Key: fk})
			if root != t && !fk.Inherited && fk.RefTable != t.QualName() && fk.RefTable != root.QualName() {
				k := partitionKey{root.QualName(), fk.RefTable, strings.Join(fk.Columns, "\x00"), strings.Join(fk.RefColumns, "\x00")}
				if !seen[k] {
					seen[k] = true
					g.partitionKeys[root.QualName()] = append(g.partitionKeys[root.QualName()], fk)
				}
			}
		}
	}
	return g
}

// inferredJoins finds the joins the names imply.
func (g *Graph) inferredJoins() map[string][]InferredJoin {
	g.infOnce.Do(func() {
		g.inferred = map[string][]InferredJoin{}
		declares := func(t *Table) bool { return len(t.ForeignKeys) > 0 || len(g.partitionKeys[t.QualName()]) > 0 }
		found := inferJoins(g.cat, declares, g.base)
		g.base = nil
		// In schema order: two schemas whose names differ in case only
		// share keys, and a key's joins must not come in map order.
		for _, name := range slices.Sorted(maps.Keys(found)) {
			for _, j := range found[name].joins {
				g.inferred[j.from] = append(g.inferred[j.from], j)
				g.inferred[j.to] = append(g.inferred[j.to], j)
			}
		}
		g.found.Store(&found)
	})
	return g.inferred
}

// Next builds the graph of cat, a later version of g's database, taking
// over the inferred joins g found in the schemas whose tables cat shares
// with g's catalog, and its neighbours where few tables changed: finding
// them all again was most of a daemon's work per version at ten
// thousand tables. What g never built it does not lend.
func (g *Graph) Next(cat *Catalog) *Graph {
	next := g.successor(cat)
	if found := g.found.Load(); found != nil {
		next.base = *found
	}
	next.lent = g.built.Load()
	return next
}

// Warm builds the neighbours and, with inferred, the inferred joins now,
// where the first use would: a daemon warms each catalog version as it
// arrives, so that the first question after a migration does not pay for
// them (30 ms at ten thousand tables).
func (g *Graph) Warm(inferred bool) {
	g.adjacency()
	if inferred {
		g.inferredJoins()
	}
}

// Catalog is the catalog the graph is of.
func (g *Graph) Catalog() *Catalog { return g.cat }

// Neighbours are the tables a table (by key) joins by declared keys, by
// their keys, each with the number of keys between the two, either way.
// The map is the graph's own: do not modify it.
func (g *Graph) Neighbours(key string) map[string]int { return g.adjacency()[key] }

// Inferred are the inferred joins a table (by key) is in, either side,
// in the order they were found. The slice is the graph's own.
func (g *Graph) Inferred(key string) []InferredJoin { return g.inferredJoins()[key] }

// Incoming are the foreign keys that reference q (its own included), in
// catalog order. The slice is the graph's own.
func (g *Graph) Incoming(q QualName) []Incoming { return g.incoming[q] }

// Partitions are q's partitions, in catalog order. The slice is the
// graph's own.
func (g *Graph) Partitions(q QualName) []*Table { return g.partitions[q] }

// PartitionKeys are the keys q's partitions declare of their own (not
// copies of q's, not within q), each once: q's joins. The slice is the
// graph's own.
func (g *Graph) PartitionKeys(q QualName) []ForeignKey { return g.partitionKeys[q] }

// Description is what describing a table or view says of it.
type Description struct {
	Name    string // schema.name as declared
	Comment string
	Columns int
	DDL     string
	View    bool
	// References are a table's foreign keys, one line a column
	// ("customer_id → public.customers.id"), its partitions' own after
	// its own; a view's the relations it reads ("reads public.orders").
	References []string
	// ReferencedBy are the keys that reference a table, one line a
	// column ("public.orders.customer_id → id").
	ReferencedBy []string
	// Joins are the joins its names imply where no key declares them
	// (InferredJoin.String), ordered.
	Joins []string
	// Enums are the labels of its enum-typed columns ("status: a, b").
	Enums []string
	// Renamed are its renames and its columns' (RenameLines).
	Renamed []string
	// History are the migrations that created, altered or renamed a
	// table, oldest first ("created by 0001_x.sql (version 1)").
	History []string
}

// Describe describes the table or view name (as Lookup resolves it), or
// returns nil when the catalog has neither.
func (g *Graph) Describe(name string) *Description {
	cat := g.cat
	t := cat.Lookup(name)
	if t == nil {
		v := cat.LookupView(name)
		if v == nil {
			return nil
		}
		d := &Description{Name: v.Schema + "." + v.Name, Comment: v.Comment, Columns: len(v.Columns), DDL: v.DDL(), View: true,
			Renamed: RenameLines(v.Renamed, v.Columns)}
		for _, r := range v.Reads {
			d.References = append(d.References, "reads "+r.Schema+"."+r.Name)
		}
		return d
	}
	d := &Description{Name: t.Schema + "." + t.Name, Comment: t.Comment, Columns: len(t.Columns), DDL: t.DDL(),
		Renamed: RenameLines(t.Renamed, t.Columns)}
	for _, c := range t.History {
		d.History = append(d.History, c.String())
	}
	references := func(fks []ForeignKey) {
		for _, fk := range fks {
			for i := range fk.Columns {
				d.References = append(d.References, fk.Columns[i]+" → "+fk.RefTable.Schema+"."+fk.RefTable.Name+"."+fk.RefColumns[i])
			}
		}
	}
	references(t.ForeignKeys)
	references(g.partitionKeys[t.QualName()])
	for _, in := range g.incoming[t.QualName()] {
		for i := range in.Key.Columns {
			d.ReferencedBy = append(d.ReferencedBy, in.From.Schema+"."+in.From.Name+"."+in.Key.Columns[i]+" → "+in.Key.RefColumns[i])
		}
	}
	joins := slices.Clone(g.Inferred(t.QualName().Key()))
	slices.SortFunc(joins, CompareJoins)
	for _, j := range joins {
		d.Joins = append(d.Joins, j.String())
	}
	for _, c := range t.Columns {
		if c.Enum != nil {
			if e := cat.Enum(*c.Enum); e != nil {
				d.Enums = append(d.Enums, c.Name+": "+strings.Join(e.Labels, ", "))
			}
		}
	}
	return d
}
