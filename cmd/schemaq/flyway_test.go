package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A Flyway history with a repeatable view and an undo file, from outside:
// the view reaches the catalog after the versioned migrations, the undo
// file is named, and the changed view is applied again when the history
// is published again.
func TestFlywayRepeatableAndUndo(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()
	hist := filepath.Join(dir, "db")
	write := func(name, sql string) {
		t.Helper()
		if err := os.MkdirAll(hist, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hist, name), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("V1__orders.sql", "CREATE TABLE orders (id int PRIMARY KEY, total numeric);")
	write("R__order_view.sql", "CREATE OR REPLACE VIEW big_orders AS SELECT id FROM orders WHERE total > 100;")
	write("U1__drop_orders.sql", "DROP TABLE orders;")
	write("V2__customers.sql", "CREATE TABLE customers (id int PRIMARY KEY);")

	out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "fly", "--wait", "20s", hist)
	if code != exitOK || !strings.Contains(out, "3 R__order_view.sql: ok") || !strings.Contains(errOut, `"U1__drop_orders.sql": a Flyway undo migration, not applied`) {
		t.Fatalf("publish (exit %d): %s %s", code, out, errOut)
	}
	if out, _, _ := runAt(t, url, "tables", "--db", "fly", "public.big_orders"); !strings.Contains(out, "big_orders (id) AS") {
		t.Errorf("the view: %s", out)
	}
	// Published again unchanged: nothing to do. Changed: applied again.
	if out, _, _ := runAt(t, url, "publish", "migrations", "--db", "fly", hist); !strings.Contains(out, "published 0 event(s)") {
		t.Errorf("re-publish: %s", out)
	}
	write("R__order_view.sql", "CREATE OR REPLACE VIEW big_orders AS SELECT id, total FROM orders WHERE total > 100;")
	out, errOut, code = runAt(t, url, "publish", "migrations", "--db", "fly", "--wait", "20s", hist)
	if code != exitOK || !strings.Contains(out, "4 R__order_view.sql: ok") {
		t.Fatalf("publish the changed view (exit %d): %s %s", code, out, errOut)
	}
	if out, _, _ := runAt(t, url, "tables", "--db", "fly", "public.big_orders"); !strings.Contains(out, "big_orders (id, total) AS") {
		t.Errorf("the changed view: %s", out)
	}
}
