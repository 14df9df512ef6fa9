package benchmark

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// wording is how each look-alike copy says its words (LookAlike.Words):
// per copy schema, its own words for the original's and the renames that
// follow.
type wording struct {
	copies map[string]*copyWords // by the copy's schema name before renaming
	// of lists each original schema's copies, in copy order (2, 3, …).
	of map[string][]string
}

// copyWords is one copy's wording.
type copyWords struct {
	words  map[string]string // original word → the copy's, lower case, singular
	schema string            // the copy's schema name after renaming
	tables map[string]string // lower-case original table name → the copy's
}

// newWording picks, for each copy of a schema of cat (of names them),
// another word of its group for a share la.Words of the words it uses
// that have synonyms. A word the copy already uses is never a
// replacement, and no two words get the same one, so no two names
// collide.
func newWording(cat *catalog.Catalog, of map[string][]string, la LookAlike, rng *rand.Rand) *wording {
	groups := map[string][]string{}
	for _, g := range synonymGroups {
		for _, w := range g {
			if _, ok := groups[w]; !ok {
				groups[w] = g
			}
		}
	}
	w := &wording{copies: map[string]*copyWords{}, of: map[string][]string{}}
	for _, orig := range cat.Schemas() {
		used := usedWords(cat, orig)
		for _, name := range of[orig] {
			cw := &copyWords{words: otherWords(used, groups, la.Words, rng), tables: map[string]string{}}
			cw.schema = sayAnotherWay(name, cw.words)
			w.copies[name] = cw
			w.of[orig] = append(w.of[orig], name)
		}
	}
	return w
}

// otherWords picks, for a share of the words used that have synonyms,
// another word of the group that is not used and not picked already.
func otherWords(used []string, groups map[string][]string, share float64, rng *rand.Rand) map[string]string {
	words, taken := map[string]string{}, map[string]bool{}
	for _, word := range used {
		g := groups[word]
		if g == nil || rng.Float64() >= share {
			continue
		}
		var others []string
		for _, o := range g {
			if o != word && !taken[o] && !slices.Contains(used, o) {
				others = append(others, o)
			}
		}
		if len(others) == 0 {
			continue
		}
		to := others[rng.IntN(len(others))]
		words[word], taken[to] = to, true
	}
	return words
}

// usedWords are the singular, lower-case words of a schema's name and
// its tables', columns' and constraints' names, sorted.
func usedWords(cat *catalog.Catalog, schema string) []string {
	seen := map[string]bool{}
	add := func(name string) {
		for _, seg := range segments(name) {
			if isWord(seg) {
				seen[text.Singular(strings.ToLower(seg))] = true
			}
		}
	}
	add(schema)
	for _, t := range cat.Tables() {
		if t.Schema != schema {
			continue
		}
		add(t.Name)
		for _, c := range t.Columns {
			add(c.Name)
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// apply renames every copy's columns, constraints, tables and schema to
// its words and takes the catalog through its DDL again, so that no
// copy remembers the original's names as former ones (search reads
// those).
func (w *wording) apply(whole *catalog.Catalog) (*catalog.Catalog, error) {
	var sql strings.Builder
	for _, t := range whole.Tables() {
		cw := w.copies[t.Schema]
		if cw == nil {
			continue
		}
		w.renameTable(&sql, t, cw)
	}
	for _, name := range slices.Sorted(maps.Keys(w.copies)) {
		if cw := w.copies[name]; cw.schema != name {
			fmt.Fprintf(&sql, "ALTER SCHEMA %s RENAME TO %s;\n", catalog.QuoteIdent(name), catalog.QuoteIdent(cw.schema))
		}
	}
	renamed, err := whole.Apply("look-alike-words.sql", sql.String())
	if err != nil {
		return nil, fmt.Errorf("bench: look-alike words: %w", err)
	}
	fresh, err := catalog.Snapshot(whole.Database, "look-alike.sql", renamed.DDL())
	if err != nil {
		return nil, fmt.Errorf("bench: look-alike words: rebuild: %w", err)
	}
	return fresh, nil
}

// renameTable writes the renames of one copy table's columns,
// constraints and name.
func (w *wording) renameTable(sql *strings.Builder, t *catalog.Table, cw *copyWords) {
	q := t.QualName().String()
	cols := map[string]bool{}
	for _, c := range t.Columns {
		cols[c.Name] = true
	}
	for _, c := range t.Columns {
		if to := sayAnotherWay(c.Name, cw.words); to != c.Name && !cols[to] {
			cols[to] = true
			fmt.Fprintf(sql, "ALTER TABLE %s RENAME COLUMN %s TO %s;\n", q, catalog.QuoteIdent(c.Name), catalog.QuoteIdent(to))
		}
	}
	for i, k := range t.ConstraintNames() {
		if k == "" {
			continue
		}
		// Constraint names are the copy's words too (the chunk shows
		// them), numbered so that two never meet.
		to := fmt.Sprintf("%s_%d", sayAnotherWay(k, cw.words), i)
		fmt.Fprintf(sql, "ALTER TABLE %s RENAME CONSTRAINT %s TO %s;\n", q, catalog.QuoteIdent(k), catalog.QuoteIdent(to))
	}
	to := sayAnotherWay(t.Name, cw.words)
	cw.tables[strings.ToLower(t.Name)] = to
	if to != t.Name {
		fmt.Fprintf(sql, "ALTER TABLE %s RENAME TO %s;\n", q, catalog.QuoteIdent(to))
	}
}

// ask asks each question of one of its database's n look-alikes, the
// original included, drawn from rng: in that database's words, with
// its gold tables there.
func (w *wording) ask(qs []Question, n int, rng *rand.Rand) []Question {
	out := make([]Question, len(qs))
	for i, q := range qs {
		out[i] = q
		k := rng.IntN(n)
		schema := goldSchema(q.GoldTables)
		if k == 0 || schema == "" || k > len(w.of[schema]) {
			continue
		}
		cw := w.copies[w.of[schema][k-1]]
		out[i].Question = sayAnotherWay(q.Question, cw.words)
		out[i].Hints = sayAnotherWay(q.Hints, cw.words)
		out[i].GoldTables = make([]string, len(q.GoldTables))
		for j, g := range q.GoldTables {
			_, table, _ := strings.Cut(g, ".")
			if to, ok := cw.tables[strings.ToLower(table)]; ok {
				table = to
			}
			out[i].GoldTables[j] = strings.ToLower(cw.schema + "." + table)
		}
	}
	return out
}

// goldSchema is the one schema of a question's gold tables, lower case,
// or "" if they span several.
func goldSchema(gold []string) string {
	s := ""
	for _, g := range gold {
		sch, _, ok := strings.Cut(strings.ToLower(g), ".")
		if !ok || s != "" && sch != s {
			return ""
		}
		s = sch
	}
	return s
}

// sayAnotherWay replaces each word of s that words maps (in its singular,
// lower case) with its replacement, in the same case and number:
// CustomerID → ClientID, customer_orders → client_orders, "Customers" →
// "Clients".
func sayAnotherWay(s string, words map[string]string) string {
	if len(words) == 0 {
		return s
	}
	var b strings.Builder
	for _, seg := range segmentsWithGaps(s) {
		if !isWord(seg) {
			b.WriteString(seg)
			continue
		}
		lower := strings.ToLower(seg)
		one := text.Singular(lower)
		to, ok := words[one]
		if !ok {
			b.WriteString(seg)
			continue
		}
		if one != lower {
			to = plural(to)
		}
		b.WriteString(inCaseOf(seg, to))
	}
	return b.String()
}

// segments are the words of an identifier or text: runs of letters split
// where case changes (OrderLines: Order, Lines; HTTPServer: HTTP,
// Server).
func segments(s string) []string {
	var out []string
	for _, seg := range segmentsWithGaps(s) {
		if isWord(seg) {
			out = append(out, seg)
		}
	}
	return out
}

// segmentsWithGaps is segments with what lies between them, so that the
// pieces joined are s.
func segmentsWithGaps(s string) []string {
	var out []string
	rs := []rune(s)
	start := 0
	for i := 1; i <= len(rs); i++ {
		if i == len(rs) || boundary(rs, i) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return out
}

// boundary says whether a new segment starts at rs[i].
func boundary(rs []rune, i int) bool {
	p, r := rs[i-1], rs[i]
	switch {
	case isLetter(p) != isLetter(r):
		return true
	case !isLetter(r):
		return false
	case unicode.IsLower(p) && unicode.IsUpper(r):
		return true
	default:
		return unicode.IsUpper(p) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
	}
}

func isLetter(r rune) bool { return unicode.IsLetter(r) }

func isWord(seg string) bool {
	for _, r := range seg {
		return isLetter(r)
	}
	return false
}

// inCaseOf writes to in the case of like: UPPER, Title or lower.
func inCaseOf(like, to string) string {
	rs := []rune(like)
	switch {
	case len(rs) > 1 && strings.ToUpper(like) == like:
		return strings.ToUpper(to)
	case unicode.IsUpper(rs[0]):
		return strings.ToUpper(to[:1]) + to[1:]
	default:
		return to
	}
}

// plural is the English plural of a singular, lower-case word.
func plural(w string) string {
	switch {
	case w == "person":
		return "people"
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ies"
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return w + "es"
	default:
		return w + "s"
	}
}
