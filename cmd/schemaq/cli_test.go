package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/schemaq/schemaq/pkg/retrieve"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runEnv(context.Background(), args, &env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
	if err != nil {
		errOut.WriteString("schemaq: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

func TestCLI(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "0001_bad.sql")
	if err := os.WriteFile(bad, []byte("CREATE TABLE t (id int);\nALTER TABLE missing ADD COLUMN x int;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	syntax := filepath.Join(t.TempDir(), "0002_syntax.sql")
	if err := os.WriteFile(syntax, []byte("CREATE TABEL t (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(t.TempDir(), "0003_partial.sql")
	if err := os.WriteFile(partial, []byte(`CREATE TABLE t (id int);
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  ALTER TABLE t ADD COLUMN a int;
  EXECUTE format('ALTER TABLE t ADD COLUMN %I int', current_setting('app.column'));
END $$;
SELECT f();
`), 0o644); err != nil {
		t.Fatal(err)
	}
	helpers := filepath.Join("..", "..", "pkg", "catalog", "testdata", "plpgsql-helpers")
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, exitUsage, "Commands:", "no command given"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"help", []string{"help"}, exitOK, "catalog", ""},
		{"command help", []string{"catalog", "--help"}, exitOK, "", "Usage: schemaq catalog"},
		{"help for a command", []string{"help", "publish"}, exitOK, "", "Usage: schemaq publish"},
		{"version", []string{"version"}, exitOK, "schemaq 0.0.0-dev", ""},
		{"catalog summary", []string{"catalog", "--db", "shop", shop}, exitOK, "database shop at version 6: 6 migration(s) applied; 7 tables, 1 views, 1 enums in 1 schemas; 33 distinct words in names", ""},
		{"catalog past the word bound", []string{"catalog", "--db", "shop", "--max-words-per-database", "32", shop}, exitFailure, "", "catalog shop would hold 33 distinct words in the names of its tables, views and columns, past the bound of 32 per database"},
		{"catalog at the word bound", []string{"catalog", "--db", "shop", "--max-words-per-database", "33", shop}, exitOK, "33 distinct words", ""},
		{"catalog ddl", []string{"catalog", "--format", "ddl", shop}, exitOK, "CREATE TABLE public.shipping_addresses (", ""},
		{"catalog tables", []string{"catalog", "--format", "tables", shop}, exitOK, "public.order_totals\tview", ""},
		{"catalog bad format", []string{"catalog", "--format", "xml", shop}, exitUsage, "", `--format: "xml" is not one of`},
		{"catalog bad db", []string{"catalog", "--db", "Shop!", shop}, exitUsage, "", "not a valid database name"},
		{"catalog no files", []string{"catalog"}, exitUsage, "", "give at least one"},
		{"catalog missing path", []string{"catalog", "/nonexistent/dir"}, exitFailure, "", "no such file"},
		{"catalog drift", []string{"catalog", bad}, 0, "1 tables", "drift: " + bad + ": statement 2 (line 2, column 1): skipped: undefined object: relation missing does not exist"},
		{"catalog strict", []string{"catalog", "--strict", bad}, exitFailure, "", "0001_bad.sql: statement 2 (line 2, column 1): undefined object: relation missing does not exist"},
		{"catalog syntax", []string{"catalog", syntax}, exitFailure, "", "0002_syntax.sql: statement 1 (line 1, column 8): syntax error"},
		{"catalog runs the DDL PL/pgSQL helpers write", []string{"catalog", "--format", "tables", helpers}, 0, "public.categories\tview\n", ""},
		{"catalog names the construct a routine stopped at", []string{"catalog", "--format", "ddl", partial}, 0, "a integer",
			"drift: " + partial + ": statement 3 (line 7, column 1): evaluated in part: the text of EXECUTE"},
		{"catalog names files relative to the directory", []string{"catalog", "--format", "tables", filepath.Join("..", "..", "pkg", "catalog", "testdata", "tenant-helper")}, 0,
			"public.reports", "drift: 0003_tenant_defaults.sql: statement 5 (line 5, column 1): skipped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if !strings.Contains(out, tc.stdout) {
				t.Errorf("stdout %q does not contain %q", out, tc.stdout)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tc.stderr)
			}
		})
	}
}

// TestEveryHelpExitsZero: --help on every command prints its usage and
// succeeds, as users and scripts expect.
func TestEveryHelpExitsZero(t *testing.T) {
	for name := range commands() {
		for _, flag := range []string{"--help", "-h"} {
			out, errOut, code := runCLI(t, name, flag)
			if code != exitOK || strings.TrimSpace(out+errOut) == "" {
				t.Errorf("schemaq %s %s: exit %d, stdout %q, stderr %q", name, flag, code, out, errOut)
			}
		}
	}
}

func TestCLICatalogJSONAndChunks(t *testing.T) {
	syntax := filepath.Join(t.TempDir(), "0002_syntax.sql")
	if err := os.WriteFile(syntax, []byte("CREATE TABEL t (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	out, _, code := runCLI(t, "catalog", "--db", "shop", "--format", "json", shop)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var c struct {
		Database string `json:"database"`
		Version  int64  `json:"version"`
		Tables   []struct {
			Name string `json:"name"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Database != "shop" || c.Version != 6 || len(c.Tables) != 7 {
		t.Fatalf("json output: %+v %v", c, err)
	}
	out, _, code = runCLI(t, "catalog", "--db", "shop", "--format", "chunks", shop)
	if code != exitOK || strings.Count(out, "\n") != 8 || !strings.Contains(out, `"id":"shop:table:public.orders"`) {
		t.Fatalf("chunks output (exit %d):\n%s", code, out)
	}
}

func TestCLIBenchRetrieval(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "retrieval", "--schema", "testdata/bench_schema.sql",
		"--questions", "testdata/bench_questions.jsonl", "--k", "1,5", "--stable-prefix", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Off a terminal, progress comes one update a line.
	if !strings.Contains(errOut, "questions 5/5\n") || strings.Contains(errOut, "\r") {
		t.Errorf("progress off a terminal: %q", errOut)
	}
	var rep struct {
		Store          string             `json:"store"`
		Tables         int                `json:"tables"`
		Questions      int                `json:"questions"`
		Recall         map[string]float64 `json:"recall"`
		CompleteRecall map[string]float64 `json:"complete_recall"`
		SchemaFirst    float64            `json:"schema_first"`
		Ambiguous      float64            `json:"ambiguous"`
		IndexSeconds   float64            `json:"index_seconds"`
		LatencyMS      map[string]float64 `json:"latency_ms"`
		ByGoldSize     map[string]struct {
			Questions      int                `json:"questions"`
			Recall         map[string]float64 `json:"recall"`
			CompleteRecall map[string]float64 `json:"complete_recall"`
			SchemaFirst    float64            `json:"schema_first"`
		} `json:"by_gold_size"`
		PrefixUnstable map[string]float64 `json:"prefix_unstable"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("output is not the documented JSON: %v\n%s", err, out)
	}
	if rep.Store != "sqlite" || rep.Tables != 6 || rep.Questions != 5 || len(rep.Recall) != 2 || rep.LatencyMS["p50"] <= 0 || rep.IndexSeconds <= 0 {
		t.Errorf("report %+v", rep)
	}
	// Every gold table of this small set is in the top 5.
	if rep.CompleteRecall["5"] != 1 || rep.Recall["5"] != 1 || rep.SchemaFirst != 1 {
		t.Errorf("recall@5 %v CR@5 %v schema_first %v, want 1", rep.Recall["5"], rep.CompleteRecall["5"], rep.SchemaFirst)
	}
	// Three questions need one table, two need two.
	if one, two := rep.ByGoldSize["1"], rep.ByGoldSize["2"]; len(rep.ByGoldSize) != 2 || one.Questions != 3 || two.Questions != 2 || two.CompleteRecall["5"] != 1 || one.SchemaFirst != 1 || two.SchemaFirst != 1 {
		t.Errorf("by_gold_size %+v", rep.ByGoldSize)
	}
	if u, ok := rep.PrefixUnstable["1"]; !ok || u != 0 || len(rep.PrefixUnstable) != 1 {
		t.Errorf("prefix_unstable %v, want the first result the same at k=1 and k=5", rep.PrefixUnstable)
	}
	if !strings.Contains(errOut, "questions 5/5") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
	for _, args := range [][]string{
		{"bench", "retrieval"},
		{"bench", "retrieval", "--schema", "x.sql", "--questions", "q.jsonl", "--k", "0"},
		{"bench", "nope"},
		{"bench", "retrieval", "--schema", "x.sql", "--questions", "q.jsonl", "--store", "redis"},
		{"bench", "retrieval", "--schema", "x.sql", "--questions", "q.jsonl", "--store", "elastic"},
		{"bench", "retrieval", "--schema", "x.sql", "--questions", "q.jsonl", "--pool", "-1"},
		{"bench", "retrieval", "--schema", "x.sql", "--questions", "q.jsonl", "--pool", "1", "--pools", "0"},
	} {
		if _, _, code := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want usage", args, code)
		}
	}
	if _, errOut, code := runCLI(t, "bench", "retrieval", "--schema", "testdata/bench_schema.sql", "--questions", "missing.jsonl"); code != exitFailure || !strings.Contains(errOut, "missing.jsonl") {
		t.Errorf("missing questions file: exit %d %q", code, errOut)
	}
}

// --pool runs the benchmark on sampled pools of databases and says so,
// in the text report and in the JSON's pool object.
func TestCLIBenchRetrievalPools(t *testing.T) {
	args := []string{"bench", "retrieval", "--schema", "testdata/bench_schema.sql",
		"--questions", "testdata/bench_questions.jsonl", "--k", "1,5", "--pool", "1", "--pools", "4", "--seed", "3"}
	out, errOut, code := runCLI(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Tables    int `json:"tables"`
		Questions int `json:"questions"`
		Pool      struct {
			Schemas int `json:"schemas"`
			Sampled int `json:"sampled"`
			Asked   int `json:"asked"`
			Seed    int `json:"seed"`
		} `json:"pool"`
		CompleteRecall map[string]float64 `json:"complete_recall"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Both schemas have questions, so every pool of one is asked: the
	// concerts' 3 or the pets' 2, over their 4 or 2 tables.
	p := rep.Pool
	if p.Schemas != 1 || p.Sampled != 4 || p.Asked != 4 || p.Seed != 3 || rep.Questions < 8 || rep.Questions > 12 || rep.Tables < 2 || rep.Tables > 4 {
		t.Errorf("report %+v", rep)
	}
	if rep.CompleteRecall["5"] != 1 {
		t.Errorf("CR@5 %v in pools of one database, want 1", rep.CompleteRecall["5"])
	}
	out, errOut, code = runCLI(t, args...)
	if code != exitOK || !strings.Contains(out, "pools of 1 schemas: 4 sampled from seed 3, 4 with questions") {
		t.Errorf("text report (exit %d):\n%s%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "bench", "retrieval", "--schema", "testdata/bench_schema.sql", "--questions", "testdata/bench_questions.jsonl", "--pool", "2")
	if code != exitFailure || !strings.Contains(errOut, "has 2 with tables or views") {
		t.Errorf("a pool as large as the schema: exit %d %q", code, errOut)
	}
}

func TestParseFlagsAnywhere(t *testing.T) {
	tests := []struct {
		args []string
		k    int
		pos  []string
	}{
		{[]string{"--k", "3", "how", "many"}, 3, []string{"how", "many"}},
		{[]string{"how many", "--k", "3"}, 3, []string{"how many"}},
		{[]string{"a", "--k=2", "b"}, 2, []string{"a", "b"}},
		{[]string{"--", "--k", "4"}, 0, []string{"--k", "4"}},
		{[]string{"x", "--", "--k"}, 0, []string{"x", "--k"}},
	}
	for _, tc := range tests {
		e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
		fs := newFlags(e, "t", "")
		k := fs.Int("k", 0, "")
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if *k != tc.k || strings.Join(fs.Args(), "|") != strings.Join(tc.pos, "|") {
			t.Errorf("%v: k=%d args=%q, want k=%d args=%q", tc.args, *k, fs.Args(), tc.k, tc.pos)
		}
	}
}

type loadReport struct {
	Requests   int                `json:"requests"`
	Answered   int                `json:"answered"`
	Failed     int                `json:"failed"`
	TimedOut   int                `json:"timed_out"`
	Errors     int                `json:"errors"`
	Throughput float64            `json:"throughput_per_s"`
	LatencyMS  map[string]float64 `json:"latency_ms"`
	FailedBy   map[string]int     `json:"failed_by"`
}

func TestCLIBenchSearchAskAndFreshness(t *testing.T) {
	var rep loadReport
	out, errOut, code := runCLI(t, "bench", "search", "--schema", "testdata/bench_schema.sql", "--questions", "testdata/bench_questions.jsonl",
		"--concurrency", "2", "--duration", "500ms", "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Answered == 0 || rep.Requests != rep.Answered || rep.Errors != 0 || rep.Throughput <= 0 || rep.LatencyMS["p99"] <= 0 {
		t.Errorf("bench search (exit %d): %s %s", code, out, errOut)
	}
	// Asks through a gateway: every ask is counted, answered ones with SQL.
	var calls atomic.Int64
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant",
				"content": `{"sql": "SELECT count(*) FROM concerts.singer", "explanation": "counts singers"}`}}},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer gw.Close()
	rep = loadReport{}
	out, errOut, code = runCLI(t, "bench", "ask", "--schema", "testdata/bench_schema.sql", "--questions", "testdata/bench_questions.jsonl",
		"--gateway", gw.URL+"/v1", "--model", "m", "--concurrency", "2", "--duration", "300ms", "--json")
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Answered == 0 || rep.Requests != rep.Answered+rep.Failed+rep.TimedOut || rep.Errors != 0 {
		t.Errorf("bench ask (exit %d): %s %s", code, out, errOut)
	}
	if calls.Load() < int64(rep.Answered) {
		t.Errorf("%d asks answered but the gateway saw %d calls", rep.Answered, calls.Load())
	}
	// Without a gateway it is the old `bench ask`: search, said so.
	out, errOut, code = runCLI(t, "bench", "ask", "--schema", "testdata/bench_schema.sql", "--questions", "testdata/bench_questions.jsonl",
		"--concurrency", "1", "--duration", "200ms", "--json")
	if code != exitOK || !strings.Contains(errOut, "measures search") || json.Unmarshal([]byte(out), &rep) != nil || rep.Answered == 0 {
		t.Errorf("bench ask without a gateway (exit %d): %s %s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "bench", "freshness", "--schema", "testdata/bench_schema.sql", "--migrations", "3", "--json")
	var fr struct {
		Migrations int                `json:"migrations"`
		Freshness  map[string]float64 `json:"freshness_ms"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &fr) != nil || fr.Migrations != 3 || fr.Freshness["p50"] <= 0 {
		t.Errorf("bench freshness (exit %d): %s %s", code, out, errOut)
	}
	// Behind another database's flood (the workers' tests show that it
	// does not hold the probes back: TestFloodMovesToALane).
	out, errOut, code = runCLI(t, "bench", "freshness", "--schema", "testdata/bench_schema.sql", "--migrations", "2", "--flood", "300", "--json")
	var flooded struct {
		Freshness map[string]float64 `json:"freshness_ms"`
		Flood     struct {
			Migrations int   `json:"migrations"`
			Applied    int64 `json:"applied_when_probes_ended"`
		} `json:"flood"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &flooded) != nil || flooded.Flood.Migrations != 300 || flooded.Freshness["p50"] <= 0 ||
		flooded.Flood.Applied < 0 || flooded.Flood.Applied > 300 {
		t.Errorf("bench freshness --flood (exit %d): %s %s", code, out, errOut)
	}
	if _, errOut, code := runCLI(t, "bench", "freshness", "--schema", "testdata/bench_schema.sql", "--flood", "-1"); code != exitUsage || !strings.Contains(errOut, "--flood") {
		t.Errorf("--flood -1: exit %d, %s", code, errOut)
	}
}

// TestCLIBenchIngest runs the generated history through an embedded
// schemaq of two workers: every migration applied, the last one
// searchable, nothing dead-lettered.
func TestCLIBenchIngest(t *testing.T) {
	out, errOut, code := runCLI(t, "bench", "ingest", "--migrations", "40", "--databases", "3", "--workers", "2", "--timeout", "2m", "--json")
	var rep ingestReport
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("bench ingest (exit %d): %s %s", code, out, errOut)
	}
	if rep.Migrations != 120 || rep.Databases != 3 || rep.Workers != 2 || rep.AppliedSecs <= 0 || rep.PerSecond <= 0 ||
		rep.SearchableMS <= 0 || rep.IndexedMS <= 0 || rep.SearchableMS < rep.IndexedMS || rep.DeadLetters != 0 {
		t.Errorf("bench ingest report: %+v", rep)
	}
	if _, errOut, code := runCLI(t, "bench", "ingest", "--migrations", "0"); code != exitUsage || !strings.Contains(errOut, "must be positive") {
		t.Errorf("--migrations 0: exit %d, %s", code, errOut)
	}
}

func TestStagePath(t *testing.T) {
	for _, tc := range []struct {
		ex   retrieve.Explain
		want string
	}{
		{retrieve.Explain{BM25Rank: 7, SchemaRoute: 8, SchemaEvidence: 6, SchemaLikelihood: 9, FusedRank: 19},
			"bm25 7, knn -, schema 8 (evidence 6, likelihood 9), fused 19, final -"},
		{retrieve.Explain{KNNRank: 3, HintRank: 2, IdentifierRank: 1, Identifier: "movie_release_year", SchemaRoute: 1, LiftedTo: 0.1, FusedRank: 1, FinalRank: 1},
			"bm25 -, knn 3, hints 2, identifier 1 (movie_release_year), schema 1, lifted by a join, fused 1, final 1"},
		{retrieve.Explain{SchemaRoute: 1, LiftedTo: 0.1, FusedRank: 12, FinalRank: 3, Placed: "has name, which no table before it covers; joins public.film_actor"},
			"bm25 -, knn -, schema 1, lifted by a join, fused 12, final 3 (has name, which no table before it covers; joins public.film_actor)"},
		{retrieve.Explain{FinalRank: 6, Bridge: "joins public.a and public.b"},
			"bm25 -, knn -, schema -, fused -, final 6 (joins public.a and public.b)"},
	} {
		if got := stagePath(tc.ex); got != tc.want {
			t.Errorf("stagePath = %q, want %q", got, tc.want)
		}
	}
}

// TestCatalogReadsStdin: `catalog -` replays one script piped in, named
// "stdin" in errors and drift.
func TestCatalogReadsStdin(t *testing.T) {
	cases := []struct {
		name, in    string
		args        []string
		code        int
		out, errOut string
	}{
		{"a dump", "CREATE TABLE t (id int PRIMARY KEY);\nCREATE VIEW v AS SELECT id FROM t;\n", []string{"catalog", "--format", "tables", "-"}, exitOK, "public.t\t1 columns\npublic.v\tview\n", ""},
		{"an error names stdin", "CREATE TABLE t (id int);\nCREATE TABEL u ();\n", []string{"catalog", "-"}, exitFailure, "", "stdin: statement 2 (line 2, column 8): syntax error"},
		{"drift names stdin", "ALTER TABLE ghost ADD COLUMN x int;\n", []string{"catalog", "-"}, exitOK, "1 migration(s) applied", "drift: stdin: statement 1"},
		{"not text", "CREATE TABLE \xff ();", []string{"catalog", "-"}, exitFailure, "", "stdin: not UTF-8 text (invalid byte at offset 13)"},
		{"not mixed with files", "", []string{"catalog", "-", "x.sql"}, exitUsage, "", "cannot be mixed with files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runEnv(context.Background(), tc.args, &env{stdin: strings.NewReader(tc.in), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }})
			if err != nil {
				errOut.WriteString("schemaq: " + err.Error() + "\n")
			}
			if code := exitCode(err); code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.errOut) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q and %q", code, tc.code, out.String(), errOut.String(), tc.out, tc.errOut)
			}
		})
	}
}
