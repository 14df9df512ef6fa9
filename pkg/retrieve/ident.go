package retrieve

import (
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

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

// identify adds the list of tables whose identifiers the question or
// hints write out (ident.go). The index checks a tag filter on what it
// stores; tables named from the catalog carry no tags to check, so with
// a filter this list stays out.
func (p *run) identify() {
	req := p.req
	if p.cfg.Fuse.IdentifierWeight > 0 && p.cat != nil && len(req.Tags) == 0 && (len(req.Kinds) == 0 || slices.Contains(req.Kinds, chunk.KindTable)) {
		p.r.identify(p.cat, req.Question+"\n"+req.Hints, req.Schemas, p.get)
	}
}
