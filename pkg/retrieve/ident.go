package retrieve

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

// maxIdentifierOwners bounds how many tables an identifier may belong
// to and still count: created_at or user_id in a big schema say little
// about which table is meant.
const maxIdentifierOwners = 10

// owners returns the tables and views that have a name or column of
// this name (lower case), in schema order, or nil when none do or more
// than maxIdentifierOwners do.
func (v *vocab) owners(name string) []string {
	bySchema := v.idents[name]
	n := 0
	for _, c := range bySchema {
		n += c
	}
	if n == 0 || n > maxIdentifierOwners {
		return nil
	}
	schemas := slices.Sorted(maps.Keys(bySchema))
	out := make([]string, 0, n)
	for _, s := range schemas {
		out = append(out, v.parts[s].idents[name]...)
	}
	return out
}

// identifierRef is an identifier the text spells out and the tables it
// names.
type identifierRef struct {
	name   string
	tables []string
}

// identifierRefs finds the identifiers s spells out (text.Identifiers)
// that name tables or columns of g's catalog, the most specific (fewest
// tables) first. A qualified name is a table (schema.table) or a column
// of the named table (table.column). The analyzer splits a spelled-out
// name into words like any other (movie, release, year), and those
// words are common; the name as written is not, and says exactly which
// tables are meant.
func (g *graph) identifierRefs(s string) []identifierRef {
	var out []identifierRef
	seen := map[string]bool{}
	for _, id := range text.Identifiers(s) {
		ref := identifierRef{name: id, tables: g.vocab.owners(id)}
		if len(ref.tables) == 0 && strings.Contains(id, ".") {
			ref = g.qualified(id)
		}
		if len(ref.tables) == 0 || len(ref.tables) > maxIdentifierOwners || seen[ref.name] {
			continue
		}
		seen[ref.name] = true
		out = append(out, ref)
	}
	slices.SortStableFunc(out, func(a, b identifierRef) int { return len(a.tables) - len(b.tables) })
	return out
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

// identify ranks, as a list of its own, the tables and views that own an
// identifier the question or hints spell out, in the order of
// identifierRefs; those no retriever found join the candidates through
// get.
func (r *Retriever) identify(cat *catalog.Catalog, text string, schemas []string, get func(chunk.Chunk) *object) {
	g := r.graphs.get(cat)
	var list []listed
	for _, ref := range g.identifierRefs(text) {
		for _, key := range ref.tables {
			list = append(list, listed{key, ref.name})
		}
	}
	g.rankList(list, schemas, get, func(o *object, _ listed) (*int, *string) { return &o.ex.IdentifierRank, &o.ex.Identifier })
}

// listed is a table or view of a stage's own list, and why it is there.
type listed struct{ key, why string }

// byVotes lists the tables and views votes has, the most voted first
// (ties by key, so that the order is deterministic), each with its why
// from by.
func byVotes(votes map[string]float64, by map[string]string) []listed {
	list := make([]listed, 0, len(votes))
	for key := range votes {
		list = append(list, listed{key, by[key]})
	}
	slices.SortFunc(list, func(a, b listed) int {
		if c := cmp.Compare(votes[b.key], votes[a.key]); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	return list
}

// rankList gives the tables and views of a stage's list ranks 1, 2, … in
// its order, with the why of their first place (rank says where an
// object keeps them), leaving out those outside schemas; those no
// retriever found join the candidates through get, rendered as the
// index holds them.
func (g *graph) rankList(list []listed, schemas []string, get func(chunk.Chunk) *object, rank func(*object, listed) (*int, *string)) {
	n := 0
	for _, l := range list {
		if schema, _ := g.relation(l.key); schema == "" || (len(schemas) > 0 && !slices.Contains(schemas, schema)) {
			continue
		}
		var o *object
		for _, c := range g.render(l.key) {
			o = get(c)
		}
		if o == nil {
			continue
		}
		if at, why := rank(o, l); *at == 0 {
			n++
			*at, *why = n, l.why
		}
	}
}
