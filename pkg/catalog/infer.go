package catalog

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// queryColumns infers a query's output columns for views and CREATE TABLE
// AS: names as PostgreSQL picks them (alias, column name, function name,
// else ?column?) and types where they follow from the relations read, casts,
// constants, aggregates and operators. It is best effort: a column whose
// type cannot be told gets an empty Type.
func (a *applier) queryColumns(query *pg.Node, aliases []string) []*Column {
	out := a.selectColumns(query.GetSelectStmt(), map[string][]*Column{})
	for i, al := range aliases {
		if i < len(out) {
			out[i].Name = al
		}
	}
	return out
}

// scope maps the names visible in a FROM clause to their columns, in
// the order unqualified references search them; star is what * expands
// to (a JOIN … USING column once, before the others).
type scope struct {
	names map[string][]*Column
	order []string
	star  []*Column
}

func (a *applier) selectColumns(sel *pg.SelectStmt, ctes map[string][]*Column) []*Column {
	if sel == nil {
		return nil
	}
	if sel.Op != pg.SetOperation_SETOP_NONE {
		cols, nulls := a.setColumns(sel, ctes)
		for i, c := range cols {
			if nulls[i] {
				c.Type = "text" // NULL in every branch
			}
		}
		return cols
	}
	if sel.WithClause != nil {
		inner := make(map[string][]*Column, len(ctes))
		for k, v := range ctes {
			inner[k] = v
		}
		for _, cn := range sel.WithClause.Ctes {
			if cte := cn.GetCommonTableExpr(); cte != nil {
				cols := a.selectColumns(cte.Ctequery.GetSelectStmt(), inner)
				for i, al := range pgtree.Strings(cte.Aliascolnames) {
					if i < len(cols) {
						cols[i].Name = al
					}
				}
				inner[cte.Ctename] = cols
			}
		}
		ctes = inner
	}
	if len(sel.ValuesLists) > 0 {
		first := sel.ValuesLists[0].GetList()
		if first == nil {
			return nil
		}
		var out []*Column
		for i, v := range first.Items {
			out = append(out, &Column{Name: "column" + itoa(i+1), Type: a.exprType(v, &scope{})})
		}
		return out
	}
	sc := &scope{names: map[string][]*Column{}}
	for _, f := range sel.FromClause {
		sc.star = append(sc.star, a.addSource(sc, f, ctes)...)
	}
	var out []*Column
	for _, tn := range sel.TargetList {
		rt := tn.GetResTarget()
		if rt == nil {
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil && len(cr.Fields) > 0 && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			if len(cr.Fields) > 1 {
				out = append(out, copyColumns(sc.names[listStrings(cr.Fields[len(cr.Fields)-2])[0]])...)
			} else {
				out = append(out, copyColumns(sc.star)...)
			}
			continue
		}
		c := &Column{Name: rt.Name}
		if c.Name == "" {
			c.Name = columnName(rt.Val)
		}
		if src := sc.lookup(rt.Val); src != nil {
			c.Type = src.Type
			if src.Enum != nil {
				e := *src.Enum
				c.Enum = &e
			}
		} else {
			c.Type = a.exprType(rt.Val, sc)
			if c.Type == "" && onlyNulls(rt.Val) {
				c.Type = "text" // an output of unknown type is text
			}
			c.Enum = a.enumOfType(c.Type)
		}
		out = append(out, c)
	}
	return out
}

// setColumns resolves a set operation's columns: each of the common type
// of its branches' columns, a bare NULL taking the others' type. nulls
// says which columns are NULL in every branch.
func (a *applier) setColumns(sel *pg.SelectStmt, ctes map[string][]*Column) (cols []*Column, nulls []bool) {
	if sel.Op == pg.SetOperation_SETOP_NONE {
		cols = a.selectColumns(sel, ctes)
		nulls = make([]bool, len(cols))
		if len(sel.TargetList) != len(cols) {
			return cols, nulls // a * made more: the targets do not line up
		}
		for i, tn := range sel.TargetList {
			if rt := tn.GetResTarget(); rt != nil && onlyNulls(rt.Val) {
				cols[i].Type, nulls[i] = "", true
			}
		}
		return cols, nulls
	}
	left, ln := a.setColumns(sel.Larg, ctes)
	right, rn := a.setColumns(sel.Rarg, ctes)
	for i, c := range left {
		if i >= len(right) {
			break
		}
		if t := commonOf([]string{c.Type, right[i].Type}); t != c.Type {
			c.Type, c.Enum = t, right[i].Enum
		}
		ln[i] = ln[i] && rn[i]
	}
	return left, ln
}

func copyColumns(cols []*Column) []*Column {
	out := cloneColumns(cols)
	for _, c := range out {
		c.NotNull, c.Default, c.Generated, c.Identity, c.Comment = false, "", "", "", ""
	}
	return out
}

// addSource adds a FROM item's names to sc and returns the columns *
// takes from it.
func (a *applier) addSource(sc *scope, n *pg.Node, ctes map[string][]*Column) []*Column {
	add := func(name string, cols []*Column, colAliases []string) []*Column {
		cols = copyColumns(cols)
		for i, al := range colAliases {
			if i < len(cols) {
				cols[i].Name = al
			}
		}
		if _, seen := sc.names[name]; !seen {
			sc.order = append(sc.order, name)
		}
		sc.names[name] = cols
		return cols
	}
	switch {
	case n.GetRangeVar() != nil:
		rv := n.GetRangeVar()
		name, aliases := rv.Relname, []string(nil)
		if rv.Alias != nil {
			name, aliases = rv.Alias.Aliasname, pgtree.Strings(rv.Alias.Colnames)
		}
		if cols, ok := ctes[rv.Relname]; ok && rv.Schemaname == "" {
			return add(name, cols, aliases)
		}
		q, kind := a.resolveRV(rv)
		switch kind {
		case relTable:
			return add(name, a.cat.tables[q].Columns, aliases)
		case relView:
			return add(name, a.cat.views[q].Columns, aliases)
		}
	case n.GetRangeSubselect() != nil:
		rs := n.GetRangeSubselect()
		name, aliases := "", []string(nil)
		if rs.Alias != nil {
			name, aliases = rs.Alias.Aliasname, pgtree.Strings(rs.Alias.Colnames)
		}
		return add(name, a.selectColumns(rs.Subquery.GetSelectStmt(), ctes), aliases)
	case n.GetRangeFunction() != nil:
		rf := n.GetRangeFunction()
		cols := a.functionColumns(rf, sc)
		name, aliases := "", []string(nil)
		if len(cols) == 1 {
			name = cols[0].Name
		}
		if rf.Alias != nil {
			name, aliases = rf.Alias.Aliasname, pgtree.Strings(rf.Alias.Colnames)
			if len(aliases) == 0 && len(cols) == 1 {
				aliases = []string{name} // a scalar function's column takes the alias
			}
		}
		return add(name, cols, aliases)
	case n.GetJoinExpr() != nil:
		return a.join(sc, n.GetJoinExpr(), ctes)
	}
	return nil
}

// join adds both sides of a join. Columns USING (or NATURAL) joins on
// are one column each, of the two sides' common type, found before
// either side's by unqualified names and first in *.
func (a *applier) join(sc *scope, j *pg.JoinExpr, ctes map[string][]*Column) []*Column {
	left := a.addSource(sc, j.Larg, ctes)
	right := a.addSource(sc, j.Rarg, ctes)
	using := pgtree.Strings(j.UsingClause)
	if j.IsNatural {
		for _, l := range left {
			if slices.ContainsFunc(right, func(r *Column) bool { return r.Name == l.Name }) {
				using = append(using, l.Name)
			}
		}
	}
	if len(using) == 0 {
		return append(left, right...)
	}
	find := func(cols []*Column, name string) *Column {
		if i := slices.IndexFunc(cols, func(c *Column) bool { return c.Name == name }); i >= 0 {
			return cols[i]
		}
		return &Column{Name: name}
	}
	var merged []*Column
	for _, u := range using {
		l, r := find(left, u), find(right, u)
		c := &Column{Name: u, Type: commonOf([]string{l.Type, r.Type})}
		if c.Type == l.Type && l.Enum != nil {
			e := *l.Enum
			c.Enum = &e
		}
		merged = append(merged, c)
	}
	// Found first by unqualified names; a qualified one finds its side's.
	key := "\x00using" + itoa(len(sc.order))
	sc.names[key] = merged
	sc.order = append([]string{key}, sc.order...)
	rest := func(cols []*Column) []*Column {
		return slices.DeleteFunc(slices.Clone(cols), func(c *Column) bool { return slices.Contains(using, c.Name) })
	}
	return append(append(merged, rest(left)...), rest(right)...)
}

// functionColumns are the columns a function in FROM returns:
// generate_series its arguments' common type, unnest its array's
// element type, another function one column of its result type.
func (a *applier) functionColumns(rf *pg.RangeFunction, sc *scope) []*Column {
	if len(rf.Functions) != 1 || rf.Ordinality {
		return nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 || items[0].GetFuncCall() == nil {
		return nil
	}
	fc := items[0].GetFuncCall()
	names := pgtree.Strings(fc.Funcname)
	name := strings.ToLower(names[len(names)-1])
	col := &Column{Name: name}
	switch name {
	case "generate_series":
		if len(fc.Args) >= 2 {
			col.Type = withoutTypmod(a.commonType(fc.Args[:2], sc))
		}
	case "unnest":
		if len(fc.Args) != 1 {
			return nil
		}
		if t := a.exprType(fc.Args[0], sc); strings.HasSuffix(t, "[]") {
			col.Type = strings.TrimSuffix(t, "[]")
		}
	default:
		col.Type = a.exprType(items[0], sc)
	}
	return []*Column{col}
}

// lookup resolves a plain column reference against the FROM clause.
func (sc *scope) lookup(n *pg.Node) *Column {
	cr := n.GetColumnRef()
	if cr == nil {
		return nil
	}
	names := pgtree.Strings(cr.Fields)
	if len(names) == 0 {
		return nil
	}
	col := names[len(names)-1]
	if len(names) > 1 {
		for _, c := range sc.names[names[len(names)-2]] {
			if c.Name == col {
				return c
			}
		}
		return nil
	}
	for _, rel := range sc.order {
		for _, c := range sc.names[rel] {
			if c.Name == col {
				return c
			}
		}
	}
	return nil
}

// columnName is the name PostgreSQL gives an unaliased target (FigureColname).
func columnName(n *pg.Node) string {
	switch {
	case n.GetColumnRef() != nil:
		names := pgtree.Strings(n.GetColumnRef().Fields)
		if len(names) > 0 {
			return names[len(names)-1]
		}
	case n.GetTypeCast() != nil:
		if name := columnName(n.GetTypeCast().Arg); name != "?column?" {
			return name
		}
		names := pgtree.Strings(n.GetTypeCast().TypeName.Names)
		return names[len(names)-1]
	case n.GetFuncCall() != nil:
		names := pgtree.Strings(n.GetFuncCall().Funcname)
		return names[len(names)-1]
	case n.GetCoalesceExpr() != nil:
		return "coalesce"
	case n.GetCaseExpr() != nil:
		return "case"
	case n.GetMinMaxExpr() != nil:
		if n.GetMinMaxExpr().Op == pg.MinMaxOp_IS_GREATEST {
			return "greatest"
		}
		return "least"
	case n.GetSubLink() != nil && n.GetSubLink().SubLinkType == pg.SubLinkType_EXISTS_SUBLINK:
		return "exists"
	}
	return "?column?"
}

// Result types of common functions, for inference only.
var funcTypes = map[string]string{
	"count": "bigint", "row_number": "bigint", "rank": "bigint", "dense_rank": "bigint",
	"now": "timestamp with time zone", "clock_timestamp": "timestamp with time zone",
	"statement_timestamp": "timestamp with time zone", "transaction_timestamp": "timestamp with time zone",
	"bool_and": "boolean", "bool_or": "boolean", "every": "boolean",
	"string_agg": "text", "lower": "text", "upper": "text", "concat": "text", "concat_ws": "text",
	"json_object_agg": "json", "jsonb_object_agg": "jsonb", "to_json": "json", "to_jsonb": "jsonb",
	"row_to_json": "json", "array_to_json": "json", "json_build_array": "json", "jsonb_build_array": "jsonb",
	"array_to_string": "text", "left": "text", "right": "text", "btrim": "text", "ltrim": "text", "rtrim": "text",
	"initcap": "text", "repeat": "text", "to_char": "text", "split_part": "text", "regexp_replace": "text",
	"date_part": "double precision", "extract": "numeric", "date_trunc": "timestamp with time zone",
	"array_length": "integer", "cardinality": "integer", "position": "integer", "strpos": "integer",
	"percent_rank": "double precision", "cume_dist": "double precision", "ntile": "integer",
	"jsonb_typeof": "text", "json_typeof": "text", "current_setting": "text", "version": "text",
	"octet_length": "integer", "bit_length": "integer", "age": "interval", "make_interval": "interval",
	"to_timestamp": "timestamp with time zone", "to_date": "date", "to_number": "numeric",
	"substring": "text", "trim": "text", "replace": "text", "format": "text", "md5": "text",
	"length": "integer", "char_length": "integer", "random": "double precision",
	"gen_random_uuid": "uuid", "uuid_generate_v4": "uuid", "to_tsvector": "tsvector",
	"jsonb_build_object": "jsonb", "json_build_object": "json", "jsonb_agg": "jsonb", "json_agg": "json",
	"substr": "text", "lpad": "text", "rpad": "text", "reverse": "text", "translate": "text",
	"quote_ident": "text", "quote_literal": "text", "quote_nullable": "text", "chr": "text",
	"string_to_array": "text[]", "regexp_split_to_array": "text[]",
}

// sameAsArg are functions whose result has their first typed argument's type.
var sameAsArg = map[string]bool{"max": true, "min": true, "coalesce": true, "greatest": true,
	"least": true, "nullif": true, "first_value": true, "last_value": true, "lag": true,
	"lead": true, "any_value": true, "abs": true, "round": true, "sum": true}

func (a *applier) exprType(n *pg.Node, sc *scope) string {
	if n == nil {
		return ""
	}
	switch {
	case n.GetColumnRef() != nil:
		if c := sc.lookup(n); c != nil {
			return c.Type
		}
	case n.GetTypeCast() != nil:
		spec, _ := a.typeOf(n.GetTypeCast().TypeName)
		return spec.rendered
	case n.GetAConst() != nil:
		c := n.GetAConst()
		switch {
		case c.Isnull:
			return ""
		case c.GetIval() != nil:
			return "integer"
		case c.GetFval() != nil:
			return "numeric"
		case c.GetBoolval() != nil:
			return "boolean"
		case c.GetSval() != nil:
			return "text"
		}
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		names := pgtree.Strings(fc.Funcname)
		name := strings.ToLower(names[len(names)-1])
		if t, ok := funcTypes[name]; ok {
			return t
		}
		if f := a.findFunction(names); f != nil && f.Returns != "" {
			return f.Returns
		}
		if name == "array_agg" && len(fc.Args) > 0 {
			if t := a.exprType(fc.Args[0], sc); t != "" {
				return withoutTypmod(t) + "[]"
			}
		}
		if name == "avg" {
			switch withoutTypmod(a.firstType(fc.Args, sc)) {
			case "real", "double precision":
				return "double precision"
			case "interval":
				return "interval"
			}
			return "numeric"
		}
		if sameAsArg[name] {
			t := a.firstType(fc.Args, sc)
			if name == "sum" {
				switch t {
				case "smallint", "integer":
					return "bigint"
				case "bigint":
					return "numeric"
				}
			}
			if name == "coalesce" || name == "greatest" || name == "least" || name == "nullif" {
				return a.commonType(fc.Args, sc)
			}
			if (name == "max" || name == "min") && withoutTypmod(t) == "character varying" {
				return "text" // there is no max(varchar): max(text) takes it
			}
			// Aggregates and functions return their type without the
			// argument's typmod: sum(numeric(5,2)) is numeric.
			return withoutTypmod(t)
		}
	case n.GetCoalesceExpr() != nil:
		return a.commonType(n.GetCoalesceExpr().Args, sc)
	case n.GetMinMaxExpr() != nil:
		return a.commonType(n.GetMinMaxExpr().Args, sc)
	case n.GetCaseExpr() != nil:
		return a.commonType(caseResults(n.GetCaseExpr()), sc)
	case n.GetAArrayExpr() != nil:
		// ARRAY[…] of its elements' common type; nested ones are one
		// multidimensional array.
		if t := a.commonType(n.GetAArrayExpr().Elements, sc); t != "" {
			if strings.HasSuffix(t, "[]") {
				return t
			}
			return t + "[]"
		}
	case n.GetAIndirection() != nil:
		// An array's element, or a slice of it.
		ind := n.GetAIndirection()
		t := a.exprType(ind.Arg, sc)
		for _, i := range ind.Indirection {
			idx := i.GetAIndices()
			switch {
			case idx == nil || !strings.HasSuffix(t, "[]"):
				return "" // a field of a composite
			case !idx.IsSlice:
				t = strings.TrimSuffix(t, "[]")
			}
		}
		return t
	case n.GetBoolExpr() != nil, n.GetNullTest() != nil, n.GetBooleanTest() != nil:
		return "boolean"
	case n.GetSubLink() != nil:
		sl := n.GetSubLink()
		if sl.SubLinkType == pg.SubLinkType_EXPR_SUBLINK {
			if cols := a.selectColumns(sl.Subselect.GetSelectStmt(), nil); len(cols) == 1 {
				return cols[0].Type
			}
			return ""
		}
		if sl.SubLinkType == pg.SubLinkType_ARRAY_SUBLINK {
			if cols := a.selectColumns(sl.Subselect.GetSelectStmt(), nil); len(cols) == 1 && cols[0].Type != "" && !strings.HasSuffix(cols[0].Type, "[]") {
				return cols[0].Type + "[]"
			}
			return ""
		}
		return "boolean"
	case n.GetSqlvalueFunction() != nil:
		switch n.GetSqlvalueFunction().Op {
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
			return "date"
		case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
			return "timestamp with time zone"
		case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
			return "timestamp without time zone"
		default:
			return "text"
		}
	case n.GetAExpr() != nil:
		ae := n.GetAExpr()
		switch ae.Kind {
		case pg.A_Expr_Kind_AEXPR_OP:
			op := strings.Join(pgtree.Strings(ae.Name), "")
			switch op {
			case "=", "<>", "!=", "<", ">", "<=", ">=", "~~", "!~~", "~~*", "!~~*", "~", "~*", "!~", "!~*",
				"@>", "<@", "&&", "?", "?|", "?&", "@?", "@@", "<<", ">>", "&<", "&>", "-|-", "^@":
				return "boolean"
			case "->>", "#>>":
				return "text"
			case "->", "#>", "#-":
				return withoutTypmod(a.exprType(ae.Lexpr, sc))
			case "||":
				l, r := withoutTypmod(a.exprType(ae.Lexpr, sc)), withoutTypmod(a.exprType(ae.Rexpr, sc))
				switch {
				case l == "jsonb" || r == "jsonb":
					return "jsonb"
				case strings.HasSuffix(l, "[]"):
					return l
				case strings.HasSuffix(r, "[]"):
					return r
				}
				return "text"
			}
			if ae.Lexpr == nil { // prefix operator: -x
				return withoutTypmod(a.exprType(ae.Rexpr, sc))
			}
			return arithmeticType(op, withoutTypmod(a.exprType(ae.Lexpr, sc)), withoutTypmod(a.exprType(ae.Rexpr, sc)))
		case pg.A_Expr_Kind_AEXPR_NULLIF:
			return a.firstType([]*pg.Node{ae.Lexpr}, sc)
		default: // IN, LIKE, BETWEEN, DISTINCT, SIMILAR, ANY/ALL
			return "boolean"
		}
	}
	return ""
}

// enumOfType finds the enum an inferred type names, as rendered by typeOf
// ("mood", "app.mood", "mood[]"), following search_path when unqualified.
func (a *applier) enumOfType(rendered string) *QualName {
	base := strings.TrimRight(rendered, "[]")
	if base == "" {
		return nil
	}
	for _, s := range a.lookupPath() {
		q := QualName{s, base}
		if QuoteIdent(base) == base && a.cat.enums[q] != nil {
			return &q
		}
	}
	for q := range a.cat.enums {
		if q.String() == base {
			q := q
			return &q
		}
	}
	return nil
}

func (a *applier) firstType(nodes []*pg.Node, sc *scope) string {
	for _, n := range nodes {
		if t := a.exprType(n, sc); t != "" {
			return t
		}
	}
	return ""
}

// numericRank orders the numeric types by PostgreSQL's implicit casts: an
// operator on two of them works in the wider one.
var numericRank = map[string]int{"smallint": 1, "integer": 2, "bigint": 3, "numeric": 4, "real": 5, "double precision": 6}

// arithmeticType is the result type of a binary operator on operands of
// types l and r ("" when unknown), without typmods: numeric(40,15) +
// numeric(40,15) is numeric.
func arithmeticType(op, l, r string) string {
	switch {
	case l == "":
		return r
	case r == "":
		return l
	}
	lr, lok := numericRank[l]
	rr, rok := numericRank[r]
	if lok && rok {
		// real with anything else works in double precision, the
		// category's preferred type (real * 2 is double precision).
		if (l == "real") != (r == "real") {
			return "double precision"
		}
		if lr >= rr {
			return l
		}
		return r
	}
	isTime := func(t string) bool { return strings.HasPrefix(t, "timestamp") }
	switch {
	case l == "date" && r == "date" && op == "-":
		return "integer"
	case l == "date" && rok:
		return "date"
	case l == "date" && (r == "interval" || strings.HasPrefix(r, "time")):
		return "timestamp without time zone"
	case isTime(l) && isTime(r) && op == "-":
		return "interval"
	case isTime(l) && r == "interval":
		return l
	case l == "interval" && isTime(r):
		return r
	case l == "interval" && (rok || r == "interval"):
		return "interval"
	case lok && r == "interval":
		return "interval"
	}
	return l
}

// commonType is the type of COALESCE, GREATEST, LEAST, CASE and the
// columns of a UNION, as select_common_type picks it: string literals and
// NULLs take the others' type (text when all are), and the rest resolve
// by commonOf.
func (a *applier) commonType(args []*pg.Node, sc *scope) string {
	var types []string
	literal, skipped := false, false
	for _, n := range args {
		if c := n.GetAConst(); c != nil && (c.Isnull || c.GetSval() != nil) {
			literal = literal || c.GetSval() != nil
			skipped = true
			continue
		}
		types = append(types, a.exprType(n, sc))
	}
	if len(types) == 0 && literal {
		return "text"
	}
	t := commonOf(types)
	if skipped {
		// A literal has no typmod, so the result keeps none.
		return withoutTypmod(t)
	}
	return t
}

// commonOf resolves types to one: the same type keeps its typmod;
// numeric types meet in the wider by implicit casts (smallint, integer,
// bigint, numeric, real, double precision); otherwise the first. An
// empty type (unknown) is left out.
func commonOf(types []string) string {
	first, same := "", true
	for _, t := range types {
		switch {
		case t == "":
		case first == "":
			first = t
		case t != first:
			same = false
		}
	}
	if same {
		return first
	}
	best, bestRank := withoutTypmod(first), 0
	for _, t := range types {
		r, ok := numericRank[withoutTypmod(t)]
		if t == "" {
			continue
		}
		if !ok {
			return withoutTypmod(first)
		}
		if r > bestRank {
			best, bestRank = withoutTypmod(t), r
		}
	}
	return best
}

func caseResults(ce *pg.CaseExpr) []*pg.Node {
	var results []*pg.Node
	for _, w := range ce.Args {
		if cw := w.GetCaseWhen(); cw != nil {
			results = append(results, cw.Result)
		}
	}
	if ce.Defresult != nil {
		results = append(results, ce.Defresult)
	}
	return results
}

// onlyNulls reports whether n is NULL, or a CASE or COALESCE of NULLs
// alone: an expression of unknown type.
func onlyNulls(n *pg.Node) bool {
	all := func(nodes []*pg.Node) bool {
		for _, x := range nodes {
			if !onlyNulls(x) {
				return false
			}
		}
		return len(nodes) > 0
	}
	switch {
	case n.GetAConst() != nil:
		return n.GetAConst().Isnull
	case n.GetCaseExpr() != nil:
		return all(caseResults(n.GetCaseExpr())) // no ELSE is ELSE NULL
	case n.GetCoalesceExpr() != nil:
		return all(n.GetCoalesceExpr().Args)
	}
	return false
}
