package main

import (
	"strings"
	"testing"
)

// TestOldNamesAnswer: after products is renamed to catalog_items, asking
// for products by its old name finds catalog_items, in tables and first
// in a search.
func TestOldNamesAnswer(t *testing.T) {
	st := upWithShop(t)
	run := st.run
	migs := st.migrationsWith(map[string]string{"0007_catalog_items.sql": "ALTER TABLE products RENAME TO catalog_items;\n"})
	run(exitOK, "publish", "migrations", "--db", "shop", "--wait", "20s", migs)

	out, _ := run(exitOK, "tables", "--db", "shop", "products")
	if !strings.HasPrefix(out, "-- public.products was renamed to public.catalog_items in migration 0007_catalog_items.sql\n") ||
		!strings.Contains(out, "CREATE TABLE public.catalog_items") {
		t.Errorf("tables of the old name:\n%s", out)
	}
	run(exitFailure, "tables", "--db", "shop", "no_such_table")

	for _, q := range []string{"products", "which products have never been ordered"} {
		out, _ = run(exitOK, "search", "--db", "shop", "--kind", "table", "--k", "3", q)
		first := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		if len(first) < 3 || first[2] != "public.catalog_items" {
			t.Errorf("search %q does not put catalog_items first:\n%s", q, out)
		}
	}
}
