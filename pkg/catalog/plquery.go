package catalog

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Queries PL/pgSQL asks about the schema (IF EXISTS (SELECT 1 FROM
// information_schema.tables WHERE …), FOR r IN SELECT … FROM
// information_schema.columns …) are answered from the catalog. The
// catalog does not hold everything PostgreSQL's system catalogs do: plain
// indexes, sequences, triggers, system relations. Each system relation
// therefore lists, beside its rows, phantom rows standing for what it
// leaves out, with unknown in every column it cannot fill. A query whose
// WHERE might accept a phantom is incomplete: the rows it finds are
// certain, its emptiness is not.

// result is what a query returned.
type result struct {
	cols     []string
	rows     [][]value
	complete bool
}

// scalar is the value of a scalar subquery: the only row's first column.
func (r *result) scalar() value {
	switch {
	case len(r.rows) == 0 && r.complete:
		return null
	case len(r.rows) == 1 && r.complete && len(r.rows[0]) > 0:
		return r.rows[0][0]
	}
	return unknown
}

// relation is one source of a query, with its rows and phantoms.
type relation struct {
	name     string
	cols     []string
	rows     [][]value
	phantoms [][]value
}

func (r *relation) column(name string) int { return slices.Index(r.cols, name) }

// maxQueryRows bounds the rows the queries of one Apply may combine: a
// cross join of two system relations over ten thousand tables is a
// hundred million.
const maxQueryRows = 20_000_000

func (e *evaluator) query(s *pg.SelectStmt, outer *row) (*result, error) {
	switch {
	case s.Op != pg.SetOperation_SETOP_NONE:
		return nil, stop("UNION, INTERSECT or EXCEPT in a query")
	case s.WithClause != nil:
		return nil, stop("WITH in a query")
	case len(s.ValuesLists) > 0:
		return e.values(s, outer)
	case len(s.GroupClause) > 0 || s.HavingClause != nil || len(s.WindowClause) > 0:
		return nil, stop("GROUP BY in a query")
	case s.LockingClause != nil:
		return nil, stop("FOR UPDATE in a query")
	}
	sources, quals, err := e.sources(s.FromClause, outer)
	if err != nil {
		return nil, err
	}
	where := s.WhereClause
	for _, q := range quals {
		where = andNode(where, q)
	}
	rels, err := e.materialise(sources, where, outer)
	if err != nil {
		return nil, err
	}
	res := &result{complete: true}
	if err := e.checkPhantoms(rels, where, outer, res); err != nil {
		return nil, err
	}
	var matched []*row
	err = e.combine(rels, &row{outer: outer}, func(r *row) error {
		if where != nil {
			v, err := e.eval(where, r)
			if err != nil {
				return err
			}
			if !v.known() {
				res.complete = false
				return nil
			}
			if b, ok := v.asBool(); !ok || !b {
				return nil
			}
		}
		if err := e.charge(int64(len(r.sources)+1) * valueOverhead); err != nil {
			return err
		}
		matched = append(matched, r.copy())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e.project(s, rels, matched, res, outer)
}

// fromItem is a source before its rows are read.
type fromItem struct {
	alias string
	def   *relDef
	rel   *relation // already materialised (unnest, subquery)
}

// sources flattens FROM into relations and the join conditions to check.
func (e *evaluator) sources(from []*pg.Node, outer *row) ([]fromItem, []*pg.Node, error) {
	var items []fromItem
	var quals []*pg.Node
	var add func(n *pg.Node) error
	add = func(n *pg.Node) error {
		switch {
		case n.GetRangeVar() != nil:
			rv := n.GetRangeVar()
			def, err := e.relationDef(rv)
			if err != nil {
				return err
			}
			alias := rv.Relname
			if rv.Alias != nil {
				alias = rv.Alias.Aliasname
			}
			items = append(items, fromItem{alias: alias, def: def})
		case n.GetJoinExpr() != nil:
			j := n.GetJoinExpr()
			if j.Jointype != pg.JoinType_JOIN_INNER || len(j.UsingClause) > 0 || j.IsNatural {
				return stop("%s join in a query", strings.TrimPrefix(j.Jointype.String(), "JOIN_"))
			}
			if err := add(j.Larg); err != nil {
				return err
			}
			if err := add(j.Rarg); err != nil {
				return err
			}
			if j.Quals != nil {
				quals = append(quals, j.Quals)
			}
		case n.GetRangeFunction() != nil:
			rel, alias, err := e.rangeFunction(n.GetRangeFunction(), outer)
			if err != nil {
				return err
			}
			items = append(items, fromItem{alias: alias, rel: rel})
		case n.GetRangeSubselect() != nil:
			rs := n.GetRangeSubselect()
			sel := rs.Subquery.GetSelectStmt()
			if sel == nil || rs.Alias == nil || rs.Lateral {
				return stop("subquery in FROM")
			}
			res, err := e.query(sel, outer)
			if err != nil {
				return err
			}
			rel := &relation{name: rs.Alias.Aliasname, cols: res.cols, rows: res.rows}
			if !res.complete {
				rel.phantoms = [][]value{unknownRow(len(res.cols))}
			}
			items = append(items, fromItem{alias: rs.Alias.Aliasname, rel: rel})
		default:
			return stop("FROM item %q", excerpt(deparseExpr(n)))
		}
		return nil
	}
	for _, n := range from {
		if err := add(n); err != nil {
			return nil, nil, err
		}
	}
	if len(items) > 3 {
		return nil, nil, stop("a query over %d relations", len(items))
	}
	return items, quals, nil
}

func unknownRow(n int) []value {
	r := make([]value, n)
	for i := range r {
		r[i] = unknown
	}
	return r
}

// rangeFunction reads unnest(array) and generate_series(a, b) in FROM.
func (e *evaluator) rangeFunction(rf *pg.RangeFunction, outer *row) (*relation, string, error) {
	if len(rf.Functions) != 1 || rf.Ordinality || rf.Lateral {
		return nil, "", stop("function in FROM")
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 || items[0].GetFuncCall() == nil {
		return nil, "", stop("function in FROM")
	}
	f := items[0].GetFuncCall()
	_, name := qualFromList(pgtree.Strings(f.Funcname))
	var args []value
	for _, a := range f.Args {
		v, err := e.eval(a, outer)
		if err != nil {
			return nil, "", err
		}
		if !v.known() {
			return nil, "", stop("%s over %s", name, errUnknownValue)
		}
		args = append(args, v)
	}
	alias, col := name, name
	if rf.Alias != nil {
		alias, col = rf.Alias.Aliasname, rf.Alias.Aliasname
		if len(rf.Alias.Colnames) == 1 {
			col = rf.Alias.Colnames[0].GetString_().GetSval()
		}
	}
	rel := &relation{name: name, cols: []string{col}}
	switch {
	case name == "unnest" && len(args) == 1 && args[0].kind == vArray:
		if err := e.reserve(int64(len(args[0].arr)) * 2 * valueOverhead); err != nil {
			return nil, "", err
		}
		for _, v := range args[0].arr {
			rel.rows = append(rel.rows, []value{v})
		}
	case name == "unnest" && len(args) == 1 && args[0].kind == vNull:
	case name == "generate_series" && len(args) == 2:
		lo, ok1 := args[0].asInt()
		hi, ok2 := args[1].asInt()
		if !ok1 || !ok2 || hi-lo > maxLoopIterations {
			return nil, "", stop("generate_series(%s, %s)", brief(args[0]), brief(args[1]))
		}
		for i := lo; i <= hi; i++ {
			rel.rows = append(rel.rows, []value{integer(i)})
		}
	default:
		return nil, "", stop("%s(…) in FROM", name)
	}
	return rel, alias, nil
}

// materialise reads each source's rows, narrowed by the equalities of
// WHERE that pin one of its columns to a value known before the scan.
func (e *evaluator) materialise(items []fromItem, where *pg.Node, outer *row) ([]boundRel, error) {
	var out []boundRel
	for _, it := range items {
		rel := it.rel
		if rel == nil {
			eq := e.pinned(it, items, where, outer)
			rel = it.def.build(e.a, eq)
		}
		// A system relation's rows are read from the catalog: a query in
		// a loop reads them every turn.
		if err := e.charge(int64(len(rel.rows)) * int64(len(rel.cols)+1) * valueOverhead); err != nil {
			return nil, err
		}
		out = append(out, boundRel{alias: it.alias, rel: rel})
	}
	return out, nil
}

type boundRel struct {
	alias string
	rel   *relation
}

// pinned finds `col = expr` conjuncts of where that name a column of it
// and whose other side reads no column of the query: their values narrow
// the scan.
func (e *evaluator) pinned(it fromItem, items []fromItem, where *pg.Node, outer *row) map[string]value {
	eq := map[string]value{}
	for _, c := range conjuncts(where) {
		x := c.GetAExpr()
		if x == nil || x.Kind != pg.A_Expr_Kind_AEXPR_OP || len(x.Name) != 1 || x.Name[0].GetString_().GetSval() != "=" {
			continue
		}
		for _, side := range [][2]*pg.Node{{x.Lexpr, x.Rexpr}, {x.Rexpr, x.Lexpr}} {
			col := columnOf(side[0], it.alias, it.def.cols)
			if col == "" || readsColumns(side[1], items) {
				continue
			}
			// A stand-in pins nothing: it may equal names it is not.
			if v, err := e.eval(side[1], outer); err == nil && v.known() && v.kind != vNull && !isStandIn(v) {
				eq[col] = v
			}
		}
	}
	return eq
}

func conjuncts(n *pg.Node) []*pg.Node {
	if n == nil {
		return nil
	}
	if b := n.GetBoolExpr(); b != nil && b.Boolop == pg.BoolExprType_AND_EXPR {
		var out []*pg.Node
		for _, a := range b.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*pg.Node{n}
}

func andNode(a, b *pg.Node) *pg.Node {
	if a == nil {
		return b
	}
	return &pg.Node{Node: &pg.Node_BoolExpr{BoolExpr: &pg.BoolExpr{Boolop: pg.BoolExprType_AND_EXPR, Args: []*pg.Node{a, b}}}}
}

// columnOf names the column of a relation with alias and cols that n
// refers to, or "".
func columnOf(n *pg.Node, alias string, cols []string) string {
	c := n.GetColumnRef()
	if c == nil {
		return ""
	}
	parts := pgtree.Strings(c.Fields)
	switch {
	case len(parts) == 1 && slices.Contains(cols, parts[0]):
		return parts[0]
	case len(parts) == 2 && parts[0] == alias && slices.Contains(cols, parts[1]):
		return parts[1]
	}
	return ""
}

// readsColumns reports whether n may read a column of the query's
// sources; other names are variables.
func readsColumns(n *pg.Node, items []fromItem) bool {
	found := false
	pgtree.Walk(n, func(c *pg.Node) {
		cr := c.GetColumnRef()
		if cr == nil || found {
			return
		}
		parts := pgtree.Strings(cr.Fields)
		switch {
		case len(parts) != len(cr.Fields) || len(parts) > 2:
			found = true // a star, or a name we do not read
			return
		case len(parts) == 2:
			for _, it := range items {
				found = found || it.alias == parts[0]
			}
			return
		}
		for _, it := range items {
			cols := it.def.colsOf()
			if it.rel != nil {
				cols = it.rel.cols
			}
			found = found || slices.Contains(cols, parts[0])
		}
	})
	return found
}

// checkPhantoms marks res incomplete when where may accept a row the
// catalog does not hold: a phantom of one source, combined with any row
// or phantom of the others.
func (e *evaluator) checkPhantoms(rels []boundRel, where *pg.Node, outer *row, res *result) error {
	for i, br := range rels {
		if len(br.rel.phantoms) > 0 && where == nil {
			res.complete = false
			return nil
		}
		for _, ph := range br.rel.phantoms {
			sets := make([][][]value, len(rels))
			for j, other := range rels {
				sets[j] = append(slices.Clip(other.rel.rows), other.rel.phantoms...)
			}
			sets[i] = [][]value{ph}
			accepted := false
			err := e.combineSets(rels, sets, 0, &row{outer: outer}, func(r *row) error {
				v, err := e.eval(where, r)
				if err != nil {
					return err
				}
				if b, ok := v.asBool(); v.kind != vNull && (!ok || b) {
					accepted = true
					return errAccepted
				}
				return nil
			})
			if err != nil && err != errAccepted {
				return err
			}
			if accepted {
				res.complete = false
				return nil
			}
		}
	}
	return nil
}

var errAccepted = stop("(internal: a phantom row is accepted)")

// combineSets is combine over given row sets.
func (e *evaluator) combineSets(rels []boundRel, sets [][][]value, i int, r *row, f func(*row) error) error {
	if i == len(rels) {
		if err := e.calls.scan(); err != nil {
			return err
		}
		return f(r)
	}
	for _, vals := range sets[i] {
		r.sources = append(r.sources[:i], boundSource{alias: rels[i].alias, rel: rels[i].rel, vals: vals})
		if err := e.combineSets(rels, sets, i+1, r, f); err != nil {
			return err
		}
	}
	return nil
}

// combine calls f with every combination of the sources' rows.
func (e *evaluator) combine(rels []boundRel, r *row, f func(*row) error) error {
	sets := make([][][]value, len(rels))
	for i, br := range rels {
		sets[i] = br.rel.rows
	}
	return e.combineSets(rels, sets, 0, r, f)
}

func (r *row) copy() *row {
	return &row{sources: slices.Clone(r.sources), outer: r.outer}
}

// project evaluates the select list over the matched rows, with count(),
// DISTINCT, ORDER BY, OFFSET and LIMIT.
func (e *evaluator) project(s *pg.SelectStmt, rels []boundRel, matched []*row, res *result, outer *row) (*result, error) {
	if len(rels) == 0 {
		matched = []*row{{outer: outer}}
	}
	if agg, ok, err := e.aggregate(s, matched, res); ok || err != nil {
		return agg, err
	}
	rows, err := e.targets(s, rels, matched, res)
	if err != nil {
		return nil, err
	}
	if rows, err = e.sortRows(s, rows, res.cols); err != nil {
		return nil, err
	}
	for _, r := range rows {
		res.rows = append(res.rows, r.vals)
	}
	if len(s.DistinctClause) > 0 {
		if res.rows, err = distinct(res.rows); err != nil {
			return nil, err
		}
	}
	if res.rows, err = e.window(s, res.rows, outer); err != nil {
		return nil, err
	}
	return res, nil
}

// outRow is a projected row, with the source row that ORDER BY may
// still read columns of.
type outRow struct {
	vals []value
	src  *row
}

// targets evaluates the select list over each matched row; * and a.*
// expand to their sources' columns. It names res's columns, from the
// relations, whether or not a row matched.
func (e *evaluator) targets(s *pg.SelectStmt, rels []boundRel, matched []*row, res *result) ([]outRow, error) {
	res.cols = nil
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		qual, star := starOf(rt)
		if !star {
			res.cols = append(res.cols, targetName(rt))
			continue
		}
		for _, br := range rels {
			if qual == "" || qual == br.alias {
				res.cols = append(res.cols, br.rel.cols...)
			}
		}
	}
	var rows []outRow
	for _, m := range matched {
		var vals []value
		for _, t := range s.TargetList {
			rt := t.GetResTarget()
			if qual, star := starOf(rt); star {
				// A row's sources are the query's relations, in order.
				for _, src := range m.sources {
					if qual == "" || qual == src.alias {
						vals = append(vals, src.vals...)
					}
				}
				continue
			}
			v, err := e.eval(rt.Val, m)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		rows = append(rows, outRow{vals, m})
	}
	return rows, nil
}

// starOf reports whether a select list's target is * or a.*, and a.
func starOf(rt *pg.ResTarget) (qual string, star bool) {
	cr := rt.Val.GetColumnRef()
	if cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil {
		return "", false
	}
	if len(cr.Fields) == 2 {
		qual = cr.Fields[0].GetString_().GetSval()
	}
	return qual, true
}

// sortRows orders rows by ORDER BY, whose keys are output columns (by
// name or position) or expressions over the source row. NULLs sort
// last ascending, as PostgreSQL's default; a key of unknown value
// stops, as the order would be a guess.
func (e *evaluator) sortRows(s *pg.SelectStmt, rows []outRow, cols []string) ([]outRow, error) {
	if len(s.SortClause) == 0 {
		return rows, nil
	}
	keys := make([][]value, len(rows))
	for i, r := range rows {
		for _, sc := range s.SortClause {
			sb := sc.GetSortBy()
			var v value
			var err error
			if idx := outputIndex(sb.Node, cols); idx >= 0 {
				v = r.vals[idx]
			} else if v, err = e.eval(sb.Node, r.src); err != nil {
				return nil, err
			}
			if !v.known() {
				return nil, stop("ORDER BY over %s", errUnknownValue)
			}
			keys[i] = append(keys[i], v)
		}
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	var cmpErr error
	slices.SortStableFunc(idx, func(a, b int) int {
		for k, sc := range s.SortClause {
			c, ok := sortCompare(keys[a][k], keys[b][k])
			if !ok {
				cmpErr = stop("ORDER BY over values of different types")
			}
			if sc.GetSortBy().SortbyDir == pg.SortByDir_SORTBY_DESC {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	if cmpErr != nil {
		return nil, cmpErr
	}
	sorted := make([]outRow, len(rows))
	for i, j := range idx {
		sorted[i] = rows[j]
	}
	return sorted, nil
}

// sortCompare compares two ORDER BY keys, NULL after every value.
func sortCompare(x, y value) (int, bool) {
	switch {
	case x.kind == vNull && y.kind == vNull:
		return 0, true
	case x.kind == vNull:
		return 1, true
	case y.kind == vNull:
		return -1, true
	}
	return compare(x, y)
}

// distinct keeps the first of each run of equal rows, in order. Rows
// holding a value or a name the catalog does not hold may be one row or
// several, so how many remain is not known.
func distinct(rows [][]value) ([][]value, error) {
	seen := map[string]bool{}
	var uniq [][]value
	for _, r := range rows {
		if len(rows) > 1 && slices.ContainsFunc(r, func(v value) bool { return !v.known() || isStandIn(v) }) {
			return nil, stop("DISTINCT over %s", errUnknownValue)
		}
		k := rowKey(r)
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, r)
		}
	}
	return uniq, nil
}

// window applies OFFSET, then LIMIT. NULL leaves either out, as in
// PostgreSQL; a negative one is PostgreSQL's error, and a bound of
// unknown value stops.
func (e *evaluator) window(s *pg.SelectStmt, rows [][]value, outer *row) ([][]value, error) {
	bound := func(n *pg.Node, what string) (int64, bool, error) {
		if n == nil {
			return 0, false, nil
		}
		v, err := e.eval(n, outer)
		if err != nil {
			return 0, false, err
		}
		if v.kind == vNull {
			return 0, false, nil
		}
		i, ok := v.asInt()
		switch {
		case !v.known():
			return 0, false, stop("%s over %s", what, errUnknownValue)
		case !ok:
			return 0, false, stop("%s of %s", what, brief(v))
		case i < 0:
			return 0, false, stop("%s must not be negative", what)
		}
		return i, true, nil
	}
	off, ok, err := bound(s.LimitOffset, "OFFSET")
	if err != nil {
		return nil, err
	}
	if ok {
		rows = rows[min(off, int64(len(rows))):]
	}
	limit, ok, err := bound(s.LimitCount, "LIMIT")
	if err != nil {
		return nil, err
	}
	if ok && limit < int64(len(rows)) {
		rows = rows[:limit]
	}
	return rows, nil
}

func rowKey(r []value) string {
	var b strings.Builder
	for _, v := range r {
		b.WriteByte(byte(v.kind))
		b.WriteString(v.String())
		b.WriteByte(0)
	}
	return b.String()
}

func outputIndex(n *pg.Node, cols []string) int {
	if c := n.GetColumnRef(); c != nil && len(c.Fields) == 1 {
		return slices.Index(cols, c.Fields[0].GetString_().GetSval())
	}
	if c := n.GetAConst(); c != nil && c.GetIval() != nil {
		if i := int(c.GetIval().Ival) - 1; i >= 0 && i < len(cols) {
			return i
		}
	}
	return -1
}

func targetName(rt *pg.ResTarget) string {
	if rt.Name != "" {
		return rt.Name
	}
	switch {
	case rt.Val.GetColumnRef() != nil:
		f := rt.Val.GetColumnRef().Fields
		return f[len(f)-1].GetString_().GetSval()
	case rt.Val.GetFuncCall() != nil:
		_, n := qualFromList(pgtree.Strings(rt.Val.GetFuncCall().Funcname))
		return n
	case rt.Val.GetSubLink() != nil && rt.Val.GetSubLink().SubLinkType == pg.SubLinkType_EXISTS_SUBLINK:
		return "exists"
	}
	return "?column?"
}

// aggregate handles a select list of count(…): one row, whose counts are
// unknown when the query is incomplete.
func (e *evaluator) aggregate(s *pg.SelectStmt, matched []*row, res *result) (*result, bool, error) {
	hasAgg := false
	for _, t := range s.TargetList {
		if f := t.GetResTarget().Val.GetFuncCall(); f != nil {
			_, n := qualFromList(pgtree.Strings(f.Funcname))
			switch n {
			case "count":
				hasAgg = true
			case "max", "min", "sum", "avg", "array_agg", "string_agg", "bool_or", "bool_and", "every":
				return nil, true, stop("aggregate %s()", n)
			}
		}
	}
	if !hasAgg {
		return nil, false, nil
	}
	out := &result{complete: true}
	var vals []value
	for _, t := range s.TargetList {
		rt := t.GetResTarget()
		f := rt.Val.GetFuncCall()
		if f == nil {
			return nil, true, stop("a select list mixing count() with other columns")
		}
		if _, n := qualFromList(pgtree.Strings(f.Funcname)); n != "count" || f.AggFilter != nil {
			return nil, true, stop("aggregate in a select list")
		}
		if !f.AggStar && len(f.Args) != 1 {
			return nil, true, stop("count() without one argument")
		}
		v, err := e.count(f, matched)
		if err != nil {
			return nil, true, err
		}
		if !v.known() {
			res.complete = false
		}
		if !res.complete {
			v = unknown // the phantoms may add to the count
		}
		vals = append(vals, v)
		out.cols = append(out.cols, targetName(rt))
	}
	out.rows = [][]value{vals}
	return out, true, nil
}

// count is count(*), count(x) or count(DISTINCT x) over the matched
// rows: unknown when a value counted is unknown, or when DISTINCT meets
// a name the catalog does not hold, which may equal another.
func (e *evaluator) count(f *pg.FuncCall, matched []*row) (value, error) {
	if f.AggStar {
		return integer(int64(len(matched))), nil
	}
	n := int64(0)
	seen := map[string]bool{}
	for _, m := range matched {
		v, err := e.eval(f.Args[0], m)
		if err != nil {
			return unknown, err
		}
		switch {
		case !v.known() || f.AggDistinct && isStandIn(v):
			return unknown, nil
		case v.kind == vNull:
			continue
		case f.AggDistinct:
			if err := e.reserve(e.size(v)); err != nil {
				return unknown, err
			}
			k := rowKey([]value{v})
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		n++
	}
	return integer(n), nil
}

func (e *evaluator) values(s *pg.SelectStmt, outer *row) (*result, error) {
	res := &result{complete: true}
	for _, l := range s.ValuesLists {
		var vals []value
		for _, it := range l.GetList().GetItems() {
			v, err := e.eval(it, outer)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
		res.rows = append(res.rows, vals)
	}
	if len(res.rows) > 0 {
		for i := range res.rows[0] {
			res.cols = append(res.cols, "column"+string(rune('1'+i)))
		}
	}
	return res, nil
}
