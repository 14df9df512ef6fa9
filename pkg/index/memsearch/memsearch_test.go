package memsearch

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// corpus makes n chunks over a small vocabulary with a skewed term
// distribution, so that IDF, frequencies and lengths all vary.
func corpus(rng *rand.Rand, n int) []Doc {
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	pick := func(k int) string {
		var ws []string
		for range k {
			// Squaring skews toward the first words: common terms.
			ws = append(ws, vocab[int(math.Pow(rng.Float64(), 2)*float64(len(vocab)))])
		}
		return strings.Join(ws, " ")
	}
	schemas := []string{"public", "sales", "hr"}
	docs := make([]Doc, n)
	for i := range docs {
		kind := chunk.KindTable
		if i%7 == 0 {
			kind = chunk.KindDoc
		}
		docs[i] = Doc{
			Chunk:  chunk.Chunk{ID: fmt.Sprintf("db:%s:%d", kind, i), Database: "db", Kind: kind, Schema: schemas[i%3], Name: fmt.Sprint(i)},
			Vector: []float32{rng.Float32() - 0.5, rng.Float32() - 0.5, rng.Float32() - 0.5},
			Fields: index.Fields{Name: pick(1 + rng.IntN(2)), Schema: schemas[i%3], Columns: pick(rng.IntN(8)), Body: pick(rng.IntN(30))},
		}
	}
	return docs
}

// fts5 builds the same chunks into an FTS5 table, the reference BM25.
func fts5(t *testing.T, docs []Doc) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+t.TempDir()+"/fts.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5(name, schema, columns, body, tokenize = 'unicode61 remove_diacritics 2')`); err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		if _, err := db.Exec(`INSERT INTO f (rowid, name, schema, columns, body) VALUES (?,?,?,?,?)`, i+1, d.Fields.Name, d.Fields.Schema, d.Fields.Columns, d.Fields.Body); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// The in-memory BM25 ranks and scores as FTS5's bm25() does.
func TestBM25MatchesFTS5(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	docs := corpus(rng, 400)
	ref := fts5(t, docs)
	snap := New(3).With(docs, nil)
	w := index.Weights{Name: 4, Schema: 1.5, Columns: 2, Body: 1}
	compared := 0
	defer func() {
		if compared < 500 {
			t.Errorf("only %d hits compared", compared)
		}
	}()
	for q := range 40 {
		terms := []string{fmt.Sprintf("w%d", rng.IntN(40)), fmt.Sprintf("w%d", rng.IntN(300))}
		if q%3 == 0 {
			terms = append(terms, "sales")
		}
		match := `"` + strings.Join(terms, `" OR "`) + `"`
		rows, err := ref.QueryContext(context.Background(), `SELECT rowid, bm25(f, ?, ?, ?, ?) AS s FROM f WHERE f MATCH ? ORDER BY s, rowid LIMIT 25`,
			w.Name, w.Schema, w.Columns, w.Body, match)
		if err != nil {
			t.Fatal(err)
		}
		var want []index.Hit
		for rows.Next() {
			var rowid int64
			var s float64
			if err := rows.Scan(&rowid, &s); err != nil {
				t.Fatal(err)
			}
			want = append(want, index.Hit{Chunk: docs[rowid-1].Chunk, Score: -s})
		}
		rows.Close()
		got := snap.SearchText(index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: terms, Weights: w, Limit: 25})
		if len(got) != len(want) {
			t.Fatalf("query %v: %d hits, FTS5 %d", terms, len(got), len(want))
		}
		compared += len(got)
		wantScore := map[string]float64{}
		for _, h := range want {
			wantScore[h.Chunk.ID] = h.Score
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
		for i := range got {
			// Each hit carries FTS5's score for it; one FTS5 left out
			// must tie with FTS5's last (a tie at the cut).
			if ws, ok := wantScore[got[i].Chunk.ID]; ok && !near(got[i].Score, ws) || !ok && !near(got[i].Score, want[len(want)-1].Score) {
				t.Fatalf("query %v hit %d: %s scored %.12f, not FTS5's", terms, i, got[i].Chunk.ID, got[i].Score)
			}
			if math.Abs(got[i].Score-want[i].Score) > 1e-9*math.Max(1, math.Abs(want[i].Score)) {
				t.Fatalf("query %v hit %d: %s %.12f, FTS5 %s %.12f", terms, i, got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
			}
		}
	}
}

// A snapshot built by changes equals one built at once, and the snapshot
// a change started from is left as it was.
func TestWithIsCopyOnWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	docs := corpus(rng, 600)
	q := index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"w1", "w7", "w30"}, Limit: 50}
	v := index.VectorQuery{Filter: index.Filter{Database: "db", Schemas: []string{"sales"}}, Vector: []float32{0.3, -0.2, 0.1}, Limit: 20}

	// Built in many small steps, with replacements and removals between.
	step := New(3)
	var held []*Snapshot
	var heldHits [][]index.Hit
	for i := 0; i < len(docs); i += 25 {
		step = step.With(docs[i:min(i+25, len(docs))], nil)
		held = append(held, step)
		heldHits = append(heldHits, step.SearchText(q))
	}
	edited := docs[100]
	edited.Fields.Body = "w1 w1 w1 w7"
	var removed []string
	for i := 0; i < len(docs); i += 9 {
		removed = append(removed, docs[i].Chunk.ID)
	}
	step = step.With([]Doc{edited}, nil).With(nil, removed)

	var final []Doc
	gone := map[string]bool{}
	for _, id := range removed {
		gone[id] = true
	}
	for i, d := range docs {
		if i == 100 {
			d = edited
		}
		if !gone[d.Chunk.ID] {
			final = append(final, d)
		}
	}
	once := New(3).With(final, nil)
	if step.Len() != once.Len() || step.Len() != len(final) {
		t.Fatalf("lengths %d and %d, want %d", step.Len(), once.Len(), len(final))
	}
	for _, pair := range [][2][]index.Hit{
		{step.SearchText(q), once.SearchText(q)},
		{step.SearchVector(v), once.SearchVector(v)},
	} {
		a, b := pair[0], pair[1]
		if len(a) != len(b) {
			t.Fatalf("%d hits and %d", len(a), len(b))
		}
		for i := range a {
			if a[i].Chunk.ID != b[i].Chunk.ID || math.Abs(a[i].Score-b[i].Score) > 1e-9 {
				t.Fatalf("hit %d: %s %.6f and %s %.6f", i, a[i].Chunk.ID, a[i].Score, b[i].Chunk.ID, b[i].Score)
			}
		}
	}
	for _, h := range step.SearchVector(index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: []float32{1, 0, 0}, Limit: 1000}) {
		if gone[h.Chunk.ID] {
			t.Fatalf("removed chunk %s still found", h.Chunk.ID)
		}
	}
	// Every snapshot held along the way still answers as it did.
	for i, s := range held {
		again := s.SearchText(q)
		if len(again) != len(heldHits[i]) {
			t.Fatalf("snapshot %d changed: %d hits, then %d", i, len(heldHits[i]), len(again))
		}
		for j := range again {
			if again[j].Chunk.ID != heldHits[i][j].Chunk.ID || again[j].Score != heldHits[i][j].Score {
				t.Fatalf("snapshot %d hit %d changed", i, j)
			}
		}
	}
}

func TestFilters(t *testing.T) {
	docs := corpus(rand.New(rand.NewPCG(5, 6)), 300)
	docs[3].Chunk.Tags = map[string]string{"team": "billing"}
	s := New(3).With(docs, nil)
	tests := []struct {
		name string
		f    index.Filter
		ok   func(chunk.Chunk) bool
	}{
		{"schema", index.Filter{Database: "db", Schemas: []string{"hr"}}, func(c chunk.Chunk) bool { return c.Schema == "hr" }},
		{"two schemas", index.Filter{Database: "db", Schemas: []string{"hr", "sales"}}, func(c chunk.Chunk) bool { return c.Schema != "public" }},
		{"kind", index.Filter{Database: "db", Kinds: []string{chunk.KindDoc}}, func(c chunk.Chunk) bool { return c.Kind == chunk.KindDoc }},
		{"tag", index.Filter{Database: "db", Tags: map[string]string{"team": "billing"}}, func(c chunk.Chunk) bool { return c.Tags["team"] == "billing" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := s.SearchText(index.TextQuery{Filter: tc.f, Terms: []string{"w0", "w1", "w2", "hr", "sales", "public"}, Limit: 1000})
			vec := s.SearchVector(index.VectorQuery{Filter: tc.f, Vector: []float32{1, 1, 1}, Limit: 1000})
			if len(vec) == 0 {
				t.Fatal("no vector hits")
			}
			for _, h := range append(text, vec...) {
				if !tc.ok(h.Chunk) {
					t.Fatalf("%s passed the filter", h.Chunk.ID)
				}
			}
			want := 0
			for _, d := range docs {
				if tc.ok(d.Chunk) {
					want++
				}
			}
			if len(vec) != want {
				t.Errorf("%d vector hits, %d chunks pass", len(vec), want)
			}
		})
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{"cafe": "cafe", "café": "cafe", "straße": "straße", "ñandú": "nandu", "москва": "москва", "йод": "йод"} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

// Ties rank by chunk id, whatever order the chunks were loaded in: a
// snapshot loaded from SQLite (row order) and one loaded from Redis (set
// order) must rank alike.
func TestTiesRankByIDWhateverTheLoadOrder(t *testing.T) {
	var docs []Doc
	for _, id := range []string{"db:table:c", "db:table:a", "db:table:d", "db:table:b"} {
		docs = append(docs, Doc{Chunk: chunk.Chunk{ID: id, Database: "db", Kind: chunk.KindTable, Name: id},
			Vector: []float32{1, 0, 0}, Fields: index.Fields{Name: "orders", Columns: "id total"}})
	}
	docs = append(docs, Doc{Chunk: chunk.Chunk{ID: "db:table:z", Database: "db", Kind: chunk.KindTable, Name: "z"},
		Vector: []float32{0, 1, 0}, Fields: index.Fields{Name: "customers", Columns: "id name"}})
	want := []string{"db:table:a", "db:table:b", "db:table:c"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		rng.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		snap := New(3).With(docs, nil)
		for name, hits := range map[string][]index.Hit{
			"text":   snap.SearchText(index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"orders"}, Limit: 3}),
			"vector": snap.SearchVector(index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: []float32{1, 0, 0}, Limit: 3}),
		} {
			var got []string
			for _, h := range hits {
				got = append(got, h.Chunk.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s search over %v: %v, want %v", name, ids(docs), got, want)
			}
		}
	}
}

func ids(docs []Doc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Chunk.ID
	}
	return out
}

// A search of some kinds counts BM25's statistics over those kinds
// alone: a team's docs and examples, however many and whatever their
// words, leave the scores of its tables as they were.
func TestKindsKeepTheirOwnStatistics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	docs := corpus(rng, 300)
	var tables, others []Doc
	for i, d := range docs {
		if d.Chunk.Kind == chunk.KindTable {
			tables = append(tables, d)
			continue
		}
		// The corpus's docs, and as many examples again, on the same
		// vocabulary: they move every term's document frequency.
		others = append(others, d)
		ex := d
		ex.Chunk.Kind, ex.Chunk.ID = chunk.KindExample, fmt.Sprintf("db:example:%d", i)
		ex.Fields.Body += " w1 w2 w3 w1"
		others = append(others, ex)
	}
	alone := New(3).With(tables, nil)
	mixed := alone.With(others, nil)
	for q := range 30 {
		terms := []string{fmt.Sprintf("w%d", rng.IntN(20)), fmt.Sprintf("w%d", rng.IntN(300))}
		tq := index.TextQuery{Filter: index.Filter{Database: "db", Kinds: []string{chunk.KindTable}}, Terms: terms, Limit: 20}
		want, got := alone.SearchText(tq), mixed.SearchText(tq)
		if len(want) == 0 {
			continue
		}
		if !slices.EqualFunc(got, want, func(a, b index.Hit) bool { return a.Chunk.ID == b.Chunk.ID && a.Score == b.Score }) {
			t.Fatalf("query %d %v: tables beside docs and examples %v, alone %v", q, terms, hitIDs(got), hitIDs(want))
		}
	}
	// Searched together, the kinds share one set of statistics, and a
	// kind the database lacks finds nothing.
	all := mixed.SearchText(index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"w1"}, Limit: 1000})
	kinds := map[string]bool{}
	for _, h := range all {
		kinds[h.Chunk.Kind] = true
	}
	if len(kinds) != 3 {
		t.Errorf("an unfiltered search found kinds %v, want table, doc and example", kinds)
	}
	if hits := mixed.SearchText(index.TextQuery{Filter: index.Filter{Database: "db", Kinds: []string{chunk.KindView}}, Terms: []string{"w1"}, Limit: 10}); len(hits) != 0 {
		t.Errorf("a search of views, which the database has none of, found %v", hitIDs(hits))
	}
	vec := mixed.SearchVector(index.VectorQuery{Filter: index.Filter{Database: "db", Kinds: []string{chunk.KindExample}}, Vector: []float32{0.5, 0.5, 0}, Limit: 1000})
	if len(vec) == 0 || slices.ContainsFunc(vec, func(h index.Hit) bool { return h.Chunk.Kind != chunk.KindExample }) {
		t.Errorf("a vector search of examples: %d hits, some of other kinds", len(vec))
	}
	// Removing the others restores the tables' statistics exactly.
	var ids []string
	for _, d := range others {
		ids = append(ids, d.Chunk.ID)
	}
	back := mixed.With(nil, ids)
	tq := index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: []string{"w1", "w5"}, Limit: 20}
	if got, want := back.SearchText(tq), alone.SearchText(tq); !slices.EqualFunc(got, want, func(a, b index.Hit) bool { return a.Chunk.ID == b.Chunk.ID && a.Score == b.Score }) {
		t.Errorf("after removing the docs and examples: %v, want %v", hitIDs(got), hitIDs(want))
	}
}

func hitIDs(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Chunk.ID
	}
	return out
}

// A search of one small schema among many ranks and scores its chunks
// exactly as the whole database's search does (the statistics are the
// database's either way), whether it walks the schema's chunks or the
// terms' postings: the first for a schema small beside a common term's
// list, so that naming a schema keeps a search at the schema's size.
func TestSchemaSearchScoresAsTheWholeDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	docs := corpus(rng, 3000)
	for i, d := range corpus(rng, 24) {
		d.Chunk.Schema, d.Fields.Schema = "tiny", "tiny"
		d.Chunk.ID = fmt.Sprintf("db:tiny:%d", i)
		docs = append(docs, d)
	}
	s := New(3).With(docs, nil)
	terms := []string{"w0", "w1", "w3", "w7", "w20", "w150"}
	whole := s.SearchText(index.TextQuery{Filter: index.Filter{Database: "db"}, Terms: terms, Limit: len(docs)})
	for _, schemas := range [][]string{{"tiny"}, {"hr"}, {"tiny", "public"}} {
		got := s.SearchText(index.TextQuery{Filter: index.Filter{Database: "db", Schemas: schemas}, Terms: terms, Limit: len(docs)})
		var want []index.Hit
		for _, h := range whole {
			if slices.Contains(schemas, h.Chunk.Schema) {
				want = append(want, h)
			}
		}
		if len(got) == 0 || !slices.EqualFunc(got, want, func(a, b index.Hit) bool { return a.Chunk.ID == b.Chunk.ID && a.Score == b.Score }) {
			t.Errorf("schemas %v: %d hits, want the whole search's %d, in its order and scores", schemas, len(got), len(want))
		}
	}
}

// postingsByID is what a snapshot's postings and filing lists say, by
// chunk id rather than number (a snapshot built in steps numbers its
// chunks otherwise), after checking each list is sorted by number.
func postingsByID(t *testing.T, s *Snapshot) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	id := func(num int32) string { return s.docs[num].chunk.ID }
	postings := map[string]bool{}
	for k := range s.postings.base {
		postings[k] = true
	}
	for k := range s.postings.over {
		postings[k] = true
	}
	for k := range postings {
		p, ok := s.postings.get(k)
		if !ok || len(p) == 0 {
			continue
		}
		if !slices.IsSortedFunc(p, func(a, b posting) int { return int(a.doc - b.doc) }) {
			t.Fatalf("postings of %q are not sorted by number", k)
		}
		for _, x := range p {
			out["t:"+k] = append(out["t:"+k], fmt.Sprintf("%s:%v", id(x.doc), x.tf))
		}
		slices.Sort(out["t:"+k])
	}
	for name, l := range map[string]layered[[]int32]{"schema": s.schemas, "kind": s.kinds} {
		seen := map[string]bool{}
		for k := range l.base {
			seen[k] = true
		}
		for k := range l.over {
			seen[k] = true
		}
		for k := range seen {
			nums, _ := l.get(k)
			if !slices.IsSorted(nums) {
				t.Fatalf("%s list %q is not sorted", name, k)
			}
			for _, num := range nums {
				out[name+":"+k] = append(out[name+":"+k], id(num))
			}
			slices.Sort(out[name+":"+k])
		}
	}
	return out
}

// Chunks written again under their ids (docs published again, tables
// re-projected) are replaced term by term; the snapshot must be the one
// built at once from the final chunks, and the snapshot before it
// untouched.
func TestReplacedChunksEqualABuildFromScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	docs := corpus(rng, 500)
	base := New(3).With(docs, nil)
	before := postingsByID(t, base)
	fresh := corpus(rand.New(rand.NewPCG(7, 8)), 500)
	final := slices.Clone(docs)
	var edits []Doc
	for i := range docs {
		var d Doc
		switch i % 5 {
		case 0: // the same chunk again
			d = docs[i]
		case 1: // other words
			d = docs[i]
			d.Fields = fresh[i].Fields
		case 2: // another schema, and a word more
			d = docs[i]
			d.Chunk.Schema, d.Fields.Schema = "archive", "archive"
			d.Fields.Body += " w1 w299"
		case 3: // emptied
			d = docs[i]
			d.Fields = index.Fields{}
		default:
			continue
		}
		d.Vector = fresh[i].Vector
		edits = append(edits, d)
		final[i] = d
	}
	// One With, as a run of docs is written, and one chunk per With.
	stepped := base
	for _, e := range edits {
		stepped = stepped.With([]Doc{e}, nil)
	}
	for name, got := range map[string]*Snapshot{"one change": base.With(edits, nil), "a change per chunk": stepped} {
		once := New(3).With(final, nil)
		if !maps.Equal(chunkText(got), chunkText(once)) || !sameLists(postingsByID(t, got), postingsByID(t, once)) {
			t.Errorf("%s: the postings differ from a build from scratch", name)
		}
		if got.tokens != once.tokens || !maps.Equal(got.kindTokens, once.kindTokens) || got.Len() != once.Len() {
			t.Errorf("%s: %d tokens %v, %d chunks; from scratch %d %v %d", name, got.tokens, got.kindTokens, got.Len(), once.tokens, once.kindTokens, once.Len())
		}
		v := index.VectorQuery{Filter: index.Filter{Database: "db"}, Vector: []float32{0.3, -0.2, 0.1}, Limit: 30}
		q := index.TextQuery{Filter: index.Filter{Database: "db", Schemas: []string{"archive"}}, Terms: []string{"w1", "w299"}, Limit: 30}
		for _, pair := range [][2][]index.Hit{{got.SearchVector(v), once.SearchVector(v)}, {got.SearchText(q), once.SearchText(q)}} {
			if len(pair[0]) == 0 || fmt.Sprint(hitIDs(pair[0])) != fmt.Sprint(hitIDs(pair[1])) {
				t.Errorf("%s: hits %v, from scratch %v", name, hitIDs(pair[0]), hitIDs(pair[1]))
			}
		}
	}
	if !sameLists(postingsByID(t, base), before) {
		t.Error("the snapshot the changes started from changed")
	}
}

func sameLists(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, slices.Equal[[]string])
}

// chunkText is the ids a snapshot holds, with their schema and terms:
// a replaced chunk must carry its new ones.
func chunkText(s *Snapshot) map[string]string {
	out := map[string]string{}
	for _, d := range s.docs {
		if d != nil {
			out[d.chunk.ID] = fmt.Sprint(d.chunk.Schema, d.terms, d.length)
		}
	}
	return out
}

// Docs published again, in runs of 64 as the worker writes them, into a
// snapshot of 25,000 that share their common words.
func BenchmarkRepublishDocs(b *testing.B) {
	const n, run = 25000, 64
	docOf := func(i, v int) Doc {
		return Doc{Chunk: chunk.Chunk{ID: fmt.Sprintf("shop:doc:d%05d.md:0", i), Database: "shop", Kind: chunk.KindDoc, Name: fmt.Sprintf("d%05d.md", i)},
			Fields: index.Fields{Name: fmt.Sprintf("doc %d", i), Body: fmt.Sprintf("the orders table %d holds rows v%d", i, v)}}
	}
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = docOf(i, 0)
	}
	base := New(3).With(docs, nil)
	b.ResetTimer()
	for v := 1; b.Loop(); v++ {
		s := base
		for start := 0; start < n; start += run {
			edits := make([]Doc, 0, run)
			for i := start; i < min(start+run, n); i++ {
				edits = append(edits, docOf(i, v))
			}
			s = s.With(edits, nil)
		}
	}
}
