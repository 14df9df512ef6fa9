package catalog

import (
	"slices"
	"strings"
)

// Neighbourhood is the join graph around one table: the tables within a
// few joins of it, nearest first, and the joins among them.
type Neighbourhood struct {
	Nodes []NeighbourNode
	Edges []NeighbourEdge
	// Truncated says more tables were that near than the limit kept: the
	// nearest are kept, by name within a distance.
	Truncated bool
}

// NeighbourNode is a table of a neighbourhood and how many joins away it
// is (0: the table asked about).
type NeighbourNode struct {
	Table *Table
	Hops  int
}

// NeighbourEdge is a join between two tables of a neighbourhood, by their
// keys: a foreign key (Declared) or one the names imply.
type NeighbourEdge struct {
	From, To               string
	FromColumns, ToColumns []string
	Declared               bool
}

// Neighbourhood walks the declared and the inferred joins out from the
// table of key (QualName.Key) up to hops away, keeping at most limit
// tables. Partitions are folded into their roots, as everywhere in the
// graph. ok is false when no table has that key.
func (g *Graph) Neighbourhood(key string, hops, limit int) (n Neighbourhood, ok bool) {
	byKey := g.tablesByKey()
	center := byKey[key]
	if center == nil {
		return n, false
	}
	dist := map[string]int{key: 0}
	frontier := []string{key}
	n.Nodes = []NeighbourNode{{Table: center}}
	for d := 1; d <= hops && len(frontier) > 0; d++ {
		var next []string
		for _, k := range frontier {
			for _, nb := range g.joined(k) {
				if _, seen := dist[nb]; !seen && byKey[nb] != nil {
					dist[nb] = d
					next = append(next, nb)
				}
			}
		}
		slices.Sort(next)
		next = slices.Compact(next)
		if room := limit - len(n.Nodes); len(next) > room {
			next, n.Truncated = next[:max(room, 0)], true
			for k, dd := range dist {
				if dd == d && !slices.Contains(next, k) {
					delete(dist, k)
				}
			}
		}
		for _, k := range next {
			n.Nodes = append(n.Nodes, NeighbourNode{Table: byKey[k], Hops: d})
		}
		frontier = next
	}
	n.Edges = g.edgesAmong(dist, byKey)
	return n, true
}

// joined are the keys a table joins, declared or inferred, sorted.
func (g *Graph) joined(key string) []string {
	var out []string
	for k := range g.Neighbours(key) {
		out = append(out, k)
	}
	for _, j := range g.Inferred(key) {
		other := j.to
		if other == key {
			other = j.from
		}
		out = append(out, other)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// edgesAmong lists the joins whose two tables are both in keys: each
// foreign key once (a partition's as its root's), then each inferred join
// once, in a stable order.
func (g *Graph) edgesAmong(keys map[string]int, byKey map[string]*Table) []NeighbourEdge {
	var out []NeighbourEdge
	seen := map[string]bool{}
	add := func(e NeighbourEdge) {
		id := e.From + "\x00" + strings.Join(e.FromColumns, ",") + "\x00" + e.To + "\x00" + strings.Join(e.ToColumns, ",")
		if !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	// A root's keys are its own and its partitions': walk down from each
	// table of the neighbourhood, not through the whole catalog.
	var declared func(from string, t *Table)
	declared = func(from string, t *Table) {
		for _, fk := range t.ForeignKeys {
			to := fk.RefTable.Key()
			if rt := g.cat.Table(fk.RefTable); rt != nil {
				to = g.cat.PartitionRoot(rt).QualName().Key()
			}
			if _, in := keys[to]; in {
				add(NeighbourEdge{From: from, To: to, FromColumns: fk.Columns, ToColumns: fk.RefColumns, Declared: true})
			}
		}
		for _, p := range g.partitions[t.QualName()] {
			declared(from, p)
		}
	}
	for k := range keys {
		declared(k, byKey[k])
	}
	for k := range keys {
		for _, j := range g.Inferred(k) {
			_, a := keys[j.from]
			_, b := keys[j.to]
			if a && b {
				add(NeighbourEdge{From: j.from, To: j.to, FromColumns: []string{j.FromColumn}, ToColumns: []string{j.ToColumn}})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y NeighbourEdge) int {
		if x.Declared != y.Declared {
			if x.Declared {
				return -1
			}
			return 1
		}
		return strings.Compare(x.From+"\x00"+x.To+"\x00"+strings.Join(x.FromColumns, ","), y.From+"\x00"+y.To+"\x00"+strings.Join(y.FromColumns, ","))
	})
	return out
}

// tablesByKey maps each table's key to it; a partition maps to itself,
// and the walk reaches only roots.
func (g *Graph) tablesByKey() map[string]*Table {
	g.keysOnce.Do(func() {
		g.byKey = make(map[string]*Table, len(g.cat.Tables()))
		for _, t := range g.cat.Tables() {
			g.byKey[t.QualName().Key()] = t
		}
	})
	return g.byKey
}
