package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/impact"
)

// TestCheckBeforePublishing: check replays a pull request's migrations on
// the running catalog and says what they would break, exit 3, publishing
// nothing; a clean change exits 0.
func TestCheckBeforePublishing(t *testing.T) {
	st := upWithShop(t)
	run := st.run

	// The described table shows the migrations that made it.
	out, _ := run(exitOK, "tables", "--db", "shop", "orders")
	if !strings.Contains(out, "-- created by 0003_orders.sql (version 3)\n-- altered by 0005_rename_and_cleanup.sql (version 5)\n") {
		t.Errorf("the table's history:\n%s", out)
	}

	// A pull request's migrations directory: the six applied, and more.
	pr := st.migrationsWith
	out, _ = run(exitOK, "check", "--db", "shop", pr(nil))
	if !strings.Contains(out, "shop is at version 6: no migration is pending") {
		t.Errorf("nothing pending: %s", out)
	}
	out, _ = run(exitOK, "check", "--db", "shop", pr(map[string]string{"0007_loyalty.sql": "CREATE TABLE loyalty (customer_id bigint REFERENCES customers (id), points int);"}))
	if !strings.Contains(out, "1 pending migration(s) would take the catalog from version 6 to 7") || !strings.Contains(out, "0 example(s), 0 doc section(s), 0 view(s) affected; 0 drift") {
		t.Errorf("a clean change: %s", out)
	}

	drop := pr(map[string]string{"0007_drop_payments.sql": "DROP TABLE payments;\n"})
	out, errOut := run(exitBreaks, "check", "--db", "shop", drop)
	for _, want := range []string{
		"drops: public.payments",
		"would go stale: reads public.payments, which the migrations drop",
		"doc refunds.md § Refunds names public.payments",
		"doc glossary.md",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check of a dropped table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "would break") {
		t.Errorf("stderr: %s", errOut)
	}
	out, _ = run(exitBreaks, "check", "--db", "shop", "--json", drop)
	var rep struct {
		impact.Report
		Breaks bool `json:"breaks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Breaks || rep.After != 7 || len(rep.Examples) != 1 || rep.Examples[0].Question != "What was net revenue last month?" {
		t.Errorf("--json: %v %s", err, out)
	}

	// A migration the catalog refuses would be a dead letter; drift is
	// reported, and fails the check unless allowed.
	out, _ = run(exitBreaks, "check", "--db", "shop", pr(map[string]string{"0007_bad.sql": "DROP TABLE orders;\n"}))
	if !strings.Contains(out, "refused: PostgreSQL will refuse migration 7 (0007_bad.sql), and schemaq would dead-letter it") {
		t.Errorf("refused: %s", out)
	}
	// Columns a view reads: PostgreSQL refuses to drop or retype them,
	// and so does check.
	for _, sql := range []string{"ALTER TABLE orders DROP COLUMN customer_id;\n", "ALTER TABLE orders ALTER COLUMN placed_at TYPE text;\n"} {
		out, _ = run(exitBreaks, "check", "--db", "shop", pr(map[string]string{"0007_view_column.sql": sql}))
		if !strings.Contains(out, "refused: PostgreSQL will refuse migration 7 (0007_view_column.sql)") || !strings.Contains(out, "view public.order_totals") {
			t.Errorf("check of %q: %s", sql, out)
		}
	}
	out, _ = run(exitBreaks, "check", "--db", "shop", pr(map[string]string{"0007_parse.sql": "CREATE TABEL t (id int);\n"}))
	if !strings.Contains(out, "refused: migration 7 (0007_parse.sql) would be dead-lettered") {
		t.Errorf("a syntax error: %s", out)
	}
	// Past the workers' bound on words (the shop's names hold 33).
	words := pr(map[string]string{"0007_words.sql": "CREATE TABLE loyalty (customer_id bigint, points int, tier text);\n"})
	out, _ = run(exitBreaks, "check", "--db", "shop", "--max-words-per-database", "34", words)
	if !strings.Contains(out, "refused: migration 7 (0007_words.sql) would be dead-lettered: it would give database shop") || !strings.Contains(out, "past the bound of 34 per database") {
		t.Errorf("past the word bound: %s", out)
	}
	run(exitOK, "check", "--db", "shop", words)
	drift := pr(map[string]string{"0007_drift.sql": "ALTER TABLE audit_log ADD COLUMN at timestamptz;\n"})
	out, _ = run(exitBreaks, "check", "--db", "shop", drift)
	if !strings.Contains(out, "drift: ") {
		t.Errorf("drift: %s", out)
	}
	run(exitOK, "check", "--db", "shop", "--allow-drift", drift)

	// Nothing was published: the catalog is still at 6.
	out, _ = run(exitOK, "tables", "--db", "shop")
	if !strings.Contains(out, "version 6") {
		t.Errorf("check published something: %s", out)
	}
	run(exitUsage, "check", "--db", "shop")
}
