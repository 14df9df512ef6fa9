package retrieve

import (
	"maps"
	"slices"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// A vocabulary is built per catalog version, and a search waits for it
// after a migration. Rebuilt whole, most of its cost went to analysing
// names that had not changed. So each schema's share is kept apart
// (schemaVocab), reused while the schema's tables and views are the same
// objects (catalogs share what a migration did not change), and the
// whole is the previous version's with only the changed schemas taken
// out and put back in. Within a changed schema, only the tables and
// views that changed are analysed, and only the terms they hold are
// updated in the whole (nextSchemaVocab, shareDelta). vocab_test.go
// holds the result to a plain rebuild.

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
	parts, gone, came, changed := schemaChanges(cat, prev)
	u := newVocabUpdate(prev, parts)
	for _, schema := range gone {
		u.remove(schema, prev.parts[schema])
	}
	for _, schema := range came {
		u.add(schema, parts[schema])
	}
	for schema, d := range changed {
		u.change(schema, prev.parts[schema], parts[schema], d)
	}
	u.sumCollection()
	u.refileNearTerms()
	u.settleHeads()
	return u.v
}

// schemaChanges returns cat's schemas' shares, reusing prev's where the
// objects are the same, with the schemas whose share leaves (gone) and
// comes in (came): a schema built again is both. A schema of which a
// few tables changed is updated from prev's share instead, with what
// changed (changed).
func schemaChanges(cat *catalog.Catalog, prev *vocab) (parts map[string]*schemaVocab, gone, came []string, changed map[string]*shareDelta) {
	parts, changed = map[string]*schemaVocab{}, map[string]*shareDelta{}
	for schema, objs := range objectsBySchema(cat) {
		old := prev.parts[schema]
		if old != nil && slices.Equal(old.objs, objs) {
			parts[schema] = old
			continue
		}
		if old != nil {
			if p, d := nextSchemaVocab(schema, old, objs); p != nil {
				parts[schema], changed[schema] = p, d
				continue
			}
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
	return parts, gone, came, changed
}

// vocabUpdate is one build of a vocabulary from the previous one. Inner
// maps are shared with prev until changed: each is copied once, on its
// first change, and the owned sets record which; the last stages visit
// only what changed.
type vocabUpdate struct {
	prev, v                    *vocab
	posted, headed, identified map[string]bool
	words                      map[string]bool // terms whose df changed
}

func newVocabUpdate(prev *vocab, parts map[string]*schemaVocab) *vocabUpdate {
	return &vocabUpdate{
		prev: prev,
		v: &vocab{
			parts:    parts,
			names:    maps.Clone(prev.names),
			columns:  maps.Clone(prev.columns),
			df:       maps.Clone(prev.df),
			postings: maps.Clone(prev.postings),
			length:   maps.Clone(prev.length),
			coll:     maps.Clone(prev.coll),
			deletes:  maps.Clone(prev.deletes),
			extends:  maps.Clone(prev.extends),
			heads:    maps.Clone(prev.heads),
			headRefs: maps.Clone(prev.headRefs),
			idents:   maps.Clone(prev.idents),
			objDF:    maps.Clone(prev.objDF),
			objects:  prev.objects,
		},
		posted: map[string]bool{}, headed: map[string]bool{}, identified: map[string]bool{}, words: map[string]bool{},
	}
}

func (u *vocabUpdate) posting(t string) map[string]float64 {
	return ownInner(u.v.postings, u.posted, t)
}

func (u *vocabUpdate) identifying(n string) map[string]int {
	return ownInner(u.v.idents, u.identified, n)
}

func (u *vocabUpdate) heading(h string) map[string]int {
	return ownInner(u.v.headRefs, u.headed, h)
}

// remove takes schema's share p out.
func (u *vocabUpdate) remove(schema string, p *schemaVocab) {
	v := u.v
	delete(v.names, schema)
	delete(v.columns, schema)
	delete(v.length, schema)
	for t := range p.post {
		delete(u.posting(t), schema)
	}
	for n := range p.idents {
		delete(u.identifying(n), schema)
	}
	for t, n := range p.objDF {
		if v.objDF[t] -= n; v.objDF[t] == 0 {
			delete(v.objDF, t)
		}
	}
	v.objects -= p.counted
	p.words(func(t string) { v.df[t]--; u.words[t] = true })
	for h, cs := range p.heads {
		refs := u.heading(h)
		for _, c := range cs {
			refs[c]--
		}
	}
}

// add puts schema's share p in.
func (u *vocabUpdate) add(schema string, p *schemaVocab) {
	v := u.v
	v.names[schema], v.columns[schema], v.length[schema] = p.names, p.columns, p.length
	for t, w := range p.post {
		u.posting(t)[schema] = w
	}
	for n, keys := range p.idents {
		u.identifying(n)[schema] = len(keys)
	}
	for t, n := range p.objDF {
		v.objDF[t] += n
	}
	v.objects += p.counted
	p.words(func(t string) { v.df[t]++; u.words[t] = true })
	for h, cs := range p.heads {
		refs := u.heading(h)
		for _, c := range cs {
			refs[c]++
		}
	}
}

// change puts schema's share p in place of old, which it was updated
// from with d: only the terms and identifiers d names are visited.
func (u *vocabUpdate) change(schema string, old, p *schemaVocab, d *shareDelta) {
	v := u.v
	v.names[schema], v.columns[schema], v.length[schema] = p.names, p.columns, p.length
	for t := range d.post {
		if w, ok := p.post[t]; ok {
			u.posting(t)[schema] = w
		} else {
			delete(u.posting(t), schema)
		}
	}
	for n := range d.idents {
		if keys := p.idents[n]; len(keys) > 0 {
			u.identifying(n)[schema] = len(keys)
		} else {
			delete(u.identifying(n), schema)
		}
	}
	for t := range d.terms {
		if n := p.objDF[t] - old.objDF[t]; n != 0 {
			if v.objDF[t] += n; v.objDF[t] == 0 {
				delete(v.objDF, t)
			}
		}
		was, is := old.names[t] > 0 || old.columns[t] > 0, p.names[t] > 0 || p.columns[t] > 0
		switch {
		case is && !was:
			v.df[t]++
			u.words[t] = true
		case was && !is:
			v.df[t]--
			u.words[t] = true
		}
	}
	v.objects += p.counted - old.counted
	if d.sets {
		for h, cs := range old.heads {
			refs := u.heading(h)
			for _, c := range cs {
				refs[c]--
			}
		}
		for h, cs := range p.heads {
			refs := u.heading(h)
			for _, c := range cs {
				refs[c]++
			}
		}
	}
}

// sumCollection sums the changed terms' collection counts and the total
// length again from the postings, rather than adjusting them, so that
// no rounding builds up over a long history; and drops the postings and
// identifiers no schema has any more.
func (u *vocabUpdate) sumCollection() {
	v := u.v
	for t := range u.posted {
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
	for n := range u.identified {
		if len(v.idents[n]) == 0 {
			delete(v.idents, n)
		}
	}
	v.total = 0
	for _, l := range v.length {
		v.total += l
	}
}

// refileNearTerms files the terms that came into the vocabulary where
// a near word finds them, in the symmetric-delete index (corrections)
// and under their starts (extensions), and takes out those that left
// it.
func (u *vocabUpdate) refileNearTerms() {
	v := u.v
	deletes, extends := newTermFiles(v.deletes), newTermFiles(v.extends)
	for t := range u.words {
		was, is := u.prev.df[t] > 0, v.df[t] > 0
		if !is {
			delete(v.df, t)
		}
		switch {
		case is && !was:
			deletions(t, func(d string) { deletes.add(d, t) })
			starts(t, func(s string) { extends.add(s, t) })
		case was && !is:
			deletions(t, func(d string) { deletes.remove(d, t) })
			starts(t, func(s string) { extends.remove(s, t) })
		}
	}
	deletes.settle()
	extends.settle()
}

// termFiles batches one update's changes to an index of terms by key.
// Each key's list, which the previous vocabulary may share, is copied
// once however many terms come and go under it, and sorted once (map
// order must not leak into query order): a start that thousands of
// terms share (abcd for abcdaaa … abcdzzz) costs their number, where
// copying the list for each term cost its square (17,576 such columns:
// 2.4 s and 2.5 GB; TestSharedStartsCostTheirNumber).
type termFiles struct {
	m       map[string][]string
	touched map[string]bool
	removed map[string]map[string]bool
}

func newTermFiles(m map[string][]string) *termFiles {
	return &termFiles{m: m, touched: map[string]bool{}, removed: map[string]map[string]bool{}}
}

func (f *termFiles) own(key string) {
	if !f.touched[key] {
		f.touched[key] = true
		f.m[key] = slices.Clone(f.m[key])
	}
}

func (f *termFiles) add(key, t string) {
	f.own(key)
	f.m[key] = append(f.m[key], t)
}

func (f *termFiles) remove(key, t string) {
	f.own(key)
	if f.removed[key] == nil {
		f.removed[key] = map[string]bool{}
	}
	f.removed[key][t] = true
}

// settle takes the removed terms out of the keys they left, drops the
// keys left empty, and sorts the rest.
func (f *termFiles) settle() {
	for key := range f.touched {
		gone := f.removed[key]
		list := slices.DeleteFunc(f.m[key], func(t string) bool { return gone[t] })
		if len(list) == 0 {
			delete(f.m, key)
			continue
		}
		slices.Sort(list)
		f.m[key] = list
	}
}

// settleHeads lists again the compounds of each changed head that some
// schema still has.
func (u *vocabUpdate) settleHeads() {
	v := u.v
	for h := range u.headed {
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
	return &vocab{names: map[string]map[string]int{}, columns: map[string]map[string]int{}, df: map[string]int{},
		postings: map[string]map[string]float64{}, length: map[string]float64{}, coll: map[string]float64{},
		deletes: map[string][]string{}, extends: map[string][]string{}, heads: map[string][]string{}, headRefs: map[string]map[string]int{},
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
