package main

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestRetireDatabase: retiring a database removes its catalog, index,
// events, dead letters and objects, leaves the others alone, and a
// publish afterwards starts a new history.
func TestRetireDatabase(t *testing.T) {
	st := upWithShop(t)
	url, shop := st.url, st.shop
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut := st.run(want, args...)
		return out + errOut
	}
	publishVideo(t, url)
	// A migration over 1 MiB travels in the object store; one the
	// catalog refuses is a dead letter.
	big := t.TempDir()
	noise := make([]byte, 1200<<10)
	_, _ = rand.Read(noise)
	sql := "CREATE TABLE notes (id int);\nCOMMENT ON TABLE notes IS '" + base64.StdEncoding.EncodeToString(noise) + "';\n"
	_ = os.WriteFile(filepath.Join(big, "0007_big.sql"), []byte(sql), 0o644)
	_ = os.WriteFile(filepath.Join(big, "0008_bad.sql"), []byte("CREATE TABEL t (id int);\n"), 0o644)
	run(exitFailure, "publish", "migrations", "--db", "shop", "--wait", "60s", big)
	testenv.Eventually(t, 20*time.Second, "the dead letter", func() bool {
		return strings.Contains(run(exitOK, "dlq", "list", "--db", "shop"), "1 dead letter(s)")
	})

	run(exitUsage, "databases", "retire", "--db", "shop")
	// 60 s as the publishes above: a loaded CI once took over 20 s.
	out := run(exitOK, "databases", "retire", "--db", "shop", "--yes", "--wait", "60s")
	if !strings.Contains(out, "retired shop: 11 event(s), 1 dead letter(s), 1 object(s) removed") {
		t.Errorf("retire: %s", out)
	}
	out = run(exitOK, "databases", "list")
	if strings.Contains(out, "shop") || !strings.Contains(out, "video\tversion 1") {
		t.Errorf("databases after retiring shop: %s", out)
	}
	if out := run(exitFailure, "search", "--db", "shop", "orders"); !strings.Contains(out, "unknown_database") {
		t.Errorf("search of the retired database: %s", out)
	}
	if out := run(exitOK, "dlq", "list", "--db", "shop"); !strings.Contains(out, "0 dead letter(s)") {
		t.Errorf("dead letters of the retired database: %s", out)
	}
	// Gone, as for search: not an empty list of a database that is.
	if out := run(exitFailure, "examples", "list", "--db", "shop"); !strings.Contains(out, "unknown_database") {
		t.Errorf("examples of the retired database: %s", out)
	}
	if out := run(exitOK, "search", "--db", "video", "comedy films"); !strings.Contains(out, "film") {
		t.Errorf("video was touched: %s", out)
	}
	// Publishing again starts a new history at seq 1.
	out = run(exitOK, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations"))
	if !strings.Contains(out, "catalog shop is at version 6") {
		t.Errorf("publishing again: %s", out)
	}
	if out := run(exitOK, "search", "--db", "shop", "--kind", "doc", "partial refunds"); strings.Contains(out, "refunds.md") {
		t.Errorf("the retired docs came back: %s", out)
	}
}
