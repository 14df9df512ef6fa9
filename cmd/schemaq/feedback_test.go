package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/client"
)

// TestFeedbackLoop: an ask's answer handed back as feedback is stored as
// an example and found by search; the same feedback twice is one
// example; refused SQL stores nothing; examples list, show, --stale and
// delete, and docs list and delete, work on what the stream holds.
func TestFeedbackLoop(t *testing.T) {
	llm := fakeLLM(t)
	st := upWithShop(t, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m", "SCHEMAQ_LLM_RETRIES", "0")
	run := st.run

	out, _ := run(exitOK, "ask", "--db", "shop", "How many orders are there?")
	m := regexp.MustCompile(`-- ask id: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ask prints no ask id:\n%s", out)
	}
	askID := m[1]

	// The person corrected the model's count to one of paid orders.
	question := "How many orders were paid in full?"
	sql := "SELECT count(*) FROM orders o WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)"
	out, _ = run(exitOK, "feedback", "--db", "shop", "--question", question, "--sql", sql, "--ask-id", askID, "--corrected", "--wait", "20s")
	id := regexp.MustCompile(`stored as example (fb-\S+) of shop \(catalog version 6; reads public.orders, public.payments\)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("feedback: %s", out)
	}
	out, _ = run(exitOK, "feedback", "--db", "shop", "--question", question, "--sql", sql, "--ask-id", askID, "--corrected")
	if !strings.HasPrefix(out, "already stored as example "+id[1]) {
		t.Errorf("the same feedback again: %s", out)
	}
	out, _ = run(exitOK, "search", "--db", "shop", "--kind", "example", "--k", "1", "orders paid in full")
	if !strings.Contains(out, question) {
		t.Errorf("search does not find the feedback's example:\n%s", out)
	}

	// Refused SQL says why and stores nothing.
	for _, bad := range []struct{ sql, want string }{
		{"DELETE FROM orders", "unsafe_sql"},
		{"SELECT * FROM ghosts", "unknown_table"},
		{"SELECT o.nope FROM orders o", "unknown_column"},
		{"SELEC 1", "invalid_sql"},
		{"SELECT 1", "reads no table"},
	} {
		_, errOut := run(exitFailure, "feedback", "--db", "shop", "--question", "q "+bad.sql, "--sql", bad.sql)
		if !strings.Contains(errOut, bad.want) || !strings.Contains(errOut, "nothing was stored") {
			t.Errorf("feedback %q: %s", bad.sql, errOut)
		}
	}
	_, errOut := run(exitFailure, "feedback", "--db", "nowhere", "--question", "q", "--sql", "SELECT 1 FROM t")
	if !strings.Contains(errOut, "unknown_database") {
		t.Errorf("feedback on an unknown database: %s", errOut)
	}
	run(exitUsage, "feedback", "--db", "shop", "--question", "q", "--sql", "SELECT 1", "--corrected")

	// The stream holds the three published examples and the feedback.
	out, _ = run(exitOK, "examples", "list", "--db", "shop", "--json")
	var listed []exampleView
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 4 {
		t.Fatalf("examples list: %v\n%s", err, out)
	}
	if last := listed[3]; last.ID != id[1] || last.Origin != "feedback" || !last.Corrected || last.AskID != askID ||
		last.CatalogVersion != 6 || strings.Join(last.Tables, ",") != "public.orders,public.payments" {
		t.Errorf("the feedback's example: %+v", last)
	}
	out, _ = run(exitOK, "examples", "show", "--db", "shop", id[1])
	for _, want := range []string{"origin:   feedback (corrected)", "ask id:   " + askID, "checked:  at catalog version 6, reading public.orders, public.payments", "sql:\n" + sql} {
		if !strings.Contains(out, want) {
			t.Errorf("examples show lacks %q:\n%s", want, out)
		}
	}
	// A person approves it: it is the team's own from then on; a
	// published example has nothing to approve.
	out, _ = run(exitOK, "examples", "approve", "--db", "shop", "--by", "cli:reviewer", id[1])
	if !strings.Contains(out, "approved 1 example(s) of shop as cli:reviewer") {
		t.Errorf("examples approve: %s", out)
	}
	out, _ = run(exitOK, "examples", "show", "--db", "shop", id[1])
	if !strings.Contains(out, "origin:   feedback (approved)") || !strings.Contains(out, "approved: by cli:reviewer") {
		t.Errorf("examples show after approve:\n%s", out)
	}
	_, errOut = run(exitFailure, "examples", "approve", "--db", "shop", listed[0].ID)
	if !strings.Contains(errOut, "not a feedback example") || !strings.Contains(errOut, "nothing was approved") {
		t.Errorf("approving a published example: %s", errOut)
	}
	run(exitUsage, "examples", "approve", "--db", "shop")
	out, _ = run(exitOK, "examples", "list", "--db", "shop", "--stale")
	if !strings.HasSuffix(out, "0 stale example(s) of shop\n") {
		t.Errorf("nothing is stale yet:\n%s", out)
	}

	// Dropping payments makes the two examples that read it stale.
	migs := st.migrationsWith(map[string]string{"0007_drop_payments.sql": "DROP TABLE payments;\n"})
	run(exitOK, "publish", "migrations", "--db", "shop", "--wait", "20s", migs)
	out, _ = run(exitOK, "examples", "list", "--db", "shop", "--stale")
	if !strings.Contains(out, id[1]) || !strings.Contains(out, "What was net revenue last month?") ||
		!strings.Contains(out, "stale: reads payments") || !strings.HasSuffix(out, "2 stale example(s) of shop\n") {
		t.Errorf("stale examples:\n%s", out)
	}

	// Deleting takes the example out of the stream's listing and the index.
	run(exitOK, "examples", "delete", "--db", "shop", "--wait", "20s", id[1])
	out, _ = run(exitOK, "examples", "list", "--db", "shop")
	if strings.Contains(out, id[1]) || !strings.HasSuffix(out, "3 example(s) of shop\n") {
		t.Errorf("after delete:\n%s", out)
	}
	out, _ = run(exitOK, "search", "--db", "shop", "--kind", "example", "--k", "5", "orders paid in full")
	if strings.Contains(out, question) {
		t.Errorf("search still finds the deleted example:\n%s", out)
	}
	run(exitUsage, "examples", "show", "--db", "shop")
	run(exitFailure, "examples", "show", "--db", "shop", "no-such-example")

	// Deleting what is not there, or listing a database that is not, is
	// an error naming it, in JSON too.
	_, errOut = run(exitFailure, "examples", "delete", "--db", "shop", "no-such-example")
	if !strings.Contains(errOut, `shop has no example "no-such-example"`) || !strings.Contains(errOut, "nothing was deleted") {
		t.Errorf("deleting an unknown example: %s", errOut)
	}
	out, _ = run(exitOK, "examples", "list", "--db", "shop")
	if !strings.HasSuffix(out, "3 example(s) of shop\n") {
		t.Errorf("a refused delete deleted:\n%s", out)
	}
	out, _ = run(exitFailure, "examples", "list", "--db", "nope", "--json")
	var failed struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal([]byte(out), &failed); err != nil || failed.Error.Code != "unknown_database" {
		t.Errorf("examples list --json of an unknown database: %v %q", err, out)
	}
	_, errOut = run(exitFailure, "docs", "delete", "--db", "shop", "nosuch.md")
	if !strings.Contains(errOut, `shop has no doc "nosuch.md"`) {
		t.Errorf("deleting an unknown doc: %s", errOut)
	}
	for _, kind := range []string{"docs", "examples"} {
		if _, errOut = run(exitFailure, kind, "delete", "--db", "nope", "x.md"); !strings.Contains(errOut, `no database "nope"`) {
			t.Errorf("%s delete in an unknown database: %s", kind, errOut)
		}
	}

	out, _ = run(exitOK, "docs", "list", "--db", "shop")
	if !strings.Contains(out, "refunds.md") || !strings.HasSuffix(out, "2 doc(s) of shop\n") {
		t.Errorf("docs list:\n%s", out)
	}
	run(exitOK, "docs", "delete", "--db", "shop", "--wait", "20s", "refunds.md")
	out, _ = run(exitOK, "docs", "list", "--db", "shop", "--json")
	var docs []client.StoredDoc
	if err := json.Unmarshal([]byte(out), &docs); err != nil || len(docs) != 1 || docs[0].DocID != "glossary.md" {
		t.Errorf("docs after delete: %v %s", err, out)
	}
	out, _ = run(exitOK, "search", "--db", "shop", "--kind", "doc", "partial refunds")
	if strings.Contains(out, "refunds.md") {
		t.Errorf("search still finds the deleted doc:\n%s", out)
	}
}
