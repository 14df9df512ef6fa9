package redisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// knnScore is the name the KNN clause yields its distance under.
const knnScore = "knn_dist"

// filterExpr renders a Filter as query clauses over TAG fields. Values
// are hex, so nothing a user or a publisher wrote can become syntax.
func filterExpr(f index.Filter) string {
	parts := []string{"@" + fDB + ":{" + hexTag(f.Database) + "}"}
	tagSet := func(field string, vals []string) {
		if len(vals) == 0 {
			return
		}
		h := make([]string, len(vals))
		for i, v := range vals {
			h[i] = hexTag(v)
		}
		parts = append(parts, "@"+field+":{"+strings.Join(h, "|")+"}")
	}
	tagSet(fKind, f.Kinds)
	tagSet(fSchema, f.Schemas)
	keys := make([]string, 0, len(f.Tags))
	for k := range f.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, "@"+fTags+":{"+tagPair(k, f.Tags[k])+"}")
	}
	return strings.Join(parts, " ")
}

// escapeTerm backslash-escapes every rune that is not a letter or digit.
// Analysed terms are letters and digits already; this is the guarantee
// that no term becomes query syntax even if that ever changes.
func escapeTerm(t string) string {
	var b strings.Builder
	for _, r := range t {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// textExpr is the BM25 query: any of the terms in any TEXT field, each
// within the filter. With the index's own weights the terms go
// unprefixed, so the field weights of FT.CREATE apply; other weights (a
// tuning run) become one clause per field and term with a $weight
// relative to the index's.
//
// The filter goes inside every alternative, (F a) | (F b), not around
// the union, F (a | b): RediSearch (2.10 at least) scores a union under
// an intersection by the first of its terms a document holds, not all
// of them, so a table matching "teacher" and "name" scored as if it
// matched "name" alone. A union at the top reads every alternative; see
// TestUnionScoresEveryTermLive.
func (s *Store) textExpr(q index.TextQuery) string {
	terms := q.Match()
	if len(terms) == 0 {
		return ""
	}
	filter := filterExpr(q.Filter)
	var alts []string
	w := q.Weights
	if w == (index.Weights{}) || w == s.opt.Weights {
		for _, t := range terms {
			alts = append(alts, "("+filter+" "+escapeTerm(t)+")")
		}
		return strings.Join(alts, " | ")
	}
	iw := s.opt.Weights
	for _, f := range []struct {
		field    string
		want, at float64
	}{{fName, w.Name, iw.Name}, {fSchemaT, w.Schema, iw.Schema}, {fColumns, w.Columns, iw.Columns}, {fBody, w.Body, iw.Body}} {
		if f.want <= 0 || f.at <= 0 {
			continue
		}
		weight := strconv.FormatFloat(f.want/f.at, 'g', 6, 64)
		for _, t := range terms {
			alts = append(alts, fmt.Sprintf("(%s @%s:%s) => { $weight: %s; }", filter, f.field, escapeTerm(t), weight))
		}
	}
	return strings.Join(alts, " | ")
}

func returnFields(extra ...string) []redis.FTSearchReturn {
	out := make([]redis.FTSearchReturn, 0, len(returned)+len(extra))
	for _, f := range append(returned, extra...) {
		out = append(out, redis.FTSearchReturn{FieldName: f})
	}
	return out
}

// textSearchArgs is the FT.SEARCH of a BM25 query; "" when nothing can
// match.
func (s *Store) textSearchArgs(q index.TextQuery) (string, *redis.FTSearchOptions) {
	expr := s.textExpr(q)
	if expr == "" {
		return "", nil
	}
	return expr, &redis.FTSearchOptions{
		WithScores:     true,
		Scorer:         s.scorer,
		Return:         returnFields(),
		LimitOffset:    0,
		Limit:          q.Limit,
		DialectVersion: 2,
	}
}

// vectorSearchArgs is the FT.SEARCH of a KNN query: the filter first,
// then the K nearest of what passes it.
func (s *Store) vectorSearchArgs(q index.VectorQuery) (string, *redis.FTSearchOptions) {
	expr := fmt.Sprintf("(%s)=>[KNN %d @%s $vec AS %s]", filterExpr(q.Filter), q.Limit, fVector, knnScore)
	return expr, &redis.FTSearchOptions{
		Return:         returnFields(knnScore),
		SortBy:         []redis.FTSearchSortBy{{FieldName: knnScore, Asc: true}},
		LimitOffset:    0,
		Limit:          q.Limit,
		Params:         map[string]any{"vec": index.EncodeVector(q.Vector)},
		DialectVersion: 2,
	}
}

// SearchText implements index.Store.
func (s *Store) SearchText(ctx context.Context, q index.TextQuery) ([]index.Hit, error) {
	if q.Database == "" {
		return nil, index.ErrNoDatabase
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	if err := s.servableErr(ctx); err != nil {
		return nil, fmt.Errorf("text search in %s: %w", q.Database, err)
	}
	if s.opt.Search == SearchMemory {
		if len(q.Match()) == 0 {
			return nil, nil
		}
		snap, err := s.snapshot(ctx, q.Database)
		if err != nil {
			return nil, fmt.Errorf("text search in %s: %w", q.Database, err)
		}
		return snap.SearchText(q), nil
	}
	expr, opts := s.textSearchArgs(q)
	if expr == "" {
		return nil, nil
	}
	res, err := s.rdb.FTSearchWithArgs(ctx, s.alias(), expr, opts).Result()
	if err != nil {
		return nil, fmt.Errorf("text search in %s: %w", q.Database, classify(err))
	}
	return hitsOf(res, func(d redis.Document) float64 {
		if d.Score != nil {
			return *d.Score
		}
		return 0
	})
}

// SearchVector implements index.Store.
func (s *Store) SearchVector(ctx context.Context, q index.VectorQuery) ([]index.Hit, error) {
	if q.Database == "" {
		return nil, index.ErrNoDatabase
	}
	if len(q.Vector) != s.opt.Dimensions {
		return nil, fmt.Errorf("vector search in %s: %w: got %d, index has %d", q.Database, index.ErrDimension, len(q.Vector), s.opt.Dimensions)
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	if err := s.servableErr(ctx); err != nil {
		return nil, fmt.Errorf("vector search in %s: %w", q.Database, err)
	}
	if s.opt.Search == SearchMemory {
		snap, err := s.snapshot(ctx, q.Database)
		if err != nil {
			return nil, fmt.Errorf("vector search in %s: %w", q.Database, err)
		}
		return snap.SearchVector(q), nil
	}
	expr, opts := s.vectorSearchArgs(q)
	res, err := s.rdb.FTSearchWithArgs(ctx, s.alias(), expr, opts).Result()
	if err != nil {
		return nil, fmt.Errorf("vector search in %s: %w", q.Database, classify(err))
	}
	// The engine reports cosine distance; the Store contract is cosine
	// similarity, higher is better.
	return hitsOf(res, func(d redis.Document) float64 {
		dist, _ := strconv.ParseFloat(d.Fields[knnScore], 64)
		return 1 - dist
	})
}

func hitsOf(res redis.FTSearchResult, score func(redis.Document) float64) ([]index.Hit, error) {
	hits := make([]index.Hit, 0, len(res.Docs))
	for _, d := range res.Docs {
		if d.Error != nil || len(d.Fields) == 0 {
			continue // deleted between matching and loading its fields
		}
		c, err := chunkOf(d.Fields)
		if err != nil {
			return nil, fmt.Errorf("search result %s: %w", d.ID, err)
		}
		hits = append(hits, index.Hit{Chunk: c, Score: score(d)})
	}
	return hits, nil
}

// chunkOf hydrates a chunk from the fields a search returned.
func chunkOf(f map[string]string) (chunk.Chunk, error) {
	c := chunk.Chunk{
		ID: f[fID], Database: unhexTag(f[fDB]), Kind: unhexTag(f[fKind]), Schema: unhexTag(f[fSchema]),
		Name: f[fObject], Title: f[fTitle], Text: f[fText], Hash: f[fHash],
	}
	if c.ID == "" || c.Database == "" {
		return c, fmt.Errorf("the hash has no id or database field")
	}
	c.Part, _ = strconv.Atoi(f[fPart])
	c.Version, _ = strconv.ParseInt(f[fVersion], 10, 64)
	if cols := f[fColList]; cols != "" && cols != "null" {
		if err := json.Unmarshal([]byte(cols), &c.Columns); err != nil {
			return c, fmt.Errorf("field %s: %w", fColList, err)
		}
	}
	if tags := f[fTagMap]; tags != "" && tags != "{}" {
		if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
			return c, fmt.Errorf("field %s: %w", fTagMap, err)
		}
	}
	return c, nil
}
