package redisearch

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/index"
)

// HybridQuery is a BM25 query and a KNN query over the same filter, fused
// by Reciprocal Rank Fusion: each list adds 1/(K + rank) to a chunk.
type HybridQuery struct {
	Text   index.TextQuery // its Filter is the filter of both lists
	Vector []float32
	Window int     // candidates taken from each list (default 50)
	K      float64 // the RRF constant (default 60)
	Limit  int
}

// Hybrid paths, as SearchHybrid reports them.
const (
	PathServer = "FT.HYBRID"
	PathClient = "client-side RRF"
)

// SearchHybrid runs q in one FT.HYBRID command where the server has it
// (Redis 8.4+), and otherwise as the two searches fused here with the same
// RRF. A server that refuses FT.HYBRID once (an older syntax) is served
// client-side from then on. It returns the fused hits, best first, and
// the path taken.
//
// The ask path does not use it: schemaq's retriever fuses per object (all
// parts of a table) with weighted RRF and keeps each list's ranks for
// explain and schema routing, which one fused list cannot give back.
func (s *Store) SearchHybrid(ctx context.Context, q HybridQuery) ([]index.Hit, string, error) {
	if q.Text.Database == "" {
		return nil, "", index.ErrNoDatabase
	}
	if len(q.Vector) != s.opt.Dimensions {
		return nil, "", fmt.Errorf("hybrid search in %s: %w: got %d, index has %d", q.Text.Database, index.ErrDimension, len(q.Vector), s.opt.Dimensions)
	}
	if q.Window <= 0 {
		q.Window = 50
	}
	if q.K <= 0 {
		q.K = 60
	}
	if q.Limit <= 0 {
		return nil, "", nil
	}
	if err := s.servableErr(ctx); err != nil {
		return nil, "", fmt.Errorf("hybrid search in %s: %w", q.Text.Database, err)
	}
	s.mu.Lock()
	server := s.hybrid && !s.hybridOff
	s.mu.Unlock()
	if server && s.textExpr(q.Text) != "" {
		hits, err := s.serverHybrid(ctx, q)
		if err == nil {
			return hits, PathServer, nil
		}
		if _, isReply := err.(redis.Error); !isReply {
			return nil, "", fmt.Errorf("hybrid search in %s: %w", q.Text.Database, classify(err))
		}
		s.mu.Lock()
		s.hybridOff = true
		s.mu.Unlock()
	}
	hits, err := s.clientHybrid(ctx, q)
	return hits, PathClient, err
}

// hybridArgs is the FT.HYBRID of q: the BM25 leg, the KNN leg with the
// same filter, RRF over both windows.
func (s *Store) hybridArgs(q HybridQuery) *redis.FTHybridOptions {
	load := make([]string, len(returned))
	for i, f := range returned {
		load[i] = "@" + f
	}
	return &redis.FTHybridOptions{
		SearchExpressions: []redis.FTHybridSearchExpression{{Query: s.textExpr(q.Text), Scorer: s.scorer}},
		VectorExpressions: []redis.FTHybridVectorExpression{{
			VectorField: fVector, VectorData: &redis.VectorFP32{Val: index.EncodeVector(q.Vector)}, VectorParamName: "vec",
			Method: "KNN", MethodParams: []any{"K", q.Window}, Filter: filterExpr(q.Text.Filter),
		}},
		Combine: &redis.FTHybridCombineOptions{Method: redis.FTHybridCombineRRF, Window: q.Window, Constant: q.K, YieldScoreAs: "rrf"},
		Load:    load,
		Limit:   q.Limit,
	}
}

func (s *Store) serverHybrid(ctx context.Context, q HybridQuery) ([]index.Hit, error) {
	res, err := s.rdb.FTHybridWithArgs(ctx, s.alias(), s.hybridArgs(q)).Result()
	if err != nil {
		return nil, err
	}
	hits := make([]index.Hit, 0, len(res.Results))
	for _, r := range res.Results {
		f := make(map[string]string, len(r))
		for k, v := range r {
			f[k] = str(v)
		}
		c, err := chunkOf(f)
		if err != nil {
			return nil, fmt.Errorf("hybrid result: %w", err)
		}
		score, _ := strconv.ParseFloat(f["rrf"], 64)
		hits = append(hits, index.Hit{Chunk: c, Score: score})
	}
	return hits, nil
}

func (s *Store) clientHybrid(ctx context.Context, q HybridQuery) ([]index.Hit, error) {
	tq := q.Text
	tq.Limit = q.Window
	text, err := s.SearchText(ctx, tq)
	if err != nil {
		return nil, err
	}
	knn, err := s.SearchVector(ctx, index.VectorQuery{Filter: q.Text.Filter, Vector: q.Vector, Limit: q.Window})
	if err != nil {
		return nil, err
	}
	return FuseRRF(q.K, q.Limit, text, knn), nil
}

// FuseRRF fuses ranked lists of hits by Reciprocal Rank Fusion: a hit at
// rank r (from 1) of a list adds 1/(k + r). Ties go to the better single
// rank, then to the id, so the order is deterministic.
func FuseRRF(k float64, limit int, lists ...[]index.Hit) []index.Hit {
	type fused struct {
		hit  index.Hit
		best int
	}
	by := map[string]*fused{}
	var order []*fused
	for _, list := range lists {
		for i, h := range list {
			f := by[h.Chunk.ID]
			if f == nil {
				f = &fused{hit: index.Hit{Chunk: h.Chunk}, best: i + 1}
				by[h.Chunk.ID] = f
				order = append(order, f)
			}
			f.hit.Score += 1 / (k + float64(i+1))
			f.best = min(f.best, i+1)
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.hit.Score != b.hit.Score {
			return a.hit.Score > b.hit.Score
		}
		if a.best != b.best {
			return a.best < b.best
		}
		return a.hit.Chunk.ID < b.hit.Chunk.ID
	})
	out := make([]index.Hit, 0, min(limit, len(order)))
	for _, f := range order[:min(limit, len(order))] {
		out = append(out, f.hit)
	}
	return out
}
