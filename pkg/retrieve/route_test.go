package retrieve

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/text"
)

func TestEditOne(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"carr", "car", true}, {"car", "carr", true}, {"weigh", "weight", true}, {"sname", "name", true},
		{"cat", "cut", true}, {"form", "from", false}, {"same", "same", false}, {"ab", "abcd", false},
		{"abc", "xyz", false}, {"order", "ordre", false},
	} {
		if got := editOne(tc.a, tc.b); got != tc.want {
			t.Errorf("editOne(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestCorrection(t *testing.T) {
	cat, err := catalog.Snapshot("db", "t.sql", `
CREATE TABLE pets (pet_id int, weight numeric, pet_age int);
CREATE TABLE cars (id int, maker text, model text, modem text, card_no text);
CREATE TABLE songs (id int, title text, sales int, top_500 int);
CREATE TABLE tales (id int, moral text, name text, sent_on date);
CREATE TABLE goalies (id int, rookie boolean, goals int, rook text);`)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat, nil)
	for _, tc := range []struct{ word, want string }{
		{"weigh", "weight"}, // insertion
		{"makr", "maker"},   // a letter left out
		{"modle", ""},       // two edits
		{"maker", ""},       // in the vocabulary: nothing to correct
		{"mode", ""},        // model and modem are both one edit: ambiguous
		{"car", ""},         // too short to correct
		{"carr", "car"},     // car and card are one edit away, but a doubled letter is undoubled first
		{"sage", ""},        // age and sale are both one edit: ambiguous
		{"5000", ""},        // a number is a value, not a misspelt name
		{"rent", ""},        // sent is one edit away, but by its first letter: another word
		{"sname", "name"},   // a letter too many in front is a slip
		{"goali", "goaly"},  // goalie meets goalies, which the stemmer folds as it folds categories, before goal
		{"rooky", "rooki"},  // and rookies meets rookie, before rook
	} {
		if got := v.correction(tc.word); got != tc.want {
			t.Errorf("correction(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestExtensions(t *testing.T) {
	cat, err := catalog.Snapshot("db", "t.sql", `
CREATE TABLE rental (rental_id int, rental_date date);
CREATE TABLE regions (id int, asian boolean, european boolean);
CREATE TABLE staff (id int, director text, direction text, directory text, manager text);
CREATE TABLE shop (id int, products int, producer text, product_line text);
CREATE TABLE stock (id int, production date, shipped_at date);`)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat, nil)
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"rent", []string{"rental"}},                // rented, as the analyzer leaves it
		{"asia", []string{"asian"}},                 // a place's people
		{"europ", []string{"european"}},             // three letters more
		{"manag", []string{"manager"}},              // two
		{"direct", nil},                             // director, direction, directory: three, too many
		{"produc", []string{"producer", "product"}}, // two, in order
		{"product", nil},                            // production extends it, but it is in the vocabulary
		{"direc", []string{"director"}},             // directory and direction are four letters more
		{"rental", nil},                             // in the vocabulary: nothing to extend
		{"rel", nil},                                // too short to extend
		{"regio", []string{"region"}},               // a slip is reached too
		{"2017", nil},                               // a number is a value
		{"staf", []string{"staff"}},                 // one letter more is also a correction: the query takes it once
	} {
		if got := v.extensions(tc.word); !slices.Equal(got, tc.want) {
			t.Errorf("extensions(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestHedge(t *testing.T) {
	// Routed order a b c d e f; without the routing bonus x and y (another
	// schema) would lead.
	mk := func(key string, base float64) *object { return &object{key: key, base: base} }
	a, b, c, d, x, y := mk("a", 0.5), mk("b", 0.4), mk("c", 0.3), mk("d", 0.2), mk("x", 0.9), mk("y", 0.8)
	routed := []*object{a, b, c, d, x, y}
	// When the features put another schema first, the tail follows the
	// fused ranking's order: here it would have put d before c.
	fusedTail := []*object{a, b, d, c, x, y}
	for _, tc := range []struct {
		h    int
		tail []*object
		want string
	}{
		{2, routed, "a b c x d y"}, // head kept, then routed and unrouted in turn
		{4, routed, "a b c d x y"},
		{6, routed, "a b c d x y"},
		{2, fusedTail, "a b d x c y"},
	} {
		var got []string
		for _, o := range hedge(routed, min(tc.h, len(routed)), tc.tail) {
			got = append(got, o.key)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("hedge(h=%d) = %s, want %s", tc.h, g, tc.want)
		}
	}
}

// poolDDL pools two databases as schemas: a question about the genres
// stations play names music's table but covers radio's.
const poolDDL = `
CREATE SCHEMA music;
CREATE TABLE music.genre (genre_id int PRIMARY KEY, name text, last_update date);
CREATE TABLE music.album (album_id int PRIMARY KEY, title text, genre_id int REFERENCES music.genre, release_year int);
CREATE SCHEMA radio;
CREATE TABLE radio.station (code text PRIMARY KEY, name text, city text, frequency numeric, listeners int);
CREATE TABLE radio.stationgenre (station_code text REFERENCES radio.station, genre text, is_primary boolean, share numeric);
CREATE TABLE radio.host (id int PRIMARY KEY, name text, station_code text REFERENCES radio.station, salary int);
`

func TestLikelihoodFavoursCoverage(t *testing.T) {
	cat, err := catalog.Snapshot("db", "pool.sql", poolDDL)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat, nil)
	for _, tc := range []struct{ question, first string }{
		{"List every genre.", "music"},
		{"Which primary genres are played on each frequency?", "radio"},
		{"What albums were released in 2006?", "music"},
		{"Which host has the largest salary?", "radio"},
	} {
		got, _ := v.likelihood(text.QueryTerms(tc.question), 50, []string{"music", "radio"})
		if len(got) != 2 || got[0] != tc.first {
			t.Errorf("%q: likelihood order %v, want %s first", tc.question, got, tc.first)
		}
	}
}

// The features' first schema takes the fused first's place only by a
// margin, and the others keep their fused order.
func TestRouteFeaturesOverruleByAMargin(t *testing.T) {
	cat, err := catalog.Snapshot("db", "pool.sql", poolDDL)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat, nil)
	table := func(name string, bm25, knn float64) *object {
		schema, _, _ := strings.Cut(name, ".")
		return &object{cand: rerank.Candidate{Kind: chunk.KindTable, Name: name, Schema: schema}, ex: Explain{BM25Score: bm25, KNNScore: knn}}
	}
	for _, tc := range []struct {
		name, question       string
		objects              []*object
		evidence, likelihood map[string]int
		want                 string
	}{
		{
			// Radio's names and columns hold the question, and its
			// best table matches best: it goes first though the fused
			// ranking put music first.
			name: "coverage and scores", question: "Which station hosts have the most listeners at each frequency?",
			objects:  []*object{table("music.genre", 2, 0.2), table("radio.station", 10, 0.5), table("radio.host", 8, 0.4)},
			evidence: map[string]int{"music": 1, "radio": 2}, likelihood: map[string]int{"music": 1, "radio": 2},
			want: "radio music",
		},
		{
			name: "agreement", question: "List every genre and its albums.",
			objects:  []*object{table("music.genre", 10, 0.5), table("radio.stationgenre", 4, 0.3)},
			evidence: map[string]int{"music": 1, "radio": 2}, likelihood: map[string]int{"music": 1, "radio": 2},
			want: "music radio",
		},
		{
			// Nothing in the question is either's; radio's ranks and
			// its vectors' slightly better match outscore music, but by
			// less than the margin.
			name: "within the margin", question: "zebra okapi",
			objects:  []*object{table("music.genre", 5, 0.5), table("radio.station", 5, 0.5)},
			evidence: map[string]int{"music": 2, "radio": 1}, likelihood: map[string]int{"music": 2, "radio": 1},
			want: "music radio",
		},
		{
			name: "past the margin", question: "zebra okapi",
			objects:  []*object{table("music.genre", 5, 0.25), table("radio.station", 5, 0.5)},
			evidence: map[string]int{"music": 2, "radio": 1}, likelihood: map[string]int{"music": 2, "radio": 1},
			want: "radio music",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := v.routeFeatures(text.QueryTerms(tc.question), tc.objects, []string{"music", "radio"}, tc.evidence, tc.likelihood)
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("routed %s, want %s", g, tc.want)
			}
		})
	}
}

func TestFuseRanks(t *testing.T) {
	for _, tc := range []struct {
		evidence, likelihood []string
		w                    float64
		want                 string
	}{
		{[]string{"a", "b", "c"}, []string{"c", "a", "b"}, 1.75, "c a b"},
		{[]string{"a", "b", "c"}, []string{"c", "a", "b"}, 0.5, "a c b"},
		// A schema only the likelihood knows has no candidates: it stays out.
		{[]string{"a", "b"}, []string{"d", "b", "a"}, 1.75, "b a"},
	} {
		if got := strings.Join(fuseRanks(tc.evidence, tc.likelihood, tc.w), " "); got != tc.want {
			t.Errorf("fuseRanks(%v, %v, %v) = %s, want %s", tc.evidence, tc.likelihood, tc.w, got, tc.want)
		}
	}
}

// Routing by evidence follows the best single table; with the likelihood
// fused in, the schema that covers the question's other words as well
// wins when the evidence is close.
func TestRouteFusesLikelihood(t *testing.T) {
	cat, err := catalog.Snapshot("db", "pool.sql", poolDDL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		likelihood float64
		want       string // schema routed first
	}{{0, "music"}, {DefaultConfig.Route.Likelihood, "radio"}} {
		cfg := DefaultConfig
		cfg.Route.Likelihood = tc.likelihood
		// The two rankings alone: the features would side with radio's
		// coverage either way (TestRouteFeaturesOverruleByAMargin).
		cfg.Route.Features = false
		r := &Retriever{cfg: cfg, graphs: newGraphCache()}
		table := func(name, schema string) rerank.Candidate {
			return rerank.Candidate{Kind: chunk.KindTable, Name: name, Schema: schema}
		}
		// BM25 ranked music's genre table first, radio's tables next.
		objs := []*object{
			{cand: table("music.genre", "music"), ex: Explain{BM25Rank: 1}},
			{cand: table("radio.stationgenre", "radio"), ex: Explain{BM25Rank: 2}},
			{cand: table("radio.station", "radio"), ex: Explain{BM25Rank: 3}},
		}
		q := "Which primary genres are played on each frequency?"
		words := text.QueryTerms(q)
		r.route(cat, words, r.queryTerms(words, cat), func() []*object { return objs }, nil)
		for _, o := range objs {
			if o.cand.Schema == tc.want && o.schemaRank != 1 {
				t.Errorf("RoutingLikelihood %v: %s routed %d, want 1", tc.likelihood, o.cand.Name, o.schemaRank)
			}
		}
	}
}

// The explain record marks the schema the features put first, and only
// when they overruled the fused ranking.
func TestRouteMarksSchemaByFeatures(t *testing.T) {
	cat, err := catalog.Snapshot("db", "pool.sql", poolDDL)
	if err != nil {
		t.Fatal(err)
	}
	// Evidence alone in the fused ranking, so that it follows BM25's
	// first table.
	cfg := DefaultConfig
	cfg.Route.Likelihood = 0
	r := &Retriever{cfg: cfg, graphs: newGraphCache()}
	table := func(name string, bm25Rank int, bm25 float64) *object {
		schema, _, _ := strings.Cut(name, ".")
		return &object{cand: rerank.Candidate{Kind: chunk.KindTable, Name: name, Schema: schema}, ex: Explain{BM25Rank: bm25Rank, BM25Score: bm25}}
	}
	for _, tc := range []struct {
		question string
		objs     []*object
		marked   string // schema whose candidates are marked; "" for none
	}{
		// Music's table ranks first by BM25, so the fused ranking puts
		// music first; radio's names and columns hold the question and
		// its best score is close: the features put radio first.
		{"Which station hosts have the most listeners at each frequency?",
			[]*object{table("music.genre", 1, 10), table("radio.station", 2, 9.5), table("radio.host", 3, 9)}, "radio"},
		{"List every genre and its albums.",
			[]*object{table("music.genre", 1, 10), table("radio.stationgenre", 2, 4)}, ""},
	} {
		words := text.QueryTerms(tc.question)
		r.route(cat, words, r.queryTerms(words, cat), func() []*object { return tc.objs }, nil)
		for _, o := range tc.objs {
			if want := o.cand.Schema == tc.marked; o.ex.SchemaByFeatures != want {
				t.Errorf("%q: %s marked %v, want %v (routed %d, evidence %d, likelihood %d)", tc.question, o.cand.Name, o.ex.SchemaByFeatures, want,
					o.ex.SchemaRoute, o.ex.SchemaEvidence, o.ex.SchemaLikelihood)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	words := map[string]bool{"product": true, "category": true, "member": true, "user": true, "role": true, "field": true, "name": true}
	uses := func(w string) bool { return words[w] }
	for _, tc := range []struct{ term, a, b string }{
		{"productcategory", "product", "category"},
		{"userrole", "user", "role"},
		{"membership", "", ""}, // ship is not a word of this schema
		{"product", "", ""},    // a word of its own
		{"fieldname", "field", "name"},
		{"username", "user", "name"},
		{"rolename", "role", "name"},
		{"rolefld", "", ""}, // fld is not a word of this schema
		{"userol", "", ""},  // under seven letters: too short to be two words
	} {
		a, b, ok := split(tc.term, uses)
		if a != tc.a || b != tc.b || ok != (tc.a != "") {
			t.Errorf("split(%q) = %q, %q, %v; want %q, %q", tc.term, a, b, ok, tc.a, tc.b)
		}
	}
}

// A seed lends every neighbour the same floor; the neighbours' own
// evidence orders them, rather than their names.
func TestPropagationOrdersNeighboursByOwnEvidence(t *testing.T) {
	const ddl = `
CREATE TABLE movie (movie_id int PRIMARY KEY, title text);
CREATE TABLE movie_genres (movie_id int REFERENCES movie, genre text);
CREATE TABLE movie_keywords (movie_id int REFERENCES movie, keyword text);
CREATE TABLE movie_roles (movie_id int REFERENCES movie, character_name text);
`
	cat, err := catalog.Snapshot("db", "movies.sql", ddl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		own  float64
		want string // the fused order after propagation
	}{
		{0, "public.movie public.movie_genres public.movie_keywords public.movie_roles"},
		{DefaultConfig.Propagate.Own, "public.movie public.movie_roles public.movie_genres public.movie_keywords"},
	} {
		cfg := DefaultConfig
		cfg.Propagate.Own = tc.own
		r := &Retriever{cfg: cfg, graphs: newGraphCache()}
		table := func(name string, rrf float64) *object {
			return &object{key: name, cand: rerank.Candidate{Kind: chunk.KindTable, Name: name, Schema: "public"}, rrf: rrf, base: rrf}
		}
		// The seed is strong; movie_roles has weak evidence of its own
		// (a character column), below the seed's floor.
		objs := []*object{table("public.movie", 0.03), table("public.movie_roles", 0.005)}
		byKey := map[string]*object{}
		for _, o := range objs {
			byKey[o.key] = o
		}
		get := func(c chunk.Chunk) *object {
			if o := byKey[c.Name]; o != nil {
				return o
			}
			o := &object{key: c.Name, cand: rerank.Candidate{Kind: c.Kind, Name: c.Name, Schema: c.Schema}}
			byKey[c.Name] = o
			objs = append(objs, o)
			return o
		}
		r.propagate(cat, nil, func() []*object { return objs }, get)
		slices.SortStableFunc(objs, func(a, b *object) int {
			if a.rrf != b.rrf {
				return cmp.Compare(b.rrf, a.rrf)
			}
			return strings.Compare(a.key, b.key)
		})
		var got []string
		for _, o := range objs {
			got = append(got, o.key)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("PropagationOwn %v: %s, want %s", tc.own, g, tc.want)
		}
	}
}

func TestCommonPhrases(t *testing.T) {
	var ddl strings.Builder
	for i := range 12 {
		fmt.Fprintf(&ddl, "CREATE TABLE t%d (id int, name text);\n", i)
	}
	ddl.WriteString("CREATE TABLE order_lines (id int, line_no int, product_name text);\n")
	big, err := catalog.Snapshot("db", "big.sql", ddl.String())
	if err != nil {
		t.Fatal(err)
	}
	small, err := catalog.Snapshot("db", "small.sql", "CREATE TABLE a (id int, name text); CREATE TABLE b (id int, name text);")
	if err != nil {
		t.Fatal(err)
	}
	// One table of twelve monthly partitions and three others: its words
	// are one table's, not thirteen.
	ddl.Reset()
	ddl.WriteString("CREATE TABLE payments (id int, paid_on date, amount numeric) PARTITION BY RANGE (paid_on);\n")
	for m := 1; m <= 12; m++ {
		fmt.Fprintf(&ddl, "CREATE TABLE payments_%02d PARTITION OF payments FOR VALUES FROM ('2024-%02d-01') TO ('2024-%02d-28');\n", m, m, m)
	}
	ddl.WriteString("CREATE TABLE a (id int, name text); CREATE TABLE b (id int, name text); CREATE TABLE c (id int, name text);")
	parted, err := catalog.Snapshot("db", "parted.sql", ddl.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cat   *catalog.Catalog
		share float64
		terms []string
		want  string
	}{
		// name is in all 13 tables; line in one.
		{big, 0.1, []string{"full", "name", "order", "line"}, "fullname"},
		{big, 0.1, []string{"product name"}, "productname"}, // words inside one term pair up too
		{big, 0, []string{"full", "name"}, ""},
		// Two tables are too few to call a word generic.
		{small, 0.1, []string{"full", "name"}, ""},
		{parted, 0.1, []string{"total", "amount", "full", "name"}, "fullname"},
	} {
		cfg := DefaultConfig
		cfg.Analyse.CommonHeads = tc.share
		r := &Retriever{cfg: cfg, graphs: newGraphCache()}
		if got := strings.Join(r.commonPhrases(tc.terms, tc.cat), " "); got != tc.want {
			t.Errorf("commonPhrases(%v) at %v = %q, want %q", tc.terms, tc.share, got, tc.want)
		}
	}
}

func TestRanksTieAlike(t *testing.T) {
	for _, tc := range []struct {
		ordered []string
		score   map[string]float64
		want    map[string]int
	}{
		{[]string{"a", "b", "c"}, map[string]float64{"a": 3, "b": 2, "c": 1}, map[string]int{"a": 1, "b": 2, "c": 3}},
		{[]string{"a", "b", "c", "d"}, map[string]float64{"a": 3, "b": 2, "c": 2, "d": 1}, map[string]int{"a": 1, "b": 2, "c": 2, "d": 4}},
		{[]string{"east", "west"}, map[string]float64{"east": 1, "west": 1}, map[string]int{"east": 1, "west": 1}},
		{nil, nil, map[string]int{}},
	} {
		if got := ranks(tc.ordered, tc.score); !maps.Equal(got, tc.want) {
			t.Errorf("ranks(%v, %v) = %v, want %v", tc.ordered, tc.score, got, tc.want)
		}
	}
}
