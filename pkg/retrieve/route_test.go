package retrieve

import (
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
CREATE TABLE cars (id int, maker text, model text, modem text);
CREATE TABLE songs (id int, title text, sales int, top_500 int);
CREATE TABLE tales (id int, moral text);`)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat)
	for _, tc := range []struct{ word, want string }{
		{"weigh", "weight"}, // insertion
		{"makr", "maker"},   // a letter left out
		{"modle", ""},       // two edits
		{"maker", ""},       // in the vocabulary: nothing to correct
		{"mode", ""},        // model and modem are both one edit: ambiguous
		{"car", ""},         // too short to correct
		{"carr", "car"},     // a doubled letter: undoubled first
		{"sage", ""},        // age and sale are both one edit: ambiguous
		{"5000", ""},        // a number is a value, not a misspelt name
	} {
		if got := v.correction(tc.word); got != tc.want {
			t.Errorf("correction(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestHedge(t *testing.T) {
	// Routed order a b c d e f; without the routing bonus x and y (another
	// schema) would lead.
	mk := func(key string, base float64) *object { return &object{key: key, base: base} }
	a, b, c, d, x, y := mk("a", 0.5), mk("b", 0.4), mk("c", 0.3), mk("d", 0.2), mk("x", 0.9), mk("y", 0.8)
	routed := []*object{a, b, c, d, x, y}
	for _, tc := range []struct {
		h    int
		want string
	}{
		{2, "a b c x d y"}, // head kept, then routed and unrouted in turn
		{4, "a b c d x y"},
		{6, "a b c d x y"},
	} {
		var got []string
		for _, o := range hedge(routed, min(tc.h, len(routed))) {
			got = append(got, o.key)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("hedge(h=%d) = %s, want %s", tc.h, g, tc.want)
		}
	}
}

// worldDDL pools two databases as schemas: a question about languages
// spoken across continents names films' table but covers world's.
const worldDDL = `
CREATE SCHEMA films;
CREATE TABLE films.language (language_id int PRIMARY KEY, name text, last_update date);
CREATE TABLE films.film (film_id int PRIMARY KEY, title text, language_id int REFERENCES films.language, release_year int);
CREATE SCHEMA world;
CREATE TABLE world.country (code text PRIMARY KEY, name text, continent text, region text, population int);
CREATE TABLE world.countrylanguage (country_code text REFERENCES world.country, language text, is_official boolean, percentage numeric);
CREATE TABLE world.city (id int PRIMARY KEY, name text, country_code text REFERENCES world.country, population int);
`

func TestLikelihoodFavoursCoverage(t *testing.T) {
	cat, err := catalog.Snapshot("db", "world.sql", worldDDL)
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(cat)
	for _, tc := range []struct{ question, first string }{
		{"List every language.", "films"},
		{"Which official languages are spoken on each continent?", "world"},
		{"What films were released in 2006?", "films"},
		{"Which city has the largest population?", "world"},
	} {
		got := v.likelihood(text.QueryTerms(tc.question), 50, []string{"films", "world"})
		if len(got) != 2 || got[0] != tc.first {
			t.Errorf("%q: likelihood order %v, want %s first", tc.question, got, tc.first)
		}
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
	cat, err := catalog.Snapshot("db", "world.sql", worldDDL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		likelihood float64
		want       string // schema routed first
	}{{0, "films"}, {DefaultConfig.RoutingLikelihood, "world"}} {
		cfg := DefaultConfig
		cfg.RoutingLikelihood = tc.likelihood
		r := &Retriever{cfg: cfg, graphs: newGraphCache()}
		table := func(name, schema string) rerank.Candidate {
			return rerank.Candidate{Kind: chunk.KindTable, Name: name, Schema: schema}
		}
		// BM25 ranked films' language table first, world's tables next.
		objs := []*object{
			{cand: table("films.language", "films"), ex: Explain{BM25Rank: 1}},
			{cand: table("world.countrylanguage", "world"), ex: Explain{BM25Rank: 2}},
			{cand: table("world.country", "world"), ex: Explain{BM25Rank: 3}},
		}
		q := "Which official languages are spoken on each continent?"
		r.route(Request{Question: q}, cat, r.queryTerms(q, cat), func() []*object { return objs }, nil)
		for _, o := range objs {
			if o.cand.Schema == tc.want && o.schemaRank != 1 {
				t.Errorf("RoutingLikelihood %v: %s routed %d, want 1", tc.likelihood, o.cand.Name, o.schemaRank)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	words := map[string]bool{"country": true, "languag": true, "member": true, "out": true, "field": true, "name": true}
	uses := func(w string) bool { return words[w] }
	for _, tc := range []struct{ term, a, b string }{
		{"countrylanguag", "country", "languag"},
		{"outfield", "out", "field"},
		{"membership", "", ""}, // ship is not a word of this schema
		{"country", "", ""},    // a word of its own
		{"fieldname", "field", "name"},
		{"outname", "out", "name"},
		{"outfld", "", ""}, // under seven letters: too short to be two words
	} {
		a, b, ok := split(tc.term, uses)
		if a != tc.a || b != tc.b || ok != (tc.a != "") {
			t.Errorf("split(%q) = %q, %q, %v; want %q, %q", tc.term, a, b, ok, tc.a, tc.b)
		}
	}
}
