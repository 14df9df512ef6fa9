package retrieve

import (
	"maps"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// A vocabulary is built per catalog version, and a search waits for it
// after a migration. Rebuilt whole, most of its cost went to analysing
// names that had not changed. So each schema's share is kept apart (schemaVocab), reused
// while the schema's tables and views are the same objects (catalogs
// share what a migration did not change), and the whole is the previous
// version's with only the changed schemas taken out and put back in.
// vocab_test.go holds the result to a plain rebuild.

// schemaVocab is one schema's share of a vocabulary.
type schemaVocab struct {
	objs    []any // its tables and views, in catalog order: what it was built from
	names   map[string]bool
	columns map[string]bool
	post    map[string]float64 // term → weighted count (names twice, columns once), compounds too
	length  float64
	heads   map[string][]string // head → this schema's compounds ending in it
	idents  map[string][]string // table, view and column name, lower case → this schema's tables and views that have it
	objDF   map[string]int      // term → how many of its tables and views have it in their name or columns
	counted int                 // its tables and views, partitions aside: what objDF counts
}

func newSchemaVocab(schema string, objs []any) *schemaVocab {
	p := &schemaVocab{objs: objs, names: map[string]bool{}, columns: map[string]bool{}, post: map[string]float64{}, heads: map[string][]string{},
		idents: map[string][]string{}, objDF: map[string]int{}}
	ident := func(name, key string) {
		n := strings.ToLower(name)
		// One table's names come together: a repeat (a column named
		// like its table) is the last key.
		if l := p.idents[n]; len(l) == 0 || l[len(l)-1] != key {
			p.idents[n] = append(l, key)
		}
	}
	count := func(terms []string, w float64) {
		for _, t := range append(terms, text.Compounds(terms)...) {
			p.post[t] += w
			p.length += w
		}
	}
	// object files one table or view; counted says whether it counts in
	// objDF: a partition is its parent's rows, not a table of its own,
	// and a table of many partitions would make every word of it common.
	object := func(name string, renamed []catalog.Rename, columns []*catalog.Column, counted bool) {
		for _, t := range text.Terms(schema) {
			p.names[t] = true
		}
		has := map[string]bool{}
		// Former names are names of the object too, a question may
		// still use them; each is its own phrase for compounds.
		for _, n := range namesOf(name, renamed) {
			ts := text.Terms(n)
			for _, t := range ts {
				p.names[t] = true
				has[t] = true
			}
			count(ts, 2)
		}
		for _, c := range columns {
			for _, n := range columnNamesOf(c) {
				ts := text.Terms(n)
				for _, t := range ts {
					p.columns[t] = true
					has[t] = true
				}
				count(ts, 1)
			}
		}
		if counted {
			for t := range has {
				p.objDF[t]++
			}
			p.counted++
		}
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *catalog.Table:
			object(o.Name, o.Renamed, o.Columns, o.PartitionOf == nil)
			if o.PartitionOf != nil {
				// Its parent is the table a query names, and a
				// table of many partitions would push every one of
				// its names past maxIdentifierOwners.
				break
			}
			key := o.QualName().Key()
			ident(o.Name, key)
			for _, r := range o.Renamed {
				ident(formerName(r), key)
			}
			for _, c := range o.Columns {
				ident(c.Name, key)
			}
		case *catalog.View:
			object(o.Name, o.Renamed, o.Columns, true)
			key := o.QualName().Key()
			ident(o.Name, key)
			for _, r := range o.Renamed {
				ident(formerName(r), key)
			}
			for _, c := range o.Columns {
				ident(c.Name, key)
			}
		}
	}
	uses := func(t string) bool { return p.names[t] || p.columns[t] }
	for _, m := range []map[string]bool{p.names, p.columns} {
		for t := range m {
			// Only the head, the last part, leads to the compound: a
			// productcategory is a kind of category record, and a
			// question about products is not about it. With both parts,
			// the compound's rare term pulled it to the top of every
			// question about products.
			if _, head, ok := split(t, uses); ok && !slices.Contains(p.heads[head], t) {
				p.heads[head] = append(p.heads[head], t)
			}
		}
	}
	return p
}

// words calls fn with each distinct term of the schema's names and
// columns (what df counts).
func (p *schemaVocab) words(fn func(string)) {
	for t := range p.names {
		fn(t)
	}
	for t := range p.columns {
		if !p.names[t] {
			fn(t)
		}
	}
}

// objectsBySchema groups cat's tables, then its views, by schema.
func objectsBySchema(cat *catalog.Catalog) map[string][]any {
	out := map[string][]any{}
	for _, t := range cat.Tables() {
		out[t.Schema] = append(out[t.Schema], t)
	}
	for _, v := range cat.Views() {
		out[v.Schema] = append(out[v.Schema], v)
	}
	return out
}

// newVocab builds cat's vocabulary from prev's (nil: from nothing),
// analysing only the schemas whose objects changed.
func newVocab(cat *catalog.Catalog, prev *vocab) *vocab {
	if prev == nil {
		prev = emptyVocab()
	}
	parts := map[string]*schemaVocab{}
	var gone, came []string // schemas whose share leaves, and comes in
	for schema, objs := range objectsBySchema(cat) {
		if old := prev.parts[schema]; old != nil && slices.Equal(old.objs, objs) {
			parts[schema] = old
			continue
		}
		parts[schema] = newSchemaVocab(schema, objs)
		came = append(came, schema)
		if prev.parts[schema] != nil {
			gone = append(gone, schema)
		}
	}
	for schema := range prev.parts {
		if parts[schema] == nil {
			gone = append(gone, schema)
		}
	}
	v := &vocab{
		parts:    parts,
		names:    maps.Clone(prev.names),
		columns:  maps.Clone(prev.columns),
		df:       maps.Clone(prev.df),
		postings: maps.Clone(prev.postings),
		length:   maps.Clone(prev.length),
		coll:     maps.Clone(prev.coll),
		deletes:  maps.Clone(prev.deletes),
		heads:    maps.Clone(prev.heads),
		headRefs: maps.Clone(prev.headRefs),
		idents:   maps.Clone(prev.idents),
		objDF:    maps.Clone(prev.objDF),
		objects:  prev.objects,
	}
	// Inner maps are shared with prev until changed: each is copied once,
	// on its first change here.
	posted, headed, identified := map[string]bool{}, map[string]bool{}, map[string]bool{}
	posting := func(t string) map[string]float64 { return ownInner(v.postings, posted, t) }
	identifying := func(n string) map[string]int { return ownInner(v.idents, identified, n) }
	heading := func(h string) map[string]int { return ownInner(v.headRefs, headed, h) }
	words := map[string]bool{} // terms whose df changed
	for _, schema := range gone {
		p := prev.parts[schema]
		delete(v.names, schema)
		delete(v.columns, schema)
		delete(v.length, schema)
		for t := range p.post {
			delete(posting(t), schema)
		}
		for n := range p.idents {
			delete(identifying(n), schema)
		}
		for t, n := range p.objDF {
			if v.objDF[t] -= n; v.objDF[t] == 0 {
				delete(v.objDF, t)
			}
		}
		v.objects -= p.counted
		p.words(func(t string) { v.df[t]--; words[t] = true })
		for h, cs := range p.heads {
			refs := heading(h)
			for _, c := range cs {
				refs[c]--
			}
		}
	}
	for _, schema := range came {
		p := parts[schema]
		v.names[schema], v.columns[schema], v.length[schema] = p.names, p.columns, p.length
		for t, w := range p.post {
			posting(t)[schema] = w
		}
		for n, keys := range p.idents {
			identifying(n)[schema] = len(keys)
		}
		for t, n := range p.objDF {
			v.objDF[t] += n
		}
		v.objects += p.counted
		p.words(func(t string) { v.df[t]++; words[t] = true })
		for h, cs := range p.heads {
			refs := heading(h)
			for _, c := range cs {
				refs[c]++
			}
		}
	}
	// Collection counts are summed again from the postings, not adjusted,
	// so that no rounding builds up over a long history.
	for t := range posted {
		if len(v.postings[t]) == 0 {
			delete(v.postings, t)
			delete(v.coll, t)
			continue
		}
		var sum float64
		for _, w := range v.postings[t] {
			sum += w
		}
		v.coll[t] = sum
	}
	for n := range identified {
		if len(v.idents[n]) == 0 {
			delete(v.idents, n)
		}
	}
	v.total = 0
	for _, l := range v.length {
		v.total += l
	}
	for t := range words {
		was, is := prev.df[t] > 0, v.df[t] > 0
		if !is {
			delete(v.df, t)
		}
		switch {
		case is && !was:
			deletions(t, func(d string) { v.deletes[d] = append(slices.Clip(v.deletes[d]), t) })
		case was && !is:
			deletions(t, func(d string) {
				rest := slices.DeleteFunc(slices.Clone(v.deletes[d]), func(x string) bool { return x == t })
				if len(rest) == 0 {
					delete(v.deletes, d)
				} else {
					v.deletes[d] = rest
				}
			})
		}
	}
	for h := range headed {
		var cs []string
		for c, n := range v.headRefs[h] {
			if n > 0 {
				cs = append(cs, c)
			} else {
				delete(v.headRefs[h], c)
			}
		}
		if len(cs) == 0 {
			delete(v.heads, h)
			delete(v.headRefs, h)
			continue
		}
		slices.Sort(cs) // map order must not leak into query order
		v.heads[h] = cs
	}
	return v
}

// ownInner returns m[k] for writing: a copy of the inner map shared with
// the previous vocabulary, made on the first call for k (recorded in
// owned).
func ownInner[V any](m map[string]map[string]V, owned map[string]bool, k string) map[string]V {
	if !owned[k] {
		owned[k] = true
		m[k] = maps.Clone(m[k])
		if m[k] == nil {
			m[k] = map[string]V{}
		}
	}
	return m[k]
}

// emptyVocab is the vocabulary of no catalog, the start of a build from
// nothing: its maps exist, so that their clones do too.
func emptyVocab() *vocab {
	return &vocab{names: map[string]map[string]bool{}, columns: map[string]map[string]bool{}, df: map[string]int{},
		postings: map[string]map[string]float64{}, length: map[string]float64{}, coll: map[string]float64{},
		deletes: map[string][]string{}, heads: map[string][]string{}, headRefs: map[string]map[string]int{},
		idents: map[string]map[string]int{}, objDF: map[string]int{}}
}

// deletions calls fn with the keys a term is filed under in the
// symmetric-delete index: itself and each one-letter deletion (a doubled
// letter deletes to one variant). Terms under three letters are not
// filed.
func deletions(t string, fn func(string)) {
	if len(t) < 3 {
		return
	}
	fn(t)
	for i := range len(t) {
		if i == 0 || t[i] != t[i-1] {
			fn(t[:i] + t[i+1:])
		}
	}
}

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

// vocab scores schemas as documents: a schema's words are its name, its
// tables' and views' names and their column names. A question term found
// in a schema scores its inverse schema frequency (rare words say more
// about which database a question is about), twice when it names a table
// or the schema itself.
type vocab struct {
	names   map[string]map[string]bool // schema → terms of its schema, table and view names
	columns map[string]map[string]bool // schema → terms of its column names
	df      map[string]int             // term → number of schemas that have it
	// postings, length, coll and total are the schemas as documents for
	// query likelihood: a term's weighted count in each schema that has
	// it (names twice, columns once), each schema's length, and the
	// whole catalog's counts.
	postings map[string]map[string]float64
	length   map[string]float64
	coll     map[string]float64
	total    float64
	// deletes maps every term of 3+ letters, and each of its one-letter
	// deletions, to the terms it came from: the symmetric-delete index
	// that finds the terms one edit from a misspelt word. Words to
	// correct have 4+ letters, but a short term still makes a
	// correction ambiguous (sage: age or sale).
	deletes map[string][]string
	// heads maps a word to the run-together identifier terms it ends
	// (category → productcategory), where the schema that has the compound
	// also uses both parts as words of their own.
	heads map[string][]string

	// parts are the schemas' own shares of all the above, from which a
	// vocabulary is updated rather than rebuilt (vocab.go); headRefs
	// counts the schemas behind each compound of heads.
	parts    map[string]*schemaVocab
	headRefs map[string]map[string]int
	// idents maps each table and column name, lower case, to the
	// schemas that have it and how many of their tables do (ident.go).
	idents map[string]map[string]int
	// objDF counts, per term, the tables and views that have it in
	// their name or columns, out of objects (partitions aside).
	objDF   map[string]int
	objects int
}

// split reads a run-together identifier term (productcategory) as the two
// words it is made of (product, category) when the schema uses both as
// words of their own: uses says whether it does. Parts are at least three
// letters, the compound at least seven; the first split point that works
// wins. Checking against the schema's own words, not a dictionary, keeps
// out splits like member|ship and bal|lots.
func split(t string, uses func(string) bool) (a, b string, ok bool) {
	if len(t) < 7 {
		return "", "", false
	}
	for i := 3; i <= len(t)-3; i++ {
		if uses(t[:i]) && uses(t[i:]) {
			return t[:i], t[i:], true
		}
	}
	return "", "", false
}

// maxIdentifierBytes is PostgreSQL's limit on an identifier's length
// (NAMEDATALEN − 1); an identifier's terms are no longer.
const maxIdentifierBytes = 63

// correction is the one identifier term a word not in the vocabulary is a
// single edit (insertion, deletion, substitution) away from, or "" when
// there is none or more than one: a misspelt question word ("carr",
// "adress") or a near form the stemmer does not fold ("weigh" → weight).
func (v *vocab) correction(w string) string {
	if len(w) < 4 || v.df[w] > 0 || strings.ContainsAny(w, "0123456789") {
		return "" // numbers are values, not misspelt names (5000 is not 500)
	}
	if len(w) > maxIdentifierBytes+1 {
		// No identifier term is longer, so none is one edit away; and the
		// deletes below cost the square of the word's length, which a
		// 4 KB question of one word would otherwise spend.
		return ""
	}
	// A doubled letter typed once too often (carr) is the likeliest
	// slip: its undoubled form wins outright.
	for i := 1; i < len(w); i++ {
		if w[i] == w[i-1] && v.df[w[:i]+w[i+1:]] > 0 {
			return w[:i] + w[i+1:]
		}
	}
	found := ""
	check := func(key string) bool {
		for _, t := range v.deletes[key] {
			if t != found && editOne(w, t) {
				if found != "" {
					return false // ambiguous
				}
				found = t
			}
		}
		return true
	}
	if !check(w) {
		return ""
	}
	for i := range len(w) {
		if !check(w[:i] + w[i+1:]) {
			return ""
		}
	}
	// A slip seldom changes a word's first letter, and a real word
	// whose first letter is swapped is most often another real word
	// (rent and sent, dark and park, join and coin): not a misspelling
	// of it. A letter too many or too few in front (sname) still is.
	if found != "" && len(found) == len(w) && found[0] != w[0] {
		return ""
	}
	return found
}

// editOne reports whether a and b differ by exactly one insertion,
// deletion or substitution.
func editOne(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	if la-lb > 1 || lb-la > 1 {
		return false
	}
	i := 0
	for i < la && i < lb && a[i] == b[i] {
		i++
	}
	switch {
	case la == lb:
		return a[i+1:] == b[i+1:]
	case la < lb:
		return a[i:] == b[i+1:]
	default:
		return a[i+1:] == b[i:]
	}
}

// formerName is the name, without its schema, a relation had before a
// rename.
func formerName(r catalog.Rename) string {
	name := r.From
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Trim(name, `"`)
}

// namesOf is a relation's name and its former names; columnNamesOf a
// column's.
func namesOf(name string, renamed []catalog.Rename) []string {
	out := []string{name}
	for _, r := range renamed {
		out = append(out, formerName(r))
	}
	return out
}

func columnNamesOf(c *catalog.Column) []string {
	out := []string{c.Name}
	for _, r := range c.Renamed {
		out = append(out, r.From)
	}
	return out
}
