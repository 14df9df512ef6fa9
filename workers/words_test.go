package workers_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/namewords"
	"github.com/schemaq/schemaq/pkg/testenv"
	"github.com/schemaq/schemaq/workers"
)

// wordyTables is DDL of tables whose columns are words no schema uses:
// what grows a daemon's vocabulary fastest.
func wordyTables(r *rand.Rand, prefix string, tables, columns int) string {
	word := func() string {
		b := make([]byte, 8)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	var sql strings.Builder
	for i := range tables {
		fmt.Fprintf(&sql, "CREATE TABLE %s_%d (id int", prefix, i)
		for range columns {
			fmt.Fprintf(&sql, ", %s text", word())
		}
		sql.WriteString(");\n")
	}
	return sql.String()
}

// words counts the words of DDL applied in order, as a worker does.
func words(t *testing.T, db string, sqls ...string) int {
	t.Helper()
	c := catalog.New(db)
	for i, sql := range sqls {
		var err error
		if c, err = c.Apply(fmt.Sprintf("%d.sql", i), sql); err != nil {
			t.Fatal(err)
		}
	}
	var n namewords.Counter
	return n.Count(c).Words
}

// TestWordsPerDatabaseAreBounded runs the attack on a daemon's memory
// against the default configuration: a team publishes tables of words no
// other schema uses, as a run that crosses the bound. The migration that
// crosses it is refused with the count and the bound; the one before it
// is written; another database applies on; and a fixed migration in its
// place applies, and the letter goes.
func TestWordsPerDatabaseAreBounded(t *testing.T) {
	e := newEnv(t)
	r := rand.New(rand.NewPCG(3, 5))
	first := wordyTables(r, "a", 1500, 20)
	second := wordyTables(r, "b", 1500, 20)
	if n, m := words(t, "greedy", first), words(t, "greedy", first, second); n > workers.DefaultMaxWordsPerDatabase || m <= workers.DefaultMaxWordsPerDatabase {
		t.Fatalf("premise: the first migration holds %d words and both %d, around the bound of %d", n, m, workers.DefaultMaxWordsPerDatabase)
	}
	// Published before the worker starts, the three are one run.
	e.publish(migration(t, "greedy", 1, first))
	e.publish(migration(t, "greedy", 2, second))
	e.publish(migration(t, "other", 1, "CREATE TABLE orders (id int, shipped_at date);"))
	e.startWorker(testConfig(), e.store)

	dl := e.waitDeadLetters(1)
	if len(dl) != 1 || !strings.Contains(dl[0].reason, "schema.migration 2 would give database greedy") ||
		!strings.Contains(dl[0].reason, fmt.Sprintf("past the bound of %d per database (--max-words-per-database)", workers.DefaultMaxWordsPerDatabase)) {
		t.Fatalf("dead letters: %+v", dl)
	}
	if dl[0].orig != "schemaq.schema.greedy" {
		t.Errorf("the letter is of %q, want schemaq.schema.greedy", dl[0].orig)
	}
	e.waitVersion("greedy", 1)
	e.waitVersion("other", 1)
	got, _, err := e.cats.Get(context.Background(), "greedy")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Tables()); n != 1500 {
		t.Errorf("greedy holds %d tables, want the first migration's 1,500", n)
	}

	// In the refused one's place: what no longer fits is dropped first.
	fixed := migration(t, "greedy", 2, "DROP TABLE a_0; DROP TABLE a_1; "+wordyTables(r, "c", 10, 20))
	fixed.ID = "greedy-0002-fixed"
	e.publish(fixed)
	e.waitVersion("greedy", 2)
	e.publish(migration(t, "other", 2, "ALTER TABLE orders ADD COLUMN carrier text;"))
	e.waitVersion("other", 2)
	// As for any refused migration, its letter goes once the fix applies.
	testenv.Eventually(t, 20*time.Second, "the refused letter dropped", func() bool { return len(e.deadLetters()) == 0 })
}

// TestWordsBoundSnapshotsAndSetting: a snapshot past the bound is
// refused as a migration is, and a worker with no bound (0) applies it.
func TestWordsBoundSnapshotsAndSetting(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 1))
	ddl := wordyTables(r, "t", 20, 10)
	if n := words(t, "snap", ddl); n <= 150 {
		t.Fatalf("premise: the snapshot holds %d words", n)
	}
	snapshot := func(db string) *events.Event {
		ev, err := events.New(db+"-snap", db, time.Now(), &events.Snapshot{Seq: 1, Source: "schema.sql", SQL: ddl})
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	for _, tc := range []struct {
		name  string
		bound int
		apply bool
	}{
		{"bounded", 150, false},
		{"no bound", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := testConfig()
			cfg.MaxWordsPerDatabase = tc.bound
			e.startWorker(cfg, e.store)
			e.publish(snapshot("snap"))
			if tc.apply {
				e.waitVersion("snap", 1)
				return
			}
			dl := e.waitDeadLetters(1)
			if !strings.Contains(dl[0].reason, "schema.snapshot 1 would give database snap") || !strings.Contains(dl[0].reason, "past the bound of 150") {
				t.Fatalf("dead letter: %+v", dl[0])
			}
			if v := e.version("snap"); v != 0 {
				t.Fatalf("the refused snapshot left snap at version %d", v)
			}
		})
	}
}

// TestFullestWordsShareIsExported: the gauge an alert reads says how near
// the fullest database's names are to the bound, before its migrations
// are refused; a smaller database written later does not lower it, and
// a retired one's share goes with it.
func TestFullestWordsShareIsExported(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	big, small := wordyTables(r, "t", 9, 9), "CREATE TABLE orders (id int);"
	nBig := words(t, "big", big)
	const bound = 100
	if nBig < bound*9/10 || nBig > bound {
		t.Fatalf("premise: %d words, within a tenth of %d", nBig, bound)
	}
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig()
	cfg.MaxWordsPerDatabase = bound
	e.startWorker(cfg, e.store, workers.WithMetrics(workers.NewMetrics(reg)))
	e.publish(migration(t, "big", 1, big))
	e.waitVersion("big", 1)
	e.publish(migration(t, "small", 1, small))
	e.waitVersion("small", 1)
	want := float64(nBig) / bound
	testenv.Eventually(t, 10*time.Second, "the fullest database's share of the word bound", func() bool {
		return metric(t, reg, "schemaq_worker_fullest_words_share") == want
	})
	// Retired (`schemaq databases retire` deletes its entry), it is
	// forgotten: the gauge falls to the other's share.
	if err := e.kv.Purge(context.Background(), "big"); err != nil {
		t.Fatal(err)
	}
	want = float64(words(t, "small", small)) / bound
	testenv.Eventually(t, 10*time.Second, "the retired database's share forgotten", func() bool {
		return metric(t, reg, "schemaq_worker_fullest_words_share") == want
	})
}

// TestWordBoundFindsTheMigrationInARun: in a run of eight migrations of
// new words, the one that takes the database past the bound is refused
// and those before it are written; a database already past the bound
// (written under none) may still drop tables, but not add words.
func TestWordBoundFindsTheMigrationInARun(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const bound = 120
	var sqls []string
	fit := 0
	for i := range 8 {
		sqls = append(sqls, wordyTables(r, fmt.Sprintf("m%d", i), 3, 9))
		if words(t, "run", sqls...) <= bound {
			fit = i + 1
		}
	}
	if fit < 2 || fit > 6 || words(t, "run", sqls[:fit+1]...) <= bound {
		t.Fatalf("premise: %d of the migrations fit", fit)
	}
	e := newEnv(t)
	// Written under no bound: 8 migrations' words, past 120.
	for i, sql := range sqls {
		e.publish(migration(t, "over", int64(i+1), sql))
	}
	unbounded := testConfig()
	unbounded.MaxWordsPerDatabase = 0
	stop := e.runWorkerWith(unbounded, e.store, e.emb)
	e.waitVersion("over", 8)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Published before the bounded worker starts, the eight are one run.
	for i, sql := range sqls {
		e.publish(migration(t, "run", int64(i+1), sql))
	}
	cfg := testConfig()
	cfg.MaxWordsPerDatabase = bound
	e.startWorker(cfg, e.store)
	e.waitVersion("run", int64(fit))
	dl := e.waitDeadLetters(1)
	if !strings.Contains(dl[0].reason, fmt.Sprintf("schema.migration %d would give database run", fit+1)) {
		t.Fatalf("the first letter: %+v", dl[0])
	}
	e.publish(migration(t, "over", 9, "DROP TABLE m0_0; DROP TABLE m1_0;"))
	e.waitVersion("over", 9)
	e.publish(migration(t, "over", 10, wordyTables(r, "late", 1, 5)))
	testenv.Eventually(t, 20*time.Second, "the migration adding words to over refused", func() bool {
		for _, d := range e.deadLetters() {
			if strings.Contains(d.reason, "schema.migration 10 would give database over") {
				return true
			}
		}
		return false
	})
	if v := e.version("over"); v != 9 {
		t.Fatalf("over at version %d, want 9", v)
	}
}
