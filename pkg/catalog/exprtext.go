package catalog

import (
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// The catalog holds a table's expressions (checks, generated columns,
// index expressions and predicates, partition keys) as SQL text, where
// PostgreSQL holds trees of column numbers. So a column's rename rewrites
// the text, and finding what reads a column parses it again.

// maxReparse bounds the SQL text the catalog holds (expressions and view
// definitions) that one Apply parses again, in bytes, each parse charged
// 32 more for its fixed cost. A statement of forty bytes (a rename, a
// dropped column) may reach every expression of a table of 1,600
// generated columns and 1,000 checks, or a view of a quarter of a
// megabyte that takes a third of a second to parse and print: a megabyte
// of renames took most of an hour before. Four megabytes is a few
// seconds of the slowest text (a flat chain of ANDs), and more than a
// migration that renames tens of columns under tens of views parses.
const (
	maxReparse      = 4 << 20
	reparseOverhead = 32
)

// reparse memoises, within one Apply, what each expression text reads,
// and counts the text parsed again against maxReparse.
type reparse struct {
	reads        map[string][]string
	exclusions   map[string]exclusionReads
	spent, limit int
}

// spend charges a parse of text, refusing it past the bound.
func (rp *reparse) spend(text string) error {
	if rp.spent+len(text)+reparseOverhead > rp.limit {
		rp.spent = rp.limit // sticky, as the interpreter's budget is
		return reparseSpent{rp.limit}
	}
	rp.spent += len(text) + reparseOverhead
	return nil
}

// reparseSpent refuses the statement (ErrInvalid) and, inside a routine
// or DO block, stops it as the interpreter's spent budget does
// (ErrBudget): no exception handler may catch it and carry on.
type reparseSpent struct{ limit int }

func (e reparseSpent) Error() string {
	return fmt.Sprintf("%v: the migration makes the catalog parse more than %d KiB of its expressions and view definitions again (for the columns and tables it renames, drops or retypes): schemaq's bound", ErrInvalid, e.limit>>10)
}

func (reparseSpent) Is(target error) bool { return target == ErrInvalid || target == ErrBudget }

// readsOf lists the columns expr reads.
func (rp *reparse) readsOf(expr string) ([]string, error) {
	if cols, ok := rp.reads[expr]; ok {
		return cols, nil
	}
	if err := rp.spend(expr); err != nil {
		return nil, err
	}
	var cols []string
	if val := parseExpr(expr); val != nil {
		cols = columnRefs(val)
	}
	if rp.reads == nil {
		rp.reads = map[string][]string{}
	}
	rp.reads[expr] = cols
	return cols, nil
}

// exclusionReads are the columns an exclusion constraint's text reads:
// those it goes with when one is dropped (its plain elements and
// INCLUDE's), and those it depends on as a check does, refusing their
// drop without CASCADE (its elements' expressions and WHERE's).
// names are its index's column names, which its default name and a LIKE
// copy's are built from.
type exclusionReads struct{ keys, depends, names []string }

func (rp *reparse) exclusionReads(text string) (exclusionReads, error) {
	if r, ok := rp.exclusions[text]; ok {
		return r, nil
	}
	if err := rp.spend(text); err != nil {
		return exclusionReads{}, err
	}
	var r exclusionReads
	if con := parseExclusion(text); con != nil {
		for _, ex := range con.Exclusions {
			if ie := ex.GetList().GetItems(); len(ie) > 0 && ie[0].GetIndexElem() != nil {
				e := ie[0].GetIndexElem()
				if e.Name != "" {
					r.keys = appendNew(r.keys, e.Name)
				}
				r.depends = appendNew(r.depends, columnRefs(e.Expr)...)
			}
		}
		r.names = exclusionNames(con)
		r.keys = appendNew(r.keys, pgtree.Strings(con.Including)...)
		r.depends = appendNew(r.depends, columnRefs(con.WhereClause)...)
	}
	if rp.exclusions == nil {
		rp.exclusions = map[string]exclusionReads{}
	}
	rp.exclusions[text] = r
	return r, nil
}

func (r exclusionReads) reads(col string) bool {
	return slices.Contains(r.keys, col) || slices.Contains(r.depends, col)
}

// generatedUsing lists the generated columns of t whose expression reads
// column col: PostgreSQL records those dependencies too.
func (rp *reparse) generatedUsing(t *Table, col string) ([]string, error) {
	var out []string
	for _, c := range t.Columns {
		if c.Generated == "" || c.Name == col {
			continue
		}
		reads, err := rp.readsOf(c.Generated)
		if err != nil {
			return nil, err
		}
		if slices.Contains(reads, col) {
			out = append(out, c.Name)
		}
	}
	return out, nil
}

// renameInExpressions follows a column's rename into the SQL text t holds
// for its checks, generated columns, partition key and indexes, as
// PostgreSQL prints them after it. Without it a renamed column's CHECK
// still named the old column in prompts, and the catalog's DDL did not
// load. Checks and indexes list the columns they read (renamed already),
// so only those that read this one are parsed again.
func (rp *reparse) renameInExpressions(t *Table, from, to string) error {
	ren := func(expr *string) error {
		if *expr == "" {
			return nil
		}
		if err := rp.spend(*expr); err != nil {
			return err
		}
		*expr = renameColumnInExpr(*expr, t.Name, from, to)
		return nil
	}
	for i := range t.Checks {
		ch := &t.Checks[i]
		switch {
		case ch.Exclude:
			if reads, err := rp.exclusionReads(ch.Expr); err != nil {
				return err
			} else if reads.reads(from) {
				if err := rp.spend(ch.Expr); err != nil {
					return err
				}
				ch.Expr = renameInExclusion(ch.Expr, t.QualName(), from, to)
			}
		case !slices.Contains(ch.Columns, to):
		default:
			if err := ren(&ch.Expr); err != nil {
				return err
			}
		}
	}
	for _, c := range t.Columns {
		if c.Generated == "" {
			continue
		}
		if reads, err := rp.readsOf(c.Generated); err != nil {
			return err
		} else if slices.Contains(reads, from) {
			if err := ren(&c.Generated); err != nil {
				return err
			}
		}
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !slices.Contains(ix.Reads, to) {
			continue
		}
		for j := range ix.Keys {
			if err := ren(&ix.Keys[j].Expr); err != nil {
				return err
			}
		}
		if err := ren(&ix.Where); err != nil {
			return err
		}
	}
	if t.PartitionBy != "" && mayName(t.PartitionBy, from) {
		if err := rp.spend(t.PartitionBy); err != nil {
			return err
		}
		t.PartitionBy = renameInPartitionKey(t.PartitionBy, t.Name, from, to)
	}
	return nil
}

// retypeInExpressions follows an enum's rename or move into the casts
// of t's expressions ('sad'::mood becomes 'sad'::feeling), as
// PostgreSQL, which holds the type's OID, prints them after it.
func (rp *reparse) retypeInExpressions(t *Table, from, to QualName) error {
	ren := func(expr *string, rewrite func(string) string) error {
		if *expr == "" || !mayName(*expr, from.Name) {
			return nil
		}
		if err := rp.spend(*expr); err != nil {
			return err
		}
		*expr = rewrite(*expr)
		return nil
	}
	inExpr := func(expr string) string {
		return rewriteExpr(expr, func(val *pg.Node) bool { return retypeNodes(val, from, to) })
	}
	inExclusion := func(text string) string {
		return rewriteExclusion(text, t.QualName(), func(con *pg.Constraint) bool {
			changed := retypeNodes(con.WhereClause, from, to)
			for _, ex := range con.Exclusions {
				if ie := ex.GetList().GetItems(); len(ie) > 0 && ie[0].GetIndexElem() != nil {
					changed = retypeNodes(ie[0].GetIndexElem().Expr, from, to) || changed
				}
			}
			return changed
		})
	}
	for i := range t.Checks {
		rewrite := inExpr
		if t.Checks[i].Exclude {
			rewrite = inExclusion
		}
		if err := ren(&t.Checks[i].Expr, rewrite); err != nil {
			return err
		}
	}
	for _, c := range t.Columns {
		if err := ren(&c.Generated, inExpr); err != nil {
			return err
		}
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		for j := range ix.Keys {
			if err := ren(&ix.Keys[j].Expr, inExpr); err != nil {
				return err
			}
		}
		if err := ren(&ix.Where, inExpr); err != nil {
			return err
		}
	}
	return nil
}

// retypeNodes renames, in place, the type names under n that name enum
// from (bare or qualified) to to, qualified as a column's type is: bare
// in public.
func retypeNodes(n *pg.Node, from, to QualName) bool {
	changed := false
	pgtree.Messages(n, func(m protoreflect.ProtoMessage) {
		tn, ok := m.(*pg.TypeName)
		if !ok {
			return
		}
		names := pgtree.Strings(tn.Names)
		if len(names) != len(tn.Names) {
			return
		}
		if !(len(names) == 1 && names[0] == from.Name && from.Schema == DefaultSchema) &&
			!(len(names) == 2 && names[0] == from.Schema && names[1] == from.Name) {
			return
		}
		parts := []string{to.Name}
		if to.Schema != DefaultSchema {
			parts = []string{to.Schema, to.Name}
		}
		tn.Names = tn.Names[:0]
		for _, p := range parts {
			tn.Names = append(tn.Names, &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: p}}})
		}
		changed = true
	})
	return changed
}

// parseExpr parses expr, an expression as the catalog holds it; nil when
// it does not parse.
func parseExpr(expr string) *pg.Node {
	tree, err := pgtree.Parse("SELECT " + expr)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 {
		return nil
	}
	return sel.TargetList[0].GetResTarget().GetVal()
}

// renameColumnInExpr renames column from to to in expr, an expression
// over one table (named table): a bare reference or one qualified by the
// table's name. expr is returned as it was when nothing refers to the
// column or it does not parse.
func renameColumnInExpr(expr, table, from, to string) string {
	return rewriteExpr(expr, func(val *pg.Node) bool { return renameRefs(val, table, from, to) })
}

// rewriteExpr parses expr, lets change rewrite its tree in place, and
// prints it again if it changed; expr is returned as it was when it did
// not, or does not parse.
func rewriteExpr(expr string, change func(*pg.Node) bool) string {
	val := parseExpr(expr)
	if val == nil || !change(val) {
		return expr
	}
	if out := deparseExpr(val); out != "" {
		return out
	}
	return expr
}

// rewriteExclusion is rewriteExpr for an exclusion constraint's text.
func rewriteExclusion(text string, t QualName, change func(*pg.Constraint) bool) string {
	con := parseExclusion(text)
	if con == nil || !change(con) {
		return text
	}
	return exclusionText(con, t)
}

// exclusionText renders an EXCLUDE constraint as the catalog holds it,
// after its name: libpg_query's deparse puts WHERE before INCLUDE, which
// PostgreSQL's grammar does not take.
func exclusionText(con *pg.Constraint, t QualName) string {
	var elems []string
	for _, ex := range con.Exclusions {
		l := ex.GetList()
		if l == nil || len(l.Items) != 2 {
			continue
		}
		ie := l.Items[0].GetIndexElem()
		if ie == nil {
			continue
		}
		k := IndexKey{Column: ie.Name, Order: elemOrder(ie), Collation: sqlName(ie.Collation), Opclass: sqlName(ie.Opclass)}
		if ie.Name == "" {
			unqualify(ie.Expr, t)
			k.Expr = deparseExpr(ie.Expr)
		}
		elems = append(elems, k.sql()+" WITH "+operatorSQL(pgtree.Strings(l.Items[1].GetList().GetItems())))
	}
	s := "EXCLUDE"
	if con.AccessMethod != "" && con.AccessMethod != "btree" {
		s += " USING " + QuoteIdent(con.AccessMethod)
	}
	s += " (" + strings.Join(elems, ", ") + ")"
	if len(con.Including) > 0 {
		s += " INCLUDE (" + identList(pgtree.Strings(con.Including)) + ")"
	}
	if con.WhereClause != nil {
		unqualify(con.WhereClause, t)
		s += " WHERE (" + deparseExpr(con.WhereClause) + ")"
	}
	if con.Deferrable {
		s += " DEFERRABLE"
	}
	if con.Initdeferred {
		s += " INITIALLY DEFERRED"
	}
	return s
}

// exclusionNames are the column names of an exclusion constraint's
// index, as ChooseIndexColumnNames gives them: an element's column, or
// its expression's name ("lower", else "expr"), made distinct.
func exclusionNames(con *pg.Constraint) []string {
	var names []string
	for _, ex := range con.Exclusions {
		ie := ex.GetList().GetItems()
		if len(ie) == 0 || ie[0].GetIndexElem() == nil {
			continue
		}
		e := ie[0].GetIndexElem()
		switch name := columnName(e.Expr); {
		case e.Name != "":
			names = append(names, e.Name)
		case name == "?column?":
			names = append(names, "expr")
		default:
			names = append(names, name)
		}
	}
	return uniqueColumnNames(names)
}

// operatorSQL writes an operator's name, qualified as OPERATOR(s.op).
func operatorSQL(name []string) string {
	if len(name) == 1 {
		return name[0]
	}
	return "OPERATOR(" + QuoteIdent(name[0]) + "." + strings.Join(name[1:], ".") + ")"
}

// renameInExclusion renames a column in an exclusion constraint's text:
// its elements, their expressions, INCLUDE and WHERE.
func renameInExclusion(text string, t QualName, from, to string) string {
	return rewriteExclusion(text, t, func(con *pg.Constraint) bool {
		changed := renameRefs(con.WhereClause, t.Name, from, to)
		for _, ex := range con.Exclusions {
			if ie := ex.GetList().GetItems(); len(ie) > 0 && ie[0].GetIndexElem() != nil {
				e := ie[0].GetIndexElem()
				if e.Name == from {
					e.Name, changed = to, true
				}
				changed = renameRefs(e.Expr, t.Name, from, to) || changed
			}
		}
		for _, n := range con.Including {
			if s := n.GetString_(); s != nil && s.Sval == from {
				s.Sval, changed = to, true
			}
		}
		return changed
	})
}

// parseExclusion parses an exclusion constraint's text as the catalog
// holds it; nil when it does not parse (an older release held only its
// columns).
func parseExclusion(text string) *pg.Constraint {
	tree, err := pgtree.Parse("ALTER TABLE t ADD " + text)
	if err != nil || len(tree.Stmts) != 1 {
		return nil
	}
	cmds := tree.Stmts[0].Stmt.GetAlterTableStmt().GetCmds()
	if len(cmds) != 1 {
		return nil
	}
	con := cmds[0].GetAlterTableCmd().GetDef().GetConstraint()
	if con == nil || con.Contype != pg.ConstrType_CONSTR_EXCLUSION {
		return nil
	}
	return con
}

// renameInPartitionKey renames a column in a PARTITION BY key as the
// catalog holds it ("LIST (kind, (lower(name)))").
func renameInPartitionKey(key, table, from, to string) string {
	if key == "" || !mayName(key, from) {
		return key
	}
	tree, err := pgtree.Parse("CREATE TABLE t () PARTITION BY " + key)
	if err != nil || len(tree.Stmts) != 1 {
		return key
	}
	ps := tree.Stmts[0].Stmt.GetCreateStmt().GetPartspec()
	if ps == nil {
		return key
	}
	changed := false
	for _, p := range ps.PartParams {
		pe := p.GetPartitionElem()
		switch {
		case pe == nil:
		case pe.Name == from:
			pe.Name, changed = to, true
		case pe.Expr != nil:
			changed = renameRefs(pe.Expr, table, from, to) || changed
		}
	}
	if !changed {
		return key
	}
	return partitionBy(ps)
}

// renameRefs renames, in place, the column references under n that name
// column from of table.
func renameRefs(n *pg.Node, table, from, to string) bool {
	changed := false
	pgtree.Walk(n, func(m *pg.Node) {
		cr := m.GetColumnRef()
		if cr == nil || len(cr.Fields) == 0 {
			return
		}
		names := pgtree.Strings(cr.Fields)
		if len(names) != len(cr.Fields) || names[len(names)-1] != from ||
			len(names) > 1 && names[len(names)-2] != table {
			return
		}
		cr.Fields[len(cr.Fields)-1] = &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: to}}}
		changed = true
	})
	return changed
}

// unqualify drops t's name from the column references under n that
// carry it (m.qty, public.m.qty), in place, as PostgreSQL prints an
// expression over one table. The catalog then holds nothing a rename of
// the table would leave stale. A reference qualified by another name is
// a composite column's field and stays.
func unqualify(n *pg.Node, t QualName) {
	pgtree.Walk(n, func(m *pg.Node) {
		cr := m.GetColumnRef()
		if cr == nil || len(cr.Fields) < 2 {
			return
		}
		names := pgtree.Strings(cr.Fields)
		k := len(names)
		if k != len(cr.Fields) || names[k-2] != t.Name || k > 2 && names[k-3] != t.Schema {
			return
		}
		cr.Fields = cr.Fields[k-1:]
	})
}

// mayName says whether SQL text could name the identifier: its letters
// appear in it, bare or quoted. It spares the parse for the expressions
// that cannot.
func mayName(sql, ident string) bool {
	return strings.Contains(sql, ident) || strings.Contains(sql, strings.ReplaceAll(ident, `"`, `""`))
}
