package retrieve

import (
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
