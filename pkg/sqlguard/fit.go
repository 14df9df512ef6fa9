package sqlguard

import (
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Fit is the one verdict on whether an example's SQL fits a catalog,
// shared by every caller that asks: `check`, retrieval (a stale example
// leaves prompts, and votes for nothing when a relation it reads is
// gone), `examples list --stale` and
// `examples show`, the worker's warning, and the feedback guard. SQL
// fits when every relation it reads is placed (following renames) and
// every column it names resolves, qualified by its relation, or
// unqualified by one of the relations in scope, as PostgreSQL resolves
// it.
type Fit struct {
	Placement
	// Columns are the column renames the SQL follows.
	Columns []FollowedColumn
	// Unknown says, per column reference that resolves to nothing, why.
	Unknown []string
	cat     *catalog.Catalog
	schema  string
}

// Fit places q in the catalog n indexes, with schema the example's
// search_path ("" for none), and resolves its columns.
func (q *Query) Fit(n *Names, schema string) Fit {
	f := Fit{Placement: q.PlaceAll(n, schema), cat: n.cat, schema: schema}
	if len(f.Missing) > 0 {
		return f
	}
	f.Columns = q.FollowColumns(n, f.Placement)
	followed := map[string]bool{}
	for _, c := range f.Columns {
		for _, i := range c.refs {
			followed[strings.Join(q.columns[i].fields, ".")] = true
		}
	}
	sets := &columnSets{cat: n.cat, sets: map[catalog.QualName]map[string]bool{}}
	for _, ref := range q.refs {
		if followed[strings.Join(ref, ".")] {
			continue
		}
		if why := q.unresolved(sets, f.Placement, ref); why != "" && !slices.Contains(f.Unknown, why) {
			f.Unknown = append(f.Unknown, why)
		}
	}
	return f
}

// Err says why the SQL does not fit, or nil.
func (f Fit) Err() error {
	switch {
	case len(f.Missing) > 0 && f.schema != "":
		return fmt.Errorf("reads %s, not in schema %s or public of database %s (catalog version %d)", strings.Join(f.Missing, ", "), f.schema, f.cat.Database, f.cat.Version)
	case len(f.Missing) > 0:
		return fmt.Errorf("reads %s, which database %s (catalog version %d) has neither in public nor in one schema alone (say the example's schema)", strings.Join(f.Missing, ", "), f.cat.Database, f.cat.Version)
	case len(f.Unknown) > 0:
		return fmt.Errorf("%s (database %s, catalog version %d)", strings.Join(f.Unknown, "; "), f.cat.Database, f.cat.Version)
	}
	return nil
}

// unresolved says why a column reference resolves to nothing, or "".
func (q *Query) unresolved(sets *columnSets, p Placement, ref []string) string {
	// Names match in any case, as relations are placed: examples come
	// from query logs of tools that fold differently.
	col := strings.ToLower(ref[len(ref)-1])
	if systemColumns[col] {
		return ""
	}
	if len(ref) >= 2 {
		qual := ref[len(ref)-2]
		written, ok := q.aliases[strings.ToLower(qual)]
		if !ok {
			return "" // a subquery's, a CTE's or a function's row
		}
		cols, known := sets.of(p.at[written])
		if !known || cols[col] {
			return ""
		}
		return fmt.Sprintf("column %s.%s does not exist in %s", qual, ref[len(ref)-1], p.at[written].Key())
	}
	if q.named[col] || q.opaque {
		return ""
	}
	if _, ok := q.aliases[strings.ToLower(col)]; ok {
		return "" // a whole row, as in row_to_json(t)
	}
	var read []string
	for _, r := range q.Relations {
		at, ok := p.at[r]
		if !ok {
			continue
		}
		cols, known := sets.of(at)
		if !known || cols[col] {
			return ""
		}
		read = appendOnce(read, at.Key())
	}
	if len(read) == 0 {
		return ""
	}
	return fmt.Sprintf("column %s is in none of the relations it reads (%s)", ref[len(ref)-1], strings.Join(read, ", "))
}

// columnSets are the lower-case column names of the relations one Fit
// resolves against, each made once however many references read it.
type columnSets struct {
	cat  *catalog.Catalog
	sets map[catalog.QualName]map[string]bool // nil: not known
}

// of is a table's or view's column names; known is false when the
// catalog does not know them (a view it could not derive).
func (s *columnSets) of(q catalog.QualName) (cols map[string]bool, known bool) {
	if cols, ok := s.sets[q]; ok {
		return cols, cols != nil
	}
	var list []*catalog.Column
	if t := s.cat.Table(q); t != nil {
		list, known = t.Columns, true
	} else if v := s.cat.View(q); v != nil && len(v.Columns) > 0 {
		list, known = v.Columns, true
	}
	if known {
		cols = make(map[string]bool, len(list))
		for _, c := range list {
			cols[strings.ToLower(c.Name)] = true
		}
	}
	s.sets[q] = cols
	return cols, known
}

// noteNames records the column names a query makes itself, and sources
// whose columns it does not name.
func (q *Query) noteNames(n *pg.Node) {
	switch {
	case n.GetResTarget() != nil && n.GetResTarget().Name != "":
		q.named[strings.ToLower(n.GetResTarget().Name)] = true
	case n.GetAlias() != nil:
		q.named[strings.ToLower(n.GetAlias().Aliasname)] = true
		for _, c := range pgtree.Strings(n.GetAlias().Colnames) {
			q.named[strings.ToLower(c)] = true
		}
	case n.GetCommonTableExpr() != nil:
		q.named[strings.ToLower(n.GetCommonTableExpr().Ctename)] = true
		for _, c := range pgtree.Strings(n.GetCommonTableExpr().Aliascolnames) {
			q.named[strings.ToLower(c)] = true
		}
	case n.GetRangeFunction() != nil, n.GetRangeTableFunc() != nil:
		q.opaque = true
	case n.GetSelectStmt() != nil && len(n.GetSelectStmt().ValuesLists) > 0:
		q.opaque = true
	}
}
