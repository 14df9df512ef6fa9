// Package memsearch is an in-memory search snapshot of one database's
// chunks: BM25 over the four analysed fields and exact KNN over the
// vectors, with the filters applied inside the search.
//
// A Snapshot never changes once built; With returns a new one that shares
// everything a change does not touch (copy-on-write), so a writer can
// publish a change while searches keep reading the snapshot they hold,
// and the cost of a change follows the chunks it touches, not the size of
// the database.
//
// BM25 is FTS5's formula (k1 1.2, b 0.75, field weights scaling term
// frequencies, the document length counted over all fields unweighted,
// IDF floored at 1e-6), computed over the database's own chunks.
package memsearch

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
)

const (
	k1 = 1.2
	b  = 0.75
	// fields: name, schema, columns, body, in index.Fields order.
	fields = 4
)

// Doc is one chunk as the snapshot indexes it.
type Doc struct {
	Chunk  chunk.Chunk
	Vector []float32
	// Fields are the analysed search fields (index.SearchFields), given
	// by the caller so that a store can keep them instead of analysing
	// every chunk again when it loads.
	Fields index.Fields
}

type doc struct {
	chunk chunk.Chunk
	// The vector, dense, or as its non-zero entries when they are few
	// (the local embedder hashes a chunk's terms into a handful of its
	// dimensions): then a dot product costs the entries, not dim.
	vec    []float32
	idx    []uint16
	val    []float32
	terms  []string // distinct terms, for removal
	length int32    // tokens over all fields
}

// dot is the cosine of the doc's vector with q (both L2-normalised).
func (d *doc) dot(q []float32) float32 {
	if d.vec != nil {
		return embed.Cosine(q, d.vec)
	}
	// One sum in the order of the dimensions, each product rounded on
	// its own (the conversion keeps the compiler from fusing it into the
	// add): the vector index adds the same products in the same order, so
	// a chunk scores the same scanned or looked up.
	var s float32
	for i, j := range d.idx {
		s += float32(d.val[i] * q[j])
	}
	return s
}

// setVector keeps v sparse when under two thirds of it is non-zero: then
// the entries take less room than the dense vector, and a dot product
// fewer steps.
func (d *doc) setVector(v []float32) {
	nz := nonZero(v)
	if len(v) > math.MaxUint16 || !sparseAt(nz, len(v)) {
		d.vec = v
		return
	}
	d.idx, d.val = make([]uint16, 0, nz), make([]float32, 0, nz)
	for i, x := range v {
		if x != 0 {
			d.idx = append(d.idx, uint16(i))
			d.val = append(d.val, x)
		}
	}
}

type posting struct {
	doc int32
	tf  [fields]uint16
}

// Snapshot is an immutable index of one database's chunks.
type Snapshot struct {
	dim  int
	docs []*doc // by number; nil where a chunk was removed
	free []int32
	ids  layered[int32]
	// postings are kept per kind (postingKey), so that a search of some
	// kinds reads only theirs and counts BM25's statistics over them
	// alone: a team's docs and examples never change how its tables rank.
	postings layered[[]posting]
	schemas  layered[[]int32] // numbers of each schema's chunks
	kinds    layered[[]int32] // numbers of each kind's chunks
	live     int
	tokens   int64
	// Per kind: its chunks' tokens (their count is the length of the
	// kind's numbers); kindNames lists the kinds that have chunks, sorted.
	// that have any, sorted.
	kindTokens map[string]int64
	kindNames  []string
	vecs       *vectors
}

// postingKey is the key of a term's postings among a kind's chunks.
func postingKey(kind, term string) string { return kind + "\x00" + term }

// New returns an empty snapshot for vectors of dim dimensions.
func New(dim int) *Snapshot {
	return &Snapshot{dim: dim, vecs: &vectors{},
		ids:      newLayered(func(v int32) bool { return v < 0 }),
		postings: newLayered(func(v []posting) bool { return len(v) == 0 }),
		schemas:  newLayered(func(v []int32) bool { return len(v) == 0 }),
		kinds:    newLayered(func(v []int32) bool { return len(v) == 0 })}
}

// Len is the number of chunks.
func (s *Snapshot) Len() int { return s.live }

// Chunk returns a chunk by id.
func (s *Snapshot) Chunk(id string) (chunk.Chunk, bool) {
	n, ok := s.ids.get(id)
	if !ok {
		return chunk.Chunk{}, false
	}
	return s.docs[n].chunk, true
}

// Metas returns the hash and version of every chunk f admits, by id.
func (s *Snapshot) Metas(f index.Filter) map[string]index.Meta {
	out := map[string]index.Meta{}
	for _, d := range s.docs {
		if d != nil && s.admits(f, d) {
			out[d.chunk.ID] = index.Meta{Hash: d.chunk.Hash, Version: d.chunk.Version}
		}
	}
	return out
}

// With returns a snapshot with upserts written (replacing chunks of the
// same id) and the chunks of removed ids gone; s is unchanged.
func (s *Snapshot) With(upserts []Doc, removed []string) *Snapshot {
	if len(upserts) == 0 && len(removed) == 0 {
		return s
	}
	n := &Snapshot{dim: s.dim, docs: slices.Clone(s.docs), free: slices.Clone(s.free), live: s.live, tokens: s.tokens,
		kindTokens: maps.Clone(s.kindTokens), vecs: s.vecs.inherit(len(upserts) + len(removed))}
	if n.kindTokens == nil {
		n.kindTokens = map[string]int64{}
	}
	ch := changes{ids: map[string]int32{}, postings: map[string][]posting{}, schemas: map[string][]int32{}, kinds: map[string][]int32{},
		emptied: map[string]bool{}}
	for _, id := range removed {
		n.remove(s, &ch, id)
	}
	for i := range upserts {
		if num, ok := ch.id(s, upserts[i].Chunk.ID); ok && n.docs[num].chunk.Kind == upserts[i].Chunk.Kind {
			n.replace(s, &ch, num, &upserts[i])
			continue
		}
		n.remove(s, &ch, upserts[i].Chunk.ID)
		n.add(s, &ch, &upserts[i])
	}
	ch.sweep()
	n.ids = s.ids.with(ch.ids)
	n.postings = s.postings.with(ch.postings)
	n.schemas = s.schemas.with(ch.schemas)
	n.kinds = s.kinds.with(ch.kinds)
	n.kindNames = n.kindNames[:0]
	for k := range n.kindTokens {
		if l, _ := n.kinds.get(k); len(l) == 0 {
			delete(n.kindTokens, k)
			continue
		}
		n.kindNames = append(n.kindNames, k)
	}
	slices.Sort(n.kindNames)
	return n
}

// changes collects one With's new values; lists are copied once, on their
// first change, and then edited in place.
type changes struct {
	ids      map[string]int32
	postings map[string][]posting
	schemas  map[string][]int32
	kinds    map[string][]int32
	// emptied are the posting lists where a removed posting was only
	// emptied (unpost), to be swept out once the change is complete:
	// deleting each from the middle moved the rest of the list, so a
	// word every doc had, gone from each (a date in every doc's
	// footer), cost n² to re-publish.
	emptied map[string]bool
}

// noPosting is an emptied posting's frequencies: a term a chunk holds
// occurs in some field.
var noPosting [fields]uint16

// post sets num's posting in key's list, inserting it where the number
// is not there (or only emptied) yet.
func (c *changes) post(s *Snapshot, key string, num int32, tf [fields]uint16) {
	p := c.postingList(s, key)
	if i, ok := findPosting(p, num); ok {
		p[i].tf = tf // p is this change's copy
	} else {
		p = slices.Insert(p, i, posting{doc: num, tf: tf})
	}
	c.postings[key] = p
}

// unpost empties num's posting in key's list; sweep removes it.
func (c *changes) unpost(s *Snapshot, key string, num int32) {
	p := c.postingList(s, key)
	if i, ok := findPosting(p, num); ok {
		p[i].tf = noPosting
		c.emptied[key] = true
	}
	c.postings[key] = p
}

// sweep removes the emptied postings, one pass per list.
func (c *changes) sweep() {
	for key := range c.emptied {
		c.postings[key] = slices.DeleteFunc(c.postings[key], func(p posting) bool { return p.tf == noPosting })
	}
}

func (c *changes) postingList(s *Snapshot, term string) []posting {
	if p, ok := c.postings[term]; ok {
		return p
	}
	p, _ := s.postings.get(term)
	return slices.Clone(p)
}

// numberList is one list of chunk numbers a chunk is filed in: its
// schema's or its kind's, as one With changes it.
type numberList struct {
	m    map[string][]int32 // the With's changed lists
	from layered[[]int32]   // the snapshot's
	key  string
}

// filed are the lists of numbers c is filed in.
func (c *changes) filed(old *Snapshot, ch chunk.Chunk) [2]numberList {
	return [2]numberList{{c.schemas, old.schemas, ch.Schema}, {c.kinds, old.kinds, ch.Kind}}
}

// list returns the changed list, copying the snapshot's on its first
// change.
func (x numberList) list() []int32 {
	if l, ok := x.m[x.key]; ok {
		return l
	}
	l, _ := x.from.get(x.key)
	return slices.Clone(l)
}

// put files num in the list, in order.
func (x numberList) put(num int32) {
	l := x.list()
	i, _ := slices.BinarySearch(l, num)
	x.m[x.key] = slices.Insert(l, i, num)
}

// drop takes num out of the list.
func (x numberList) drop(num int32) {
	l := x.list()
	if i, ok := slices.BinarySearch(l, num); ok {
		l = slices.Delete(l, i, i+1)
	}
	x.m[x.key] = l
}

func (c *changes) id(s *Snapshot, id string) (int32, bool) {
	if v, ok := c.ids[id]; ok {
		return v, v >= 0
	}
	return s.ids.get(id)
}

func (n *Snapshot) remove(old *Snapshot, ch *changes, id string) {
	num, ok := ch.id(old, id)
	if !ok {
		return
	}
	d := n.docs[num]
	for _, t := range d.terms {
		ch.unpost(old, postingKey(d.chunk.Kind, t), num)
	}
	for _, x := range ch.filed(old, d.chunk) {
		x.drop(num)
	}
	ch.ids[id] = -1
	n.docs[num] = nil
	n.free = append(n.free, num)
	n.live--
	n.tokens -= int64(d.length)
	n.kindTokens[d.chunk.Kind] -= int64(d.length)
}

// findPosting finds num's posting in p, which is sorted by number.
func findPosting(p []posting, num int32) (int, bool) {
	return slices.BinarySearchFunc(p, num, func(p posting, n int32) int { return int(p.doc - n) })
}

// replace is remove and add of a chunk stored already, under its number,
// done term by term: a posting list the old and new versions share keeps
// its place and changes the frequencies. Removing and inserting each
// posting moved the tail of every list the chunk is in, twice, so a
// list every doc shares made re-publishing n docs cost n² (25,000 docs
// edited on one word: 20 s against 7 s to publish them first).
func (n *Snapshot) replace(old *Snapshot, ch *changes, num int32, in *Doc) {
	was := n.docs[num]
	d, tf := n.newDoc(in)
	for _, t := range was.terms {
		if tf[t] == nil {
			ch.unpost(old, postingKey(was.chunk.Kind, t), num)
		}
	}
	for _, t := range d.terms {
		ch.post(old, postingKey(d.chunk.Kind, t), num, *tf[t])
	}
	if was.chunk.Schema != d.chunk.Schema {
		ch.filed(old, was.chunk)[0].drop(num) // the schema's list
		ch.filed(old, d.chunk)[0].put(num)
	}
	n.docs[num] = d
	n.tokens += int64(d.length - was.length)
	n.kindTokens[d.chunk.Kind] += int64(d.length - was.length)
}

// newDoc analyses in: the doc, and each distinct term's frequency by
// field.
func (n *Snapshot) newDoc(in *Doc) (*doc, map[string]*[fields]uint16) {
	d := &doc{chunk: in.Chunk}
	if len(in.Vector) == n.dim {
		d.setVector(in.Vector)
	}
	tf := map[string]*[fields]uint16{}
	for f, text := range [fields]string{in.Fields.Name, in.Fields.Schema, in.Fields.Columns, in.Fields.Body} {
		for _, t := range strings.Fields(text) {
			t = Fold(t)
			c := tf[t]
			if c == nil {
				c = new([fields]uint16)
				tf[t] = c
				d.terms = append(d.terms, t)
			}
			if c[f] < math.MaxUint16 {
				c[f]++
			}
			d.length++
		}
	}
	return d, tf
}

func (n *Snapshot) add(old *Snapshot, ch *changes, in *Doc) {
	d, tf := n.newDoc(in)
	var num int32
	if k := len(n.free); k > 0 {
		num = n.free[k-1]
		n.free = n.free[:k-1]
		n.docs[num] = d
	} else {
		num = int32(len(n.docs))
		n.docs = append(n.docs, d)
	}
	for _, t := range d.terms {
		// Postings stay sorted by number, so a reused number keeps scans
		// and tie order deterministic.
		ch.post(old, postingKey(d.chunk.Kind, t), num, *tf[t])
	}
	for _, x := range ch.filed(old, d.chunk) {
		x.put(num)
	}
	ch.ids[in.Chunk.ID] = num
	n.live++
	n.tokens += int64(d.length)
	n.kindTokens[d.chunk.Kind] += int64(d.length)
}

// admitted are the numbers a filter can admit, in order: every chunk, or
// only the named schemas' when the filter names schemas, else the named
// kinds' (a search for examples beside a schema of thousands of tables
// reads only the examples, and a database with none costs nothing).
func (s *Snapshot) admitted(f index.Filter) (all bool, nums []int32) {
	from, keys := s.schemas, f.Schemas
	if len(keys) == 0 {
		from, keys = s.kinds, f.Kinds
	}
	if len(keys) == 0 {
		return true, nil
	}
	for _, k := range keys {
		l, _ := from.get(k)
		if len(nums) == 0 {
			nums = l // shared, never written: a search only reads it
			continue
		}
		nums = mergeSorted(nums, l)
	}
	return false, nums
}

// mergeSorted is the union of two sorted lists, in a new one (a filter
// may name a schema twice).
func mergeSorted(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

func (s *Snapshot) admits(f index.Filter, d *doc) bool {
	if len(f.Kinds) == 0 && len(f.Schemas) == 0 && len(f.Tags) == 0 {
		return true // the common case, checked for every chunk a KNN scans
	}
	return f.Admits(d.chunk.Kind, d.chunk.Schema, d.chunk.Tags)
}

var scratch = sync.Pool{New: func() any { return &scores{} }}

type scores struct {
	val     []float64
	touched []int32
}

// SearchText ranks chunks by BM25 for any of q's terms. The statistics
// (chunk count, document frequencies, average length) are those of the
// kinds searched: all of them when q names none.
func (s *Snapshot) SearchText(q index.TextQuery) []index.Hit {
	terms := q.Match()
	if len(terms) == 0 || q.Limit <= 0 || s.live == 0 {
		return nil
	}
	st := s.bm25Stats(q)
	all, within := s.admitted(index.Filter{Schemas: q.Schemas})
	if st.rows == 0 || (!all && len(within) == 0) {
		return nil
	}
	sc := scratch.Get().(*scores)
	defer scratch.Put(sc)
	if cap(sc.val) < len(s.docs) {
		sc.val = make([]float64, len(s.docs))
	}
	sc.val = sc.val[:len(s.docs)]
	sc.touched = sc.touched[:0]
	seen := map[string]bool{}
	for _, t := range terms {
		if t = Fold(t); !seen[t] {
			seen[t] = true
			s.scoreTerm(sc, st, t, all, within)
		}
	}
	top := newTopK(q.Limit)
	for _, num := range sc.touched {
		v := sc.val[num]
		sc.val[num] = 0
		if d := s.docs[num]; s.admits(q.Filter, d) {
			top.offer(num, v, d.chunk.ID)
		}
	}
	return s.hits(top.sorted())
}

// bm25Stats are the statistics one search scores by: over the kinds it
// searches, with its field weights.
type bm25Stats struct {
	kinds       []string
	rows, avgdl float64
	weights     [fields]float64
}

func (s *Snapshot) bm25Stats(q index.TextQuery) bm25Stats {
	w := q.Weights
	if w == (index.Weights{}) {
		w = index.DefaultWeights
	}
	st := bm25Stats{kinds: s.kindNames, weights: [fields]float64{w.Name, w.Schema, w.Columns, w.Body}}
	if len(q.Kinds) > 0 {
		st.kinds = slices.Compact(slices.Sorted(slices.Values(q.Kinds)))
	}
	var tokens float64
	for _, k := range st.kinds {
		l, _ := s.kinds.get(k)
		st.rows += float64(len(l))
		tokens += float64(s.kindTokens[k])
	}
	if st.rows > 0 {
		st.avgdl = tokens / st.rows
	}
	return st
}

// scoreTerm adds one term's BM25 to the scores of the admitted chunks
// that have it.
func (s *Snapshot) scoreTerm(sc *scores, st bm25Stats, t string, all bool, within []int32) {
	var buf [4][]posting // a database has a few kinds
	lists := buf[:0]
	df := 0
	for _, k := range st.kinds {
		if p, _ := s.postings.get(postingKey(k, t)); len(p) > 0 {
			lists = append(lists, p)
			df += len(p)
		}
	}
	if df == 0 {
		return
	}
	idf := math.Log((st.rows - float64(df) + 0.5) / (float64(df) + 0.5))
	if idf <= 0 {
		idf = 1e-6
	}
	add := func(ps posting) {
		freq := 0.0
		for f := range fields {
			freq += st.weights[f] * float64(ps.tf[f])
		}
		d := float64(s.docs[ps.doc].length)
		if sc.val[ps.doc] == 0 {
			sc.touched = append(sc.touched, ps.doc)
		}
		sc.val[ps.doc] += idf * (freq * (k1 + 1)) / (freq + k1*(1-b+b*d/st.avgdl))
	}
	for _, p := range lists {
		eachAdmitted(p, all, within, add)
	}
}

// eachAdmitted calls fn for the postings of p whose chunks are within
// (all of them when all), by number. It walks whichever list is shorter:
// a search of one schema among thousands reads that schema's chunks in a
// common term's list, not the whole list, so its cost follows the
// schema's size.
func eachAdmitted(p []posting, all bool, within []int32, fn func(posting)) {
	if all {
		for _, ps := range p {
			fn(ps)
		}
		return
	}
	if len(within) < len(p)/8 {
		for _, num := range within {
			if i, ok := slices.BinarySearchFunc(p, num, func(ps posting, n int32) int { return cmp.Compare(ps.doc, n) }); ok {
				fn(p[i])
			}
		}
		return
	}
	for _, ps := range p {
		if _, ok := slices.BinarySearch(within, ps.doc); ok {
			fn(ps)
		}
	}
}

// SearchVector ranks chunks by cosine similarity to q's vector.
func (s *Snapshot) SearchVector(q index.VectorQuery) []index.Hit {
	if q.Limit <= 0 || s.live == 0 || len(q.Vector) != s.dim {
		return nil
	}
	top := newTopK(q.Limit)
	all, within := s.admitted(q.Filter)
	n := len(within)
	if all {
		n = s.live
	}
	acc, vi := s.vectorScores(q.Vector, n)
	if acc != nil {
		defer s.release(acc)
	}
	offer := func(num int32) {
		if d := s.docs[num]; d != nil && s.admits(q.Filter, d) {
			top.offer(num, float64(vi.score(acc, num, d, q.Vector)), d.chunk.ID)
		}
	}
	if all {
		for num := range s.docs {
			offer(int32(num))
		}
	} else {
		for _, num := range within {
			offer(num)
		}
	}
	return s.hits(top.sorted())
}

func (s *Snapshot) hits(best []scored) []index.Hit {
	out := make([]index.Hit, len(best))
	for i, b := range best {
		out[i] = index.Hit{Chunk: s.docs[b.num].chunk, Score: b.score}
	}
	return out
}

// Fold removes diacritics from Latin letters (café → cafe), as FTS5's
// unicode61 tokenizer does with remove_diacritics 2, so a question typed
// without accents finds an accented name and the other way round.
// Letters of other scripts are kept: their marks change the letter.
func Fold(t string) string {
	ascii := true
	for i := 0; i < len(t); i++ {
		if t[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return t
	}
	var sb strings.Builder
	for _, r := range t {
		if r < utf8.RuneSelf || !unicode.Is(unicode.Latin, r) {
			sb.WriteRune(r)
			continue
		}
		for i, dr := range norm.NFD.String(string(r)) {
			if i == 0 || !unicode.Is(unicode.Mn, dr) {
				sb.WriteRune(dr)
			}
		}
	}
	return sb.String()
}

// layered is a copy-on-write map: a large shared base and a small
// overlay of changes since, folded into a new base once it grows past an
// eighth of it, so a change costs about the size of the change.
type layered[V any] struct {
	base, over map[string]V
	// gone reports a value that means the key is absent: in the overlay
	// it hides the base's value.
	gone func(V) bool
}

func newLayered[V any](gone func(V) bool) layered[V] {
	return layered[V]{base: map[string]V{}, over: map[string]V{}, gone: gone}
}

func (l layered[V]) get(k string) (V, bool) {
	v, ok := l.over[k]
	if !ok {
		v, ok = l.base[k]
	}
	if ok && l.gone(v) {
		var zero V
		return zero, false
	}
	return v, ok
}

// with returns l with changes applied.
func (l layered[V]) with(changes map[string]V) layered[V] {
	gone := l.gone
	if len(changes) == 0 {
		return l
	}
	if len(l.over)+len(changes) > len(l.base)/8+64 {
		base := make(map[string]V, len(l.base)+len(l.over)+len(changes))
		for _, m := range []map[string]V{l.base, l.over, changes} {
			for k, v := range m {
				if gone(v) {
					delete(base, k)
				} else {
					base[k] = v
				}
			}
		}
		return layered[V]{base: base, over: map[string]V{}, gone: gone}
	}
	over := maps.Clone(l.over)
	if over == nil {
		over = map[string]V{}
	}
	for k, v := range changes {
		over[k] = v // a gone value stays in the overlay: it hides the base
	}
	return layered[V]{base: l.base, over: over, gone: gone}
}

// topK keeps the k best scores in a min-heap: O(n log k). Ties keep the
// lower chunk id, so results do not depend on the order chunks were
// loaded in: a snapshot built from SQLite and one built from Redis rank
// alike.
type topK struct {
	k    int
	heap []scored
}

type scored struct {
	num   int32
	score float64
	id    string
}

func newTopK(k int) *topK { return &topK{k: k, heap: make([]scored, 0, min(k, 1024))} }

// worse orders the heap: a lower score, or the same score on a later id.
func worse(a, b scored) bool { return a.score < b.score || (a.score == b.score && a.id > b.id) }

func (t *topK) offer(num int32, score float64, id string) {
	s := scored{num, score, id}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, s)
		for c := len(t.heap) - 1; c > 0; {
			p := (c - 1) / 2
			if !worse(t.heap[c], t.heap[p]) {
				break
			}
			t.heap[c], t.heap[p] = t.heap[p], t.heap[c]
			c = p
		}
		return
	}
	if !worse(t.heap[0], s) {
		return
	}
	t.heap[0] = s
	for p := 0; ; {
		l, r, m := 2*p+1, 2*p+2, p
		if l < len(t.heap) && worse(t.heap[l], t.heap[m]) {
			m = l
		}
		if r < len(t.heap) && worse(t.heap[r], t.heap[m]) {
			m = r
		}
		if m == p {
			return
		}
		t.heap[p], t.heap[m] = t.heap[m], t.heap[p]
		p = m
	}
}

func (t *topK) sorted() []scored {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}

// Pinned is one database's snapshot serving every search of a request,
// with the signature and the checks of a store's searches: the request
// reads one consistent state, and its store checks for writes once.
type Pinned struct {
	db   string
	snap *Snapshot
}

// Pin returns the snapshot as db's searcher.
func (s *Snapshot) Pin(db string) Pinned { return Pinned{db: db, snap: s} }

var _ index.Searcher = Pinned{}

// SearchText is index.Store's SearchText over the pinned snapshot.
func (p Pinned) SearchText(_ context.Context, q index.TextQuery) ([]index.Hit, error) {
	if err := p.check(q.Database); err != nil {
		return nil, fmt.Errorf("text search in %s: %w", q.Database, err)
	}
	return p.snap.SearchText(q), nil
}

// SearchVector is index.Store's SearchVector over the pinned snapshot.
func (p Pinned) SearchVector(_ context.Context, q index.VectorQuery) ([]index.Hit, error) {
	if err := p.check(q.Database); err != nil {
		return nil, fmt.Errorf("vector search in %s: %w", q.Database, err)
	}
	if len(q.Vector) != p.snap.dim {
		return nil, fmt.Errorf("vector search in %s: %w: got %d, index has %d", q.Database, index.ErrDimension, len(q.Vector), p.snap.dim)
	}
	return p.snap.SearchVector(q), nil
}

func (p Pinned) check(db string) error {
	switch {
	case db == "":
		return index.ErrNoDatabase
	case db != p.db:
		return fmt.Errorf("the searcher is pinned to database %q", p.db)
	}
	return nil
}
