package retrieve

import (
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
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
CREATE TABLE songs (id int, title text, sales int);
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
