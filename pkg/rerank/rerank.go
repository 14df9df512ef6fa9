// Package rerank reorders retrieval candidates. Schema rescoring uses the
// structure a flat text score misses (which word named the table, which a
// column); the Reranker seam holds optional rerankers behind one interface:
// None (identity), Lexical, and a gateway cross-encoder elsewhere.
//
// Every reorder here is stable: candidates that score alike keep the order
// they came in, so a question with no signal leaves retrieval's order as
// it was.
package rerank

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

// Candidate is one retrieved object (a table with all its parts, a view, a
// doc section, an example) in rank order.
type Candidate struct {
	Kind    string
	Name    string
	Title   string   // table or view name without schema; doc heading path
	Schema  string   // schema of a table or view
	Columns []string // column names of a table or view
	Text    string   // everything else: DDL, comments, enum labels, prose
	Chunks  []chunk.Chunk
	Score   float64
	// Analysed is the rescoring's reading of the candidate (Analyse),
	// when the caller keeps one; nil: read it anew.
	Analysed *Analysed `json:"-"`
}

// Analysed is what the schema rescoring reads of a candidate: the
// analysed terms of its names (former ones included), its columns and
// the rest of its text, and its former names. It follows from the
// candidate's chunks alone, so a caller that scores the same tables
// question after question can keep it rather than analyse their DDL
// every time.
type Analysed struct {
	Name, Columns, Other        map[string]bool
	FormerTables, FormerColumns []string
}

// Analyse reads c as the rescoring does.
func Analyse(c *Candidate) *Analysed {
	a := &Analysed{}
	if c.Kind != chunk.KindTable && c.Kind != chunk.KindView {
		a.Other = termSet(c.Title, c.Text)
		return a
	}
	a.FormerTables, a.FormerColumns = formerNames(c)
	a.Name = termSet(append([]string{c.Title}, a.FormerTables...)...)
	a.Columns = termSet(append(slices.Clip(c.Columns), a.FormerColumns...)...)
	a.Other = termSet(c.Schema, c.Text)
	return a
}

// analysed is c's reading, kept or made.
func (c *Candidate) analysed() *Analysed {
	if c.Analysed != nil {
		return c.Analysed
	}
	return Analyse(c)
}

// Reranker reorders candidates for a query. It returns all of them, best
// first, with Score set to its own score. It must be total: no candidates
// in, none out.
type Reranker interface {
	Rerank(ctx context.Context, query string, cands []Candidate) ([]Candidate, error)
}

// None is the identity reranker, the default.
type None struct{}

// Rerank implements Reranker.
func (None) Rerank(_ context.Context, _ string, cands []Candidate) ([]Candidate, error) {
	return cands, nil
}

// Weights of the schema rescoring: a question term naming a table counts
// more than one naming a column, which counts more than one found anywhere
// else; the fused rank keeps retrieval's judgement in play.
type Weights struct {
	Table, Column, Other, Fusion float64
	// Identifier is what each identifier the question spells out scores
	// when it names the candidate or one of its columns exactly
	// (IdentifierScore).
	Identifier float64
}

// DefaultWeights are the weights schemaq grew from: 3, 1, 0.25 and 1.5;
// a name written out scores as much as a word naming the table.
var DefaultWeights = Weights{Table: 3.0, Column: 1.0, Other: 0.25, Fusion: 1.5, Identifier: 3.0}

// SchemaScore scores one candidate against the question's distinct terms.
// position is the candidate's fused rank normalised to 1 (first) … 0
// (last). Tables and views score table-name, column and other-text hits;
// docs and examples, having no such structure, score text hits only, so
// they are not pushed to the bottom.
func SchemaScore(w Weights, qterms []string, c *Candidate, position float64) float64 {
	total := position * w.Fusion
	a := c.analysed()
	if c.Kind != chunk.KindTable && c.Kind != chunk.KindView {
		for _, t := range qterms {
			if a.Other[t] {
				total += w.Other
			}
		}
		return total
	}
	for _, t := range qterms {
		switch {
		case a.Name[t]:
			total += w.Table
		case a.Columns[t]:
			total += w.Column
		case a.Other[t]:
			total += w.Other
		}
	}
	return total
}

// IdentifierScore scores the identifiers a question spells out
// (text.Identifiers) that name the candidate table or view, or one of
// its columns, exactly (table.column qualified or not): w.Identifier
// each. Words only match a name's parts; a name written out is surer.
func IdentifierScore(w Weights, ids []string, c *Candidate) float64 {
	if len(ids) == 0 || w.Identifier == 0 || (c.Kind != chunk.KindTable && c.Kind != chunk.KindView) {
		return 0
	}
	var total float64
	a := c.analysed()
	for _, id := range ids {
		if table, col, ok := strings.Cut(id, "."); ok && strings.EqualFold(table, c.Title) {
			id = col
		}
		same := func(n string) bool { return strings.EqualFold(n, id) }
		if same(c.Title) || same(c.Name) || slices.ContainsFunc(c.Columns, same) || slices.ContainsFunc(a.FormerTables, same) || slices.ContainsFunc(a.FormerColumns, same) {
			total += w.Identifier
		}
	}
	return total
}

func termSet(parts ...string) map[string]bool {
	m := map[string]bool{}
	for _, p := range parts {
		for _, t := range text.Terms(p) {
			m[t] = true
		}
	}
	return m
}

// Distinct returns the distinct analysed terms of a question, in order.
func Distinct(question string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range text.QueryTerms(question) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Schema rescores candidates (in fused order) by SchemaScore and sorts them
// stably, best first. It sets Score and returns the same slice.
func Schema(w Weights, question string, cands []Candidate) []Candidate {
	if len(cands) <= 1 {
		return cands
	}
	qterms := Distinct(question)
	ids := text.Identifiers(question)
	n := float64(len(cands))
	for i := range cands {
		cands[i].Score = SchemaScore(w, qterms, &cands[i], 1-float64(i)/n) + IdentifierScore(w, ids, &cands[i])
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Score > cands[j].Score })
	return cands
}

// Lexical reranks by query-term overlap: for each distinct query term a
// candidate contains, a saturated term frequency count/(count+K1), all
// divided by a length penalty 1+ln(1+tokens) so long chunks do not win by
// size. Network-free and deterministic.
type Lexical struct {
	K1 float64 // saturation; 1.2 when zero
}

// Rerank implements Reranker.
func (l Lexical) Rerank(_ context.Context, query string, cands []Candidate) ([]Candidate, error) {
	k1 := l.K1
	if k1 == 0 {
		k1 = 1.2
	}
	qterms := Distinct(query)
	for i := range cands {
		tokens := text.Terms(cands[i].Title + " " + cands[i].Text)
		if len(tokens) == 0 {
			cands[i].Score = 0
			continue
		}
		counts := map[string]int{}
		for _, t := range tokens {
			counts[t]++
		}
		penalty := 1 + math.Log(1+float64(len(tokens)))
		var s float64
		for _, q := range qterms {
			if c := float64(counts[q]); c > 0 {
				s += c / (c + k1) / penalty
			}
		}
		cands[i].Score = s
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Score > cands[j].Score })
	return cands, nil
}

// formerNames reads a table or view candidate's former names from its
// chunks' rename lines (chunk.FormerNames).
func formerNames(c *Candidate) (tables, columns []string) {
	for _, ch := range c.Chunks {
		t, cols := chunk.FormerNames(ch.Text)
		tables, columns = append(tables, t...), append(columns, cols...)
	}
	return tables, columns
}
