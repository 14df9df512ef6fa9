package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventsPerDatabaseBoundThroughTheBinary: with
// --max-events-per-database, a database past its bound has its publish
// refused at once, saying whose and why; another team's database
// publishes on, and status names the full one.
func TestEventsPerDatabaseBoundThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	// Superseded events kept, so that what the stream holds does not
	// depend on how fast the workers compact.
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_MAX_EVENTS_PER_DATABASE", "4", "SCHEMAQ_KEEP_SUPERSEDED", "1")
	defer stop()
	docs := func(name string, n int) string {
		t.Helper()
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			body := fmt.Sprintf("# Page %d\n\nOrders of %s are kept in table orders_%d.\n", i, name, i)
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("page%d.md", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	shop, other := docs("shop", 3), docs("other", 3)
	if out, errOut, code := runAt(t, url, "publish", "docs", "--db", "shop", "--wait", "30s", shop); code != exitOK {
		t.Fatalf("shop's first 3 docs (exit %d): %s %s", code, out, errOut)
	}
	// Every run publishes every doc again: 3 more events for a bound of 4.
	out, errOut, code := runAt(t, url, "publish", "docs", "--db", "shop", shop)
	if code != exitFailure || !strings.Contains(errOut, `database "shop" holds the most docs events the stream keeps of one database`) {
		t.Errorf("shop past its bound (exit %d): %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "(1 of the 3 events were published before it)") {
		t.Errorf("the refusal does not say what went in before it: %s", errOut)
	}
	if strings.Contains(errOut, "retrying") {
		t.Errorf("the refusal was retried as a stream that did not answer: %s", errOut)
	}
	out, _, code = runAt(t, url, "publish", "docs", "--db", "shop", "--json", shop)
	if code != exitFailure || !strings.Contains(out, `{"error":{"code":"database_full","message":"publish docs.upsert`) {
		t.Errorf("shop past its bound, --json (exit %d): %s", code, out)
	}
	if out, errOut, code := runAt(t, url, "publish", "docs", "--db", "other", "--wait", "30s", other); code != exitOK {
		t.Fatalf("other beside a full shop (exit %d): %s %s", code, out, errOut)
	}
	out, errOut, code = runAt(t, url, "status")
	if code != exitOK || !strings.Contains(out, "events per database: at most 4 of each kind") ||
		!strings.Contains(errOut, "warning: database shop holds 4 docs events of the 4") || strings.Contains(errOut, "database other") {
		t.Errorf("status (exit %d): %s %s", code, out, errOut)
	}
	out, _, _ = runAt(t, url, "status", "--json")
	var rep struct {
		Stream struct {
			Bound int64 `json:"max_events_per_database"`
		} `json:"stream"`
		NearBound map[string]map[string]uint64 `json:"near_bound"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("status --json: %v: %s", err, out)
	}
	if rep.Stream.Bound != 4 || rep.NearBound["shop"]["docs"] != 4 || len(rep.NearBound) != 1 {
		t.Errorf("status --json: bound %d, near it %v", rep.Stream.Bound, rep.NearBound)
	}
}
