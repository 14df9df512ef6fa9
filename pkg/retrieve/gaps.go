package retrieve

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

// Coverage gaps. A question over three tables often names the third
// only by a value: "films starring Kirk Jovovich" needs actor, whose
// first_name and last_name hold the name, while film and film_actor
// took every word the question has. The proper name adds the term name
// (value classes), and no table of the first five has it; actor, which
// joins film_actor, does. So a question term no table among the first
// ones covers, in its names or columns, is a gap, and a table that joins
// one of them and covers it is the likeliest missing one: CRUSH4SQL's
// coverage, asked of the join graph's next step rather than of the whole
// ranking (a cover over the first ten candidates cost as much as it
// gained: docs/retrieval.md, Questions over many tables).

// fillGaps places up to limit tables, each right after the table among
// the first depth it joins (declared or inferred), when it covers
// question terms none of the first depth covers: the one covering the
// most, by their weight in the first table's schema. Only that schema's
// tables are placed (within schemas, when set). Like named targets it
// reads only the ranking and the question, never k, so a longer list
// still starts with a shorter one.
func (r *Retriever) fillGaps(cat *catalog.Catalog, items []Item, depth, limit int, terms []Term, schemas []string) []Item {
	if depth <= 0 || limit <= 0 || len(items) == 0 {
		return items
	}
	g := r.graphs.get(cat)
	var schema string
	for _, it := range items {
		if it.Kind == chunk.KindTable || it.Kind == chunk.KindView {
			schema = g.schemaOf(it.Name)
			break
		}
	}
	if schema == "" || (len(schemas) > 0 && !slices.Contains(schemas, schema)) {
		return items
	}
	for range limit {
		f := g.gapFill(items, depth, terms, schema)
		if f.table == "" {
			break
		}
		// The table is below the first depth or unranked, so below its
		// partner: taking it out does not move the partner.
		to := tablePosition(items, f.partner) + 1
		items = moveUp(g, items, f.table, tablePosition(items, f.table), to, "")
		items[to].Placed = f.why()
	}
	return items
}

// gapFill is a table that covers gaps: the gap terms it covers, and the
// table among the first ones that it joins.
type gapFill struct {
	table, partner string
	covers         []string
	gain           float64
	junctionEnd    bool
	rank           int
}

func (f gapFill) why() string {
	return "has " + strings.Join(f.covers, ", ") + ", which no table before it covers; joins " + f.partner
}

// gapFill finds the table that fills the first depth items' gaps best.
// A term a table has only in its key columns (order_line's book_id for
// "book") is not covered there: the key names the table it references,
// which holds what the question asks of the book, its title. The best:
// the most weight covered, then the far end of a junction among them (a
// junction is asked for both its ends), then the better ranked, then the
// first by name. The zero gapFill when no table covers a gap.
func (g *graph) gapFill(items []Item, depth int, terms []Term, schema string) gapFill {
	var first []string
	covered := map[string]bool{}
	for _, it := range items[:min(depth, len(items))] {
		if it.Kind != chunk.KindTable && it.Kind != chunk.KindView {
			continue
		}
		first = append(first, it.Name)
		keys := g.keyTerms(it.Name)
		for _, w := range g.relationTerms(it.Name) {
			if !slices.Contains(keys, w) {
				covered[w] = true
			}
		}
	}
	gaps := g.gaps(terms, covered, schema)
	if len(gaps) == 0 {
		return gapFill{}
	}
	var best gapFill
	for _, p := range first {
		for c := range g.joined(p, false) {
			t := g.tables[c]
			if t == nil || t.Schema != schema || t.PartitionOf != nil || slices.Contains(first, c) {
				continue
			}
			var gain float64
			for _, w := range g.relationTerms(c) {
				gain += gaps[w]
			}
			if gain == 0 || gain < best.gain {
				continue // most neighbours of a hub end here, with nothing built
			}
			f := gapFill{table: c, partner: p, gain: gain, rank: tablePosition(items, c), junctionEnd: g.junctionEnd(p, c)}
			if f.rank < 0 {
				f.rank = len(items)
			}
			if best.table == "" || betterFill(f, best) {
				for _, w := range g.relationTerms(c) {
					if _, ok := gaps[w]; ok {
						f.covers = append(f.covers, w)
					}
				}
				best = f
			}
		}
	}
	return best
}

func betterFill(a, b gapFill) bool {
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	if a.junctionEnd != b.junctionEnd {
		return a.junctionEnd
	}
	return cmp.Or(cmp.Compare(a.rank, b.rank), strings.Compare(a.table, b.table)) < 0
}

// gaps are the question's terms (its words and their value classes, not
// the expansions that only guess at a word) that no covered table has
// and some table of schema does, each weighted by how few of the
// schema's tables and views have it, ln(1 + n/df).
func (g *graph) gaps(terms []Term, covered map[string]bool, schema string) map[string]float64 {
	part := g.vocab.parts[schema]
	if part == nil {
		return nil
	}
	out := map[string]float64{}
	for _, t := range terms {
		if (t.Why != FromQuestion && t.Why != FromValue) || covered[t.Term] {
			continue
		}
		if df := part.objDF[t.Term]; df > 0 {
			out[t.Term] = math.Log1p(float64(part.counted) / float64(df))
		}
	}
	return out
}

// junctionEnd reports whether c is an end of the junction p: p's primary
// key has two columns or more, and p joins c through one of them
// (film_actor's actor_id to actor).
func (g *graph) junctionEnd(p, c string) bool {
	t := g.tables[p]
	if t == nil || t.PrimaryKey == nil || len(t.PrimaryKey.Columns) < 2 {
		return false
	}
	inKey := func(col string) bool {
		return slices.ContainsFunc(t.PrimaryKey.Columns, func(k string) bool { return strings.EqualFold(k, col) })
	}
	for _, fk := range t.ForeignKeys {
		if fk.RefTable.Key() == c && len(fk.Columns) > 0 && inKey(fk.Columns[0]) {
			return true
		}
	}
	for _, j := range g.Inferred(p) {
		if j.FromKey() == p && j.ToKey() == c && inKey(j.FromColumn) {
			return true
		}
	}
	return false
}

// relationTerms are the analysed words of a table's or view's names and
// columns, former ones too, each once and sorted: what the vocabulary
// counted of it (schemaVocab.objTerms). The slice is the vocabulary's.
func (g *graph) relationTerms(key string) []string {
	if part := g.vocab.parts[g.schemaOf(key)]; part != nil {
		return part.objTerms[key]
	}
	return nil
}

// keyTerms are the terms a table has only in the columns that join it
// to another (its foreign keys' and its inferred joins' columns), not in
// its name or other columns: book for order_line's book_id, kept per
// catalog version. The slice is the cache's.
func (g *graph) keyTerms(key string) []string {
	return g.keyWords.Get(key, func() []string {
		t := g.tables[key]
		if t == nil {
			return nil
		}
		joins := map[string]bool{}
		for _, fk := range t.ForeignKeys {
			for _, c := range fk.Columns {
				joins[strings.ToLower(c)] = true
			}
		}
		for _, j := range g.Inferred(key) {
			if j.FromKey() == key {
				joins[strings.ToLower(j.FromColumn)] = true
			}
		}
		if len(joins) == 0 {
			return nil
		}
		own := map[string]bool{}
		for _, n := range catalog.NamesOf(t.Name, t.Renamed) {
			for _, w := range text.Terms(n) {
				own[w] = true
			}
		}
		for _, c := range t.Columns {
			if !joins[strings.ToLower(c.Name)] {
				for _, n := range c.Names() {
					for _, w := range text.Terms(n) {
						own[w] = true
					}
				}
			}
		}
		var out []string
		for c := range joins {
			for _, w := range text.Terms(c) {
				if !own[w] && !slices.Contains(out, w) {
					out = append(out, w)
				}
			}
		}
		slices.Sort(out)
		return out
	})
}

// schemaOf is the schema of the table or view keyed key; "" when the
// catalog has neither.
func (g *graph) schemaOf(key string) string {
	if t := g.tables[key]; t != nil {
		return t.Schema
	}
	if v := g.views[key]; v != nil {
		return v.Schema
	}
	return ""
}
