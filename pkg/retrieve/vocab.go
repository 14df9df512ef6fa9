package retrieve

import (
	"maps"
	"slices"
	"strings"
)

// maxIdentifierOwners bounds how many tables an identifier may belong
// to and still count: created_at or user_id in a big schema say little
// about which table is meant.
const maxIdentifierOwners = 10

// owners returns the tables and views that have a name or column of
// this name (lower case), in schema order, or nil when none do or more
// than maxIdentifierOwners do.
func (v *vocab) owners(name string) []string {
	bySchema := v.idents[name]
	n := 0
	for _, c := range bySchema {
		n += c
	}
	if n == 0 || n > maxIdentifierOwners {
		return nil
	}
	schemas := slices.Sorted(maps.Keys(bySchema))
	out := make([]string, 0, n)
	for _, s := range schemas {
		out = append(out, v.parts[s].idents[name]...)
	}
	return out
}

// vocab scores schemas as documents: a schema's words are its name, its
// tables' and views' names and their column names. A question term found
// in a schema scores its inverse schema frequency (rare words say more
// about which database a question is about), twice when it names a table
// or the schema itself.
type vocab struct {
	names   map[string]map[string]int // schema → terms of its schema, table and view names (how many of its tables and views have each)
	columns map[string]map[string]int // schema → terms of its column names (the same)
	df      map[string]int            // term → number of schemas that have it
	// postings, length, coll and total are the schemas as documents for
	// query likelihood: a term's weighted count in each schema that has
	// it (names twice, columns once), each schema's length, and the
	// whole catalog's counts.
	postings map[string]map[string]float64
	length   map[string]float64
	coll     map[string]float64
	total    float64
	// deletes maps every term of 3+ letters, and each of its one-letter
	// deletions, to the terms it came from: the symmetric-delete index
	// that finds the terms one edit from a misspelt word. Words to
	// correct have 4+ letters, but a short term still makes a
	// correction ambiguous (sage: age or sale).
	deletes map[string][]string
	// extends maps every start of a term of 4+ letters that is one to
	// three letters shorter (maxExtension) to the terms it starts, in
	// order: rent → rental.
	extends map[string][]string
	// heads maps a word to the run-together identifier terms it ends
	// (category → productcategory), where the schema that has the compound
	// also uses both parts as words of their own.
	heads map[string][]string

	// parts are the schemas' own shares of all the above, from which a
	// vocabulary is updated rather than rebuilt (vocab.go); headRefs
	// counts the schemas behind each compound of heads.
	parts    map[string]*schemaVocab
	headRefs map[string]map[string]int
	// idents maps each table and column name, lower case, to the
	// schemas that have it and how many of their tables do (ident.go).
	idents map[string]map[string]int
	// objDF counts, per term, the tables and views that have it in
	// their name or columns, out of objects (partitions aside).
	objDF   map[string]int
	objects int
}

// split reads a run-together identifier term (productcategory) as the two
// words it is made of (product, category) when the schema uses both as
// words of their own: uses says whether it does. Parts are at least three
// letters, the compound at least seven; the first split point that works
// wins. Checking against the schema's own words, not a dictionary, keeps
// out splits like member|ship and bal|lots.
func split(t string, uses func(string) bool) (a, b string, ok bool) {
	if len(t) < 7 {
		return "", "", false
	}
	for i := 3; i <= len(t)-3; i++ {
		if uses(t[:i]) && uses(t[i:]) {
			return t[:i], t[i:], true
		}
	}
	return "", "", false
}

// maxIdentifierBytes is PostgreSQL's limit on an identifier's length
// (NAMEDATALEN − 1); an identifier's terms are no longer.
const maxIdentifierBytes = 63

// unknown reports whether w is a word corrections and extensions may
// stand in for: four letters or more, in no identifier, and no number
// (numbers are values, not misspelt names: 5000 is not 500).
func (v *vocab) unknown(w string) bool {
	return len(w) >= 4 && v.df[w] == 0 && !strings.ContainsAny(w, "0123456789")
}

// maxExtension is how many letters an extension adds to a word, and
// maxExtensions how many extensions a word may have and still get them.
// Four or five letters cost BIRD's CR@15 up to 0.003; one extension
// only, SpiderUnion 0.002 of CR@5; three or four, no change
// (docs/retrieval.md).
const (
	maxExtension  = 3
	maxExtensions = 2
)

// extensions are the identifier terms a word not in the vocabulary
// extends to by one to three letters, when one or two do: the
// derivations the stemmer does not fold ("rented" → rental, "Asia" →
// asian, "indicate" → indicator). The slice is the vocabulary's.
func (v *vocab) extensions(w string) []string {
	if !v.unknown(w) {
		return nil
	}
	if ext := v.extends[w]; len(ext) <= maxExtensions {
		return ext
	}
	return nil
}

// starts calls fn with the starts of t an extension reaches it from:
// 4 letters or more, and one to maxExtension letters shorter.
func starts(t string, fn func(string)) {
	for n := max(4, len(t)-maxExtension); n < len(t); n++ {
		fn(t[:n])
	}
}

// correction is the one identifier term a word not in the vocabulary is a
// single edit (insertion, deletion, substitution) away from, or "" when
// there is none or more than one: a misspelt question word ("carr",
// "adress") or a near form the stemmer does not fold ("weigh" → weight).
func (v *vocab) correction(w string) string {
	if !v.unknown(w) {
		return ""
	}
	if len(w) > maxIdentifierBytes+1 {
		// No identifier term is longer, so none is one edit away; and the
		// deletes below cost the square of the word's length, which a
		// 4 KB question of one word would otherwise spend.
		return ""
	}
	// The stemmer folds goalies to goaly and goalie to goali: a noun in
	// -ie and its plural in -ies, which it cannot tell from category
	// and categories, meet here, before any other edit is weighed.
	other := ""
	switch n := len(w) - 1; w[n] {
	case 'i':
		other = w[:n] + "y"
	case 'y':
		other = w[:n] + "i"
	}
	if other != "" && v.df[other] > 0 {
		return other
	}
	// A doubled letter typed once too often (carr) is the likeliest
	// slip: its undoubled form wins outright.
	for i := 1; i < len(w); i++ {
		if w[i] == w[i-1] && v.df[w[:i]+w[i+1:]] > 0 {
			return w[:i] + w[i+1:]
		}
	}
	found := ""
	check := func(key string) bool {
		for _, t := range v.deletes[key] {
			if t != found && editOne(w, t) {
				if found != "" {
					return false // ambiguous
				}
				found = t
			}
		}
		return true
	}
	if !check(w) {
		return ""
	}
	for i := range len(w) {
		if !check(w[:i] + w[i+1:]) {
			return ""
		}
	}
	// A slip seldom changes a word's first letter, and a real word
	// whose first letter is swapped is most often another real word
	// (rent and sent, dark and park, join and coin): not a misspelling
	// of it. A letter too many or too few in front (sname) still is.
	if found != "" && len(found) == len(w) && found[0] != w[0] {
		return ""
	}
	return found
}

// editOne reports whether a and b differ by exactly one insertion,
// deletion or substitution.
func editOne(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	if la-lb > 1 || lb-la > 1 {
		return false
	}
	i := 0
	for i < la && i < lb && a[i] == b[i] {
		i++
	}
	switch {
	case la == lb:
		return a[i+1:] == b[i+1:]
	case la < lb:
		return a[i:] == b[i+1:]
	default:
		return a[i+1:] == b[i:]
	}
}
