package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/pkg/benchmark"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

func runBench(ctx context.Context, e *env, args []string) error {
	e.declareVerbs([]string{"retrieval", "search", "ask", "freshness", "ingest"})
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(e.stderr, "Usage: schemaq bench retrieval|search|ask|freshness|ingest [flags]\n\nBenchmarks:\n  retrieval  recall and complete recall @k and latency of retrieval over a schema and questions\n  search     throughput and latency of the search endpoint through NATS under concurrent load\n  ask        the same for ask, with a real gateway (without one: search)\n  freshness  time from publishing a migration until it is searchable\n  ingest     migrations per second of a generated history, time to searchable, dead letters")
		if len(args) == 0 {
			return usagef("bench: name a benchmark")
		}
		return nil
	}
	switch args[0] {
	case "retrieval":
		return runBenchRetrieval(ctx, e, args[1:])
	case "search":
		return runBenchSearch(ctx, e, args[1:])
	case "ask":
		return runBenchAsk(ctx, e, args[1:])
	case "freshness":
		return runBenchFreshness(ctx, e, args[1:])
	case "ingest":
		return runBenchIngest(ctx, e, args[1:])
	}
	return usagef("bench: unknown benchmark %q", args[0])
}

// runBenchRetrieval is parse, read the inputs, run benchmark.Retrieval,
// print: the flags are a retrieve.Config to tune, inputs to read and
// ablations to switch off.
func runBenchRetrieval(ctx context.Context, e *env, args []string) error {
	var b benchRetrieval
	if err := b.parse(e, args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(b.profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	rc, err := b.inputs()
	if err != nil {
		return err
	}
	rc.Progress = progressWriter(e.stderr)
	rep, err := benchmark.Retrieval(ctx, rc)
	if err != nil {
		return err
	}
	if b.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	printRetrievalReport(e, rep, b.clarify, b.misses)
	return nil
}

// benchRetrieval is one `bench retrieval` run's flags.
type benchRetrieval struct {
	schema, questions, hintsField     string
	docsFile, docsField, examplesFile string
	feedback, sqliteSQL, goldSchema   bool
	stablePrefix                      bool
	warm, asJSON                      bool
	ks, db, storeName, reranker       string
	profile                           string
	misses, clarify                   int
	renameShare                       float64
	pools                             benchmark.Pools
	lookAlike                         benchmark.LookAlike
	store                             storeFlags
	cfg                               retrieve.Config
	off                               retrievalAblations
	cuts                              []int
}

func (b *benchRetrieval) parse(e *env, args []string) error {
	fs := newFlags(e, "bench retrieval", "--schema FILE.sql --questions FILE.jsonl [flags]")
	b.registerInputs(fs)
	if err := b.store.register(fs, e); err != nil {
		return err
	}
	b.cfg = retrieve.DefaultConfig
	b.off.register(fs)
	registerTuning(fs, &b.cfg)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if b.schema == "" || b.questions == "" {
		fs.Usage()
		return usagef("bench retrieval: --schema and --questions are required")
	}
	return b.check()
}

func (b *benchRetrieval) registerInputs(fs *flag.FlagSet) {
	fs.StringVar(&b.schema, "schema", "", "schema SQL, applied as one snapshot (required)")
	fs.StringVar(&b.questions, "questions", "", "questions JSONL: question, gold_tables (required)")
	fs.StringVar(&b.hintsField, "hints-field", "", "a string field of each question line to send as the request's hints (BIRD: evidence)")
	fs.StringVar(&b.docsFile, "docs", "", "JSONL whose --docs-field of each line is indexed beside the schema as a doc section; lines whose id or question is one of --questions' are left out")
	fs.StringVar(&b.docsField, "docs-field", "text", "the string field of each --docs line that is its section (BIRD: evidence)")
	fs.BoolVar(&b.feedback, "feedback", false, "with --examples: index only the examples the feedback endpoint would store (the SQL passes the guard against the schema), as a deployment that learns from feedback has them")
	fs.BoolVar(&b.sqliteSQL, "sqlite-sql", false, "with --feedback: the examples' SQL is SQLite's (BIRD's, Spider's); rewrite what is mechanical (backticks, the case of names, LIMIT a, b, SQLite's functions) for PostgreSQL first")
	fs.StringVar(&b.examplesFile, "examples", "", "worked examples JSONL (question and sql or gold_sql) to index beside the schema; lines whose id or question is one of --questions' are left out")
	fs.StringVar(&b.ks, "k", "1,3,5,10,15,20", "comma-separated cut-offs")
	fs.BoolVar(&b.asJSON, "json", false, "print one JSON object")
	fs.StringVar(&b.db, "db", "bench", "database name to index the schema under")
	fs.IntVar(&b.misses, "misses", 0, "print up to N questions whose gold tables were not all retrieved")
	fs.BoolVar(&b.warm, "warm", false, "run every question once before the measured pass (latency of a daemon whose caches are warm)")
	fs.BoolVar(&b.goldSchema, "gold-schema", false, "filter each question to its gold tables' schema (single-database asks)")
	fs.IntVar(&b.pools.Size, "pool", 0, "run on pools of N schemas sampled from the schema's, each asked the questions whose gold tables it holds, and report them together (0: the whole schema)")
	fs.IntVar(&b.pools.Count, "pools", benchmark.DefaultPools, "with --pool, how many pools to sample")
	fs.Uint64Var(&b.pools.Seed, "seed", 1, "with --pool, the first pool's random seed (pool i uses seed+i)")
	fs.IntVar(&b.lookAlike.Copies, "look-alike", 0, "pool N databases for each of the schema's (itself included): copies that each lost --look-alike-drop of their columns, keys kept; the questions stay the originals' (0: off)")
	fs.Float64Var(&b.lookAlike.Drop, "look-alike-drop", 0.3, "with --look-alike, the share of a copy's columns dropped")
	fs.Float64Var(&b.lookAlike.Words, "look-alike-words", 0, "with --look-alike, the share of a copy's words with a synonym that it says another way (client for customer); each question is then asked of one of the look-alikes, in its words (0: copies keep the words, questions ask the originals)")
	fs.Uint64Var(&b.lookAlike.Seed, "look-alike-seed", 1, "with --look-alike, the random seed of the columns dropped, the words and the database each question asks")
	fs.StringVar(&b.storeName, "store", "sqlite", "index store: sqlite (embedded) or redis (needs --redis-url)")
	fs.StringVar(&b.profile, "cpuprofile", "", "write a CPU profile of the run (indexing and questions) to this file, for go tool pprof")
	fs.StringVar(&b.reranker, "reranker", "none", "reranker after schema rescoring: none or lexical")
	fs.Float64Var(&b.renameShare, "rename-share", 0, "rename this share of the tables (0.5: every other one) in a migration after the schema, to names that share no word with the old; the questions keep their words, the gold tables follow. Measures what former names are worth to search")
	fs.BoolVar(&b.stablePrefix, "stable-prefix", false, "ask every question again at each smaller --k and report the share whose first k results differ from the first k of the longest list")
	fs.IntVar(&b.clarify, "clarify", 0, "play a caller who answers an ambiguous result: a question whose schema is among the first N the result lists is asked again with it named (0: off)")
}

// check refuses flags that contradict each other and reads the cut-offs.
func (b *benchRetrieval) check() error {
	if b.clarify < 0 || b.cfg.Route.AmbiguousShare < 0 {
		return usagef("bench retrieval: --clarify %d --ambiguous-share %v: both are 0 (off) or more", b.clarify, b.cfg.Route.AmbiguousShare)
	}
	if b.pools.Size < 0 || b.pools.Count < 1 {
		return usagef("bench retrieval: --pool %d --pools %d: the pool size is 0 (off) or more, and at least one pool is drawn", b.pools.Size, b.pools.Count)
	}
	if err := oneOf("reranker", b.reranker, "none", "lexical"); err != nil {
		return err
	}
	if err := oneOf("store", b.storeName, "sqlite", "redis"); err != nil {
		return err
	}
	if b.storeName == "redis" && !b.store.shared() {
		return usagef("bench retrieval: --store redis needs --redis-url (SCHEMAQ_REDIS_URL)")
	}
	for _, s := range strings.Split(b.ks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k <= 0 {
			return usagef("--k: %q is not a list of positive integers", b.ks)
		}
		b.cuts = append(b.cuts, k)
	}
	return nil
}

// inputs reads the schema, questions, examples and docs into the
// benchmark's configuration.
func (b *benchRetrieval) inputs() (benchmark.RetrievalConfig, error) {
	cfg := b.cfg
	b.off.apply(&cfg)
	if b.reranker == "lexical" {
		cfg.Reranker = rerank.Lexical{}
	}
	rc := benchmark.RetrievalConfig{Database: b.db, Source: b.schema, Ks: b.cuts, Retrieve: cfg,
		GoldSchema: b.goldSchema, Feedback: b.feedback, SQLiteSQL: b.sqliteSQL, Warm: b.warm, Pool: b.pools,
		Clarify: b.clarify, RenameShare: b.renameShare, StablePrefix: b.stablePrefix, LookAlike: b.lookAlike}
	if b.storeName == "redis" {
		rc.OpenStore = b.store.benchStore
	}
	sql, err := os.ReadFile(b.schema)
	if err != nil {
		return rc, fmt.Errorf("bench retrieval: %w", err)
	}
	rc.Schema = string(sql)
	if rc.Questions, err = readBenchFile(b.questions, func(r io.Reader) ([]benchmark.Question, error) {
		return benchmark.ReadQuestions(r, b.hintsField)
	}); err != nil {
		return rc, err
	}
	if rc.Examples, err = readBenchFile(b.examplesFile, benchmark.ReadExamples); err != nil {
		return rc, err
	}
	rc.Docs, err = readBenchFile(b.docsFile, func(r io.Reader) ([]benchmark.Doc, error) {
		return benchmark.ReadDocs(r, b.docsField)
	})
	return rc, err
}

// readBenchFile reads one JSONL input; no name, no input.
func readBenchFile[T any](name string, read func(io.Reader) ([]T, error)) ([]T, error) {
	if name == "" {
		return nil, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("bench retrieval: %w", err)
	}
	defer f.Close()
	out, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("bench retrieval: %s: %w", name, err)
	}
	return out, nil
}

// retrievalAblations switch stages of the default configuration off.
type retrievalAblations struct {
	bm25, knn, schema, fk, routing, propagation, inferredJoins                    bool
	routingFeatures, corrections, extensions, compounds, values, names, keepDates bool
}

func (a *retrievalAblations) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.bm25, "no-bm25", false, "ablation: no BM25 candidates")
	fs.BoolVar(&a.knn, "no-knn", false, "ablation: no vector candidates")
	fs.BoolVar(&a.schema, "no-schema-rerank", false, "ablation: no schema-aware rescoring")
	fs.BoolVar(&a.fk, "no-fk", false, "ablation: no foreign-key bridge tables")
	fs.BoolVar(&a.routing, "no-routing", false, "ablation: no schema routing")
	fs.BoolVar(&a.propagation, "no-propagation", false, "ablation: no foreign-key score propagation")
	fs.BoolVar(&a.inferredJoins, "no-inferred-joins", false, "ablation: propagation follows declared foreign keys only, not the joins column names imply")
	fs.BoolVar(&a.routingFeatures, "no-routing-features", false, "ablation: schema routing by the fused ranking alone, without the features that may put another schema first")
	fs.BoolVar(&a.corrections, "no-corrections", false, "ablation: no corrections of question words one edit from an identifier")
	fs.BoolVar(&a.extensions, "no-extensions", false, "ablation: no identifier terms that extend a question word no identifier uses by 1-3 letters (rented → rental)")
	fs.BoolVar(&a.compounds, "no-compounds", false, "ablation: no run-together identifiers for the question words they are made of")
	fs.BoolVar(&a.values, "no-value-classes", false, "ablation: no attributes (day, month, gender, country…) for the well-known values a question names")
	fs.BoolVar(&a.names, "no-proper-names", false, "ablation: no attributes (name, person) for the capitalised names a question writes that no identifier uses")
	fs.BoolVar(&a.keepDates, "keep-dates", false, "ablation: search the numbers of the dates and times a question writes (2017/3/27, 3:43:54)")
}

func (a retrievalAblations) apply(cfg *retrieve.Config) {
	cfg.Gather.BM25, cfg.Gather.KNN, cfg.Rescore.Enabled, cfg.Expand.Enabled = !a.bm25, !a.knn, !a.schema, !a.fk
	cfg.Route.Enabled, cfg.Propagate.Enabled = !a.routing, !a.propagation
	cfg.Analyse.Corrections = cfg.Analyse.Corrections && !a.corrections
	cfg.Analyse.Extensions = cfg.Analyse.Extensions && !a.extensions
	cfg.Route.Features = cfg.Route.Features && !a.routingFeatures
	cfg.Propagate.InferJoins = cfg.Propagate.InferJoins && !a.inferredJoins
	cfg.Analyse.Compounds = cfg.Analyse.Compounds && !a.compounds
	cfg.Analyse.ValueClasses = cfg.Analyse.ValueClasses && !a.values
	cfg.Analyse.ProperNames = cfg.Analyse.ProperNames && !a.names
	cfg.Analyse.DropDates = cfg.Analyse.DropDates && !a.keepDates
}

// registerTuning binds the retrieval pipeline's weights and sizes to
// flags, each defaulting to the shipped configuration.
func registerTuning(fs *flag.FlagSet, cfg *retrieve.Config) {
	fs.IntVar(&cfg.Gather.Candidates, "candidates", cfg.Gather.Candidates, "candidates taken from each of BM25 and KNN")
	fs.Float64Var(&cfg.Fuse.RRFK, "rrf-k", cfg.Fuse.RRFK, "k of Reciprocal Rank Fusion")
	fs.Float64Var(&cfg.Fuse.BM25Weight, "bm25-weight", cfg.Fuse.BM25Weight, "weight of the BM25 list in fusion")
	fs.Float64Var(&cfg.Fuse.KNNWeight, "knn-weight", cfg.Fuse.KNNWeight, "weight of the vector list in fusion")
	fs.Float64Var(&cfg.Analyse.CommonHeads, "common-heads", cfg.Analyse.CommonHeads, "leave out the compound of a phrase whose head is in at least this share of the tables (full name → fullname; 0: off)")
	fs.Float64Var(&cfg.Fuse.IdentifierWeight, "identifier-weight", cfg.Fuse.IdentifierWeight, "weight of the list of tables that own an identifier the question or hints spell out (0: off)")
	fs.Float64Var(&cfg.Fuse.ExampleWeight, "example-weight", cfg.Fuse.ExampleWeight, "weight of the list of tables the SQL of the most similar examples reads (with --examples; 0: off)")
	fs.Float64Var(&cfg.Gather.ExampleTrust, "example-trust", cfg.Gather.ExampleTrust, "scale an example's vote by the share of the question's terms it holds, to this power (0: off)")
	fs.Float64Var(&cfg.Rescore.ExampleCoverage, "rescore-example-coverage", cfg.Rescore.ExampleCoverage, "the best example's SQL counts in the rescoring only when it holds this share of the question's terms")
	fs.IntVar(&cfg.Gather.ExampleCandidates, "example-candidates", cfg.Gather.ExampleCandidates, "how many of the most similar examples vote for their tables")
	fs.Float64Var(&cfg.Fuse.DocWeight, "doc-weight", cfg.Fuse.DocWeight, "weight of the list of tables the most similar doc sections name (0: off)")
	fs.IntVar(&cfg.Gather.DocCandidates, "doc-candidates", cfg.Gather.DocCandidates, "how many of the most similar doc sections vote for the tables they name")
	fs.Float64Var(&cfg.Route.AmbiguousShare, "ambiguous-share", cfg.Route.AmbiguousShare, "a result says the question fits several schemas when the likeliest has less than this share of the routing's odds (0: never)")
	fs.Float64Var(&cfg.Fuse.HintWeight, "hint-weight", cfg.Fuse.HintWeight, "weight of the hints' BM25 list in fusion (with --hints-field)")
	fs.IntVar(&cfg.Rescore.Window, "schema-window", cfg.Rescore.Window, "how many fused candidates the schema rescoring reorders")
	fs.Float64Var(&cfg.Route.Weight, "routing-weight", cfg.Route.Weight, "schema routing: weight of the schema list")
	fs.Float64Var(&cfg.Route.K, "routing-k", cfg.Route.K, "schema routing: k of the schema list")
	fs.IntVar(&cfg.Route.Depth, "routing-depth", cfg.Route.Depth, "schema routing: how many of a schema's best candidates count")
	fs.BoolVar(&cfg.Route.ByVocab, "routing-vocab", cfg.Route.ByVocab, "schema routing: rank schemas by their vocabulary, not their tables' evidence")
	fs.Float64Var(&cfg.Propagate.Weight, "propagation-weight", cfg.Propagate.Weight, "propagation: share of a seed's score lent")
	fs.IntVar(&cfg.Propagate.Seeds, "propagation-seeds", cfg.Propagate.Seeds, "propagation: how many of the best tables lend")
	fs.Float64Var(&cfg.Propagate.Own, "propagation-own", cfg.Propagate.Own, "propagation: share of a lifted table's own score added to its floor (0: floor alone)")
	fs.Float64Var(&cfg.Route.Likelihood, "routing-likelihood", cfg.Route.Likelihood, "schema routing: weight of the schemas' query likelihood (0: off)")
	fs.Float64Var(&cfg.Route.Mu, "routing-mu", cfg.Route.Mu, "schema routing: Dirichlet mu of the query likelihood")
	fs.IntVar(&cfg.Route.Head, "routing-head", cfg.Route.Head, "schema routing: keep the routed order for this many candidates, then interleave it with the unrouted order (0: routed throughout)")
	fs.IntVar(&cfg.Analyse.PrefixMin, "prefix-min", cfg.Analyse.PrefixMin, "BM25: add identifier terms of at least N letters that abbreviate a question word (0: off)")
	fs.IntVar(&cfg.Expand.MaxBridges, "max-bridges", cfg.Expand.MaxBridges, "join completion: at most this many tables that join two of the strongest")
	fs.IntVar(&cfg.Expand.Depth, "bridge-depth", cfg.Expand.Depth, "join completion: look for bridges among the first N candidates")
	fs.IntVar(&cfg.Expand.Gaps, "gaps", cfg.Expand.Gaps, "join completion: at most N tables that cover question words none of the first --gap-depth has, each right after the one it joins (0: off)")
	fs.IntVar(&cfg.Expand.GapDepth, "gap-depth", cfg.Expand.GapDepth, "join completion: the first N candidates whose words --gaps completes")
	fs.IntVar(&cfg.Expand.Targets, "named-targets", cfg.Expand.Targets, "join completion: within the first N, a table whose name holds a question word that names a table it joins (game_publisher for \"the publisher Acme\") gets that table right after it (0: off)")
	fs.IntVar(&cfg.Route.Expansion, "schema-expansion", cfg.Route.Expansion, "add up to N unfound tables of the best schema")
	fs.Float64Var(&cfg.Rescore.Weights.Table, "w-table", cfg.Rescore.Weights.Table, "schema rescoring: weight of a table-name hit")
	fs.Float64Var(&cfg.Rescore.Weights.Column, "w-column", cfg.Rescore.Weights.Column, "schema rescoring: weight of a column hit")
	fs.Float64Var(&cfg.Rescore.Weights.Other, "w-other", cfg.Rescore.Weights.Other, "schema rescoring: weight of any other hit")
	fs.Float64Var(&cfg.Rescore.Weights.Identifier, "w-identifier", cfg.Rescore.Weights.Identifier, "schema rescoring: weight of an identifier written out that names the candidate or one of its columns")
	fs.Float64Var(&cfg.Rescore.Weights.Fusion, "w-fusion", cfg.Rescore.Weights.Fusion, "schema rescoring: weight of the fused position")
	fs.Float64Var(&cfg.Gather.Weights.Name, "f-name", cfg.Gather.Weights.Name, "BM25 weight of the name field")
	fs.Float64Var(&cfg.Gather.Weights.Schema, "f-schema", cfg.Gather.Weights.Schema, "BM25 weight of the schema field")
	fs.Float64Var(&cfg.Gather.Weights.Columns, "f-columns", cfg.Gather.Weights.Columns, "BM25 weight of the columns field")
	fs.Float64Var(&cfg.Gather.Weights.Body, "f-body", cfg.Gather.Weights.Body, "BM25 weight of the body field")
}

// printRetrievalReport prints a report for a person: the figures at each
// cut-off, latency, and up to misses questions whose gold tables were
// not all retrieved, with each gold table's way through the stages.
func printRetrievalReport(e *env, rep *benchmark.RetrievalReport, clarify, misses int) {
	keys := make([]int, 0, len(rep.Recall))
	for k := range rep.Recall {
		n, _ := strconv.Atoi(k)
		keys = append(keys, n)
	}
	sort.Ints(keys)
	if p := rep.Pool; p != nil {
		fmt.Fprintf(e.stdout, "pools of %d schemas: %d sampled from seed %d, %d with questions; a pool has %d tables on average; a question asked in two pools counts twice\n", p.Schemas, p.Sampled, p.Seed, p.Asked, rep.Tables)
	}
	fmt.Fprintf(e.stdout, "%d tables, %d questions; indexed in %.2f s (%s store)\n", rep.Tables, rep.Questions, rep.IndexSeconds, rep.Store)
	if rep.Examples > 0 {
		fmt.Fprintf(e.stdout, "%d worked examples indexed beside the schema\n", rep.Examples)
	}
	if len(rep.FeedbackRefused) > 0 {
		var why []string
		for code, n := range rep.FeedbackRefused {
			why = append(why, fmt.Sprintf("%d %s", n, code))
		}
		sort.Strings(why)
		fmt.Fprintf(e.stdout, "examples feedback would refuse: %s\n", strings.Join(why, ", "))
	}
	if rep.Docs > 0 {
		fmt.Fprintf(e.stdout, "%d doc sections indexed beside the schema\n", rep.Docs)
	}
	fmt.Fprintf(e.stdout, "%-6s %8s %8s\n", "k", "recall", "CR")
	for _, k := range keys {
		s := strconv.Itoa(k)
		fmt.Fprintf(e.stdout, "%-6d %8.3f %8.3f\n", k, rep.Recall[s], rep.CompleteRecall[s])
	}
	printByGoldSize(e, rep, keys)
	fmt.Fprintf(e.stdout, "first table in the gold schema: %.3f\n", rep.SchemaFirst)
	if len(rep.PrefixUnstable) > 0 {
		fmt.Fprint(e.stdout, "first k results that differ when more are asked for:")
		for _, k := range keys[:len(keys)-1] {
			fmt.Fprintf(e.stdout, "  k=%d %.3f", k, rep.PrefixUnstable[strconv.Itoa(k)])
		}
		fmt.Fprintln(e.stdout)
	}
	if rep.Ambiguous > 0 {
		fmt.Fprintf(e.stdout, "fit several schemas: %.3f of the questions (the likeliest was theirs for %.3f of them)", rep.Ambiguous, rep.AmbiguousRight)
		if clarify > 0 {
			fmt.Fprintf(e.stdout, "; asked again with their schema named: %.3f", rep.Clarified)
		}
		fmt.Fprintln(e.stdout)
	}
	fmt.Fprintf(e.stdout, "latency ms: p50 %.2f  p95 %.2f  p99 %.2f\n", rep.LatencyMS["p50"], rep.LatencyMS["p95"], rep.LatencyMS["p99"])
	for i, m := range rep.Misses {
		if i >= misses {
			break
		}
		fmt.Fprintf(e.stdout, "miss: %s\n  gold %v\n  got  %v\n", m.Question, m.Gold, m.Got)
		printQueryTerms(e, "  ", daemon.WireTerms(m.Terms)) // as a reply carries them
		for _, p := range m.Paths {
			fmt.Fprintf(e.stdout, "  %s: %s\n", p.Name, stagePath(p))
		}
	}
}

// stagePath is a gold table's way through the stages, for --misses:
// "bm25 7, knn -, schema 8 (evidence 6, likelihood 9), fused 19, final -".
func stagePath(ex retrieve.Explain) string {
	r := func(n int) string {
		if n == 0 {
			return "-"
		}
		return strconv.Itoa(n)
	}
	s := "bm25 " + r(ex.BM25Rank) + ", knn " + r(ex.KNNRank)
	if ex.HintRank > 0 {
		s += ", hints " + r(ex.HintRank)
	}
	if ex.ExampleRank > 0 {
		s += ", examples " + r(ex.ExampleRank) + " (" + ex.Example + ")"
	}
	if ex.DocRank > 0 {
		s += ", docs " + r(ex.DocRank) + " (" + ex.Doc + ")"
	}
	if ex.IdentifierRank > 0 {
		s += ", identifier " + r(ex.IdentifierRank) + " (" + ex.Identifier + ")"
	}
	s += ", schema " + r(ex.SchemaRoute)
	if ex.SchemaLikelihood > 0 {
		s += " (evidence " + r(ex.SchemaEvidence) + ", likelihood " + r(ex.SchemaLikelihood)
		if ex.SchemaByFeatures {
			s += ", first by features"
		}
		s += ")"
	}
	if ex.LiftedTo > 0 {
		s += ", lifted by a join"
	}
	s += ", fused " + r(ex.FusedRank) + ", final " + r(ex.FinalRank)
	for _, why := range []string{ex.Placed, ex.Bridge} {
		if why != "" {
			s += " (" + why + ")"
		}
	}
	return s
}

// progressWriter passes a counter's carriage-return updates to a
// terminal as they are, and turns them into one line each elsewhere (a
// CI log, a file), where they would otherwise run into one long line.
func progressWriter(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return w
		}
	}
	return lineWriter{w}
}

type lineWriter struct{ w io.Writer }

func (l lineWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(strings.TrimLeft(string(p), "\r"))
	if line == "" {
		return len(p), nil
	}
	if _, err := io.WriteString(l.w, line+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}

// printByGoldSize prints complete recall at each cut-off for the
// questions that need 1, 2, 3 and 4 or more tables.
func printByGoldSize(e *env, rep *benchmark.RetrievalReport, keys []int) {
	fmt.Fprintf(e.stdout, "complete recall by the number of tables a question needs:\n%-6s %9s", "tables", "questions")
	for _, k := range keys {
		fmt.Fprintf(e.stdout, " %6s", "CR@"+strconv.Itoa(k))
	}
	fmt.Fprintln(e.stdout)
	for _, size := range []string{"1", "2", "3", "4+"} {
		g := rep.ByGoldSize[size]
		if g == nil {
			continue
		}
		fmt.Fprintf(e.stdout, "%-6s %9d", size, g.Questions)
		for _, k := range keys {
			fmt.Fprintf(e.stdout, " %6.3f", g.CompleteRecall[strconv.Itoa(k)])
		}
		fmt.Fprintln(e.stdout)
	}
}
