package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOneVerdictOnStaleExamples runs the cases that once got three
// answers from three checks through every caller: check before
// publishing, examples list --stale and examples show after, feedback,
// and search. A qualified column dropped (c.name) and an unqualified one
// (paid_at) make their examples stale everywhere; a column renamed is
// followed everywhere.
func TestOneVerdictOnStaleExamples(t *testing.T) {
	st := upWithShop(t)
	run := st.run
	migs := st.migrationsWith(map[string]string{"0007_drop_columns.sql": "ALTER TABLE customers DROP COLUMN name;\nALTER TABLE payments DROP COLUMN paid_at;\nALTER TABLE products RENAME COLUMN title TO label;\n"})

	cases := []struct {
		question, why string
	}{
		{"How many orders did each customer place?", "column c.name does not exist in public.customers"},
		{"What was net revenue last month?", "column paid_at is in none of the relations it reads (public.payments)"},
	}
	out, _ := run(exitBreaks, "check", "--db", "shop", migs)
	for _, c := range cases {
		if !strings.Contains(out, c.question) || !strings.Contains(out, c.why) {
			t.Errorf("check does not say %q goes stale (%s):\n%s", c.question, c.why, out)
		}
	}
	if !strings.Contains(out, "Which products have never been ordered?") || !strings.Contains(out, "column public.products.title → label") {
		t.Errorf("check does not say the renamed column is followed:\n%s", out)
	}

	run(exitOK, "publish", "migrations", "--db", "shop", "--wait", "20s", migs)
	out, _ = run(exitOK, "examples", "list", "--db", "shop", "--stale", "--json")
	var stale []exampleView
	if err := json.Unmarshal([]byte(out), &stale); err != nil || len(stale) != len(cases) {
		t.Fatalf("examples list --stale: %v\n%s", err, out)
	}
	for i, c := range cases {
		if stale[i].Question != c.question || !strings.Contains(stale[i].Stale, c.why) {
			t.Errorf("examples list --stale says %+v, want %q stale for %q", stale[i], c.question, c.why)
		}
		out, _ = run(exitOK, "examples", "show", "--db", "shop", stale[i].ID)
		if !strings.Contains(out, "stale:    "+c.why) {
			t.Errorf("examples show %s:\n%s", stale[i].ID, out)
		}
	}

	// Feedback of the same SQL is refused for the same reason.
	_, errOut := run(exitFailure, "feedback", "--db", "shop", "--question", "Net revenue since Monday?",
		"--sql", "SELECT sum(amount) FROM payments WHERE paid_at >= date_trunc('week', now())")
	if !strings.Contains(errOut, "unknown_column") || !strings.Contains(errOut, "column paid_at is in none of the relations it reads (public.payments)") {
		t.Errorf("feedback of stale SQL: %s", errOut)
	}

	// Search leaves the stale examples out, and shows the followed one
	// rewritten.
	out, _ = run(exitOK, "search", "--db", "shop", "--kind", "example", "--k", "5", "net revenue last month orders each customer")
	for _, c := range cases {
		if strings.Contains(out, c.question) {
			t.Errorf("search returns the stale example %q:\n%s", c.question, out)
		}
	}
	out, _ = run(exitOK, "search", "--db", "shop", "--kind", "example", "--k", "5", "--json", "products never ordered")
	if !strings.Contains(out, "Which products have never been ordered?") || !strings.Contains(out, "p.label") {
		t.Errorf("search does not show the renamed column followed:\n%s", out)
	}
}
