package retrieve

import (
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/kept"
	"github.com/schemaq/schemaq/pkg/sqlguard"
	"github.com/schemaq/schemaq/pkg/text"
)

// readsCacheMax bounds how many examples' parsed SQL is remembered;
// past it the cache starts again. A parse costs tens of microseconds, so
// a miss is cheap; the cache keeps it off every request.
const readsCacheMax = 100_000

// readsCache remembers the parsed SQL of each example and doc chunk
// (sqlguard.Query): it depends on the chunk's text alone, so it outlives
// catalog versions, and placing it in the catalog is a few map lookups
// per request.
type readsCache struct {
	kept kept.Map[[]*sqlguard.Query]
	log  *zap.Logger
}

// queries returns the chunk's SQL as parsed: an example's, or the
// blocks of a doc section that parse (chunk.DocSQL). SQL that does not
// parse names nothing.
func (rc *readsCache) queries(c chunk.Chunk) []*sqlguard.Query {
	return rc.kept.Get(c.Database+"\x00"+c.Kind+"\x00"+c.Hash, func() []*sqlguard.Query { return rc.parse(c) })
}

// parse parses the chunk's SQL; what does not parse is left out, and a
// chunk with none is remembered empty: a miss is not parsed again.
func (rc *readsCache) parse(c chunk.Chunk) []*sqlguard.Query {
	var sqls []string
	switch c.Kind {
	case chunk.KindExample:
		sqls = []string{chunk.ExampleSQL(c)}
	case chunk.KindDoc:
		sqls = chunk.DocSQL(c)
	}
	got := []*sqlguard.Query{}
	for _, sql := range sqls {
		q, err := sqlguard.ParseQuery(sql)
		if err != nil {
			// Workers check an example's SQL before indexing it, so one
			// that fails here came from an older version or straight into
			// the store. It votes for nothing; a doc's SQL block that
			// does not parse is ordinary prose and passes unremarked.
			if c.Kind == chunk.KindExample {
				rc.log.Warn("indexed example's SQL does not parse; it is skipped",
					zap.String("chunk", c.ID), zap.Error(err))
			}
			continue
		}
		got = append(got, q)
	}
	return got
}

// exampleVotes ranks, as a list of its own, the tables and views that the
// SQL of the worked examples most like the question reads: the example at
// rank i of the examples' BM25 list gives each of its tables 1/(k+i), as
// fusion would. A team's examples are its query log; where one asked
// something like this question, its tables are likely this one's too,
// even when the question's words name none of them. Tables no retriever
// found join the candidates through get.
//
// A table's place in the list counts in proportion to its trust
// (Gather.ExampleTrust): how much of the question the best example
// voting for it covers. BM25 always returns some examples, and a log
// that covers some schemas only would otherwise hand every question
// about the others to the one example sharing a word with it.
func (r *Retriever) exampleVotes(cat *catalog.Catalog, hits []index.Hit, terms []Term, schemas []string, get func(chunk.Chunk) *object) (voters []voter) {
	g := r.graphs.get(cat)
	votes := map[string]float64{}
	by := map[string]string{} // table → the best example reading it
	trust := map[string]float64{}
	asked := make(map[string]bool, len(terms))
	own := map[string]bool{}
	for _, t := range terms {
		asked[t.Term] = true
		if t.Why == FromQuestion {
			own[t.Term] = true
		}
	}
	for i, h := range hits {
		qs := r.reads.queries(h.Chunk)
		if len(qs) == 0 {
			continue
		}
		q := qs[0]
		// BM25 matched the example's whole text, SQL keywords included:
		// "ORDER BY 2" made a tea-sales example the best match for
		// "orders". It votes only if the question shares a word with
		// what it is about: its question, or what its SQL names.
		if !sharesAWord(asked, h.Chunk.Title, q.Words) {
			continue
		}
		// An example reading a relation the catalog does not have was
		// written for another database, whatever names the two share:
		// it votes for nothing. One whose relations are all here but
		// that names a column since gone is stale, and leaves prompts
		// (freshenExamples), but its relations still say what such a
		// question reads: a column dropped or renamed untracked does
		// not move the question to other tables.
		fit := q.Fit(g.names, h.Chunk.Schema)
		if len(fit.Missing) > 0 {
			continue
		}
		keys := fit.Keys
		cov := coverage(own, h.Chunk.Title, q.Words)
		if h.Chunk.Tags[chunk.TagOrigin] == events.OriginFeedback {
			// What callers hand back is input, not the team's curated
			// log: it must be specific to vote in full.
			cov *= specificity(asked, h.Chunk.Title, q.Words)
		}
		voters = append(voters, voter{h.Chunk, cov})
		for _, key := range keys {
			votes[key] += 1 / (r.cfg.Fuse.RRFK + float64(i+1))
			trust[key] = max(trust[key], cov)
			if by[key] == "" {
				by[key] = h.Chunk.Name
			}
		}
	}
	g.rankList(byVotes(votes, by), schemas, get, func(o *object, l listed) (*int, *string) {
		o.exampleTrust = 1
		if p := r.cfg.Gather.ExampleTrust; p > 0 {
			o.exampleTrust = math.Pow(trust[l.key], p)
		}
		return &o.ex.ExampleRank, &o.ex.Example
	})
	return voters
}

// voter is an example that voted, with its coverage of the question.
type voter struct {
	chunk.Chunk
	coverage float64
}

// sharesAWord reports whether any of the asked terms is a term of the
// question or of the words an example's SQL names.
func sharesAWord(asked map[string]bool, question string, words []string) bool {
	for _, t := range text.Terms(question) {
		if asked[t] {
			return true
		}
	}
	for _, w := range words {
		for _, t := range text.Terms(w) {
			if asked[t] {
				return true
			}
		}
	}
	return false
}

// specificity discounts a feedback example that says more than it shares with
// the question: the share of its own terms (its question's, and those
// of the names its SQL reads) that the question asks, up to
// minSpecificity and no further. A worked example like the question
// shares a good part of its words; one whose question holds every word
// of the catalog and of common asks (feedback stuffed so that its table
// wins every question) covers any question and shares a sliver of
// itself with each.
func specificity(asked map[string]bool, question string, words []string) float64 {
	all := map[string]bool{}
	for _, t := range text.Terms(question) {
		all[t] = true
	}
	for _, w := range words {
		for _, t := range text.Terms(w) {
			all[t] = true
		}
	}
	if len(all) == 0 {
		return 1
	}
	shared := 0
	for t := range all {
		if asked[t] {
			shared++
		}
	}
	return min(1, float64(shared)/float64(len(all))/minSpecificity)
}

// minSpecificity is the share of an example's terms the question must
// ask for its vote to count in full.
const minSpecificity = 0.5

// coverage is the share of the question's own terms that an example's
// question or the names its SQL reads hold.
func coverage(own map[string]bool, question string, words []string) float64 {
	if len(own) == 0 {
		return 0
	}
	has := map[string]bool{}
	for _, t := range text.Terms(question) {
		if own[t] {
			has[t] = true
		}
	}
	for _, w := range words {
		for _, t := range text.Terms(w) {
			if own[t] {
				has[t] = true
			}
		}
	}
	return float64(len(has)) / float64(len(own))
}

// freshenExamples holds the examples found to the catalog as it is now.
// One whose SQL does not parse, or reads a relation the catalog no longer
// has, or names a column none of its relations has, is stale: it leaves
// the results, so no prompt shows a model a query that would fail. One that reads a relation by a name a
// migration has renamed since votes for it under its new name (Place
// follows renames); its text is rewritten to the current names of its
// relations and columns, with the renames noted, so the model writes
// current SQL. The stored example
// keeps the SQL as written.
func (p *run) freshenExamples() {
	if p.cat == nil {
		return
	}
	g := p.r.graphs.get(p.cat)
	kept := p.all[:0]
	for _, o := range p.all {
		if o.cand.Kind != chunk.KindExample || len(o.cand.Chunks) == 0 {
			kept = append(kept, o)
			continue
		}
		qs := p.r.reads.queries(o.cand.Chunks[0])
		if len(qs) == 0 {
			// SQL that does not parse would fail as surely, and would
			// teach the model to write what the guard refuses.
			p.res.Stale++
			continue
		}
		fit := qs[0].Fit(g.names, o.cand.Schema)
		if fit.Err() != nil {
			p.res.Stale++
			continue
		}
		if len(fit.Followed) > 0 || len(fit.Columns) > 0 {
			o.cand.Text = renamedExample(o.cand.Chunks[0], qs[0], fit.Followed, fit.Columns)
		}
		kept = append(kept, o)
	}
	p.all = kept
}

// renamedExample is an example's text with its SQL rewritten to the
// current names, and the renames it followed noted after it.
func renamedExample(c chunk.Chunk, q *sqlguard.Query, followed []sqlguard.Followed, cols []sqlguard.FollowedColumn) string {
	sql := chunk.ExampleSQL(c)
	var b strings.Builder
	b.WriteString("Question: " + c.Title + "\nSQL: " + q.Rewrite(sql, followed, cols) + "\n")
	for _, f := range followed {
		b.WriteString("-- written before a rename: " + f.String() + "\n")
	}
	for _, f := range cols {
		b.WriteString("-- written before a rename: " + f.String() + "\n")
	}
	return b.String()
}
