package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A doc or example edited and then put back within the duplicate
// window is published again: its id is its content's and the run's,
// so the stream does not drop the revert as a duplicate of the first
// publish, and the index ends with what was published last.
func TestRevertedDocsAndExamplesArePublished(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()
	docs, exs := filepath.Join(dir, "docs"), filepath.Join(dir, "examples.jsonl")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	publish := func(where, doc, example string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(docs, "refunds.md"), []byte("# Refunds\n\nRefunds are kept in the "+doc+" table.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		line := `{"id": "refunds", "question": "Where are refunds kept?", "sql": "SELECT * FROM ` + example + `"}` + "\n"
		if err := os.WriteFile(exs, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		var all string
		for _, args := range [][]string{{"docs", docs}, {"examples", exs}} {
			out, errOut, code := runAt(t, url, "publish", args[0], "--db", "shop", "--wait", "30s", args[1])
			if code != exitOK {
				t.Fatalf("%s: publish %s (exit %d): %s %s", where, args[0], code, out, errOut)
			}
			all += out
		}
		return all
	}
	publish("first", "ledger", "ledger")
	publish("edited", "payments", "payments")
	if out := publish("reverted", "ledger", "ledger"); strings.Contains(out, "duplicate (already published)") {
		t.Errorf("the revert was dropped as a duplicate:\n%s", out)
	}
	out, errOut, code := runAt(t, url, "search", "--db", "shop", "--kind", "doc", "--k", "1", "--json", "where are refunds kept")
	if code != exitOK || !strings.Contains(out, "ledger table") || strings.Contains(out, "payments table") {
		t.Errorf("the doc found after the revert (exit %d): %s %s", code, out, errOut)
	}
	out, errOut, code = runAt(t, url, "examples", "show", "--db", "shop", "refunds")
	if code != exitOK || !strings.Contains(out, "FROM ledger") {
		t.Errorf("the example after the revert (exit %d): %s %s", code, out, errOut)
	}
}
