package retrieve

import (
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/text"
)

// Term is one BM25 query term and where it came from: Why is question
// (an analysed word of the question), compound (a run-together
// identifier the word ends), correction (the identifier term one edit
// from a word no identifier uses), extension (an identifier term that
// extends such a word by a few letters) or prefix (an identifier term
// that abbreviates the word); From is the question word.
type Term struct{ Term, Why, From string }

// Term origins.
const (
	FromQuestion   = "question"
	FromCompound   = "compound"
	FromCorrection = "correction"
	FromExtension  = "extension"
	FromPrefix     = "prefix"
	FromValue      = "value"
)

// queryTerms are the BM25 terms of a question's analysed words: the
// words, the run-together identifiers they end (Compounds), the
// corrections of words the database's identifiers do not use
// (Corrections) and the identifier terms that extend them
// (Extensions), and the identifier terms that abbreviate one of them
// (PrefixMin). cat may be nil: then only the words.
func (r *Retriever) queryTerms(words []string, cat *catalog.Catalog) []Term {
	out := make([]Term, 0, len(words))
	seen := make(map[string]bool, len(words))
	add := func(t, why, from string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, Term{Term: t, Why: why, From: from})
		}
	}
	for _, w := range words {
		add(w, FromQuestion, "")
	}
	a := r.cfg.Analyse
	if cat == nil || (a.PrefixMin <= 0 && !a.Corrections && !a.Extensions && !a.Compounds) {
		return out
	}
	v := r.graphs.get(cat).vocab
	if r.cfg.Analyse.Compounds {
		for _, w := range words {
			for _, c := range v.heads[w] {
				add(c, FromCompound, w)
			}
		}
	}
	if r.cfg.Analyse.Corrections {
		for _, w := range words {
			if c := v.correction(w); c != "" {
				add(c, FromCorrection, w)
			}
		}
	}
	if r.cfg.Analyse.Extensions {
		for _, w := range words {
			for _, e := range v.extensions(w) {
				add(e, FromExtension, w)
			}
		}
	}
	if r.cfg.Analyse.PrefixMin > 0 {
		for _, w := range words {
			for n := r.cfg.Analyse.PrefixMin; n <= len(w)-2; n++ {
				if v.df[w[:n]] > 0 {
					add(w[:n], FromPrefix, w)
				}
			}
		}
	}
	return out
}

// valueTerms adds to terms the attributes that hold the values s names
// (text.ValueClasses, text.ProperNames), those the database's
// identifiers use. loose are the attributes of the proper names that
// some identifier's word is in, but not every word ("Russell Close":
// close): values too, but searched they route the question to the
// wrong database as often as to the right one, so only the coverage
// gaps read them (docs/retrieval.md).
func (r *Retriever) valueTerms(s string, terms []Term, cat *catalog.Catalog) (_, loose []Term) {
	if !r.cfg.Analyse.ValueClasses || cat == nil {
		return terms, nil
	}
	classes, from := text.ValueClasses(s)
	v := r.graphs.get(cat).vocab
	if r.cfg.Analyse.ProperNames {
		// A name no identifier uses is a value: of a name column, or of
		// a table of people ("directed by Michael Bay").
		known := func(w string) bool {
			return slices.ContainsFunc(text.QueryTerms(w), func(t string) bool { return v.df[t] > 0 })
		}
		names, of := text.ProperNames(s)
		for _, n := range names {
			switch {
			case !slices.ContainsFunc(n, known):
				for _, c := range of {
					classes, from = append(classes, c), append(from, strings.Join(n, " "))
				}
			case slices.ContainsFunc(n, func(w string) bool { return !known(w) }):
				for _, c := range of {
					loose = appendValue(loose, v, c, strings.Join(n, " "))
				}
			}
		}
	}
	for i, c := range classes {
		terms = appendValue(terms, v, c, from[i])
	}
	loose = slices.DeleteFunc(loose, func(l Term) bool {
		return slices.ContainsFunc(terms, func(t Term) bool { return t.Term == l.Term })
	})
	return terms, loose
}

// appendValue adds the value term c, from the value from, when the
// database's identifiers use it and terms lack it.
func appendValue(terms []Term, v *vocab, c, from string) []Term {
	if v.df[c] > 0 && !slices.ContainsFunc(terms, func(t Term) bool { return t.Term == c }) {
		terms = append(terms, Term{Term: c, Why: FromValue, From: from})
	}
	return terms
}

// minCommonHead is the fewest tables a head word must be in for
// CommonHeads to leave its phrases out: in a database of a few tables,
// a word two of them use is not generic.
const minCommonHead = 3

// commonPhrases are the compounds of adjacent query words that
// CommonHeads leaves out.
func (r *Retriever) commonPhrases(terms []string, cat *catalog.Catalog) []string {
	if r.cfg.Analyse.CommonHeads <= 0 || cat == nil {
		return nil
	}
	v := r.graphs.get(cat).vocab
	floor := max(float64(minCommonHead), r.cfg.Analyse.CommonHeads*float64(v.objects))
	words := index.QueryWords(terms)
	var out []string
	for i := 1; i < len(words); i++ {
		if float64(v.objDF[words[i]]) >= floor {
			out = append(out, words[i-1]+words[i])
		}
	}
	return out
}

// termStrings are the terms alone.
func termStrings(terms []Term) []string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = t.Term
	}
	return out
}

// analyse turns the question and hints into BM25 terms.
func (p *run) analyse() {
	p.question, p.hints = p.req.Question, p.req.Hints
	if p.cfg.Analyse.DropDates {
		p.question, p.hints = text.StripDates(p.question), text.StripDates(p.hints)
	}
	p.words = text.QueryTerms(p.question)
	p.res.Terms, p.gapTerms = p.r.valueTerms(p.question, p.r.queryTerms(p.words, p.cat), p.cat)
	if strings.TrimSpace(p.req.Hints) != "" && p.cfg.Gather.BM25 && p.cfg.Fuse.HintWeight > 0 {
		p.hintWords = text.QueryTerms(p.hints)
		p.hintTerms, _ = p.r.valueTerms(p.hints, p.r.queryTerms(p.hintWords, p.cat), p.cat)
	}
}
