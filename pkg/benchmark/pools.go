package benchmark

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// Pools samples smaller pools from a pooled benchmark: Count pools of
// Size schemas each, drawn at random from Seed. A pooled benchmark's
// difficulty is mostly its number of databases, since every question must
// first find its own among them; a deployment with a dozen databases
// meets a different problem from one with seventy, and published figures
// are measured on pools of their own size (BIRD's dev split pools 11).
type Pools struct {
	Size  int    // schemas in each pool
	Count int    // pools sampled (0: DefaultPools)
	Seed  uint64 // the first pool's seed; pool i uses Seed+i
}

// DefaultPools is how many pools are sampled when Count is 0.
const DefaultPools = 10

// PoolReport is what the sampled pools were.
type PoolReport struct {
	Schemas int    `json:"schemas"` // schemas in each pool
	Sampled int    `json:"sampled"` // pools drawn
	Asked   int    `json:"asked"`   // pools that had questions, and so were run
	Seed    uint64 `json:"seed"`
}

// pooled runs the benchmark on each sampled pool: whole, the schema's
// catalog, with the schemas left out of the pool dropped (DROP SCHEMA …
// CASCADE, so the catalog removes them as it would in a database), asked
// the questions whose gold tables are all in the pool. Shares are over
// all questions asked, so a pool counts by its questions.
func pooled(ctx context.Context, cfg RetrievalConfig, whole *catalog.Catalog) (*RetrievalReport, error) {
	p := cfg.Pool
	if p.Count <= 0 {
		p.Count = DefaultPools
	}
	schemas := populated(whole)
	if p.Size >= len(schemas) {
		return nil, fmt.Errorf("bench: pools of %d schemas: the schema has %d with tables or views, so a pool would be the whole", p.Size, len(schemas))
	}
	t := newTally(cfg.Ks)
	out := &RetrievalReport{Pool: &PoolReport{Schemas: p.Size, Sampled: p.Count, Seed: p.Seed}}
	var tables int
	for i := range p.Count {
		in, drop := samplePool(schemas, p.Size, p.Seed+uint64(i))
		qs := questionsIn(cfg.Questions, in)
		if len(qs) == 0 {
			continue
		}
		start := time.Now()
		var sql strings.Builder
		for _, s := range drop {
			fmt.Fprintf(&sql, "DROP SCHEMA %s CASCADE;\n", catalog.QuoteIdent(s))
		}
		cat, err := whole.Apply("pool", sql.String())
		if err != nil {
			return nil, fmt.Errorf("bench: pool %d (seed %d): %w", i+1, p.Seed+uint64(i), err)
		}
		run := cfg
		run.Questions = qs
		run.Examples = inPool(cfg.Examples, in, func(ex Example) string { return ex.Schema })
		run.Docs = inPool(cfg.Docs, in, func(d Doc) string { return d.Schema })
		rep, err := runOnce(ctx, run, cat, start, t)
		if err != nil {
			return nil, fmt.Errorf("pool %d (seed %d): %w", i+1, p.Seed+uint64(i), err)
		}
		out.Store = rep.Store
		out.Examples += rep.Examples
		out.Docs += rep.Docs
		out.IndexSeconds += rep.IndexSeconds
		out.Pool.Asked++
		tables += rep.Tables
	}
	if out.Pool.Asked == 0 {
		return nil, fmt.Errorf("bench: none of %d pools of %d schemas holds all the gold tables of a question", p.Count, p.Size)
	}
	out.Tables = (tables + out.Pool.Asked/2) / out.Pool.Asked
	out.IndexSeconds = round3(out.IndexSeconds)
	t.report(out)
	return out, nil
}

// populated are the schemas that hold a table or view, sorted: an empty
// one (public, when nothing is created in it) is nobody's database.
func populated(cat *catalog.Catalog) []string {
	has := map[string]bool{}
	for _, t := range cat.Tables() {
		has[t.Schema] = true
	}
	for _, v := range cat.Views() {
		has[v.Schema] = true
	}
	var out []string
	for _, s := range cat.Schemas() {
		if has[s] {
			out = append(out, s)
		}
	}
	return out
}

// samplePool draws size of schemas at random from seed; it returns
// those in the pool, lower case, and the others as the catalog spells
// them.
func samplePool(schemas []string, size int, seed uint64) (in map[string]bool, out []string) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	perm := r.Perm(len(schemas))
	in = make(map[string]bool, size)
	for i, j := range perm {
		if i < size {
			in[strings.ToLower(schemas[j])] = true
		} else {
			out = append(out, schemas[j])
		}
	}
	return in, out
}

// questionsIn are the questions whose gold tables are all in the pool.
func questionsIn(qs []Question, in map[string]bool) []Question {
	var out []Question
	for _, q := range qs {
		all := true
		for _, g := range q.GoldTables {
			s, _, ok := strings.Cut(strings.ToLower(g), ".")
			if !ok || !in[s] {
				all = false
				break
			}
		}
		if all {
			out = append(out, q)
		}
	}
	return out
}

// inPool keeps the examples or docs of one of the pool's schemas (an
// example's is where its SQL ran, a doc's the one schema of its line's
// gold tables: the databases the pool holds) and those of none.
func inPool[T any](items []T, in map[string]bool, schema func(T) string) []T {
	var out []T
	for _, it := range items {
		if s := schema(it); s == "" || in[strings.ToLower(s)] {
			out = append(out, it)
		}
	}
	return out
}
