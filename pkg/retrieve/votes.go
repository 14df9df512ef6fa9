package retrieve

import (
	"cmp"
	"slices"

	"github.com/schemaq/schemaq/pkg/chunk"
)

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
