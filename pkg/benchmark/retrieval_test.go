package benchmark_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/benchmark"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// The retrieval-quality targets on SpiderUnion with the local embedder
// (docs/retrieval.md), kept as a floor so that a change that loses them
// fails here and not only in a later benchmark run. Latency is left to
// the Go benchmarks and the bench command: timed tests are noise on
// shared machines.
func TestSpiderUnionQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole retrieval benchmark")
	}
	sql := testenv.ReadShared(t, "bench", "spiderunion", "schema.sql")
	qs, err := benchmark.ReadQuestions(strings.NewReader(testenv.ReadShared(t, "bench", "spiderunion", "questions.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		goldSchema bool
		floors     map[string]float64 // complete recall at k
	}{
		{"pooled", false, map[string]float64{"5": 0.90, "15": 0.96}},
		{"single-database", true, map[string]float64{"5": 0.99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
				// The bench command's cut-offs: every k is read off one
				// ranked list of 20 (bridges make a list of 15 differ).
				Database: "bench", Schema: sql, Source: "schema.sql", Questions: qs,
				Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), GoldSchema: tc.goldSchema,
			})
			if err != nil {
				t.Fatal(err)
			}
			for k, floor := range tc.floors {
				if got := rep.CompleteRecall[k]; got < floor {
					t.Errorf("CR@%s = %.3f, below the target %.2f", k, got, floor)
				}
			}
		})
	}
}

// SchemaFirst counts the questions whose first table is in their gold
// tables' schema, whether or not the gold tables themselves came first.
func TestRetrievalReportsSchemaFirst(t *testing.T) {
	const sql = `
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY, full_name text);
CREATE TABLE shop.invoices (id int PRIMARY KEY, customer_id int REFERENCES shop.customers, total numeric);
CREATE SCHEMA zoo;
CREATE TABLE zoo.animals (id int PRIMARY KEY, species text, keeper text);
`
	qs := []benchmark.Question{
		{ID: 1, Question: "Which customers have invoices above 100?", GoldTables: []string{"shop.customers", "shop.invoices"}},
		{ID: 2, Question: "How many animal species are there?", GoldTables: []string{"zoo.animals"}},
		// Worded for the zoo, gold in the shop: the first table is the
		// zoo's, so the right database was not picked.
		{ID: 3, Question: "Which keeper looks after each animal species?", GoldTables: []string{"shop.customers"}},
		// The first table is another of the gold schema's: picked right.
		{ID: 4, Question: "What is the total of each invoice?", GoldTables: []string{"shop.customers"}},
	}
	rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
		Database: "bench", Schema: sql, Source: "pool.sql", Questions: qs, Ks: []int{1, 5},
		Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SchemaFirst != 0.75 {
		t.Errorf("schema_first = %v, want 0.75 (questions 1, 2 and 4)", rep.SchemaFirst)
	}
}

// A question two schemas fit alike counts as ambiguous; with Clarify the
// caller names its schema when the result lists it, and the second
// result counts.
func TestRetrievalClarifies(t *testing.T) {
	var sql strings.Builder
	for _, s := range []string{"store_east", "store_west"} {
		fmt.Fprintf(&sql, "CREATE SCHEMA %[1]s;\nCREATE TABLE %[1]s.customers (customer_id int PRIMARY KEY, full_name text);\nCREATE TABLE %[1]s.orders (order_id int PRIMARY KEY, customer_id int REFERENCES %[1]s.customers, total numeric);\n", s)
	}
	sql.WriteString("CREATE SCHEMA zoo;\nCREATE TABLE zoo.animals (id int PRIMARY KEY, species text, keeper text);\n")
	qs := []benchmark.Question{
		{ID: 1, Question: "What is the total of each order?", GoldTables: []string{"store_east.orders"}},
		{ID: 2, Question: "What is the total of each order?", GoldTables: []string{"store_west.orders"}},
		{ID: 3, Question: "How many animal species are there?", GoldTables: []string{"zoo.animals"}},
	}
	for _, tc := range []struct {
		name                 string
		clarify              int
		ambiguous, clarified float64
		cr1                  float64
	}{
		// One of the two shops comes first: one order question of two
		// is right at 1.
		{"as it stands", 0, 0.667, 0, 0.667},
		// Each caller names its shop: every question is right at 1.
		{"clarified", 2, 0.667, 0.667, 1},
		// Only the likeliest offered: its own question is asked again.
		{"the likeliest only", 1, 0.667, 0.333, 0.667},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
				Database: "bench", Schema: sql.String(), Source: "pool.sql", Questions: qs, Ks: []int{1, 5},
				Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), Clarify: tc.clarify,
			})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Ambiguous != tc.ambiguous || rep.Clarified != tc.clarified || rep.CompleteRecall["1"] != tc.cr1 {
				t.Errorf("ambiguous %v, clarified %v, CR@1 %v; want %v, %v, %v", rep.Ambiguous, rep.Clarified, rep.CompleteRecall["1"], tc.ambiguous, tc.clarified, tc.cr1)
			}
			if rep.AmbiguousRight != 0.5 {
				t.Errorf("ambiguous_right %v, want 0.5: the likeliest shop is one question's of two", rep.AmbiguousRight)
			}
		})
	}
}

// BIRD asks for "full names" in over 300 questions; two of its databases
// have full_name columns, and the phrase's compound pulled the
// questions there. Leaving out the compounds of generic heads
// (retrieve.Config.Analyse.CommonHeads) must keep helping them.
func TestCommonHeadsOnBIRDFullNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a retrieval benchmark")
	}
	sql := testenv.ReadShared(t, "bench", "birdtrain", "schema.sql")
	all, err := benchmark.ReadQuestions(strings.NewReader(testenv.ReadShared(t, "bench", "birdtrain", "questions.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	var qs []benchmark.Question
	for _, q := range all {
		if strings.Contains(strings.ToLower(q.Question), "full name") {
			qs = append(qs, q)
		}
	}
	run := func(share float64) *benchmark.RetrievalReport {
		cfg := retrieve.DefaultConfig
		cfg.Analyse.CommonHeads = share
		rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
			Database: "bench", Schema: sql, Source: "schema.sql", Questions: qs, Ks: []int{5},
			Retrieve: cfg, Dir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	on, off := run(retrieve.DefaultConfig.Analyse.CommonHeads), run(0)
	t.Logf("%d questions: CR@5 %.3f against %.3f, schema first %.3f against %.3f", len(qs), on.CompleteRecall["5"], off.CompleteRecall["5"], on.SchemaFirst, off.SchemaFirst)
	if on.CompleteRecall["5"] <= off.CompleteRecall["5"] || on.SchemaFirst <= off.SchemaFirst {
		t.Errorf("with common heads left out CR@5 %.3f and schema first %.3f, without %.3f and %.3f: no better",
			on.CompleteRecall["5"], on.SchemaFirst, off.CompleteRecall["5"], off.SchemaFirst)
	}
}

// The BIRD sample's figures of docs/retrieval.md, held as floors a
// little under them: from the question alone, and with BIRD's hints
// sent as the requests' hints.
func TestBIRDQuality(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the retrieval benchmark")
	}
	sql := testenv.ReadShared(t, "bench", "birdtrain", "schema.sql")
	// The other 7,858 train questions, as a team's worked examples.
	examples, err := benchmark.ReadExamples(strings.NewReader(testenv.ReadShared(t, "bench", "birdtrain", "questions.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	// The other questions' hints, as a team's docs: definitions that
	// name the columns they mean.
	docs, err := benchmark.ReadDocs(strings.NewReader(testenv.ReadShared(t, "bench", "birdtrain", "questions.jsonl")), "evidence")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		hints    string
		examples []benchmark.Example
		docs     []benchmark.Doc
		pools    benchmark.Pools
		floors   map[string]float64 // complete recall at k
		// feedback: only the examples the feedback endpoint stores, their
		// SQLite rewritten for PostgreSQL where sqlite is set.
		feedback, sqlite bool
		// bySize: complete recall at 5 by the number of gold tables
		// (issue 55's measure; named targets lift three and four).
		bySize map[string]float64
	}{
		{"question alone", "", nil, nil, benchmark.Pools{}, map[string]float64{"5": 0.635, "15": 0.80}, false, false,
			map[string]float64{"3": 0.54, "4+": 0.37}},
		{"with hints", "evidence", nil, nil, benchmark.Pools{}, map[string]float64{"5": 0.78, "15": 0.905}, false, false,
			map[string]float64{"3": 0.64, "4+": 0.56}},
		// 0.806 / 0.917: the 216 examples whose SQL names a column BIRD's
		// schema lacks are stale and do not vote (sqlguard.Fit).
		{"with worked examples", "", examples, nil, benchmark.Pools{}, map[string]float64{"5": 0.80, "15": 0.91}, false, false, nil},
		{"with the other hints as docs", "", nil, docs, benchmark.Pools{}, map[string]float64{"5": 0.685, "15": 0.845}, false, false, nil},
		// BIRD's dev split pools 11 databases; ten such pools of the
		// train databases (seed 1) measure 0.796 / 0.944.
		{"pools of 11 databases", "", nil, nil, benchmark.Pools{Size: 11, Count: 10, Seed: 1}, map[string]float64{"5": 0.78, "15": 0.93}, false, false, nil},
		// The gold SQL as feedback: what the guard passes covers 55 of the
		// 69 databases, and the questions about the other 14 must not
		// be handed to them (CR@5 0.505 before examples' trust, under the
		// question alone's 0.640).
		{"gold SQL as feedback", "", examples, nil, benchmark.Pools{}, map[string]float64{"5": 0.645, "15": 0.83}, true, false, nil},
		{"gold SQL as feedback, in PostgreSQL", "", examples, nil, benchmark.Pools{}, map[string]float64{"5": 0.78, "15": 0.905}, true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qs, err := benchmark.ReadQuestions(strings.NewReader(testenv.ReadShared(t, "bench", "birdtrain", "questions-1500.jsonl")), tc.hints)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
				Database: "bench", Schema: sql, Source: "schema.sql", Questions: qs,
				Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), Examples: tc.examples, Docs: tc.docs, Pool: tc.pools,
				Feedback: tc.feedback, SQLiteSQL: tc.sqlite,
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.examples != nil && !tc.feedback && rep.Examples != len(tc.examples)-len(qs)-7 {
				// 7 more share a sampled question's text.
				t.Errorf("%d examples indexed, want every one but the questions asked", rep.Examples)
			}
			for k, floor := range tc.floors {
				if got := rep.CompleteRecall[k]; got < floor {
					t.Errorf("CR@%s = %.3f, below %.2f", k, got, floor)
				}
			}
			for size, floor := range tc.bySize {
				g := rep.ByGoldSize[size]
				if g == nil || g.CompleteRecall["5"] < floor {
					t.Errorf("CR@5 of questions over %s tables: %+v, below %.2f", size, g, floor)
				}
			}
		})
	}
}

// An examples file takes sql or gold_sql, and the schema from the line or
// from its gold tables; none of the questions asked is its own example.
func TestExamplesAreHeldOut(t *testing.T) {
	ex, err := benchmark.ReadExamples(strings.NewReader(`
{"id": 1, "question": "How many singers?", "gold_sql": "SELECT count(*) FROM singer", "gold_tables": ["concert.singer"]}
{"id": 2, "question": "Name every stadium.", "sql": "SELECT name FROM stadium", "schema": "sports"}
{"id": 3, "question": "how many   SINGERS?", "sql": "SELECT 1", "gold_tables": ["concert.singer", "music.band"]}
{"question": "Who sang?", "sql": "SELECT name FROM singer"}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []benchmark.Example{
		{ID: "1", Question: "How many singers?", SQL: "SELECT count(*) FROM singer", Schema: "concert"},
		{ID: "2", Question: "Name every stadium.", SQL: "SELECT name FROM stadium", Schema: "sports"},
		{ID: "3", Question: "how many   SINGERS?", SQL: "SELECT 1"},
		{Question: "Who sang?", SQL: "SELECT name FROM singer"},
	}
	if !slices.Equal(ex, want) {
		t.Fatalf("read %+v, want %+v", ex, want)
	}
	if _, err := benchmark.ReadExamples(strings.NewReader(`{"question": "q"}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a line without SQL: %v", err)
	}
	sql := "CREATE SCHEMA concert; CREATE TABLE concert.singer (singer_id int PRIMARY KEY, name text);"
	qs := []benchmark.Question{{ID: float64(1), Question: "How many singers?", GoldTables: []string{"concert.singer"}}}
	rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{Database: "b", Schema: sql, Source: "s.sql",
		Questions: qs, Ks: []int{1}, Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), Examples: ex})
	if err != nil {
		t.Fatal(err)
	}
	// 1 is the question itself; 3 asks it again in other words' case.
	if rep.Examples != 2 {
		t.Errorf("%d examples indexed, want 2", rep.Examples)
	}
}

// A docs file's field of each line is a section, the line's schema comes
// from its gold tables, and no question asked has its own line indexed.
func TestDocsAreHeldOut(t *testing.T) {
	docs, err := benchmark.ReadDocs(strings.NewReader(`
{"id": 1, "question": "How many singers?", "evidence": "singer refers to singer.name", "gold_tables": ["concert.singer"]}
{"id": 2, "question": "Name every stadium.", "evidence": "", "gold_tables": ["sports.stadium"]}
{"id": 3, "question": "Who sang most?", "evidence": "most refers to max(song_count)", "gold_tables": ["concert.singer", "music.band"]}
`), "evidence")
	if err != nil {
		t.Fatal(err)
	}
	want := []benchmark.Doc{
		{ID: "1", Question: "How many singers?", Text: "singer refers to singer.name", Schema: "concert"},
		{ID: "3", Question: "Who sang most?", Text: "most refers to max(song_count)"},
	}
	if !slices.Equal(docs, want) {
		t.Fatalf("read %+v, want %+v", docs, want)
	}
	for _, bad := range []string{`{"id": 1}`, `{"evidence": 3}`} {
		if _, err := benchmark.ReadDocs(strings.NewReader(bad), "evidence"); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	sql := "CREATE SCHEMA concert; CREATE TABLE concert.singer (singer_id int PRIMARY KEY, name text, song_count int);"
	qs := []benchmark.Question{{ID: float64(1), Question: "How many singers?", GoldTables: []string{"concert.singer"}}}
	rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{Database: "b", Schema: sql, Source: "s.sql",
		Questions: qs, Ks: []int{1}, Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), Docs: docs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Docs != 1 {
		t.Errorf("%d doc sections indexed, want 1 (the question's own line held out)", rep.Docs)
	}
}

// Sampled pools drop the schemas they leave out, as a smaller deployment
// would not have them, and ask each pool only the questions it holds the
// gold tables of.
func TestPoolsDropTheSchemasLeftOut(t *testing.T) {
	// The decoy's table matches every question better than the gold
	// table does, and no question is about it.
	const sql = `
CREATE SCHEMA shop;
CREATE TABLE shop.clients (id int PRIMARY KEY, label text);
CREATE SCHEMA zoo;
CREATE TABLE zoo.beasts (id int PRIMARY KEY, label text);
CREATE SCHEMA decoy;
CREATE TABLE decoy.customer_animals (customer_id int, animal_id int, customer_name text, animal_name text, customer_animal text);
`
	qs := []benchmark.Question{
		{ID: 1, Question: "Which customers are there?", GoldTables: []string{"shop.clients"}},
		{ID: 2, Question: "Which animals are there?", GoldTables: []string{"zoo.beasts"}},
	}
	run := func(p benchmark.Pools) (*benchmark.RetrievalReport, error) {
		return benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
			Database: "bench", Schema: sql, Source: "pool.sql", Questions: qs, Ks: []int{1, 5},
			Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(), Pool: p,
		})
	}
	whole, err := run(benchmark.Pools{})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Pool != nil || whole.Tables != 3 || whole.Questions != 2 {
		t.Fatalf("whole schema: pool %+v, %d tables, %d questions; want no pool, 3 tables, 2 questions", whole.Pool, whole.Tables, whole.Questions)
	}
	if whole.CompleteRecall["1"] != 0 {
		t.Fatalf("whole schema: CR@1 %.3f; the decoy should come first for both questions", whole.CompleteRecall["1"])
	}
	pools := benchmark.Pools{Size: 1, Count: 8, Seed: 7}
	rep, err := run(pools)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Pool
	if p == nil || p.Schemas != 1 || p.Sampled != 8 || p.Seed != 7 {
		t.Fatalf("pool report %+v, want 8 pools of 1 schema from seed 7", p)
	}
	// A pool of one schema holds one gold table or none: a pool of the
	// decoy asks nothing and is not run.
	if p.Asked == 0 || p.Asked == p.Sampled || rep.Questions != p.Asked || rep.Tables != 1 {
		t.Fatalf("%d of %d pools asked %d questions over %d tables; want some but not all pools, one question and one table each", p.Asked, p.Sampled, rep.Questions, rep.Tables)
	}
	if rep.CompleteRecall["1"] != 1 {
		t.Errorf("pools: CR@1 %.3f, want 1: with the decoy dropped the gold table is the only one", rep.CompleteRecall["1"])
	}
	again, err := run(pools)
	if err != nil {
		t.Fatal(err)
	}
	if again.Questions != rep.Questions || again.Pool.Asked != p.Asked {
		t.Errorf("the same seed drew other pools: %d questions in %d pools, then %d in %d", rep.Questions, p.Asked, again.Questions, again.Pool.Asked)
	}
	if _, err := run(benchmark.Pools{Size: 3}); err == nil || !strings.Contains(err.Error(), "has 3") {
		t.Errorf("pools as large as the schema: err %v, want one saying it has 3 schemas", err)
	}
}

// TestRetrievalCountsViews: a question whose answer is a view is found
// when the view is ranked; it scored recall 0 even at k=20.
func TestRetrievalCountsViews(t *testing.T) {
	const sql = `
CREATE TABLE orders (id int PRIMARY KEY, customer text, total numeric, placed_at date);
CREATE TABLE refunds (id int PRIMARY KEY, order_id int REFERENCES orders, amount numeric);
CREATE VIEW monthly_revenue AS SELECT date_trunc('month', placed_at) AS month, sum(total) AS revenue FROM orders GROUP BY 1;
`
	qs := []benchmark.Question{
		{ID: 1, Question: "What was the monthly revenue?", GoldTables: []string{"public.monthly_revenue"}},
	}
	rep, err := benchmark.Retrieval(context.Background(), benchmark.RetrievalConfig{
		Database: "bench", Schema: sql, Source: "views.sql", Questions: qs, Ks: []int{1, 5},
		Retrieve: retrieve.DefaultConfig, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recall["5"] != 1 || rep.CompleteRecall["5"] != 1 {
		t.Errorf("recall %v, complete %v: the gold view was not counted", rep.Recall, rep.CompleteRecall)
	}
}
