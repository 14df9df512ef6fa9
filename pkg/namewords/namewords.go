// Package namewords counts the distinct words in the names of a
// catalog's tables, views and columns, as search reads them (text.Terms).
//
// A daemon's vocabulary of a database (its likelihoods, its corrections'
// delete index, its identifier lists) grows with these words, not with
// the tables: ten thousand tables of ordinary words hold about twelve
// thousand of them and cost a daemon 37 MB, while as many tables of
// words no other schema uses hold 220,000 and cost 430 MB and seconds of
// every daemon's time at each version. A worker bounds them per database
// (--max-words-per-database), so that one team's catalog cannot take the
// memory every team's daemon serves from.
package namewords

import (
	"iter"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// DefaultMaxPerDatabase is the bound on one database's words that
// workers (--max-words-per-database), `schemaq catalog` and `schemaq
// check` apply by default. Ten thousand tables of ordinary words (BIRD's
// and Spider's columns pooled) hold about 12,000; a daemon's vocabulary
// of 52,000 words of no other schema took 92 MB and 1.2 s to build.
const DefaultMaxPerDatabase = 50_000

// A Counter holds the word counts of one database's catalog, and counts
// the next catalog's from them by the tables and views that changed: a
// catalog's unchanged objects are the same objects as its predecessor's
// (catalog.Catalog.ShareWith), so a migration that alters one table of
// ten thousand costs a walk of their pointers, not of their names.
//
// A Counter is not safe for concurrent use.
type Counter struct {
	// of is the catalog counted, nil before the first count; objects
	// counts, for each word, the tables and views whose names hold it.
	of      *catalog.Catalog
	objects map[string]int
}

// A Tally is a catalog's count, from a Counter, that the Counter can take
// as its own (Keep) once the catalog is written.
type Tally struct {
	// Words is how many distinct words the catalog's names hold.
	Words int
	of    *catalog.Catalog
	delta map[string]int
}

// Count counts next's words. It does not change the Counter: a catalog
// refused for its words must not become the one the next is counted from.
func (c *Counter) Count(next *catalog.Catalog) Tally {
	prev, objects := c.of, c.objects
	if prev == nil || prev.Database != next.Database {
		prev, objects = catalog.New(next.Database), nil
	}
	d := differ{delta: map[string]int{}, terms: map[string][]string{}}
	diff(&d, next.AllTables(), prev.AllTables(), next.Table, prev.Table, tableNames)
	diff(&d, next.AllViews(), prev.AllViews(), next.View, prev.View, viewNames)
	words := len(objects)
	for w, n := range d.delta {
		switch had := objects[w]; {
		case had == 0 && n > 0:
			words++
		case had > 0 && had+n == 0:
			words--
		}
	}
	return Tally{Words: words, of: next, delta: d.delta}
}

// diff counts out the objects of one kind that left or changed between
// two catalogs (by name: in and was look one up in each), and counts in
// those that came or changed. An unchanged object is most often the same
// object; one decoded again (a catalog another worker wrote) is compared
// by its names, which costs no stemming.
func diff[O any](d *differ, now, old iter.Seq2[catalog.QualName, *O], in, was func(catalog.QualName) *O, names func(*O) named) {
	for q, o := range now {
		p := was(q)
		if p == o {
			continue
		}
		n := names(o)
		if p != nil {
			pn := names(p)
			if pn.same(n) {
				continue
			}
			d.object(pn, -1)
		}
		d.object(n, +1)
	}
	for q, p := range old {
		if in(q) == nil {
			d.object(names(p), -1)
		}
	}
}

// named is what of an object's names holds words: its schema's, its
// own and its columns', with their former names.
type named struct {
	schema, name string
	renamed      []catalog.Rename
	columns      []*catalog.Column
}

func tableNames(t *catalog.Table) named { return named{t.Schema, t.Name, t.Renamed, t.Columns} }
func viewNames(v *catalog.View) named   { return named{v.Schema, v.Name, v.Renamed, v.Columns} }

func (a named) same(b named) bool {
	if a.schema != b.schema || a.name != b.name || !slices.Equal(a.renamed, b.renamed) || len(a.columns) != len(b.columns) {
		return false
	}
	for i, c := range a.columns {
		if c.Name != b.columns[i].Name || !slices.Equal(c.Renamed, b.columns[i].Renamed) {
			return false
		}
	}
	return true
}

// Keep makes t's catalog the one the Counter counts from. t must be the
// Counter's latest Count: a Tally is a difference from the catalog the
// Counter held when it was made.
func (c *Counter) Keep(t Tally) {
	if c.of == nil || c.of.Database != t.of.Database {
		c.objects = map[string]int{}
	}
	for w, n := range t.delta {
		if m := c.objects[w] + n; m > 0 {
			c.objects[w] = m
		} else {
			delete(c.objects, w)
		}
	}
	c.of = t.of
}

// Follow makes cat, a catalog that is written, the one the Counter
// counts from, counting it unless it already is.
func (c *Counter) Follow(cat *catalog.Catalog) {
	if c.of != cat {
		c.Keep(c.Count(cat))
	}
}

// Words is how many distinct words the kept catalog's names hold.
func (c *Counter) Words() int { return len(c.objects) }

// differ sums the words of the objects that left (-1) and came (+1);
// terms keeps each name's words for the walk, since a name repeats
// across tables (id, name, created_at) and stemming costs a microsecond.
type differ struct {
	delta map[string]int
	terms map[string][]string
}

// object counts each word of an object's names once: its schema's, and
// the names a question may call it and its columns by, as the
// vocabulary holds them.
func (d *differ) object(n named, sign int) {
	words := d.words(n.schema)
	for _, name := range catalog.NamesOf(n.name, n.renamed) {
		words = append(words, d.words(name)...)
	}
	for _, col := range n.columns {
		for _, name := range col.Names() {
			words = append(words, d.words(name)...)
		}
	}
	slices.Sort(words)
	for _, w := range slices.Compact(words) {
		d.delta[w] += sign
	}
}

func (d *differ) words(name string) []string {
	ws, ok := d.terms[name]
	if !ok {
		ws = text.Terms(name)
		d.terms[name] = ws
	}
	return ws
}
