package catalog

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

func (a *applier) comment(s *pg.CommentStmt) error {
	switch s.Objtype {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE:
		schema, name := qualFromList(listStrings(s.Object))
		q, kind := a.resolve(schema, name)
		switch kind {
		case relTable:
			a.cat.tables[q].Comment = s.Comment
			a.touch(a.cat.tables[q], touchAltered)
		case relView:
			a.cat.views[q].Comment = s.Comment
		default:
			return undefined("relation %s does not exist", displayName(schema, name))
		}
	case pg.ObjectType_OBJECT_COLUMN:
		parts := listStrings(s.Object)
		if len(parts) < 2 {
			return nil
		}
		colName := parts[len(parts)-1]
		schema, name := qualFromList(parts[:len(parts)-1])
		q, kind := a.resolve(schema, name)
		var cols []*Column
		switch kind {
		case relTable:
			cols = a.cat.tables[q].Columns
			a.touch(a.cat.tables[q], touchAltered)
		case relView:
			cols = a.cat.views[q].Columns
		default:
			return undefined("relation %s does not exist", displayName(schema, name))
		}
		i := slices.IndexFunc(cols, func(c *Column) bool { return c.Name == colName })
		switch {
		case i >= 0:
			cols[i].Comment = s.Comment
		case kind == relView:
		default:
			col, err := a.alterColumn(a.cat.tables[q], colName)
			if err != nil {
				return err
			}
			col.Comment = s.Comment
		}
	case pg.ObjectType_OBJECT_TYPE:
		schema, name := qualFromList(listStrings(s.Object))
		if q, ok := a.findEnum(schema, name); ok {
			a.cat.enums[q].Comment = s.Comment
		}
	case pg.ObjectType_OBJECT_SCHEMA:
		name := listStrings(s.Object)
		if len(name) == 1 {
			if _, ok := a.cat.schemas[name[0]]; !ok {
				return undefined("schema %s does not exist", QuoteIdent(name[0]))
			}
			a.cat.schemas[name[0]] = s.Comment
		}
	}
	return nil
}

func (a *applier) createEnum(s *pg.CreateEnumStmt) error {
	schema, name := qualFromList(pgtree.Strings(s.TypeName))
	if schema == "" {
		schema = a.creationSchema()
	}
	q := QualName{schema, name}
	if a.cat.enums[q] != nil {
		return duplicate("type %s already exists", q)
	}
	if _, ok := a.cat.schemas[schema]; !ok {
		a.cat.schemas[schema] = ""
	}
	labels := make([]string, 0, len(s.Vals))
	for _, v := range pgtree.Strings(s.Vals) {
		if slices.Contains(labels, v) {
			return invalid("enum label %q used more than once", v)
		}
		labels = append(labels, v)
	}
	a.cat.enums[q] = &Enum{Schema: schema, Name: name, Labels: labels}
	return nil
}

func (a *applier) alterEnum(s *pg.AlterEnumStmt) error {
	schema, name := qualFromList(pgtree.Strings(s.TypeName))
	q, ok := a.findEnum(schema, name)
	if !ok {
		return undefined("type %s does not exist", displayName(schema, name))
	}
	e := a.cat.enums[q]
	if s.OldVal != "" { // RENAME VALUE
		i := slices.Index(e.Labels, s.OldVal)
		if i < 0 {
			return undefined("%q is not an existing enum label of %s", s.OldVal, q)
		}
		if slices.Contains(e.Labels, s.NewVal) {
			return duplicate("enum label %q already exists in %s", s.NewVal, q)
		}
		e.Labels[i] = s.NewVal
		a.renameLabelInDefaults(q, s.OldVal, s.NewVal)
		return nil
	}
	if slices.Contains(e.Labels, s.NewVal) {
		if s.SkipIfNewValExists {
			return nil
		}
		return duplicate("enum label %q already exists in %s", s.NewVal, q)
	}
	at := len(e.Labels)
	if s.NewValNeighbor != "" {
		i := slices.Index(e.Labels, s.NewValNeighbor)
		if i < 0 {
			return undefined("%q is not an existing enum label of %s", s.NewValNeighbor, q)
		}
		at = i
		if s.NewValIsAfter {
			at = i + 1
		}
	}
	e.Labels = slices.Insert(e.Labels, at, s.NewVal)
	return nil
}

func (a *applier) createView(s *pg.ViewStmt) error {
	q := a.target(s.View)
	switch a.kindOf(q) {
	case relTable:
		return duplicate("relation %s already exists", q)
	case relView:
		if !s.Replace {
			return duplicate("relation %s already exists", q)
		}
	}
	v := &View{Schema: q.Schema, Name: q.Name, Definition: deparseQuery(s.Query)}
	if old := a.cat.views[q]; old != nil {
		v.Comment = old.Comment
	}
	v.Reads = a.reads(s.Query)
	v.Columns = a.queryColumns(s.Query, pgtree.Strings(s.Aliases))
	if err := targetList(v.Columns); err != nil {
		return err
	}
	a.cat.views[q] = v
	return nil
}

func (a *applier) createTableAs(s *pg.CreateTableAsStmt) error {
	if s.Into == nil || s.Into.Rel == nil {
		return nil
	}
	q := a.target(s.Into.Rel)
	if a.kindOf(q) != relNone {
		if s.IfNotExists {
			return nil
		}
		return duplicate("relation %s already exists", q)
	}
	cols := a.queryColumns(s.Query, pgtree.Strings(s.Into.ColNames))
	if err := targetList(cols); err != nil {
		return err
	}
	if s.Objtype == pg.ObjectType_OBJECT_MATVIEW {
		a.cat.views[q] = &View{Schema: q.Schema, Name: q.Name, Materialized: true,
			Definition: deparseQuery(s.Query), Reads: a.reads(s.Query), Columns: cols}
		return nil
	}
	if len(cols) > maxTableColumns {
		return invalid("tables can have at most %d columns (%s)", maxTableColumns, q)
	}
	a.cat.tables[q] = &Table{Schema: q.Schema, Name: q.Name, Columns: cols}
	a.touch(a.cat.tables[q], touchCreated)
	return nil
}

// selectIntoTable reads SELECT … INTO t FROM … as the CREATE TABLE t AS
// SELECT … it is. The query keeps its INTO: what reads a query's columns
// and relations passes over it (t does not exist yet).
func selectIntoTable(s *pg.SelectStmt) *pg.CreateTableAsStmt {
	return &pg.CreateTableAsStmt{Query: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: s}},
		Into: s.IntoClause, Objtype: pg.ObjectType_OBJECT_TABLE}
}

// reads lists the existing tables and views a query selects from, in order
// of appearance, leaving out its own CTE names. Names that resolve to
// nothing (functions, objects of extensions) are left out.
func (a *applier) reads(query *pg.Node) []QualName {
	ctes := map[string]bool{}
	pgtree.Walk(query, func(n *pg.Node) {
		if c := n.GetCommonTableExpr(); c != nil {
			ctes[c.Ctename] = true
		}
	})
	var out []QualName
	pgtree.Walk(query, func(n *pg.Node) {
		rv := n.GetRangeVar()
		if rv == nil || (rv.Schemaname == "" && ctes[rv.Relname]) {
			return
		}
		if q, kind := a.resolveRV(rv); kind != relNone && !slices.Contains(out, q) {
			out = append(out, q)
		}
	})
	return out
}

// renameLabelInDefaults follows a renamed enum label into the defaults
// that name it, as PostgreSQL does (a default holds the label's OID).
func (a *applier) renameLabelInDefaults(q QualName, from, to string) {
	old, repl := quoteLiteral(from)+"::"+typeName(q), quoteLiteral(to)+"::"+typeName(q)
	for _, t := range a.cat.tables {
		for _, c := range t.Columns {
			if c.Enum != nil && *c.Enum == q && c.Default == old {
				c.Default = repl
			}
		}
	}
}
