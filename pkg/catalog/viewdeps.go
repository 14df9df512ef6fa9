package catalog

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// viewsUsing lists the views that read column col of table t, as
// PostgreSQL records a view's dependency on each column it names: by a
// reference qualified with the table's name or alias, by an unqualified
// name that only t among the view's relations has, or by a * over t
// (expanded when the view was made). A reference it cannot place is not
// counted: refusing a migration PostgreSQL would take is worse than
// missing one it would refuse.
func (a *applier) viewsUsing(t *Table, col string) ([]QualName, error) {
	tq := t.QualName()
	var out []QualName
	for _, v := range a.cat.views {
		// A definition that names neither the column nor a * cannot
		// read it, and is not parsed.
		if !slices.Contains(v.Reads, tq) || !mayName(v.Definition, col) && !strings.Contains(v.Definition, "*") {
			continue
		}
		_, refs, star, err := a.columnRefs(v, tq, col)
		if err != nil {
			return nil, err
		}
		if star || len(refs) > 0 {
			out = append(out, v.QualName())
		}
	}
	slices.SortFunc(out, compareQual)
	return out, nil
}

// columnRefs parses v's definition and finds its references to column
// col of t, and whether a * over t reads it; tree is nil when the
// definition does not parse.
func (a *applier) columnRefs(v *View, tq QualName, col string) (tree *pg.ParseResult, refs []*pg.ColumnRef, star bool, err error) {
	if err := a.reparse.spend(v.Definition); err != nil {
		return nil, nil, false, err
	}
	tree, err = pgtree.Parse(v.Definition)
	if err != nil || len(tree.Stmts) == 0 {
		return nil, nil, false, nil
	}
	aliases := map[string]QualName{} // alias or name as written → relation
	var rels []QualName
	var all []*pg.ColumnRef
	pgtree.Walk(tree.Stmts[0].Stmt, func(n *pg.Node) {
		switch {
		case n.GetRangeVar() != nil:
			rv := n.GetRangeVar()
			q, kind := a.resolve(rv.Schemaname, rv.Relname)
			if kind == relNone {
				return
			}
			as := rv.Relname
			if rv.Alias != nil {
				as = rv.Alias.Aliasname
			}
			aliases[as] = q
			if !slices.Contains(rels, q) {
				rels = append(rels, q)
			}
		case n.GetColumnRef() != nil:
			all = append(all, n.GetColumnRef())
		}
	})
	for _, ref := range all {
		fields := ref.Fields
		if len(fields) == 0 {
			continue
		}
		name := ""
		if s := fields[len(fields)-1].GetString_(); s != nil {
			name = s.Sval
		}
		if name != col {
			continue
		}
		if len(fields) >= 2 {
			if q := fields[len(fields)-2].GetString_(); q != nil && aliases[q.Sval] == tq {
				refs = append(refs, ref)
			}
			continue
		}
		if a.onlyHas(rels, tq, col) {
			refs = append(refs, ref)
		}
	}
	return tree, refs, a.starOver(tree.Stmts[0].Stmt, tq), nil
}

// renameInViews follows a column rename into the definitions of the
// views that name it, as PostgreSQL shows them (a view holds columns by
// number): the reference takes the new name, and the view's column keeps
// its old one (SELECT o.d AS c).
func (a *applier) renameInViews(t *Table, from, to string) error {
	tq := t.QualName()
	for _, v := range a.cat.views {
		if !slices.Contains(v.Reads, tq) || !mayName(v.Definition, from) {
			continue
		}
		tree, refs, _, err := a.columnRefs(v, tq, from)
		if err != nil {
			return err
		}
		if len(refs) == 0 {
			continue
		}
		// An output the reference alone named keeps that name.
		pgtree.Walk(tree.Stmts[0].Stmt, func(n *pg.Node) {
			rt := n.GetResTarget()
			if rt == nil || rt.Name != "" {
				return
			}
			if cr := rt.GetVal().GetColumnRef(); cr != nil && slices.Contains(refs, cr) {
				rt.Name = from
			}
		})
		for _, ref := range refs {
			ref.Fields[len(ref.Fields)-1] = &pg.Node{Node: &pg.Node_String_{String_: &pg.String{Sval: to}}}
		}
		if def := deparseQuery(tree.Stmts[0].Stmt); def != "" {
			v.Definition = def
		}
	}
	return nil
}

// moveInViews follows a relation renamed or moved to another schema into
// the definitions of the views that read it, as pg_get_viewdef shows
// them: the new name, qualified when the search path will not find it,
// aliased by the old name where the definition wrote it bare, so that
// a.code still reads. It runs before the move, while the old name still
// resolves.
func (a *applier) moveInViews(from, to QualName) error {
	for _, v := range a.cat.views {
		if !slices.Contains(v.Reads, from) {
			continue
		}
		err := a.rewriteView(v, func(stmt *pg.Node) bool {
			ctes := map[string]bool{}
			pgtree.Walk(stmt, func(n *pg.Node) {
				if c := n.GetCommonTableExpr(); c != nil {
					ctes[c.Ctename] = true
				}
			})
			changed := false
			pgtree.Walk(stmt, func(n *pg.Node) {
				rv := n.GetRangeVar()
				if rv == nil || rv.Schemaname == "" && ctes[rv.Relname] {
					return
				}
				if q, kind := a.resolve(rv.Schemaname, rv.Relname); kind == relNone || q != from {
					return
				}
				if rv.Alias == nil && rv.Relname != to.Name {
					rv.Alias = &pg.Alias{Aliasname: rv.Relname}
				}
				rv.Relname = to.Name
				if rv.Schemaname != "" || !a.visibleAs(from, to) {
					rv.Schemaname = to.Schema
				}
				changed = true
			})
			return changed
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// rewriteView parses v's definition again, charged to the re-parse
// bound, lets change rewrite its tree in place, and prints it again when
// it changed: the view counterpart of rewriteExpr.
func (a *applier) rewriteView(v *View, change func(*pg.Node) bool) error {
	if err := a.reparse.spend(v.Definition); err != nil {
		return err
	}
	tree, err := pgtree.Parse(v.Definition)
	if err != nil || len(tree.Stmts) == 0 || !change(tree.Stmts[0].Stmt) {
		return nil
	}
	if def := deparseQuery(tree.Stmts[0].Stmt); def != "" {
		v.Definition = def
	}
	return nil
}

// visibleAs reports whether the search path will find relation from,
// moved to to, by its bare name.
func (a *applier) visibleAs(from, to QualName) bool {
	for _, s := range a.lookupPath() {
		if s == to.Schema {
			return true
		}
		if q := (QualName{s, to.Name}); q != from && a.kindOf(q) != relNone {
			return false
		}
	}
	return false
}

// onlyHas reports whether t is the one relation of rels with column col,
// so that an unqualified reference to it is t's.
func (a *applier) onlyHas(rels []QualName, tq QualName, col string) bool {
	if !slices.Contains(rels, tq) {
		return false
	}
	for _, q := range rels {
		if q == tq {
			continue
		}
		if t := a.cat.tables[q]; t != nil && t.Column(col) != nil {
			return false
		}
		if v := a.cat.views[q]; v != nil && slices.ContainsFunc(v.Columns, func(c *Column) bool { return strings.EqualFold(c.Name, col) }) {
			return false
		}
	}
	return true
}

// starOver reports whether a SELECT * of the view reads t: a * covers
// the FROM of its own query level only, not its subqueries'.
func (a *applier) starOver(root *pg.Node, tq QualName) bool {
	found := false
	pgtree.Walk(root, func(n *pg.Node) {
		sel := n.GetSelectStmt()
		if found || sel == nil {
			return
		}
		star := false
		for _, rt := range sel.TargetList {
			if cr := rt.GetResTarget().GetVal().GetColumnRef(); cr != nil && len(cr.Fields) == 1 && cr.Fields[0].GetAStar() != nil {
				star = true
			}
		}
		if !star {
			return
		}
		for _, from := range sel.FromClause {
			if a.fromReads(from, tq) {
				found = true
				return
			}
		}
	})
	return found
}

// fromReads reports whether a FROM item is t, or a join over it.
func (a *applier) fromReads(n *pg.Node, tq QualName) bool {
	switch {
	case n.GetRangeVar() != nil:
		q, _ := a.resolve(n.GetRangeVar().Schemaname, n.GetRangeVar().Relname)
		return q == tq
	case n.GetJoinExpr() != nil:
		return a.fromReads(n.GetJoinExpr().Larg, tq) || a.fromReads(n.GetJoinExpr().Rarg, tq)
	}
	return false
}
