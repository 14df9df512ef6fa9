package index

import (
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

// Fields is the analysed text of a chunk's four BM25 fields, as every
// store indexes them: space-separated terms of package text, so that a
// store's own tokenizer only has to split on spaces and never stems.
type Fields struct {
	Name, Schema, Columns, Body string
}

// SearchFields analyses c into its BM25 fields. Identifier fields (name,
// schema, columns) also carry the compounds of adjacent terms, so
// car_makers yields carmaker and meets a question saying "car makers".
//
// A table or view keeps its former names (the chunk's rename lines) in
// the name field, and its columns' in the columns field: a question that
// still says "categories" after a rename finds the table as before.
func SearchFields(c chunk.Chunk) Fields {
	names, cols := []string{c.Title}, c.Columns
	if c.Kind == chunk.KindTable || c.Kind == chunk.KindView {
		rels, former := chunk.FormerNames(c.Text)
		names = append(names, rels...)
		cols = append(slices.Clip(cols), former...)
	}
	return Fields{
		Name:    identifiers(names...),
		Schema:  identifiers(c.Schema),
		Columns: identifiers(cols...),
		Body:    analysed(c.Text),
	}
}

func analysed(parts ...string) string {
	var terms []string
	for _, p := range parts {
		terms = text.AppendTerms(terms, p)
	}
	return strings.Join(terms, " ")
}

func identifiers(parts ...string) string {
	var terms []string
	for _, p := range parts {
		t := text.Terms(p)
		terms = append(terms, t...)
		terms = append(terms, text.Compounds(t)...)
	}
	return strings.Join(terms, " ")
}

// MatchTerms turns a TextQuery's terms into the distinct terms a store
// ORs together: each is only split into words, so operators and
// punctuation vanish, plus the compounds of adjacent words but those in
// noCompounds. Terms arrive analysed; analysing them again would stem
// twice, which is not idempotent (courses → cours → cour) and would
// miss the index.
func MatchTerms(terms []string, noCompounds ...string) []string {
	words := QueryWords(terms)
	seen := map[string]bool{}
	var out []string
	for _, w := range words {
		if w != "" && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, c := range text.Compounds(words) {
		if !seen[c] && !slices.Contains(noCompounds, c) {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// QueryWords are the words of a TextQuery's terms in order: the ones
// whose adjacent pairs MatchTerms compounds.
func QueryWords(terms []string) []string {
	var words []string
	for _, t := range terms {
		words = append(words, text.Words(t)...)
	}
	return words
}

// Match is MatchTerms of q's terms and compounds.
func (q TextQuery) Match() []string { return MatchTerms(q.Terms, q.NoCompounds...) }
