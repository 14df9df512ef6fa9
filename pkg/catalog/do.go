package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// do applies the DDL inside a DO block. libpg_query parses PL/pgSQL, so the
// block is wrapped as a function body and every embedded SQL statement
// (and EXECUTE of a constant string) is applied in order.
//
// We cannot evaluate the block's IF conditions or exception handlers, and
// the common idiom guards a CREATE with exactly those (IF NOT EXISTS …
// THEN CREATE TYPE, or EXCEPTION WHEN duplicate_object). So inside a DO
// block a statement that would fail because its object already exists or
// does not exist is skipped; syntax errors still fail the script.
func (a *applier) do(s *pg.DoStmt) error {
	body, lang := "", "plpgsql"
	for _, arg := range s.Args {
		de := arg.GetDefElem()
		if de == nil {
			continue
		}
		val := ""
		if sv := de.Arg.GetString_(); sv != nil {
			val = sv.Sval
		}
		switch de.Defname {
		case "as":
			body = val
		case "language":
			lang = val
		}
	}
	if !strings.EqualFold(lang, "plpgsql") || body == "" {
		return nil
	}
	tag := "$schemaq_do$"
	for strings.Contains(body, tag) {
		tag = "$" + strings.Trim(tag, "$") + "x$"
	}
	fn := "CREATE FUNCTION schemaq_do() RETURNS void LANGUAGE plpgsql AS " + tag + body + tag
	if a.interpretDo(fn) {
		return nil
	}
	out, err := plpgsqlJSON(fn)
	if err != nil {
		return fmt.Errorf("%w: in DO block: %s", ErrSyntax, err.Error())
	}
	var tree any
	if err := json.Unmarshal([]byte(out), &tree); err != nil {
		return fmt.Errorf("%w: in DO block: %v", ErrSyntax, err)
	}
	var stmts []string
	collectPlpgsqlSQL(tree, &stmts)
	saved := a.inDo
	a.inDo = true
	defer func() { a.inDo = saved }()
	for _, sql := range stmts {
		parsed, err := pgtree.Parse(sql)
		if err != nil {
			return fmt.Errorf("%w: in DO block statement %q: %s", ErrSyntax, excerpt(sql), err.Error())
		}
		for _, raw := range parsed.Stmts {
			err := a.statement(raw.Stmt)
			if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrUndefined) {
				continue
			}
			if err != nil {
				return fmt.Errorf("in DO block statement %q: %w", excerpt(sql), err)
			}
		}
	}
	return nil
}

// collectPlpgsqlSQL walks libpg_query's PL/pgSQL JSON in document order and
// collects the SQL of every embedded statement: PLpgSQL_stmt_execsql
// queries, and EXECUTE of a string literal.
func collectPlpgsqlSQL(v any, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		if ex, ok := t["PLpgSQL_stmt_execsql"].(map[string]any); ok {
			if q := exprQuery(ex["sqlstmt"]); q != "" {
				*out = append(*out, q)
			}
			return
		}
		if ex, ok := t["PLpgSQL_stmt_dynexecute"].(map[string]any); ok {
			if lit := constantString(exprQuery(ex["query"])); lit != "" {
				*out = append(*out, lit)
			}
			return
		}
		// Keys are visited in a fixed order so statements keep their
		// order within a block: maps have none, so sort the known ones.
		for _, k := range sortedKeys(t) {
			collectPlpgsqlSQL(t[k], out)
		}
	case []any:
		for _, e := range t {
			collectPlpgsqlSQL(e, out)
		}
	}
}

func exprQuery(v any) string {
	m, _ := v.(map[string]any)
	e, _ := m["PLpgSQL_expr"].(map[string]any)
	q, _ := e["query"].(string)
	return q
}

// constantString returns the value of a SQL string literal expression such
// as 'CREATE TABLE t ()', or "" when the expression is anything else.
func constantString(expr string) string {
	if expr == "" {
		return ""
	}
	tree, err := pgtree.Parse("SELECT " + expr)
	if err != nil || len(tree.Stmts) != 1 {
		return ""
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 {
		return ""
	}
	if c := sel.TargetList[0].GetResTarget().Val.GetAConst(); c != nil && c.GetSval() != nil {
		return c.GetSval().Sval
	}
	return ""
}

// sortedKeys orders PL/pgSQL JSON keys so that a block's statements ("body")
// come before its exception handlers ("exceptions"), and otherwise
// alphabetically, which keeps the walk deterministic.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case "cond":
			return 0
		case "then_body", "body":
			return 1
		case "elsif_list":
			return 2
		case "else_body":
			return 3
		case "exceptions":
			return 4
		}
		return 5
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}
