package catalog

import (
	"testing"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

func TestRenameColumnInExpr(t *testing.T) {
	for _, tc := range []struct {
		expr, from, to, want string
	}{
		{"qty > 0", "qty", "quantity", "quantity > 0"},
		{"qty <= qty_max", "qty", "n", "n <= qty_max"},
		{"m.qty <= 5", "qty", "n", "m.n <= 5"},
		// Another name before the column is a composite column's field.
		{"(addr).qty > 0 AND other.qty > 0", "qty", "n", "(addr).qty > 0 AND other.qty > 0"},
		{"qty_max > 0", "qty", "n", "qty_max > 0"},
		{`"Qty" > 0 AND qty > 1`, "Qty", "a b", `"a b" > 0 AND qty > 1`},
		{"lower(name) = 'qty'", "qty", "n", "lower(name) = 'qty'"},
		{"CASE WHEN qty IS NULL THEN 0 ELSE qty END", "qty", "n", "CASE WHEN n IS NULL THEN 0 ELSE n END"},
		{"", "qty", "n", ""},
		{"qty >", "qty", "n", "qty >"}, // not SQL: kept as it was
	} {
		if got := renameColumnInExpr(tc.expr, "m", tc.from, tc.to); got != tc.want {
			t.Errorf("rename %s → %s in %q: %q, want %q", tc.from, tc.to, tc.expr, got, tc.want)
		}
	}
	for _, tc := range []struct{ key, want string }{
		{"LIST (qty)", "LIST (n)"},
		{"RANGE (qty, (lower(qty::text)))", "RANGE (n, (lower(n::text)))"},
		{"HASH (qty_max)", "HASH (qty_max)"},
	} {
		if got := renameInPartitionKey(tc.key, "m", "qty", "n"); got != tc.want {
			t.Errorf("partition key %q: %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestUnqualify(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"m.a > 0", "a > 0"},
		{"public.m.a > 0", "a > 0"},
		{"other.m.a > 0", "other.m.a > 0"},
		{"(m).a > 0 AND a.b > 0", "(m).a > 0 AND a.b > 0"},
		{"lower(m.name) = m.code", "lower(name) = code"},
	} {
		tree, err := pgtree.Parse("SELECT " + tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		val := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().GetVal()
		unqualify(val, QualName{"public", "m"})
		if got := deparseExpr(val); got != tc.want {
			t.Errorf("unqualify %q: %q, want %q", tc.expr, got, tc.want)
		}
	}
}
