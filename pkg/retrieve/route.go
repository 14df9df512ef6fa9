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
		for i := 0; i < len(ss) && i < max(r.cfg.Route.Depth, 1); i++ {
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
			case names[t] > 0:
				scores[schema] += 2 * idf
			case v.columns[schema][t] > 0:
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
	if r.cfg.Route.ByVocab {
		schemas = g.vocab.rank(words)
	} else {
		var agg map[string]float64
		schemas, agg = r.rankByEvidence(objects())
		evidence = ranks(schemas, agg)
		if w := r.cfg.Route.Likelihood; w > 0 && len(schemas) > 1 {
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
			byLikelihood, scores := g.vocab.likelihood(lt, r.cfg.Route.Mu, schemas)
			likelihood = ranks(byLikelihood, scores)
			schemas = fuseRanks(schemas, byLikelihood, w)
		}
	}
	fused := schemas
	var judged []SchemaShare
	if r.cfg.Route.Features && len(schemas) > 1 && len(evidence) > 0 {
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
	if n := r.cfg.Route.Expansion; n > 0 {
		added := 0
		for _, t := range cat.Tables() {
			if added >= n || t.Schema != schemas[0] || t.PartitionOf != nil {
				continue
			}
			before := len(objects())
			for _, c := range g.tableChunks(t) {
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
			inName := p.names[t] > 0
			if inName || p.columns[t] > 0 {
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
	if judged[0].Share >= r.cfg.Route.AmbiguousShare {
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

// routingBonus is what routing adds to the fused score of a table or
// view whose schema it ranks at rank (0: not routed, nothing).
func (r *Retriever) routingBonus(rank int) float64 {
	if rank == 0 {
		return 0
	}
	return r.cfg.Route.Weight / (r.cfg.Route.K + float64(rank))
}

// route ranks the schemas the question may be about (route.go).
func (p *run) route() {
	if !p.cfg.Route.Enabled && p.cfg.Route.Expansion <= 0 {
		return
	}
	// Hints route too: a definition naming a column says which database
	// the question is about.
	words := p.words
	if p.hintTerms != nil {
		words = append(slices.Clone(p.words), p.hintWords...)
	}
	p.r.schemasOf(p.res, p.r.route(p.cat, words, p.res.Terms, p.objects, p.get))
}
