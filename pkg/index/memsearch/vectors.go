package memsearch

import (
	"sync"
	"sync/atomic"
)

// A KNN search scores every chunk, and at scale it was most of a
// question's cost (about 6 ms of 8.4 at 35,000 tables). The local
// embedder's vectors are sparse, the question's as much as the chunks':
// turned around, per dimension, the entries a sparse question meets are
// a small share of all of them. vectorIndex is that inversion; a snapshot
// builds it on its first search that gains by it, and a snapshot made
// from it by With keeps it: the chunks changed since are scored directly
// until they are too many, and then the index is built again.

// dimEntry is one chunk's non-zero value in one dimension.
type dimEntry struct {
	num int32
	val float32
}

// vectorIndex lists, per dimension, the sparse chunks with a non-zero
// entry there, by number.
type vectorIndex struct {
	dims [][]dimEntry
	// indexed is the doc each number held when the index was built: a
	// number that holds another since is scored directly.
	indexed []*doc
	// entries is the non-zero entries of every chunk indexed: what
	// scoring every one directly costs.
	entries int
}

// minIndexedDocs is the fewest chunks worth an index: below it a direct
// scan costs microseconds.
const minIndexedDocs = 256

// staleShare is the share of chunks changed since the index was built
// above which it is built again.
const staleShare = 8 // one in eight

func buildVectorIndex(dim int, docs []*doc) *vectorIndex {
	counts := make([]int, dim)
	for _, d := range docs {
		if d != nil && d.vec == nil {
			for _, j := range d.idx {
				counts[j]++
			}
		}
	}
	vi := &vectorIndex{dims: make([][]dimEntry, dim), indexed: docs}
	for _, c := range counts {
		vi.entries += c
	}
	// One backing array: a question's dimensions are read in order, and
	// each dimension's entries lie together.
	all := make([]dimEntry, vi.entries)
	for j, c := range counts {
		vi.dims[j], all = all[:0:c], all[c:]
	}
	for num, d := range docs {
		if d != nil && d.vec == nil {
			for i, j := range d.idx {
				vi.dims[j] = append(vi.dims[j], dimEntry{int32(num), d.val[i]})
			}
		}
	}
	return vi
}

// vectors is a snapshot's vector index, built when first needed.
type vectors struct {
	mu  sync.Mutex // held while building
	idx atomic.Pointer[vectorIndex]
	// stale counts the chunk numbers changed since idx was built.
	stale atomic.Int64
	acc   sync.Pool // of *[]float32, one score per chunk number
}

// inherit is the vectors of a snapshot made from one with these: the
// same index, with changed more numbers stale.
func (v *vectors) inherit(changed int) *vectors {
	n := &vectors{}
	if idx := v.idx.Load(); idx != nil {
		n.idx.Store(idx)
		n.stale.Store(v.stale.Load() + int64(changed))
	}
	return n
}

// vectorIndex returns the snapshot's index, building it when there is
// none or too much has changed since. A search that finds another
// building it scans directly (nil) rather than wait.
func (s *Snapshot) vectorIndex() *vectorIndex {
	v := s.vecs
	current := func() *vectorIndex {
		if idx := v.idx.Load(); idx != nil && v.stale.Load()*staleShare <= int64(s.live) {
			return idx
		}
		return nil
	}
	if idx := current(); idx != nil {
		return idx
	}
	if !v.mu.TryLock() {
		return nil
	}
	defer v.mu.Unlock()
	if idx := current(); idx != nil {
		return idx
	}
	idx := buildVectorIndex(s.dim, s.docs)
	v.idx.Store(idx)
	v.stale.Store(0)
	return idx
}

// vectorScores returns the score of every chunk the index holds, with
// the index, when that is cheaper than scoring the n chunks a search
// admits directly; else nil.
func (s *Snapshot) vectorScores(q []float32, n int) (*[]float32, *vectorIndex) {
	vi := s.worthIndexing(q, n)
	if vi == nil {
		return nil, nil
	}
	p, _ := s.vecs.acc.Get().(*[]float32)
	if p == nil || len(*p) < len(s.docs) {
		b := make([]float32, len(s.docs))
		p = &b
	}
	acc := *p
	for j, x := range q {
		if x != 0 {
			for _, e := range vi.dims[j] {
				acc[e.num] += float32(x * e.val)
			}
		}
	}
	return p, vi
}

// worthIndexing returns the index when looking q up costs less than
// scoring the n chunks a search admits; else nil. A small snapshot, a
// search of a small part of one (a schema named), a dense question, or
// one that finds another search building the index, scans.
func (s *Snapshot) worthIndexing(q []float32, n int) *vectorIndex {
	if s.live < minIndexedDocs || n*staleShare < s.live || !sparseAt(nonZero(q), len(q)) {
		return nil
	}
	vi := s.vectorIndex()
	if vi == nil {
		return nil
	}
	// The entries this question meets, against the average chunk's
	// entries for each of the n; a scattered add costs about twice a
	// direct one.
	cost := 0
	for j, x := range q {
		if x != 0 {
			cost += len(vi.dims[j])
		}
	}
	if 2*cost >= vi.entries*n/max(s.live, 1) {
		return nil
	}
	return vi
}

// nonZero counts v's non-zero entries.
func nonZero(v []float32) int {
	nz := 0
	for _, x := range v {
		if x != 0 {
			nz++
		}
	}
	return nz
}

// sparseAt says whether a vector of n entries, nz of them non-zero, is
// sparse: under two thirds non-zero. A chunk's vector so kept takes less
// room as its entries (setVector), and a question so made is cheaper
// looked up in the index.
func sparseAt(nz, n int) bool { return nz*3 < 2*n }

// score is a chunk's cosine with q: from the index's scores when the
// index holds the chunk as it is now, else directly.
func (vi *vectorIndex) score(acc *[]float32, num int32, d *doc, q []float32) float32 {
	if vi != nil && int(num) < len(vi.indexed) && vi.indexed[num] == d && d.vec == nil {
		return (*acc)[num]
	}
	return d.dot(q)
}

// release clears a score array and returns it for the next search.
func (s *Snapshot) release(p *[]float32) {
	clear(*p)
	s.vecs.acc.Put(p)
}
