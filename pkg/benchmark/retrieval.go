// Package benchmark measures schemaq the way users meet it: retrieval
// quality and latency over a schema and its questions, through exactly the
// code the daemon runs.
package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/indexer"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// Question is one line of a questions file.
type Question struct {
	ID         any      `json:"id"`
	Question   string   `json:"question"`
	GoldTables []string `json:"gold_tables"`
	// Hints go with the question as a request's hints; HintsFrom says
	// which field of the file holds them (BIRD's "evidence").
	Hints string `json:"-"`
}

// HintsFrom fills each question's Hints from the named string field of
// its line, as `bench retrieval --hints-field` does; lines without it get
// none.
func HintsFrom(qs []Question, lines [][]byte, field string) error {
	for i, line := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return fmt.Errorf("questions line %d: %w", i+1, err)
		}
		raw, ok := m[field]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, &qs[i].Hints); err != nil {
			return fmt.Errorf("questions line %d: field %s: not a string: %w", i+1, field, err)
		}
	}
	return nil
}

// ReadQuestions reads a JSONL questions file; each line needs question and
// gold_tables (schema.table). A hintsField names the field each
// question's hints come from ("" for none).
func ReadQuestions(r io.Reader, hintsField ...string) ([]Question, error) {
	var lines [][]byte
	var out []Question
	err := jsonLines(r, "questions", func(line int, s []byte) error {
		var q Question
		if err := json.Unmarshal(s, &q); err != nil {
			return err
		}
		if strings.TrimSpace(q.Question) == "" || len(q.GoldTables) == 0 {
			return errors.New("question and gold_tables are required")
		}
		out = append(out, q)
		lines = append(lines, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(hintsField) > 0 && hintsField[0] != "" {
		if err := HintsFrom(out, lines, hintsField[0]); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read questions: the file has none")
	}
	return out, nil
}

// jsonLines calls fn with each non-blank line of a JSONL file; an error
// names the file's role and the line.
func jsonLines(r io.Reader, what string, fn func(line int, s []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := bytes.TrimSpace(sc.Bytes())
		if len(s) == 0 {
			continue
		}
		if err := fn(line, bytes.Clone(s)); err != nil {
			return fmt.Errorf("%s line %d: %w", what, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// Example is a worked example indexed beside the schema: a question and
// the SQL that answers it, as an examples.upsert event carries.
type Example struct {
	ID       string
	Question string
	SQL      string
	Schema   string // the schema the SQL was written in
}

// ReadExamples reads a JSONL file of worked examples; each line needs
// question and sql (or gold_sql, as the benchmark sets name it). An id,
// when present, is kept to tell examples from the questions asked. The
// schema the SQL was written in is the line's schema, or else the one
// schema of its gold_tables: the database a logged query ran on.
func ReadExamples(r io.Reader) ([]Example, error) {
	var out []Example
	err := jsonLines(r, "examples", func(_ int, s []byte) error {
		var l struct {
			ID         any      `json:"id"`
			Question   string   `json:"question"`
			SQL        string   `json:"sql"`
			GoldSQL    string   `json:"gold_sql"`
			Schema     string   `json:"schema"`
			GoldTables []string `json:"gold_tables"`
		}
		if err := json.Unmarshal(s, &l); err != nil {
			return err
		}
		if l.SQL == "" {
			l.SQL = l.GoldSQL
		}
		if strings.TrimSpace(l.Question) == "" || strings.TrimSpace(l.SQL) == "" {
			return errors.New("question and sql (or gold_sql) are required")
		}
		ex := Example{Question: l.Question, SQL: l.SQL, Schema: l.Schema}
		if ex.Schema == "" {
			ex.Schema = oneSchema(l.GoldTables)
		}
		if l.ID != nil {
			ex.ID = fmt.Sprint(l.ID)
		}
		out = append(out, ex)
		return nil
	})
	return out, err
}

// Doc is a doc section indexed beside the schema: one line's text, as a
// docs.upsert event of one section would carry it.
type Doc struct {
	ID       string
	Question string // the line's question, so that a question's own line is held out
	Text     string
	Schema   string // the one schema of the line's gold_tables, for pools
}

// ReadDocs reads a JSONL file whose lines' field is a doc section each
// (BIRD's evidence: a definition naming the columns it means). Lines
// whose field is empty are skipped; id and question, when present, are
// kept to hold out the questions' own lines.
func ReadDocs(r io.Reader, field string) ([]Doc, error) {
	var out []Doc
	err := jsonLines(r, "docs", func(_ int, s []byte) error {
		var l map[string]any
		if err := json.Unmarshal(s, &l); err != nil {
			return err
		}
		v, ok := l[field]
		if !ok {
			return fmt.Errorf("no field %q", field)
		}
		text, ok := v.(string)
		if !ok {
			return fmt.Errorf("field %q is not a string", field)
		}
		if strings.TrimSpace(text) == "" {
			return nil
		}
		d := Doc{Text: text}
		if id, ok := l["id"]; ok && id != nil {
			d.ID = fmt.Sprint(id)
		}
		d.Question, _ = l["question"].(string)
		if gt, ok := l["gold_tables"].([]any); ok {
			var tables []string
			for _, t := range gt {
				if s, ok := t.(string); ok {
					tables = append(tables, s)
				}
			}
			d.Schema = oneSchema(tables)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// oneSchema is the schema all the schema.table names share, or "".
func oneSchema(tables []string) string {
	var schema string
	for _, t := range tables {
		s, _, ok := strings.Cut(t, ".")
		if !ok || (schema != "" && s != schema) {
			return ""
		}
		schema = s
	}
	return schema
}

// asFeedback keeps the examples the feedback endpoint would store, and
// counts the others by why they were refused.
func asFeedback(examples []Example, cat *catalog.Catalog, sqlite bool) ([]Example, map[string]int) {
	kept := examples[:0:0]
	refused := map[string]int{}
	for _, ex := range examples {
		if sqlite {
			ex.SQL = postgresDialect(ex.SQL, ex.Schema, cat)
		}
		_, err := sqlguard.CheckFeedback(ex.SQL, ex.Schema, cat)
		var r *sqlguard.Rejection
		switch {
		case err == nil:
			kept = append(kept, ex)
		case errors.As(err, &r):
			refused[r.Kind.Error()]++
		default:
			refused["error"]++
		}
	}
	return kept, refused
}

// heldOut leaves out the examples that are one of the questions asked,
// by id or by question (case and spacing aside), so that no question is
// answered by its own example.
func heldOut[T any](items []T, qs []Question, key func(T) (id, question string)) []T {
	norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }
	ids, texts := map[string]bool{}, map[string]bool{}
	for _, q := range qs {
		if q.ID != nil {
			ids[fmt.Sprint(q.ID)] = true
		}
		texts[norm(q.Question)] = true
	}
	var out []T
	for _, it := range items {
		id, question := key(it)
		if (id != "" && ids[id]) || (question != "" && texts[norm(question)]) {
			continue
		}
		out = append(out, it)
	}
	return out
}

// RetrievalConfig is one benchmark run.
type RetrievalConfig struct {
	Database  string // name the schema is indexed under
	Schema    string // SQL text applied as one snapshot
	Source    string // for errors
	Questions []Question
	Ks        []int
	Retrieve  retrieve.Config
	Embedder  embed.Embedder // local when nil
	Dir       string         // where the index lives (a temporary directory when empty)
	// OpenStore opens an empty store to index into, named for the report;
	// nil: a fresh embedded SQLite store in Dir.
	OpenStore func(ctx context.Context, dim int) (index.Store, string, error)
	// GoldSchema filters each question to the schema of its gold tables:
	// the single-database ask, where the caller says which database.
	GoldSchema bool
	Progress   io.Writer // a counter goes here while questions run (nil: none)
	// Warm runs every question once before the measured pass, so that
	// latency is a running daemon's: the catalog's graph and the parsed
	// SQL of the examples are cached by then.
	Warm bool
	// Examples are indexed beside the schema, less those that are one of
	// the questions (by id or text); the questions then ask for tables
	// and views only, so that no example takes a table's place.
	Examples []Example
	// Feedback has the examples pass what feedback must pass to be
	// stored (sqlguard.CheckFeedback against the catalog): those it
	// refuses are left out, as a daemon would refuse them.
	Feedback bool
	// SQLiteSQL says the examples' SQL is SQLite's, as the benchmark
	// sets' gold SQL is: with Feedback, it is rewritten for PostgreSQL
	// where the rewrite is mechanical (postgresDialect) before the check.
	SQLiteSQL bool
	// Docs are indexed beside the schema as one-section docs, less those
	// of the questions' own lines; the questions then ask for tables and
	// views only.
	Docs []Doc
	// Pool, when its Size is set, runs the benchmark on smaller pools
	// sampled from the schema's schemas instead of on the whole.
	Pool Pools
	// Clarify plays a caller who answers an ambiguous result: when the
	// question's own schema is among the first Clarify schemas the
	// result lists, the question is asked again with it named, and the
	// second result counts (its time too). 0: results stand as they are.
	Clarify int
	// RenameShare renames that share of the tables, in a migration after
	// the schema, to names that share no word with the old ones; the
	// questions keep their words and the gold tables follow the renames.
	// It measures what a table's former names are worth to search.
	RenameShare float64
	// LookAlike pools perturbed copies of every database beside it.
	LookAlike LookAlike
	// StablePrefix asks every question again at each smaller cut-off k
	// and counts the questions whose first k results differ from the
	// first k of the longest list (RetrievalReport.PrefixUnstable).
	StablePrefix bool
}

// RetrievalReport is the outcome; its JSON shape is stable because other
// tools read it.
type RetrievalReport struct {
	Store          string             `json:"store"`
	Tables         int                `json:"tables"`
	Questions      int                `json:"questions"`
	Recall         map[string]float64 `json:"recall"`
	CompleteRecall map[string]float64 `json:"complete_recall"`
	// SchemaFirst is the share of questions whose first table is in the
	// schema of their gold tables: in a pooled index, how often the
	// right database was picked.
	SchemaFirst float64 `json:"schema_first"`
	// Examples is how many worked examples were indexed beside the
	// schema (0: none).
	Examples int `json:"examples,omitempty"`
	// FeedbackRefused counts, by the guard's code, the examples that
	// RetrievalConfig.Feedback left out.
	FeedbackRefused map[string]int `json:"feedback_refused,omitempty"`
	// Docs is how many doc sections were indexed beside the schema.
	Docs int `json:"docs,omitempty"`
	// Ambiguous is the share of questions whose result said they fit
	// several schemas, and AmbiguousRight the share of those whose
	// likeliest schema was still their own.
	Ambiguous      float64 `json:"ambiguous"`
	AmbiguousRight float64 `json:"ambiguous_right,omitempty"`
	// Clarified is the share of questions asked again with their schema
	// named (RetrievalConfig.Clarify).
	Clarified    float64 `json:"clarified,omitempty"`
	IndexSeconds float64 `json:"index_seconds"`
	// Pool describes the sampled pools (with RetrievalConfig.Pool);
	// Tables is then their mean size and Questions counts a question
	// once for each pool that asked it.
	Pool      *PoolReport        `json:"pool,omitempty"`
	LatencyMS map[string]float64 `json:"latency_ms"`
	// ByGoldSize splits the figures by how many tables a question needs:
	// "1", "2", "3" and "4+".
	ByGoldSize map[string]*GoldSizeReport `json:"by_gold_size"`
	// PrefixUnstable is, for each cut-off k below the largest (with
	// RetrievalConfig.StablePrefix), the share of questions whose first k
	// results asked for k differ from the first k asked for the largest.
	PrefixUnstable map[string]float64 `json:"prefix_unstable,omitempty"`
	// Misses lists questions whose gold tables were not all in the top
	// max(k), for study; it is not part of the JSON output.
	Misses []Miss `json:"-"`
}

// GoldSizeReport is the figures of the questions that need one number of
// tables.
type GoldSizeReport struct {
	Questions      int                `json:"questions"`
	Recall         map[string]float64 `json:"recall"`
	CompleteRecall map[string]float64 `json:"complete_recall"`
	// SchemaFirst is the share of them whose first table is in their
	// gold tables' schema.
	SchemaFirst float64 `json:"schema_first"`
}

// goldSize names the class of a question that needs n tables.
func goldSize(n int) string {
	if n >= 4 {
		return "4+"
	}
	return strconv.Itoa(n)
}

// Miss is a question that lost a gold table.
type Miss struct {
	Question string
	Gold     []string
	Got      []string
	Terms    []retrieve.Term
	// Paths are the explain records of the gold tables that were
	// candidates at all: which stage lost each one.
	Paths []retrieve.Explain
}

type staticCatalogs struct{ c *catalog.Catalog }

func (s staticCatalogs) Catalog(db string) *catalog.Catalog {
	if s.c != nil && s.c.Database == db {
		return s.c
	}
	return nil
}

// Retrieval indexes the schema into a fresh embedded store and runs every
// question through the daemon's retriever. With cfg.Pool set it does so
// for each of several smaller pools sampled from the schema's schemas
// (pools.go) and reports the questions of all of them together.
func Retrieval(ctx context.Context, cfg RetrievalConfig) (*RetrievalReport, error) {
	if len(cfg.Ks) == 0 {
		cfg.Ks = []int{1, 3, 5, 10, 15, 20}
	}
	slices.Sort(cfg.Ks)
	if cfg.Embedder == nil {
		cfg.Embedder = embed.NewLocal(0)
	}
	start := time.Now()
	cat, err := catalog.Snapshot(cfg.Database, cfg.Source, cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("bench: apply schema: %w", err)
	}
	if cat, cfg.Questions, err = lookAlike(cat, cfg.Source, cfg.Schema, cfg.LookAlike, cfg.Questions); err != nil {
		return nil, err
	}
	if cfg.RenameShare > 0 {
		if cat, cfg.Questions, err = renameTables(cat, cfg.RenameShare, cfg.Questions); err != nil {
			return nil, err
		}
	}
	if cfg.Pool.Size > 0 {
		return pooled(ctx, cfg, cat)
	}
	t := newTally(cfg.Ks)
	rep, err := runOnce(ctx, cfg, cat, start, t)
	if err != nil {
		return nil, err
	}
	t.report(rep)
	return rep, nil
}

// tally sums the outcome of the questions asked, over one run or many.
type tally struct {
	ks          []int
	recall      []float64
	complete    []float64
	schemaFirst int
	// ambiguous counts the results that fit several schemas, right those
	// whose likeliest was the question's own, and clarified the questions
	// asked again with it named.
	ambiguous, right, clarified int
	n                           int
	lat                         []time.Duration
	misses                      []Miss
	// bySize tallies the questions of each goldSize; unstable counts,
	// per cut-off, the questions whose prefix moved (StablePrefix).
	bySize   map[string]*sizeTally
	unstable []int
	asked    bool // StablePrefix ran
}

type sizeTally struct {
	n, schemaFirst   int
	recall, complete []float64
}

func newTally(ks []int) *tally {
	return &tally{ks: ks, recall: make([]float64, len(ks)), complete: make([]float64, len(ks)),
		bySize: map[string]*sizeTally{}, unstable: make([]int, len(ks))}
}

// add counts one question's results got against its gold tables.
func (t *tally) add(gold, got []string) {
	size := t.bySize[goldSize(len(gold))]
	if size == nil {
		size = &sizeTally{recall: make([]float64, len(t.ks)), complete: make([]float64, len(t.ks))}
		t.bySize[goldSize(len(gold))] = size
	}
	size.n++
	if len(got) > 0 {
		first, _, _ := strings.Cut(got[0], ".")
		want, _, _ := strings.Cut(gold[0], ".")
		if first == want {
			t.schemaFirst++
			size.schemaFirst++
		}
	}
	for i, k := range t.ks {
		top := got[:min(k, len(got))]
		found := 0
		for _, g := range gold {
			if slices.Contains(top, g) {
				found++
			}
		}
		r := float64(found) / float64(len(gold))
		t.recall[i] += r
		size.recall[i] += r
		if found == len(gold) {
			t.complete[i]++
			size.complete[i]++
		}
	}
}

// report writes the tally's shares and latency percentiles into rep.
func (t *tally) report(rep *RetrievalReport) {
	n := float64(max(t.n, 1))
	rep.Questions = t.n
	rep.Recall, rep.CompleteRecall = map[string]float64{}, map[string]float64{}
	for i, k := range t.ks {
		rep.Recall[strconv.Itoa(k)] = round3(t.recall[i] / n)
		rep.CompleteRecall[strconv.Itoa(k)] = round3(t.complete[i] / n)
	}
	rep.SchemaFirst = round3(float64(t.schemaFirst) / n)
	rep.Ambiguous = round3(float64(t.ambiguous) / n)
	if t.ambiguous > 0 {
		rep.AmbiguousRight = round3(float64(t.right) / float64(t.ambiguous))
	}
	rep.Clarified = round3(float64(t.clarified) / n)
	rep.ByGoldSize = map[string]*GoldSizeReport{}
	for size, st := range t.bySize {
		g := &GoldSizeReport{Questions: st.n, Recall: map[string]float64{}, CompleteRecall: map[string]float64{},
			SchemaFirst: round3(float64(st.schemaFirst) / float64(st.n))}
		for i, k := range t.ks {
			g.Recall[strconv.Itoa(k)] = round3(st.recall[i] / float64(st.n))
			g.CompleteRecall[strconv.Itoa(k)] = round3(st.complete[i] / float64(st.n))
		}
		rep.ByGoldSize[size] = g
	}
	if t.asked {
		rep.PrefixUnstable = map[string]float64{}
		for i, k := range t.ks[:len(t.ks)-1] {
			rep.PrefixUnstable[strconv.Itoa(k)] = round3(float64(t.unstable[i]) / n)
		}
	}
	sort.Slice(t.lat, func(i, j int) bool { return t.lat[i] < t.lat[j] })
	rep.LatencyMS = map[string]float64{"p50": ms(percentile(t.lat, 50)), "p95": ms(percentile(t.lat, 95)), "p99": ms(percentile(t.lat, 99))}
	rep.Misses = t.misses
}

// runOnce indexes cat, the catalog of cfg.Schema (or of a pool of it)
// applied since start, and asks cfg.Questions, adding their outcome to
// t. The report it returns has what the run alone knows: the store, the
// tables, the examples and the indexing time.
func runOnce(ctx context.Context, cfg RetrievalConfig, cat *catalog.Catalog, start time.Time, t *tally) (*RetrievalReport, error) {
	dir := cfg.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "schemaq-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	b := &benchRun{cfg: cfg, cat: cat, t: t, maxK: cfg.Ks[len(cfg.Ks)-1]}
	if err := b.open(ctx, dir); err != nil {
		return nil, err
	}
	defer b.store.Close()
	if err := b.index(ctx); err != nil {
		return nil, err
	}
	indexSeconds := time.Since(start).Seconds()
	ret, err := retrieve.New(b.store, cfg.Embedder, staticCatalogs{cat}, cfg.Retrieve)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	b.ret = ret
	if cfg.Warm {
		for _, q := range cfg.Questions {
			if _, err := ret.Retrieve(ctx, b.request(q)); err != nil {
				return nil, fmt.Errorf("bench: warming with question %v: %w", q.ID, err)
			}
		}
	}
	rep := &RetrievalReport{Store: b.storeName, Tables: len(cat.Tables()), Examples: len(b.examples), FeedbackRefused: b.refused, Docs: len(b.docs), IndexSeconds: round3(indexSeconds)}
	for qi, q := range cfg.Questions {
		if err := b.ask(ctx, q); err != nil {
			return nil, err
		}
		if cfg.Progress != nil && ((qi+1)%25 == 0 || qi+1 == len(cfg.Questions)) {
			fmt.Fprintf(cfg.Progress, "\rquestions %d/%d", qi+1, len(cfg.Questions))
		}
	}
	if cfg.Progress != nil {
		fmt.Fprintln(cfg.Progress)
	}
	return rep, nil
}

// benchRun is one run of the questions over one index: the store it
// fills, what it indexed beside the schema, and the tally it adds to.
type benchRun struct {
	cfg       RetrievalConfig
	cat       *catalog.Catalog
	store     index.Store
	storeName string
	examples  []Example
	refused   map[string]int
	docs      []Doc
	ret       *retrieve.Retriever
	maxK      int
	t         *tally
}

// open opens the run's store: the configured one, or an embedded one in
// dir.
func (b *benchRun) open(ctx context.Context, dir string) error {
	b.cat.Version = 1
	var err error
	b.storeName = "sqlite"
	if b.cfg.OpenStore != nil {
		b.store, b.storeName, err = b.cfg.OpenStore(ctx, b.cfg.Embedder.Dimensions())
	} else {
		b.store, err = sqlite.Open(ctx, filepath.Join(dir, "index.db"), b.cfg.Embedder.Dimensions())
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// index indexes the schema, and the examples and docs that are not the
// questions'.
func (b *benchRun) index(ctx context.Context) error {
	cfg := b.cfg
	if _, err := indexer.Catalog(ctx, b.store, cfg.Embedder, b.cat, chunk.NewChunker(chunk.Options{})); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b.examples = heldOut(cfg.Examples, cfg.Questions, func(ex Example) (string, string) { return ex.ID, ex.Question })
	if cfg.Feedback {
		b.examples, b.refused = asFeedback(b.examples, b.cat, cfg.SQLiteSQL)
	}
	if len(b.examples) > 0 {
		chunks := make([]chunk.Chunk, len(b.examples))
		for i, ex := range b.examples {
			chunks[i] = chunk.Example(cfg.Database, ex.Schema, ex.ID, ex.Question, ex.SQL)
		}
		if _, err := indexer.Chunks(ctx, b.store, cfg.Embedder, chunks); err != nil {
			return fmt.Errorf("bench: index examples: %w", err)
		}
	}
	b.docs = heldOut(cfg.Docs, cfg.Questions, func(d Doc) (string, string) { return d.ID, d.Question })
	if len(b.docs) > 0 {
		var chunks []chunk.Chunk
		for i, d := range b.docs {
			chunks = append(chunks, chunk.Doc(cfg.Database, fmt.Sprintf("doc-%d-%s", i, d.ID), "", d.Text, nil, chunk.Options{})...)
		}
		if _, err := indexer.Chunks(ctx, b.store, cfg.Embedder, chunks); err != nil {
			return fmt.Errorf("bench: index docs: %w", err)
		}
	}
	return nil
}

// request is the request a question makes: tables and views only when
// examples or docs are indexed beside them, in its own schema with
// GoldSchema.
func (b *benchRun) request(q Question) retrieve.Request {
	req := retrieve.Request{Database: b.cfg.Database, Question: q.Question, K: b.maxK, Hints: q.Hints}
	if len(b.examples) > 0 || len(b.docs) > 0 {
		req.Kinds = []string{chunk.KindTable, chunk.KindView}
	}
	if b.cfg.GoldSchema {
		if schema, _, ok := strings.Cut(strings.ToLower(q.GoldTables[0]), "."); ok {
			req.Schemas = []string{schemaOf(b.cat, schema)}
		}
	}
	return req
}

// ask asks one question, as a caller who clarifies would, and tallies
// the answer: recall, latency, the stable prefix, and a miss with its
// explanation.
func (b *benchRun) ask(ctx context.Context, q Question) error {
	t0 := time.Now()
	req := b.request(q)
	res, err := b.ret.Retrieve(ctx, req)
	if err != nil {
		return fmt.Errorf("bench: question %v: %w", q.ID, err)
	}
	if res.Ambiguous {
		if res, req, err = b.clarify(ctx, q, req, res); err != nil {
			return err
		}
	}
	t := b.t
	t.lat = append(t.lat, time.Since(t0))
	t.n++
	got := relations(res)
	gold := make([]string, len(q.GoldTables))
	for i, g := range q.GoldTables {
		gold[i] = strings.ToLower(g)
	}
	t.add(gold, got)
	if b.cfg.StablePrefix {
		if err := t.comparePrefixes(ctx, b.ret, req, got); err != nil {
			return fmt.Errorf("bench: question %v: %w", q.ID, err)
		}
	}
	if !allIn(gold, got[:min(b.maxK, len(got))]) {
		m := Miss{Question: q.Question, Gold: gold, Got: got[:min(b.maxK, len(got))], Terms: res.Terms}
		for _, ex := range res.Explain {
			if slices.Contains(gold, strings.ToLower(ex.Name)) {
				m.Paths = append(m.Paths, ex)
			}
		}
		t.misses = append(t.misses, m)
	}
	return nil
}

// clarify counts a result that fits several schemas, and plays the
// caller who names the question's schema when it is among the first
// Clarify listed and asks again.
func (b *benchRun) clarify(ctx context.Context, q Question, req retrieve.Request, res *retrieve.Result) (*retrieve.Result, retrieve.Request, error) {
	b.t.ambiguous++
	own, _, _ := strings.Cut(q.GoldTables[0], ".")
	if strings.EqualFold(res.Schemas[0].Schema, own) {
		b.t.right++
	}
	for _, s := range res.Schemas[:min(b.cfg.Clarify, len(res.Schemas))] {
		if strings.EqualFold(s.Schema, own) {
			req.Schemas = []string{s.Schema}
			again, err := b.ret.Retrieve(ctx, req)
			if err != nil {
				return nil, req, fmt.Errorf("bench: question %v, asked again in schema %s: %w", q.ID, s.Schema, err)
			}
			b.t.clarified++
			return again, req, nil
		}
	}
	return res, req, nil
}

// schemaOf finds the catalog's spelling of a lower-cased schema name.
func schemaOf(cat *catalog.Catalog, lower string) string {
	for _, s := range cat.Schemas() {
		if strings.ToLower(s) == lower {
			return s
		}
	}
	return lower
}

func allIn(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// renameTables renames every table whose position in name order falls in
// share (every other one at 0.5) to "renamed_<n>", in a migration of
// its own, and points the questions' gold tables at the new names.
func renameTables(cat *catalog.Catalog, share float64, qs []Question) (*catalog.Catalog, []Question, error) {
	var sql strings.Builder
	renamed := map[string]string{} // lower-case schema.old → schema.new
	acc := 0.0
	for i, t := range cat.Tables() {
		acc += share
		if acc < 1 {
			continue
		}
		acc--
		to := fmt.Sprintf("renamed_%d", i)
		fmt.Fprintf(&sql, "ALTER TABLE %s RENAME TO %s;\n", t.QualName(), to)
		renamed[t.QualName().Key()] = catalog.QualName{Schema: t.Schema, Name: to}.Key()
	}
	next, err := cat.Apply("9999_renames.sql", sql.String())
	if err != nil {
		return nil, nil, fmt.Errorf("bench: renames: %w", err)
	}
	out := make([]Question, len(qs))
	for i, q := range qs {
		out[i] = q
		out[i].GoldTables = make([]string, len(q.GoldTables))
		for j, g := range q.GoldTables {
			if to, ok := renamed[strings.ToLower(g)]; ok {
				g = to
			}
			out[i].GoldTables[j] = g
		}
	}
	return next, out, nil
}

// relations are a result's tables and views, lower case, in order. Views
// answer questions as tables do: a gold view ranked first is found.
func relations(res *retrieve.Result) []string {
	var got []string
	for _, it := range res.Items {
		if it.Kind == chunk.KindTable || it.Kind == chunk.KindView {
			got = append(got, strings.ToLower(it.Name))
		}
	}
	return got
}

// comparePrefixes asks req again at each smaller cut-off k and counts
// the cut-offs whose first k differ from the first k of got, the answer
// at the largest: a caller that pages, or asks for 5 then 10, must not
// see the order change.
func (t *tally) comparePrefixes(ctx context.Context, ret *retrieve.Retriever, req retrieve.Request, got []string) error {
	t.asked = true
	for i, k := range t.ks[:len(t.ks)-1] {
		req.K = k
		res, err := ret.Retrieve(ctx, req)
		if err != nil {
			return err
		}
		short := relations(res)
		if !slices.Equal(short[:min(k, len(short))], got[:min(k, len(got))]) {
			t.unstable[i]++
		}
	}
	return nil
}
