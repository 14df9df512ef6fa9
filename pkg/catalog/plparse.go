package catalog

import (
	"fmt"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// plpgsqlJSON is pg.ParsePlPgSqlToJSON for text whose every CREATE
// FUNCTION and DO has what libpg_query's PL/pgSQL compiler asserts it
// has: a body given as AS and a language given as a name. Without them
// the C code aborts the whole process (`CREATE FUNCTION f() LANGUAGE
// plpgsql;` did), and no recover catches an abort.
func plpgsqlJSON(src string) (string, error) {
	tree, err := pgtree.Parse(src)
	if err != nil {
		return "", err
	}
	for _, raw := range tree.Stmts {
		var bad error
		pgtree.Walk(raw.Stmt, func(n *pg.Node) {
			if bad != nil {
				return
			}
			switch {
			case n.GetCreateFunctionStmt() != nil:
				bad = compilable(n.GetCreateFunctionStmt().Options, true)
			case n.GetDoStmt() != nil:
				bad = compilable(n.GetDoStmt().Args, false)
			}
		})
		if bad != nil {
			return "", bad
		}
	}
	return pg.ParsePlPgSqlToJSON(src)
}

// compilable checks a routine's options as the PL/pgSQL compiler reads
// them: AS is a list of strings for a function, a string for DO.
func compilable(options []*pg.Node, function bool) error {
	body := false
	for _, o := range options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch d.Defname {
		case "as":
			if !function {
				body = d.Arg.GetString_() != nil
				continue
			}
			l := d.Arg.GetList()
			if l == nil || len(l.Items) == 0 {
				return fmt.Errorf("a routine whose AS is not a string")
			}
			for _, it := range l.Items {
				if it.GetString_() == nil {
					return fmt.Errorf("a routine whose AS is not a string")
				}
			}
			body = true
		case "language":
			if d.Arg.GetString_() == nil {
				return fmt.Errorf("a routine whose LANGUAGE is not a name")
			}
		}
	}
	if !body {
		return fmt.Errorf("a routine without a body (AS …)")
	}
	return nil
}
