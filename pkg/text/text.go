// Package text is the one analyzer that BM25 indexing, query parsing, the
// local embedder and the schema-aware rerank share, so that all of them
// agree on what a term is.
//
// Identifiers are split the way people read them (customer_id → customer
// id, OrderLines → order lines, addr2 → addr 2), everything is lower-cased,
// English stop words are dropped, and inflections are folded by a light
// stemmer (orders → order, categories → category, people → person,
// shipped → ship). The output is plain [a-z0-9] terms, safe to hand to any
// query syntax after quoting.
package text

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words splits s into lower-case words, breaking identifiers at
// underscores, punctuation, lower→upper case changes ("OrderID" → order
// id), and letter↔digit changes. Non-ASCII letters are kept as letters.
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	runes := []rune(s)
	for i, r := range runes {
		switch {
		case unicode.IsLetter(r):
			if len(cur) > 0 {
				prev := cur[len(cur)-1]
				switch {
				case unicode.IsDigit(prev):
					flush()
				case unicode.IsUpper(r) && unicode.IsLower(prev):
					flush() // orderId → order | Id
				case unicode.IsUpper(r) && unicode.IsUpper(prev) && i+1 < len(runes) && unicode.IsLower(runes[i+1]):
					flush() // HTTPServer → HTTP | Server
				}
			}
			cur = append(cur, r)
		case unicode.IsDigit(r):
			if len(cur) > 0 && !unicode.IsDigit(cur[len(cur)-1]) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// Terms analyzes s into search terms: Words, minus stop words, with
// schema abbreviations spelt out, stemmed.
func Terms(s string) []string {
	words := Words(s)
	out := words[:0]
	for _, w := range words {
		if stopWords[w] {
			continue
		}
		out = append(out, term(w))
	}
	return out
}

// AppendTerms is Terms appending to dst, for callers that build one field
// from many strings without intermediate slices.
func AppendTerms(dst []string, s string) []string {
	for _, w := range Words(s) {
		if !stopWords[w] {
			dst = append(dst, term(w))
		}
	}
	return dst
}

// term is one word's search term: its stem, or the stem of what it
// abbreviates (qty and qtys both become quantity).
func term(w string) string {
	if e, ok := abbreviations[w]; ok {
		return Stem(e)
	}
	st := Stem(w)
	if e, ok := abbreviations[st]; ok {
		return Stem(e)
	}
	return st
}

// abbreviations are the contractions schemas use for words questions
// spell out (order_qty, dept_id, cust_addr). Only unambiguous ones: a
// contraction that also reads as a word of its own (no, cat, prod, pos)
// is left alone. Prefix abbreviations the schema itself defines (incorp
// for incorporated) are matched by the retriever instead.
var abbreviations = map[string]string{
	"qty": "quantity", "amt": "amount", "nbr": "number", "num": "number", "dept": "department",
	"desc": "description", "descr": "description", "addr": "address", "emp": "employee", "empl": "employee",
	"cust": "customer", "acct": "account", "mgr": "manager", "avg": "average", "pct": "percent",
	"txn": "transaction", "tel": "telephone", "pwd": "password", "dob": "birth", "yr": "year",
	"cnt": "count", "pmt": "payment", "pymt": "payment", "stmt": "statement", "lang": "language",
	"univ": "university", "govt": "government", "intl": "international",
}

// IsStopWord reports whether w (lower case) carries no meaning on its own.
func IsStopWord(w string) bool { return stopWords[w] || commandWords[w] }

// stopWords are English function words and question fillers. Words that
// name schema things (name, number, id, date, type) are deliberately not
// here, nor the command verbs that open questions (commandWords).
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all also am an and any are aren
		as at be because been before being below between both but by can could did do does doing don down
		during each either else ever every few for from further had has have having he her here hers
		herself him himself his how i if in into is it its itself just me more most my myself neither no
		nor not now of off on once only or other our ours ourselves out over own per same she should so
		some such than that the their theirs them themselves then there these they this those through to
		too under until up upon us very was we were what whatever when where whether which while who whom
		whose why will with within without would yet you your yours yourself yourselves
		s t whats please many much`) {
		m[w] = true
	}
	return m
}()

// commandWords open most questions as verbs ("Show the names…", "List
// all…") but are also nouns that schemas use ("the attendance of shows",
// a table named list, a return date). Terms keeps them, so identifiers
// and text are indexed with them; QueryTerms drops them where they are
// verbs.
var commandWords = map[string]bool{
	"show": true, "shows": true, "list": true, "lists": true, "find": true, "give": true, "gives": true,
	"return": true, "returns": true, "display": true, "tell": true, "get": true,
}

// nounContext are the words after which a command word is a noun.
var nounContext = map[string]bool{
	"the": true, "a": true, "an": true, "of": true, "all": true, "each": true, "every": true, "for": true,
	"per": true, "by": true, "their": true, "its": true, "his": true, "her": true, "my": true, "our": true,
	"your": true, "whose": true, "with": true, "in": true, "on": true, "at": true, "from": true, "no": true,
	"any": true, "some": true, "this": true, "that": true, "these": true, "those": true, "which": true,
	"what": true, "many": true, "most": true, "fewest": true, "least": true, "total": true,
}

// QueryTerms analyzes a question: Terms, except that command words count
// only where they are nouns (after a determiner or a preposition), and
// the words of a sort instruction ("ordered by age", "in descending
// alphabetical order") are dropped: they ask for an ORDER BY, not for a
// table of orders.
func QueryTerms(s string) []string { return freeTerms(s, true) }

// StripDates blanks the dates and times a question writes in digits
// (2017/3/27, 12-30-2003, 3:43:54): they are values, and as terms their
// numbers meet identifiers that end in digits (address_1, A_VAR12).
// Years and amounts stay: "in 2011" may be a column's name.
func StripDates(s string) string {
	var b []byte // a copy, made on the first change
	for i := 0; i < len(s); {
		if !isDigit(s[i]) || (i > 0 && isNameByte(s[i-1])) {
			i++
			continue
		}
		end := dateAt(s, i)
		if end == i {
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			continue
		}
		if b == nil {
			b = []byte(s)
		}
		for j := i; j < end; j++ {
			b[j] = ' '
		}
		i = end
	}
	if b == nil {
		return s
	}
	return string(b)
}

// dateAt returns where a date (three numbers joined by the same / or -)
// or a time (h:mm or h:mm:ss) starting at i ends, or i when none does.
func dateAt(s string, i int) int {
	digits := func(j int) int {
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		return j
	}
	a := digits(i)
	if a == len(s) || a-i > 4 {
		return i
	}
	sep := s[a]
	switch sep {
	case '/', '-':
		b := digits(a + 1)
		if b == a+1 || b-a-1 > 4 || b == len(s) || s[b] != sep {
			return i
		}
		c := digits(b + 1)
		if c == b+1 || c-b-1 > 4 || (c < len(s) && isNameByte(s[c])) {
			return i
		}
		return c
	case ':':
		b := digits(a + 1)
		if a-i > 2 || b-a-1 != 2 {
			return i
		}
		if b+3 <= len(s) && s[b] == ':' && digits(b+1) == b+3 {
			b += 3
		}
		if b < len(s) && isNameByte(s[b]) {
			return i
		}
		return b
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// TextTerms analyzes free text that may be a question or a document (the
// local embedder's input): command words count only where they are
// nouns, as in QueryTerms, but sort instructions stay, because in a
// document "ordered by" is content, and vectors of both must agree.
func TextTerms(s string) []string { return freeTerms(s, false) }

func freeTerms(s string, dropSorting bool) []string {
	words := Words(s)
	out := make([]string, 0, len(words))
	var sorting map[int]bool
	if dropSorting {
		sorting = sortPhrase(words)
	}
	prev := ""
	for i, w := range words {
		keep := !stopWords[w] && !sorting[i] && (!commandWords[w] || nounContext[prev])
		prev = w
		if keep {
			out = append(out, term(w))
		}
	}
	return out
}

// sortOrders are the words that say which way an ORDER BY runs.
var sortOrders = map[string]bool{
	"ascending": true, "descending": true, "alphabetical": true, "alphabetic": true, "alphabetically": true,
	"lexicographical": true, "lexicographic": true, "lexicographically": true, "reverse": true,
	"reversed": true, "increasing": true, "decreasing": true, "chronological": true, "numerical": true,
	"asc": true, "desc": true,
}

// sortVerbs are the words that ask for an ORDER BY when "by" follows them
// ("sorted by", "ordered by") or when they open a question that has a
// "by" later ("Sort the products by price").
var sortVerbs = map[string]bool{"order": true, "ordered": true, "sort": true, "sorted": true, "sorting": true}

// sortPhrase marks the words of the question's sort instructions: a sort
// verb followed by "by" or opening a question with a "by", "order" after a sort
// direction ("in descending order") or in "in order of", and the
// directions themselves ("… by age, descending"). "order" anywhere else
// is a noun and stays.
func sortPhrase(words []string) map[int]bool {
	var m map[int]bool
	mark := func(i int) {
		if m == nil {
			m = map[int]bool{}
		}
		m[i] = true
	}
	for i, w := range words {
		switch {
		case sortOrders[w]:
			mark(i)
			// "descending alphabetical order": the whole run goes.
			if j := i + 1; j < len(words) && (words[j] == "order" || words[j] == "orders") {
				mark(j)
			}
		case sortVerbs[w] && i+1 < len(words) && words[i+1] == "by":
			mark(i)
		case sortVerbs[w] && i == 0 && slices.Contains(words[1:], "by"):
			mark(i) // "Sort the products by price", not "Order details"
		case w == "order" && i > 0 && words[i-1] == "in" && i+1 < len(words) && words[i+1] == "of":
			mark(i) // "in order of age"
		}
	}
	return m
}

// irregular maps irregular plurals and forms to their base.
var irregular = map[string]string{
	"people": "person", "persons": "person", "children": "child", "men": "man", "women": "woman",
	"mice": "mouse", "geese": "goose", "teeth": "tooth", "feet": "foot", "indices": "index",
	"matrices": "matrix", "vertices": "vertex", "analyses": "analysis", "criteria": "criterion",
	"phenomena": "phenomenon", "staff": "staff", "series": "series", "species": "species",
	"news": "news", "status": "status", "statuses": "status", "address": "address",
	"addresses": "address", "bus": "bus", "buses": "bus", "gas": "gas", "his": "his",
	"this": "this", "was": "was", "has": "has", "is": "is", "does": "does", "alias": "alias",
	"aliases": "alias", "campus": "campus", "campuses": "campus", "virus": "virus",
	"viruses": "virus", "data": "data", "media": "media", "lives": "life", "wives": "wife",
	"knives": "knife", "leaves": "leaf", "shelves": "shelf", "halves": "half",
	"movies": "movie", "cookies": "cookie", "ties": "tie", "pies": "pie", "lies": "lie",
	"dies": "die",
}

// Stem folds English inflections of a lower-case word: plurals, -ed and
// -ing, and a final silent e, so that order/orders/ordered,
// category/categories and release/released/releasing meet. It is a light
// stemmer by design: it never merges words that mean different things in
// a schema (singer stays apart from sing, status from stat).
func Stem(w string) string {
	if b, ok := irregular[w]; ok {
		return dropFinalE(b)
	}
	if len(w) <= 3 || !isASCIILower(w) {
		return w
	}
	w = unplural(w)
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "eed"):
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]) && len(w) > 4:
		w = undouble(w[:len(w)-2])
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]) && len(w) > 5:
		w = undouble(w[:len(w)-3])
	}
	return dropFinalE(w)
}

// Singular undoes the English plural of a lower-case word (categories,
// addresses, courses, movies), as Stem does before it folds -ed and -ing.
func Singular(w string) string {
	if b, ok := irregular[w]; ok {
		return b
	}
	if len(w) <= 3 || !isASCIILower(w) {
		return w
	}
	return unplural(w)
}

// unplural is Singular's rules, for a word of 4+ ASCII letters.
func unplural(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "zzes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	}
	return w
}

// dropFinalE removes a silent final e (release → releas), so that forms
// that lost it (released, releasing) meet the base.
func dropFinalE(w string) string {
	if strings.HasSuffix(w, "e") && len(w) > 4 && !strings.HasSuffix(w, "ee") {
		return w[:len(w)-1]
	}
	return w
}

// undouble drops a doubled final consonant left by -ed/-ing (shipp → ship),
// except l, s and z, which English doubles in base words (call, class).
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

func isASCIILower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return utf8.ValidString(s)
}

// Compounds returns the joins of adjacent terms ("order", "line" →
// "orderline"), so that an identifier and a question that name the same
// thing as a phrase meet on one rare term.
func Compounds(terms []string) []string {
	out := make([]string, 0, len(terms))
	for i := 1; i < len(terms); i++ {
		out = append(out, terms[i-1]+terms[i])
	}
	return out
}

// Identifiers returns the names s writes out as identifiers, lower
// case, in order, each once: quoted in backticks or double quotes
// ("Order Date", `Free Meal Count (K-12)`), qualified (orders.total),
// snake_case (movie_release_year) or camelCase (directorName). Plain
// words are not identifiers: "salary" is a word, salary_grade a name.
// Whether they name anything is the caller's to check against its
// catalog: a quoted string may as well be a value.
func Identifiers(s string) []string {
	var out []string
	add := func(id string) {
		id = strings.ToLower(strings.TrimSpace(id))
		// PostgreSQL's names stop at 63 bytes; a longer quote is prose.
		if id != "" && len(id) <= 63 && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '`' || c == '"':
			end := strings.IndexAny(s[i+1:], string(c)+"\n")
			if end >= 0 && s[i+1+end] == c {
				add(s[i+1 : i+1+end])
				i += end + 2
				continue
			}
			i++
		case isNameByte(c) || c == '.':
			j := i
			for j < len(s) && (isNameByte(s[j]) || s[j] == '.') {
				j++
			}
			if t := strings.Trim(s[i:j], "._"); isIdentifier(t) {
				add(t)
			}
			i = j
		default:
			i++
		}
	}
	return out
}

// isNameByte and isLetter take every byte of a multi-byte UTF-8
// character for a letter, as PostgreSQL's lexer does.
func isNameByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || isLetter(c)
}

// isIdentifier says whether a run of name bytes is written like an
// identifier: a.b with both parts names, snake_case, or camelCase.
func isIdentifier(t string) bool {
	if t == "" || !isLetter(t[0]) {
		return false
	}
	if a, b, ok := strings.Cut(t, "."); ok {
		return a != "" && b != "" && !strings.Contains(b, ".") && isLetter(b[0]) && len(a)+len(b) > 2 // not e.g.
	}
	if strings.Contains(t, "_") {
		return true
	}
	// camelCase, or PascalCase with a lower case letter before a later
	// capital: orderId, OrderLines, iPhone; not NASA or Paris.
	for i := 1; i < len(t); i++ {
		if 'A' <= t[i] && t[i] <= 'Z' && 'a' <= t[i-1] && t[i-1] <= 'z' {
			return true
		}
	}
	return false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 }
