package retrieve

import (
	"maps"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// schemaVocab is one schema's share of a vocabulary. It is the sum of
// its tables' and views' shares (objectVocab), so that a migration
// that changes a few of a big schema's tables takes theirs out and puts
// the new ones in (nextSchemaVocab), rather than analysing every name
// of the schema again: ten thousand tables in one schema cost 0.4 s a
// version that way.
type schemaVocab struct {
	objs []any // its tables and views, in catalog order: what it was built from
	// names and columns count the tables and views behind each term of
	// their names and of their column names (the schema's own name is a
	// name of each), so that a term leaves with the last; a term none
	// has is not held.
	names, columns map[string]int
	post           map[string]float64 // term → weighted count (names twice, columns once), compounds too
	length         float64
	heads          map[string][]string // head → this schema's compounds ending in it
	idents         map[string][]string // table, view and column name, lower case → this schema's tables and views that have it, in catalog order
	objDF          map[string]int      // term → how many of its tables and views have it in their name or columns
	counted        int                 // its tables and views, partitions aside: what objDF counts
	// objTerms are each table's and view's terms (by key), sorted: what
	// it has in its names and columns, which coverage gaps compare.
	objTerms map[string][]string
}

// objectVocab is one table's or view's share of its schema's.
type objectVocab struct {
	key string
	// terms are the distinct terms of its names and columns, sorted;
	// in says, for each, whether it is in a name (inName) or a column
	// (inColumn) or both.
	terms []string
	in    []uint8
	// post lists each phrase's terms and compounds with their weight,
	// repeats kept: what the schema's post sums.
	post    []weighted
	counted bool // it counts in objDF (a partition does not)
	// idents are its name, former names and column names, lower case,
	// each once; nil when it is not identified (a partition).
	idents []string
}

type weighted struct {
	term string
	w    float64
}

const (
	inName uint8 = 1 << iota
	inColumn
)

// analyseObject is the share of the table or view o.
func analyseObject(o any) objectVocab {
	switch o := o.(type) {
	case *catalog.Table:
		// A partition is its parent's rows, not a table of its own: it
		// counts in neither objDF nor the identifiers. Its parent is the
		// table a query names, and a table of many partitions would make
		// every word of it common and push every one of its names past
		// maxIdentifierOwners.
		return newObjectVocab(o.QualName().Key(), o.Name, o.Renamed, o.Columns, o.PartitionOf == nil)
	case *catalog.View:
		return newObjectVocab(o.QualName().Key(), o.Name, o.Renamed, o.Columns, true)
	}
	return objectVocab{}
}

func newObjectVocab(key, name string, renamed []catalog.Rename, columns []*catalog.Column, counted bool) objectVocab {
	ov := objectVocab{key: key, counted: counted}
	// A slice sorted once costs less than a map per table.
	type found struct {
		term string
		in   uint8
	}
	var in []found
	phrase := func(ts []string, w float64, where uint8) {
		for _, t := range ts {
			in = append(in, found{t, where})
		}
		for _, t := range append(ts, text.Compounds(ts)...) {
			ov.post = append(ov.post, weighted{t, w})
		}
	}
	// Former names are names of the object too, a question may still
	// use them; each is its own phrase for compounds.
	for _, n := range catalog.NamesOf(name, renamed) {
		phrase(text.Terms(n), 2, inName)
	}
	for _, c := range columns {
		for _, n := range c.Names() {
			phrase(text.Terms(n), 1, inColumn)
		}
	}
	slices.SortFunc(in, func(a, b found) int { return strings.Compare(a.term, b.term) })
	for _, f := range in {
		if n := len(ov.terms); n > 0 && ov.terms[n-1] == f.term {
			ov.in[n-1] |= f.in
			continue
		}
		ov.terms, ov.in = append(ov.terms, f.term), append(ov.in, f.in)
	}
	if counted {
		ov.idents = appendIdent(ov.idents, name)
		for _, r := range renamed {
			ov.idents = appendIdent(ov.idents, r.Name())
		}
		for _, c := range columns {
			ov.idents = appendIdent(ov.idents, c.Name)
		}
	}
	return ov
}

// appendIdent appends name, lower case, unless it is there: a column
// named like its table is one identifier of it.
func appendIdent(idents []string, name string) []string {
	n := strings.ToLower(name)
	if slices.Contains(idents, n) {
		return idents
	}
	return append(idents, n)
}

func newSchemaVocab(schema string, objs []any) *schemaVocab {
	p := &schemaVocab{objs: objs, names: map[string]int{}, columns: map[string]int{},
		post: map[string]float64{}, heads: map[string][]string{}, idents: map[string][]string{}, objDF: map[string]int{},
		objTerms: make(map[string][]string, len(objs))}
	schemaTerms := distinctTerms(schema)
	for _, o := range objs {
		ov := analyseObject(o)
		p.apply(schemaTerms, ov, 1, nil)
		for _, n := range ov.idents {
			p.idents[n] = append(p.idents[n], ov.key)
		}
	}
	p.fileHeads()
	return p
}

// shareDelta is what nextSchemaVocab changed: the vocabulary updates
// these and nothing else of the schema's.
type shareDelta struct {
	post   map[string]bool // terms whose weighted count changed
	terms  map[string]bool // terms of the tables and views that left or came (objDF, df)
	idents map[string]bool // identifiers whose tables changed
	// sets says a term entered or left names or columns, and so the
	// heads were filed again.
	sets bool
}

// nextSchemaVocab is schema's share for objs, from old's: the shares of
// the tables and views that left old taken out, and those that came put
// in, with what changed. nil when most of the schema changed: a new
// share is then as cheap.
func nextSchemaVocab(schema string, old *schemaVocab, objs []any) (*schemaVocab, *shareDelta) {
	left, came := changedObjects(old.objs, objs)
	if len(left)+len(came) > len(objs)/2 {
		return nil, nil
	}
	p := &schemaVocab{objs: objs, names: maps.Clone(old.names), columns: maps.Clone(old.columns), post: maps.Clone(old.post),
		length: old.length, heads: old.heads, idents: maps.Clone(old.idents), objDF: maps.Clone(old.objDF),
		counted: old.counted, objTerms: maps.Clone(old.objTerms)}
	d := &shareDelta{post: map[string]bool{}, terms: map[string]bool{}, idents: map[string]bool{}}
	schemaTerms := distinctTerms(schema)
	for _, o := range left {
		p.takeOut(schemaTerms, analyseObject(o), d)
	}
	if len(came) > 0 {
		at := make(map[string]int, len(objs))
		for i, o := range objs {
			at[objectKey(o)] = i
		}
		for _, o := range came {
			p.putIn(schemaTerms, analyseObject(o), at, d)
		}
	}
	if d.sets {
		p.heads = map[string][]string{}
		p.fileHeads()
	}
	return p, d
}

// changedObjects are the objects of was that is lacks (left) and those
// of is that was lacks (came), in their order.
func changedObjects(was, is []any) (left, came []any) {
	had := make(map[any]bool, len(was))
	for _, o := range was {
		had[o] = true
	}
	has := make(map[any]bool, len(is))
	for _, o := range is {
		has[o] = true
	}
	for _, o := range was {
		if !has[o] {
			left = append(left, o)
		}
	}
	for _, o := range is {
		if !had[o] {
			came = append(came, o)
		}
	}
	return left, came
}

// takeOut takes the share ov out, and its key out of its identifiers'
// lists.
func (p *schemaVocab) takeOut(schemaTerms []string, ov objectVocab, d *shareDelta) {
	p.apply(schemaTerms, ov, -1, d)
	for _, n := range ov.idents {
		p.ownIdent(d, n)
		if l := slices.DeleteFunc(p.idents[n], func(k string) bool { return k == ov.key }); len(l) > 0 {
			p.idents[n] = l
		} else {
			delete(p.idents, n)
		}
	}
}

// putIn puts the share ov in, and its key into its identifiers' lists
// where the catalog's order (at: key → place) has it.
func (p *schemaVocab) putIn(schemaTerms []string, ov objectVocab, at map[string]int, d *shareDelta) {
	p.apply(schemaTerms, ov, 1, d)
	for _, n := range ov.idents {
		p.ownIdent(d, n)
		l := p.idents[n]
		i, _ := slices.BinarySearchFunc(l, at[ov.key], func(k string, pos int) int { return at[k] - pos })
		p.idents[n] = slices.Insert(l, i, ov.key)
	}
}

// distinctTerms are the terms of s, each once: the schema's name counts
// once for each of its tables and views.
func distinctTerms(s string) []string {
	return slices.Compact(slices.Sorted(slices.Values(text.Terms(s))))
}

// objectKey is a table's or view's key.
func objectKey(o any) string {
	switch o := o.(type) {
	case *catalog.Table:
		return o.QualName().Key()
	case *catalog.View:
		return o.QualName().Key()
	}
	return ""
}

// ownIdent copies n's list of tables, shared with the share before, on
// its first change.
func (p *schemaVocab) ownIdent(d *shareDelta, n string) {
	if !d.idents[n] {
		d.idents[n] = true
		if l, ok := p.idents[n]; ok {
			p.idents[n] = slices.Clone(l)
		}
	}
}

// apply adds the share ov (sign 1) or takes it out (-1), noting in d
// (when not nil) what changed. The schema's own name is a name of each
// of its tables and views.
func (p *schemaVocab) apply(schemaTerms []string, ov objectVocab, sign int, d *shareDelta) {
	for _, t := range schemaTerms {
		if i, ok := slices.BinarySearch(ov.terms, t); !ok || ov.in[i]&inName == 0 {
			ref(p.names, t, sign, d) // once for a table named like its schema
		}
	}
	for i, t := range ov.terms {
		if ov.in[i]&inName != 0 {
			ref(p.names, t, sign, d)
		}
		if ov.in[i]&inColumn != 0 {
			ref(p.columns, t, sign, d)
		}
		if ov.counted {
			if p.objDF[t] += sign; p.objDF[t] == 0 {
				delete(p.objDF, t)
			}
		}
		if d != nil {
			d.terms[t] = true
		}
	}
	for _, tw := range ov.post {
		// The weights are whole numbers: what is taken out leaves
		// exactly what the others put in.
		if p.post[tw.term] += float64(sign) * tw.w; p.post[tw.term] == 0 {
			delete(p.post, tw.term)
		}
		p.length += float64(sign) * tw.w
		if d != nil {
			d.post[tw.term] = true
		}
	}
	if ov.counted {
		p.counted += sign
	}
	if sign > 0 {
		p.objTerms[ov.key] = ov.terms
	} else {
		delete(p.objTerms, ov.key)
	}
}

// ref counts one more (sign 1) or one less (-1) table or view behind t
// in refs, noting in d when t comes or leaves.
func ref(refs map[string]int, t string, sign int, d *shareDelta) {
	refs[t] += sign
	n := refs[t]
	if n == 0 {
		delete(refs, t)
	}
	if d != nil && (n == 0 || (sign > 0 && n == 1)) {
		d.sets = true
	}
}

// fileHeads files each run-together term under its head, the last part.
// Only the head leads to the compound: a productcategory is a kind of
// category record, and a question about products is not about it. With
// both parts, the compound's rare term pulled it to the top of every
// question about products.
func (p *schemaVocab) fileHeads() {
	uses := func(t string) bool { return p.names[t] > 0 || p.columns[t] > 0 }
	for _, m := range []map[string]int{p.names, p.columns} {
		for t := range m {
			if _, head, ok := split(t, uses); ok && !slices.Contains(p.heads[head], t) {
				p.heads[head] = append(p.heads[head], t)
			}
		}
	}
}

// words calls fn with each distinct term of the schema's names and
// columns (what df counts).
func (p *schemaVocab) words(fn func(string)) {
	for t := range p.names {
		fn(t)
	}
	for t := range p.columns {
		if p.names[t] == 0 {
			fn(t)
		}
	}
}
