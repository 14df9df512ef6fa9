package retrieve

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

// rankByEvidence orders schemas by their best table or view: its fused
// score so far, then the second best adds a little (RoutingDepth > 1), so
// one strong match outranks many weak ones.
func (r *Retriever) rankByEvidence(all []*object) ([]string, map[string]float64) {
	scores := map[string][]float64{}
	for _, o := range all {
		if o.cand.Kind != chunk.KindTable && o.cand.Kind != chunk.KindView {
			continue
		}
		scores[o.cand.Schema] = append(scores[o.cand.Schema], r.evidence(o))
	}
	agg := map[string]float64{}
	out := make([]string, 0, len(scores))
	for schema, ss := range scores {
		sort.Sort(sort.Reverse(sort.Float64Slice(ss)))
		w := 1.0
		for i := 0; i < len(ss) && i < max(r.cfg.RoutingDepth, 1); i++ {
			agg[schema] += w * ss[i]
			w /= 4 // later tables add less and less
		}
		out = append(out, schema)
	}
	sortByScore(out, agg)
	return out, agg
}

// ranks numbers schemas, in the order of their scores, from 1, schemas
// of equal score alike (1, 2, 2, 4): two schemas the question fits
// equally must look equal to the routing judge, whichever name sorts
// first.
func ranks(ordered []string, score map[string]float64) map[string]int {
	out := make(map[string]int, len(ordered))
	for i, s := range ordered {
		out[s] = i + 1
		if i > 0 && score[s] == score[ordered[i-1]] {
			out[s] = out[ordered[i-1]]
		}
	}
	return out
}

// vocab scores schemas as documents: a schema's words are its name, its
// tables' and views' names and their column names. A question term found
// in a schema scores its inverse schema frequency (rare words say more
// about which database a question is about), twice when it names a table
// or the schema itself.
type vocab struct {
	names   map[string]map[string]bool // schema → terms of its schema, table and view names
	columns map[string]map[string]bool // schema → terms of its column names
	df      map[string]int             // term → number of schemas that have it
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

// rank orders the schemas by score, best first; schemas that match no
// term are left out. A database with one schema ranks it alone.
func (v *vocab) rank(terms []string) []string {
	n := float64(len(v.names))
	seen := map[string]bool{}
	scores := map[string]float64{}
	for _, t := range terms {
		if seen[t] || v.df[t] == 0 {
			continue
		}
		seen[t] = true
		idf := math.Log(1 + (n-float64(v.df[t])+0.5)/(float64(v.df[t])+0.5))
		for schema, names := range v.names {
			switch {
			case names[t]:
				scores[schema] += 2 * idf
			case v.columns[schema][t]:
				scores[schema] += idf
			}
		}
	}
	out := make([]string, 0, len(scores))
	for s := range scores {
		out = append(out, s)
	}
	sortByScore(out, scores)
	return out
}

// likelihood orders schemas by the query likelihood of terms under each
// schema's Dirichlet-smoothed term distribution (mu), best first: a
// schema that covers more of the question's concepts wins, and a big
// schema is not favoured just for having many words. Terms the catalog
// does not use are skipped. With
//
//	log P(t|s) / P(t) = log(mu / (|s| + mu)) + log(1 + c(t,s) / (mu P(t)))
//
// only the schemas that have a term need its postings; the first part
// depends on the schema's length alone.
func (v *vocab) likelihood(terms []string, mu float64, schemas []string) ([]string, map[string]float64) {
	scores := make(map[string]float64, len(schemas))
	n := 0
	for _, t := range terms {
		pc := v.coll[t] / v.total
		if pc == 0 {
			continue
		}
		n++
		for _, s := range schemas {
			if c := v.postings[t][s]; c > 0 {
				scores[s] += math.Log1p(c / (mu * pc))
			}
		}
	}
	for _, s := range schemas {
		scores[s] += float64(n) * math.Log(mu/(v.length[s]+mu))
	}
	out := slices.Clone(schemas)
	sortByScore(out, scores)
	return out, scores
}

// route ranks the database's schemas against the question (see vocab) and
// records each object's schema rank. With SchemaExpansion it also adds the
// best schema's tables that no retriever found (they get only the routing
// bonus, so they follow the tables with evidence of their own).
// words are the question's analysed words, repeats kept, and terms its
// BM25 terms. objects returns the caller's current list, which get
// extends. It returns the routing judge's shares of the odds, likeliest
// first (nil without the routing features or a choice to make).
func (r *Retriever) route(cat *catalog.Catalog, words []string, terms []Term, objects func() []*object, get func(chunk.Chunk) *object) []SchemaShare {
	if cat == nil {
		return nil
	}
	g := r.graphs.get(cat)
	var schemas []string
	evidence, likelihood := map[string]int{}, map[string]int{}
	if r.cfg.RoutingByVocab {
		schemas = g.vocab.rank(words)
	} else {
		var agg map[string]float64
		schemas, agg = r.rankByEvidence(objects())
		evidence = ranks(schemas, agg)
		if w := r.cfg.RoutingLikelihood; w > 0 && len(schemas) > 1 {
			// Query likelihood counts a word the question repeats each
			// time; it also sees the expansions, and the compounds of
			// adjacent words, as the identifier fields hold them (order
			// lines → orderline).
			lt := slices.Clone(words)
			for _, t := range terms {
				if t.Why != FromQuestion {
					lt = append(lt, t.Term)
				}
			}
			lt = append(lt, text.Compounds(words)...)
			byLikelihood, scores := g.vocab.likelihood(lt, r.cfg.RoutingMu, schemas)
			likelihood = ranks(byLikelihood, scores)
			schemas = fuseRanks(schemas, byLikelihood, w)
		}
	}
	fused := schemas
	var judged []SchemaShare
	if r.cfg.RoutingFeatures && len(schemas) > 1 && len(evidence) > 0 {
		var scores map[string]float64
		schemas, scores = g.vocab.routeFeatures(words, objects(), schemas, evidence, likelihood)
		judged = shares(scores)
	}
	if len(schemas) == 0 {
		return nil
	}
	rank, tail := map[string]int{}, map[string]int{}
	for i, s := range schemas {
		rank[s] = i + 1
	}
	for i, s := range fused {
		tail[s] = i + 1
	}
	if n := r.cfg.SchemaExpansion; n > 0 {
		added := 0
		for _, t := range cat.Tables() {
			if added >= n || t.Schema != schemas[0] || t.PartitionOf != nil {
				continue
			}
			before := len(objects())
			for _, c := range g.chunks.Table(t) {
				get(c)
			}
			if len(objects()) > before {
				added++
			}
		}
	}
	for _, o := range objects() {
		if o.cand.Kind == chunk.KindTable || o.cand.Kind == chunk.KindView {
			o.schemaRank, o.tailRank = rank[o.cand.Schema], tail[o.cand.Schema]
			o.ex.SchemaRoute = o.schemaRank
			o.ex.SchemaEvidence, o.ex.SchemaLikelihood = evidence[o.cand.Schema], likelihood[o.cand.Schema]
			o.ex.SchemaByFeatures = o.cand.Schema == schemas[0] && schemas[0] != fused[0]
		}
	}
	return judged
}

// inferredLend scales what a join only the names imply lends, against a
// declared one: a guess lends a little less. At 1 the lookup tables it
// reached crowded the head where worked examples already voted for the
// right ones (BIRD with examples, CR@5 −0.008); at 0.9 they did not,
// and below it the gain from the question alone faded (docs/retrieval.md).
const inferredLend = 0.9

// propagate lifts the foreign-key neighbours of the best fused tables
// (objects must be in fused order) to at least PropagationWeight times the
// seed's score; with InferJoins, the neighbours by the joins its names
// imply too. New neighbours are added through get and finished here.
func (r *Retriever) propagate(cat *catalog.Catalog, schemas []string, objects func() []*object, get func(chunk.Chunk) *object) {
	g := r.graphs.get(cat)
	type lend struct {
		key   string
		score float64
	}
	var lends []lend
	seeds := 0
	for _, o := range objects() {
		if seeds >= r.cfg.PropagationSeeds {
			break
		}
		if o.cand.Kind != chunk.KindTable {
			continue
		}
		seeds++
		floor := r.cfg.PropagationWeight * o.rrf
		for n := range g.adj[o.cand.Name] {
			lends = append(lends, lend{n, floor})
		}
		if r.cfg.InferJoins {
			// Two joins between one pair of tables lend the same floor
			// twice; a floor taken twice is taken once.
			for _, j := range g.inferred[o.cand.Name] {
				n := j.to
				if n == o.cand.Name {
					n = j.from
				}
				lends = append(lends, lend{n, floor * inferredLend})
			}
		}
	}
	for _, l := range lends {
		t := g.tables[l.key]
		if t == nil || (len(schemas) > 0 && !slices.Contains(schemas, t.Schema)) {
			continue
		}
		var o *object
		for _, c := range g.chunks.Table(t) {
			o = get(c)
		}
		if o == nil {
			continue
		}
		if o.bestAt == 0 { // new: finish it like the others
			o.bestAt = 1 << 30
			o.finish()
		}
		// A floor, not a sum: a neighbour of a strong match is at least
		// this relevant, but lends never reorder candidates that have
		// stronger evidence of their own. A small share of its own score
		// on top orders the neighbours of one seed by their evidence
		// (the films, not the film_keywords, for a question about an
		// actor's films).
		if f := l.score + r.cfg.PropagationOwn*o.base; f > o.rrf {
			o.rrf = f
			o.ex.LiftedTo = f
		}
	}
}

// maxIdentifierBytes is PostgreSQL's limit on an identifier's length
// (NAMEDATALEN − 1); an identifier's terms are no longer.
const maxIdentifierBytes = 63

// correction is the one identifier term a word not in the vocabulary is a
// single edit (insertion, deletion, substitution) away from, or "" when
// there is none or more than one: a misspelt question word ("carr",
// "adress") or a near form the stemmer does not fold ("weigh" → weight).
func (v *vocab) correction(w string) string {
	if len(w) < 4 || v.df[w] > 0 || strings.ContainsAny(w, "0123456789") {
		return "" // numbers are values, not misspelt names (5000 is not 500)
	}
	if len(w) > maxIdentifierBytes+1 {
		// No identifier term is longer, so none is one edit away; and the
		// deletes below cost the square of the word's length, which a
		// 4 KB question of one word would otherwise spend.
		return ""
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

// fuseRanks orders the schemas of evidence by 1/(1+rank) in evidence plus
// w/(1+rank) in likelihood, where likelihood ranks only the schemas that
// have evidence: a schema with no candidate has nothing to route to.
func fuseRanks(evidence, likelihood []string, w float64) []string {
	score := make(map[string]float64, len(evidence))
	for i, s := range evidence {
		score[s] = 1 / float64(i+2)
	}
	i := 0
	for _, s := range likelihood {
		if _, ok := score[s]; ok {
			score[s] += w / float64(i+2)
			i++
		}
	}
	out := slices.Clone(evidence)
	sort.SliceStable(out, func(i, j int) bool { return score[out[i]] > score[out[j]] })
	return out
}

// routeWeights weigh the features of routeFeatures. They were fitted as
// a conditional logit (the schema a question is about against the other
// schemas with candidates) on half of BIRD's train questions and all of
// SpiderUnion's, and checked on the other half (docs/retrieval.md): one
// per feature, no word lists, nothing per database.
var routeWeights = struct {
	evidence, likelihood  float64 // 1 / the schema's rank by each
	bestBM25, bestKNN     float64 // its best table's score / the question's best
	coverage, idfCoverage float64 // share of the question's words its identifiers use, plain and by IDF over schemas
	nameCoverage          float64 // share its schema, table and view names use
	size                  float64 // ln of its tables and views
}{evidence: 0.26, likelihood: 0.69, bestBM25: 3.6, bestKNN: 1.3, coverage: 1.2, idfCoverage: 1.3, nameCoverage: 4.0, size: -0.21}

// routeMargin is how far the features' first schema must outscore the
// fused ranking's first to take its place. Margins from 0 to 0.5 scored
// alike; the larger keeps the fused ranking where the two nearly agree.
const routeMargin = 0.5

// routeFeatures returns fused, the schemas in their fused routing order,
// with the best by routeWeights first when it outscores fused's first by
// routeMargin. The ranks alone hide how close a schema came: the best
// table's score beside the question's best says that, the share of the
// question's words a schema's identifiers use says how much of the
// question it can answer, and names count most, as a question names the
// things it asks about; a big schema covers more words by its size alone.
func (v *vocab) routeFeatures(words []string, all []*object, fused []string, evidence, likelihood map[string]int) ([]string, map[string]float64) {
	var maxBM, maxKNN float64
	bm, knn := map[string]float64{}, map[string]float64{}
	for _, o := range all {
		if o.cand.Kind != chunk.KindTable && o.cand.Kind != chunk.KindView {
			continue
		}
		s := o.cand.Schema
		bm[s], knn[s] = max(bm[s], o.ex.BM25Score), max(knn[s], o.ex.KNNScore)
		maxBM, maxKNN = max(maxBM, o.ex.BM25Score), max(maxKNN, o.ex.KNNScore)
	}
	// The question's distinct words that some schema uses, with their
	// IDF over schemas; the others count in the shares' denominator only.
	uniq := slices.Compact(slices.Sorted(slices.Values(words)))
	n := float64(len(v.names))
	used, idf := make([]string, 0, len(uniq)), make([]float64, 0, len(uniq))
	var totalIDF float64
	for _, t := range uniq {
		if df := v.df[t]; df > 0 {
			used = append(used, t)
			idf = append(idf, math.Log((n+1)/(float64(df)+0.5)))
			totalIDF += idf[len(idf)-1]
		}
	}
	w := routeWeights
	score := func(s string) float64 {
		p := v.parts[s]
		if p == nil {
			return math.Inf(-1)
		}
		f := w.evidence/float64(max(evidence[s], 1)) + w.size*math.Log(float64(max(p.counted, 1)))
		if l := likelihood[s]; l > 0 {
			f += w.likelihood / float64(l)
		}
		if maxBM > 0 {
			f += w.bestBM25 * bm[s] / maxBM
		}
		if maxKNN > 0 {
			f += w.bestKNN * knn[s] / maxKNN
		}
		var cov, icov, names float64
		for i, t := range used {
			inName := p.names[t]
			if inName || p.columns[t] {
				cov++
				icov += idf[i]
			}
			if inName {
				names++
			}
		}
		if len(uniq) > 0 {
			f += (w.coverage*cov + w.nameCoverage*names) / float64(len(uniq))
		}
		if totalIDF > 0 {
			f += w.idfCoverage * icov / totalIDF
		}
		return f
	}
	scores := make(map[string]float64, len(fused))
	first := score(fused[0])
	scores[fused[0]] = first
	best, bestScore := fused[0], first
	for _, s := range fused[1:] {
		sc := score(s)
		scores[s] = sc
		if sc > bestScore {
			best, bestScore = s, sc
		}
	}
	if best == fused[0] || bestScore-first < routeMargin {
		return fused, scores
	}
	out := make([]string, 0, len(fused))
	out = append(out, best)
	for _, s := range fused {
		if s != best {
			out = append(out, s)
		}
	}
	return out, scores
}

// shares turns the routing judge's scores into each schema's share of
// the odds, as the conditional logit was fitted: a softmax over the
// schemas with candidates, best first (by name among equals).
func shares(scores map[string]float64) []SchemaShare {
	top := math.Inf(-1)
	for _, sc := range scores {
		top = max(top, sc)
	}
	if math.IsInf(top, -1) {
		return nil // no schema the judge could score
	}
	var sum float64
	out := make([]SchemaShare, 0, len(scores))
	for s, sc := range scores {
		e := math.Exp(sc - top)
		sum += e
		out = append(out, SchemaShare{Schema: s, Share: e})
	}
	for i := range out {
		out[i].Share /= sum
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Share != out[j].Share {
			return out[i].Share > out[j].Share
		}
		return out[i].Schema < out[j].Schema
	})
	return out
}

// sortByScore orders schemas by score, best first, and by name among
// equals, so that routing is deterministic.
func sortByScore(schemas []string, score map[string]float64) {
	sort.Slice(schemas, func(i, j int) bool {
		if score[schemas[i]] != score[schemas[j]] {
			return score[schemas[i]] > score[schemas[j]]
		}
		return schemas[i] < schemas[j]
	})
}

// schemasOf records the schemas a question may be about in res: the
// likeliest, the others worth a caller's look, and a warning when the
// likeliest is less likely than not. Only a caller can settle that: the
// schemas left are alike in what the question says.
func (r *Retriever) schemasOf(res *Result, judged []SchemaShare) {
	if len(judged) == 0 {
		return
	}
	n := 1
	for n < len(judged) && n < maxShares && judged[n].Share >= minShare {
		n++
	}
	res.Schemas = make([]SchemaShare, n)
	for i, s := range judged[:n] {
		res.Schemas[i] = SchemaShare{Schema: s.Schema, Share: math.Round(s.Share*1000) / 1000}
	}
	if judged[0].Share >= r.cfg.AmbiguousShare {
		return
	}
	res.Ambiguous = true
	var b strings.Builder
	for i, s := range res.Schemas {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%.2f)", s.Schema, s.Share)
	}
	res.Warnings = append(res.Warnings, "the question fits several schemas: "+b.String()+"; name the one meant (schemas in a request, --schemas on the command line) or add hints")
}
