package catalog

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Evaluation of the SQL expressions PL/pgSQL computes DDL from: literals,
// variables, format() and ||, comparisons, and EXISTS over the system
// catalogs, answered from the catalog itself.

// stopped says evaluation reached something a replay cannot know for
// certain; what names the construct. The DDL applied before it stands.
type stopped struct {
	what string
	// budget marks a stop because a limit was reached (ErrBudget).
	budget bool
}

func (s *stopped) Error() string {
	if s.budget {
		return "stopped at " + s.what
	}
	return s.what + " is not evaluated"
}

func (s *stopped) Is(target error) bool { return s.budget && target == ErrBudget }

func stop(format string, args ...any) error { return &stopped{what: fmt.Sprintf(format, args...)} }

// errUnknownValue is a decision that needs a value only the database
// held.
var errUnknownValue = errors.New("a value only the database held")

var errNotRoutine = errors.New("not a CREATE FUNCTION statement")

// scope resolves names an expression reads that are not columns of the
// query it is in: PL/pgSQL variables and positional parameters.
type varScope interface {
	variable(name string) (value, bool, error)
	param(n int) (value, bool)
	// qualifies reports whether name.variable may name a variable:
	// PL/pgSQL lets a routine's name qualify its parameters.
	qualifies(name string) bool
}

// evaluator evaluates expressions for one applier: catalog queries read
// its working catalog, and calls of known routines run them.
type evaluator struct {
	a     *applier
	vars  varScope
	calls *callState
}

// row is one row of a query's sources while WHERE and targets are
// evaluated; nil outside queries.
type row struct {
	sources []boundSource
	outer   *row
}

type boundSource struct {
	alias string
	rel   *relation
	vals  []value
}

func (e *evaluator) parseExpr(expr string) (*pg.Node, error) {
	tree, err := e.calls.parse("SELECT " + expr)
	if err != nil {
		return nil, stop("expression %q (%v)", excerpt(expr), err)
	}
	if len(tree.Stmts) != 1 {
		return nil, stop("expression %q", excerpt(expr))
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.TargetList) != 1 || len(sel.FromClause) > 0 || sel.WhereClause != nil {
		return nil, stop("expression %q", excerpt(expr))
	}
	return sel.TargetList[0].GetResTarget().Val, nil
}

// evalText evaluates a PL/pgSQL expression given as text.
func (e *evaluator) evalText(expr string) (value, error) {
	n, err := e.parseExpr(expr)
	if err != nil {
		return unknown, err
	}
	return e.eval(n, nil)
}

// certain evaluates expr and stops when its value is unknown, or a
// stand-in for a name the catalog does not hold.
func (e *evaluator) certain(expr, what string) (value, error) {
	v, err := e.evalText(expr)
	if err != nil {
		return v, err
	}
	if !v.known() || opaque(v) {
		return v, stop("%s %q, which depends on %s", what, excerpt(expr), errUnknownValue)
	}
	return v, nil
}

func (e *evaluator) eval(n *pg.Node, r *row) (value, error) {
	if err := e.calls.step(); err != nil {
		return unknown, err
	}
	switch {
	case n == nil:
		return null, nil
	case n.GetAConst() != nil:
		return constValue(n.GetAConst()), nil
	case n.GetColumnRef() != nil:
		return e.columnRef(n.GetColumnRef(), r)
	case n.GetParamRef() != nil:
		if e.vars != nil {
			if v, ok := e.vars.param(int(n.GetParamRef().Number)); ok {
				return v, nil
			}
		}
		return unknown, stop("parameter $%d", n.GetParamRef().Number)
	case n.GetTypeCast() != nil:
		return e.typeCast(n.GetTypeCast(), r)
	case n.GetAExpr() != nil:
		return e.aExpr(n.GetAExpr(), r)
	case n.GetBoolExpr() != nil:
		return e.boolExpr(n.GetBoolExpr(), r)
	case n.GetNullTest() != nil:
		v, err := e.eval(n.GetNullTest().Arg, r)
		if err != nil || !v.known() {
			return unknown, err
		}
		isNull := v.kind == vNull
		if n.GetNullTest().Nulltesttype == pg.NullTestType_IS_NOT_NULL {
			return boolean(!isNull), nil
		}
		return boolean(isNull), nil
	case n.GetFuncCall() != nil:
		return e.funcCall(n.GetFuncCall(), r)
	case n.GetCoalesceExpr() != nil:
		for _, arg := range n.GetCoalesceExpr().Args {
			v, err := e.eval(arg, r)
			if err != nil || !v.known() {
				return unknown, err
			}
			if v.kind != vNull {
				return v, nil
			}
		}
		return null, nil
	case n.GetAArrayExpr() != nil:
		var out []value
		for _, el := range n.GetAArrayExpr().Elements {
			v, err := e.eval(el, r)
			if err != nil || !v.known() {
				return unknown, err
			}
			out = append(out, v)
		}
		return e.made(value{kind: vArray, arr: out})
	case n.GetAIndirection() != nil:
		return e.indirection(n.GetAIndirection(), r)
	case n.GetSubLink() != nil:
		return e.subLink(n.GetSubLink(), r)
	case n.GetSqlvalueFunction() != nil:
		if n.GetSqlvalueFunction().Op == pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA {
			return str(e.a.creationSchema()), nil
		}
		return unknown, nil
	case n.GetCaseExpr() != nil:
		return e.caseExpr(n.GetCaseExpr(), r)
	case n.GetMinMaxExpr() != nil:
		return e.minMax(n.GetMinMaxExpr(), r)
	}
	return unknown, stop("expression %q", excerpt(deparseExpr(n)))
}

// minMax is GREATEST or LEAST of integers, NULLs left out (all NULL:
// NULL). Over text the database's collation would decide: it stops.
func (e *evaluator) minMax(m *pg.MinMaxExpr, r *row) (value, error) {
	out, greatest := null, m.Op == pg.MinMaxOp_IS_GREATEST
	for _, arg := range m.Args {
		v, err := e.eval(arg, r)
		if err != nil || !v.known() {
			return unknown, err
		}
		if v.kind == vNull {
			continue
		}
		// Integers only: text that reads as one ('10') orders as text.
		i, ok := v.asInt()
		if v.kind != vInt || !ok {
			return unknown, stop("GREATEST or LEAST of %q, which the database's collation orders", brief(v))
		}
		if o, _ := out.asInt(); out.kind == vNull || (greatest && i > o) || (!greatest && i < o) {
			out = integer(i)
		}
	}
	return out, nil
}

func constValue(c *pg.A_Const) value {
	switch {
	case c.Isnull:
		return null
	case c.GetSval() != nil:
		return str(c.GetSval().Sval)
	case c.GetIval() != nil:
		return integer(int64(c.GetIval().Ival))
	case c.GetBoolval() != nil:
		return boolean(c.GetBoolval().Boolval)
	case c.GetFval() != nil:
		return str(c.GetFval().Fval)
	case c.GetBsval() != nil:
		return str(c.GetBsval().Bsval)
	}
	return null
}

// columnRef resolves a name against the query's row first, then the
// routine's variables; a name that is both is ambiguous, as PostgreSQL's
// default variable_conflict = error says.
func (e *evaluator) columnRef(c *pg.ColumnRef, r *row) (value, error) {
	var parts []string
	for _, f := range c.Fields {
		if f.GetAStar() != nil {
			return unknown, stop("* outside a select list")
		}
		parts = append(parts, f.GetString_().GetSval())
	}
	colVal, colFound, err := r.lookup(parts)
	if err != nil {
		return unknown, err
	}
	var varVal value
	varFound := false
	if e.vars != nil && len(parts) == 2 && e.vars.qualifies(parts[0]) {
		parts = parts[1:]
	}
	if e.vars != nil {
		varVal, varFound, err = e.vars.variable(parts[0])
		if err != nil {
			return unknown, err
		}
		if varFound && len(parts) == 2 {
			if varVal.kind != vRecord {
				if varVal.kind == vUnknown {
					return unknown, nil
				}
				varFound = false
			} else if fv, ok := varVal.rec.field(parts[1]); ok {
				varVal = fv
			} else {
				return unknown, stop("record %s has no field %s", parts[0], parts[1])
			}
		} else if len(parts) > 2 {
			varFound = false
		}
	}
	switch {
	case colFound && varFound:
		return unknown, stop("reference %q, both a column and a variable", strings.Join(parts, "."))
	case colFound:
		return colVal, nil
	case varFound:
		return varVal, nil
	}
	return unknown, stop("reference to %q", strings.Join(parts, "."))
}

// lookup finds a column of the row's sources (or an enclosing query's):
// name, or alias.name.
func (r *row) lookup(parts []string) (value, bool, error) {
	for ; r != nil; r = r.outer {
		var found []value
		for _, s := range r.sources {
			switch len(parts) {
			case 1:
				if i := s.rel.column(parts[0]); i >= 0 {
					found = append(found, s.vals[i])
				}
			case 2:
				if s.alias == parts[0] {
					if i := s.rel.column(parts[1]); i >= 0 {
						found = append(found, s.vals[i])
					} else {
						return unknown, false, stop("column %s.%s of %s", parts[0], parts[1], s.rel.name)
					}
				}
			}
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], true, nil
		}
		return unknown, false, stop("ambiguous column reference %q", strings.Join(parts, "."))
	}
	return unknown, false, nil
}

func (e *evaluator) typeCast(tc *pg.TypeCast, r *row) (value, error) {
	v, err := e.eval(tc.Arg, r)
	if err != nil {
		return v, err
	}
	return e.cast(v, tc.TypeName)
}

// cast converts v to the type tn names, for the types dynamic DDL is
// computed with.
func (e *evaluator) cast(v value, tn *pg.TypeName) (value, error) {
	if !v.known() || v.kind == vNull {
		return v, nil
	}
	if err := e.read(v); err != nil {
		return unknown, err
	}
	names := pgtree.Strings(tn.Names)
	if len(names) == 0 {
		return unknown, stop("cast to a type given by reference")
	}
	typ := strings.ToLower(names[len(names)-1])
	if len(tn.ArrayBounds) > 0 {
		if v.kind == vArray {
			return v, nil
		}
		if v.kind != vText {
			return unknown, stop("cast of %s to an array", brief(v))
		}
		if err := e.reserve(int64(len(v.s)) * valueOverhead / 2); err != nil {
			return unknown, err
		}
		els, err := parseArrayLiteral(v.s)
		if err != nil {
			return unknown, stop("%v", err)
		}
		return value{kind: vArray, arr: els}, nil
	}
	switch typ {
	case "text", "varchar", "bpchar", "name", "char":
		if opaque(v) {
			return unknown, nil
		}
		if v.kind == vArray {
			if err := e.reserve(2 * e.size(v)); err != nil {
				return unknown, err
			}
		}
		return str(v.String()), nil
	case "int2", "int4", "int8", "integer", "bigint", "smallint":
		i, ok := v.asInt()
		if !ok {
			return unknown, stop("cast of %q to %s", brief(v), typ)
		}
		return integer(i), nil
	case "bool", "boolean":
		b, ok := v.asBool()
		if !ok {
			return unknown, stop("cast of %q to boolean", brief(v))
		}
		return boolean(b), nil
	case "regclass":
		return e.regclass(v)
	case "regtype":
		return e.regtype(v)
	case "regnamespace":
		return e.regnamespace(v)
	case "oid":
		if v.kind == vOid {
			return value{kind: vOid, s: v.s}, nil // a number again, not a name
		}
		return v, nil
	}
	return unknown, stop("cast to %s", typ)
}

func (e *evaluator) aExpr(x *pg.A_Expr, r *row) (value, error) {
	op := ""
	if len(x.Name) > 0 {
		op = x.Name[len(x.Name)-1].GetString_().GetSval()
	}
	switch x.Kind {
	case pg.A_Expr_Kind_AEXPR_OP:
		if x.Lexpr == nil {
			return e.prefix(op, x.Rexpr, r)
		}
		return e.binary(op, x.Lexpr, x.Rexpr, r)
	case pg.A_Expr_Kind_AEXPR_IN:
		l, err := e.eval(x.Lexpr, r)
		if err != nil {
			return unknown, err
		}
		list := x.Rexpr.GetList()
		if list == nil {
			return unknown, stop("IN over a non-list")
		}
		var elems []value
		for _, it := range list.Items {
			v, err := e.eval(it, r)
			if err != nil {
				return unknown, err
			}
			elems = append(elems, v)
		}
		if err := e.read(append(elems, l)...); err != nil {
			return unknown, err
		}
		res := anyEqual(l, elems)
		if op == "<>" {
			return not(res), nil
		}
		return res, nil
	case pg.A_Expr_Kind_AEXPR_OP_ANY:
		l, err := e.eval(x.Lexpr, r)
		if err != nil {
			return unknown, err
		}
		arr, err := e.eval(x.Rexpr, r)
		if err != nil || !arr.known() {
			return unknown, err
		}
		if arr.kind == vNull {
			return null, nil
		}
		if arr.kind != vArray || op != "=" {
			return unknown, stop("%s ANY over %s", op, brief(arr))
		}
		if err := e.read(l, arr); err != nil {
			return unknown, err
		}
		return anyEqual(l, arr.arr), nil
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		l, err := e.eval(x.Lexpr, r)
		if err != nil {
			return unknown, err
		}
		p, err := e.eval(x.Rexpr, r)
		if err != nil || !l.known() || !p.known() {
			return unknown, err
		}
		if l.kind == vNull || p.kind == vNull {
			return null, nil
		}
		if anyStandIn(l, p) {
			// A name not held: 'pg_%' matches some system relations,
			// '%s' the information schema's tables; 'fk_%' no name
			// of theirs.
			prefix := likePrefix(p.String())
			if x.Kind == pg.A_Expr_Kind_AEXPR_ILIKE {
				prefix = strings.ToLower(prefix)
			}
			if isStandIn(p) || standIns[l.s].starts(prefix) {
				return unknown, nil
			}
			return boolean(strings.HasPrefix(op, "!")), nil
		}
		if err := e.reserve(2 * (e.size(l) + e.size(p))); err != nil {
			return unknown, err
		}
		ls, ps := l.String(), p.String()
		if x.Kind == pg.A_Expr_Kind_AEXPR_ILIKE {
			ls, ps = strings.ToLower(ls), strings.ToLower(ps)
		}
		m, err := likeMatch(ls, ps, e.calls.step)
		if err != nil {
			return unknown, err
		}
		if strings.HasPrefix(op, "!") {
			m = !m
		}
		return boolean(m), nil
	case pg.A_Expr_Kind_AEXPR_NULLIF:
		return e.nullIf(x, r)
	case pg.A_Expr_Kind_AEXPR_DISTINCT, pg.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		l, err := e.eval(x.Lexpr, r)
		if err != nil {
			return unknown, err
		}
		rv, err := e.eval(x.Rexpr, r)
		if err != nil || !l.known() || !rv.known() {
			return unknown, err
		}
		same := l.kind == vNull && rv.kind == vNull
		if err := e.read(l, rv); err != nil {
			return unknown, err
		}
		if l.kind != vNull && rv.kind != vNull {
			c, ok := compare(l, rv)
			if !ok {
				return unknown, nil
			}
			same = c == 0
		}
		return boolean(same == (x.Kind == pg.A_Expr_Kind_AEXPR_NOT_DISTINCT)), nil
	}
	return unknown, stop("operator %s", op)
}

// nullIf is NULLIF(a, b): NULL when the two are equal, else a.
func (e *evaluator) nullIf(x *pg.A_Expr, r *row) (value, error) {
	l, err := e.eval(x.Lexpr, r)
	if err != nil || !l.known() {
		return unknown, err
	}
	rv, err := e.eval(x.Rexpr, r)
	if err != nil || !rv.known() {
		return unknown, err
	}
	if l.kind == vNull || rv.kind == vNull {
		return l, nil
	}
	if err := e.read(l, rv); err != nil {
		return unknown, err
	}
	c, ok := compare(l, rv)
	switch {
	case !ok:
		return unknown, nil
	case c == 0:
		return null, nil
	}
	return l, nil
}

func anyEqual(l value, elems []value) value {
	if !l.known() {
		return unknown
	}
	if l.kind == vNull {
		return null
	}
	res := boolean(false)
	for _, el := range elems {
		switch {
		case !el.known():
			res = unknown
		case el.kind == vNull:
			if res.known() {
				res = null
			}
		default:
			c, ok := compare(l, el)
			if !ok {
				res = unknown
				continue
			}
			if c == 0 {
				return boolean(true)
			}
		}
	}
	return res
}

func (e *evaluator) binary(op string, lx, rx *pg.Node, r *row) (value, error) {
	l, err := e.eval(lx, r)
	if err != nil {
		return unknown, err
	}
	rv, err := e.eval(rx, r)
	if err != nil {
		return unknown, err
	}
	if op == "||" {
		if !l.known() || !rv.known() {
			return unknown, nil
		}
		if l.kind == vNull || rv.kind == vNull {
			return null, nil
		}
		if opaque(l) || opaque(rv) {
			return unknown, nil // a text built from a name not held
		}
		if err := e.reserve(e.size(l) + e.size(rv)); err != nil {
			return unknown, err
		}
		if l.kind == vArray || rv.kind == vArray {
			return concatArrays(l, rv), nil
		}
		return str(l.String() + rv.String()), nil
	}
	if !l.known() || !rv.known() {
		return unknown, nil
	}
	if l.kind == vNull || rv.kind == vNull {
		return null, nil
	}
	switch op {
	case "+", "-", "*", "/", "%":
		x, ok1 := l.asInt()
		y, ok2 := rv.asInt()
		if !ok1 || !ok2 {
			return unknown, stop("arithmetic on %q and %q", brief(l), brief(rv))
		}
		return arithmetic(op, x, y)
	}
	if err := e.read(l, rv); err != nil {
		return unknown, err
	}
	if anyStandIn(l, rv) && op != "=" && op != "<>" && op != "!=" {
		return unknown, nil // a name not held has no place in an order
	}
	c, ok := compare(l, rv)
	if !ok {
		return unknown, nil
	}
	switch op {
	case "=":
		return boolean(c == 0), nil
	case "<>", "!=":
		return boolean(c != 0), nil
	case "<":
		return boolean(c < 0), nil
	case "<=":
		return boolean(c <= 0), nil
	case ">":
		return boolean(c > 0), nil
	case ">=":
		return boolean(c >= 0), nil
	}
	return unknown, stop("operator %s", op)
}

// prefix evaluates a prefix operator: the sign of an integer (-n in a
// loop's bounds, an OFFSET).
func (e *evaluator) prefix(op string, rx *pg.Node, r *row) (value, error) {
	if op != "-" && op != "+" {
		return unknown, stop("prefix operator %s", op)
	}
	v, err := e.eval(rx, r)
	if err != nil || !v.known() || v.kind == vNull {
		return v, err
	}
	i, ok := v.asInt()
	if !ok {
		return unknown, stop("prefix operator %s on %q", op, brief(v))
	}
	if op == "+" {
		return integer(i), nil
	}
	return arithmetic("-", 0, i)
}

// arithmetic is integer arithmetic as PostgreSQL's bigint does it: a
// result out of range is its error, not a value that wrapped round (a
// table named after it would be another table).
func arithmetic(op string, x, y int64) (value, error) {
	var z int64
	switch op {
	case "+":
		z = x + y
		if (z > x) != (y > 0) {
			return unknown, stop("bigint out of range")
		}
	case "-":
		z = x - y
		if (z < x) != (y > 0) {
			return unknown, stop("bigint out of range")
		}
	case "*":
		z = x * y
		if x != 0 && (z/x != y || (x == -1 && y == math.MinInt64)) {
			return unknown, stop("bigint out of range")
		}
	case "/", "%":
		if y == 0 {
			return unknown, stop("division by zero")
		}
		if x == math.MinInt64 && y == -1 {
			if op == "%" {
				return integer(0), nil
			}
			return unknown, stop("bigint out of range")
		}
		if op == "/" {
			return integer(x / y), nil
		}
		return integer(x % y), nil
	}
	return integer(z), nil
}

func concatArrays(l, r value) value {
	var out []value
	for _, v := range []value{l, r} {
		if v.kind == vArray {
			out = append(out, v.arr...)
		} else {
			out = append(out, v)
		}
	}
	return value{kind: vArray, arr: out}
}

func not(v value) value {
	if v.kind != vBool {
		return v
	}
	return boolean(!v.b)
}

func (e *evaluator) boolExpr(b *pg.BoolExpr, r *row) (value, error) {
	if b.Boolop == pg.BoolExprType_NOT_EXPR {
		if len(b.Args) != 1 {
			return unknown, stop("NOT")
		}
		v, err := e.eval(b.Args[0], r)
		if err != nil {
			return unknown, err
		}
		bv, ok := v.asBool()
		if !ok {
			return v, nil // unknown or null stays so
		}
		return boolean(!bv), nil
	}
	and := b.Boolop == pg.BoolExprType_AND_EXPR
	res := boolean(and)
	for _, arg := range b.Args {
		v, err := e.eval(arg, r)
		if err != nil {
			return unknown, err
		}
		bv, ok := v.asBool()
		switch {
		case ok && bv != and:
			return boolean(bv), nil // false decides AND, true decides OR
		case !ok && v.kind == vNull && res.known():
			res = null
		case !ok && v.kind != vNull:
			res = unknown
		}
	}
	return res, nil
}

func (e *evaluator) indirection(ind *pg.A_Indirection, r *row) (value, error) {
	v, err := e.eval(ind.Arg, r)
	if err != nil {
		return unknown, err
	}
	for _, in := range ind.Indirection {
		idx := in.GetAIndices()
		if idx == nil || idx.IsSlice {
			return unknown, stop("indirection %q", excerpt(deparseExpr(in)))
		}
		i, err := e.eval(idx.Uidx, r)
		if err != nil {
			return unknown, err
		}
		if !v.known() || !i.known() {
			return unknown, nil
		}
		if v.kind == vNull || i.kind == vNull {
			return null, nil
		}
		n, ok := i.asInt()
		if v.kind != vArray || !ok {
			return unknown, stop("subscript of %s", brief(v))
		}
		if n < 1 || n > int64(len(v.arr)) {
			v = null
			continue
		}
		v = v.arr[n-1]
	}
	return v, nil
}

func (e *evaluator) caseExpr(c *pg.CaseExpr, r *row) (value, error) {
	var subject value
	if c.Arg != nil {
		v, err := e.eval(c.Arg, r)
		if err != nil || !v.known() {
			return unknown, err
		}
		subject = v
	}
	for _, w := range c.Args {
		cw := w.GetCaseWhen()
		var cond value
		var err error
		if c.Arg != nil {
			var x value
			if x, err = e.eval(cw.Expr, r); err == nil {
				if err = e.read(subject, x); err == nil {
					cond = anyEqual(subject, []value{x})
				}
			}
		} else {
			cond, err = e.eval(cw.Expr, r)
		}
		if err != nil || !cond.known() {
			return unknown, err
		}
		if b, ok := cond.asBool(); ok && b {
			return e.eval(cw.Result, r)
		}
	}
	return e.eval(c.Defresult, r)
}

// likeMatch implements LIKE with % and _ (and \ escapes). It is the
// two-pointer match that backtracks only to the last %: no recursion and
// no memo, so its memory is the pattern's, and its time (at worst the
// product of the lengths) is spent as steps.
func likeMatch(s, p string, step func() error) (bool, error) {
	type tok struct {
		r    rune
		kind byte // 'c' a character, '_' any one, '%' any run
	}
	var pat []tok
	pr := []rune(p)
	for j := 0; j < len(pr); j++ {
		switch {
		case pr[j] == '%':
			if len(pat) == 0 || pat[len(pat)-1].kind != '%' {
				pat = append(pat, tok{kind: '%'})
			}
		case pr[j] == '_':
			pat = append(pat, tok{kind: '_'})
		case pr[j] == '\\' && j+1 < len(pr):
			j++
			pat = append(pat, tok{r: pr[j], kind: 'c'})
		default:
			pat = append(pat, tok{r: pr[j], kind: 'c'})
		}
	}
	sr := []rune(s)
	i, j, star, mark := 0, 0, -1, 0
	for n := 0; i < len(sr); n++ {
		if n%64 == 0 {
			if err := step(); err != nil {
				return false, err
			}
		}
		switch {
		case j < len(pat) && (pat[j].kind == '_' || pat[j].kind == 'c' && pat[j].r == sr[i]):
			i, j = i+1, j+1
		case j < len(pat) && pat[j].kind == '%':
			star, mark = j, i
			j++
		case star >= 0:
			mark++
			i, j = mark, star+1
		default:
			return false, nil
		}
	}
	for j < len(pat) && pat[j].kind == '%' {
		j++
	}
	return j == len(pat), nil
}

// funcCall evaluates the functions DDL-generating code uses to build its
// text, and runs the routines the catalog holds; any other function's
// value is unknown (it may have done things a replay cannot see, as it
// may before this evaluator existed).
func (e *evaluator) funcCall(f *pg.FuncCall, r *row) (value, error) {
	names := pgtree.Strings(f.Funcname)
	schema, name := qualFromList(names)
	if rt := e.a.findRoutine(names); rt != nil {
		return e.callRoutine(rt, f, r)
	}
	if schema != "" && schema != "pg_catalog" {
		return unknown, nil
	}
	if f.AggStar || f.Over != nil || len(f.AggOrder) > 0 || f.AggFilter != nil || f.AggDistinct {
		return unknown, stop("aggregate %s outside a select list", name)
	}
	args := make([]value, len(f.Args))
	for i, a := range f.Args {
		v, err := e.eval(a, r)
		if err != nil {
			return unknown, err
		}
		args[i] = v
	}
	return builtin(e, name, args)
}

// builtin computes the string and array functions dynamic DDL is built
// with. Strict functions return NULL for a NULL argument, as PostgreSQL's
// do; unknown arguments make an unknown result.
func builtin(e *evaluator, name string, args []value) (value, error) {
	// string_to_array splits into characters at a NULL delimiter.
	nonStrict := map[string]bool{"format": true, "concat": true, "concat_ws": true, "quote_nullable": true, "string_to_array": true, "array_to_string": true}
	for _, a := range args {
		if !a.known() || opaque(a) {
			return unknown, nil
		}
		if a.kind == vNull && !nonStrict[name] {
			if _, ok := builtinNames[name]; ok {
				return null, nil
			}
		}
	}
	if _, ok := oneArg[name]; ok && len(args) != 1 {
		// PostgreSQL has no such function of another arity: not
		// evaluated, as other calls it would refuse are not.
		return unknown, nil
	}
	if err := e.read(args...); err != nil {
		return unknown, err
	}
	if err := e.reserveFor(name, args); err != nil {
		return unknown, err
	}
	switch name {
	case "format":
		if len(args) == 0 || args[0].kind == vNull {
			return null, nil
		}
		s, err := formatSQL(args[0].String(), args[1:], e.maxText())
		if errors.Is(err, errTooLong) {
			return unknown, e.calls.budget.exceed("format() making a text of more than %d bytes (the byte budget)", e.maxText())
		}
		if err != nil {
			return unknown, stop("format(): %v", err)
		}
		return str(s), nil
	case "quote_ident":
		q, err := quoteIdentFunc(args[0].String())
		if err != nil {
			return unknown, err
		}
		return str(q), nil
	case "quote_literal":
		return str(quoteNullable(args[0])), nil
	case "quote_nullable":
		return str(quoteNullable(args[0])), nil
	case "concat", "concat_ws":
		sep, parts := "", args
		if name == "concat_ws" {
			if len(args) == 0 || args[0].kind == vNull {
				return null, nil
			}
			sep, parts = args[0].String(), args[1:]
		}
		var out []string
		for _, p := range parts {
			if p.kind != vNull {
				out = append(out, p.output())
			}
		}
		return str(strings.Join(out, sep)), nil
	case "lower", "upper":
		return foldCase(name, args[0].String())
	case "replace":
		if len(args) == 3 {
			if args[1].String() == "" {
				return str(args[0].String()), nil // PostgreSQL replaces nothing
			}
			return str(strings.ReplaceAll(args[0].String(), args[1].String(), args[2].String())), nil
		}
	case "left", "right", "substr", "substring", "btrim", "ltrim", "rtrim", "lpad", "rpad":
		return e.textFunc(name, args)
	case "strpos", "position": // position(sub IN s) is position(s, sub)
		if len(args) == 2 {
			s, sub := args[0].String(), args[1].String()
			i := strings.Index(s, sub)
			if i < 0 {
				return integer(0), nil
			}
			return integer(int64(utf8.RuneCountInString(s[:i])) + 1), nil
		}
	case "md5": // hashed names: 'ix_' || left(md5(cols), 10)
		if args[0].kind == vText {
			sum := md5.Sum([]byte(args[0].s))
			return str(hex.EncodeToString(sum[:])), nil
		}
	case "length", "char_length":
		if len(args) == 1 {
			return integer(int64(utf8.RuneCountInString(args[0].String()))), nil
		}
	case "array_length", "array_upper":
		if len(args) == 2 && args[0].kind == vArray {
			if d, _ := args[1].asInt(); d == 1 && len(args[0].arr) > 0 {
				return integer(int64(len(args[0].arr))), nil
			}
			return null, nil
		}
	case "array_lower":
		if len(args) == 2 && args[0].kind == vArray && len(args[0].arr) > 0 {
			return integer(1), nil
		}
	case "cardinality":
		if len(args) == 1 && args[0].kind == vArray {
			return integer(int64(len(args[0].arr))), nil
		}
	case "split_part":
		if len(args) == 3 {
			n, ok := args[2].asInt()
			if !ok {
				break
			}
			return splitPart(args[0].String(), args[1].String(), n)
		}
	case "string_to_array":
		if len(args) == 2 {
			if args[0].kind == vNull {
				return null, nil
			}
			return e.made(stringToArray(args[0].String(), args[1]))
		}
	case "array_to_string":
		if (len(args) == 2 || len(args) == 3) && (args[0].kind == vArray || args[0].kind == vNull) {
			if args[0].kind == vNull || args[1].kind == vNull {
				return null, nil
			}
			var nullText *string
			if len(args) == 3 && args[2].kind != vNull {
				t := args[2].output()
				nullText = &t
			}
			return str(arrayToString(args[0], args[1].output(), nullText)), nil
		}
	case "to_regclass":
		if q, ok := e.a.regclass(args[0].String()); ok {
			return e.a.regclassOf(q), nil
		}
		return unknown, nil // it may name an index or sequence we do not hold
	case "current_schema":
		return str(e.a.creationSchema()), nil
	case "current_database": // current_catalog too
		return databaseName, nil
	}
	return unknown, nil
}

// reserveFor charges what builtin name will make of args before it is
// made: the functions that copy their arguments cost what they copy,
// and the two that can multiply it (replace, string_to_array) what they
// will make. format() is bounded as it writes (maxText).
func (e *evaluator) reserveFor(name string, args []value) error {
	var in int64
	for _, a := range args {
		in += e.size(a)
	}
	switch name {
	case "quote_ident", "quote_literal", "quote_nullable":
		return e.reserve(2*in + 3)
	case "concat", "concat_ws", "lower", "upper", "split_part",
		"left", "right", "substr", "substring", "btrim", "ltrim", "rtrim":
		return e.reserve(in) // lpad and rpad reserve what they build
	case "replace":
		if len(args) == 3 && args[1].kind == vText && args[1].s != "" {
			n := int64(strings.Count(args[0].String(), args[1].s))
			return e.reserve(in + n*int64(len(args[2].String())))
		}
		return e.reserve(in)
	case "array_to_string":
		// Every element may gain the delimiter and stand for a NULL.
		if len(args) >= 2 && args[0].kind == vArray {
			extra := int64(len(args[1].output()))
			if len(args) == 3 {
				extra += int64(len(args[2].output()))
			}
			// No walk: each element counts valueOverhead in its size.
			return e.reserve(in + in/valueOverhead*extra)
		}
	case "string_to_array":
		if len(args) == 2 {
			// Reserved before the split, which a NULL delimiter makes
			// one element per character.
			sep := args[1].String()
			n := int64(1)
			switch {
			case args[1].kind == vNull:
				n = int64(utf8.RuneCountInString(args[0].String()))
			case sep != "":
				n += int64(strings.Count(args[0].String(), sep))
			}
			return e.reserve(in + n*valueOverhead)
		}
	}
	return nil
}

// maxText is the longest text one value may be, for what writes text
// piece by piece.
func (e *evaluator) maxText() int {
	if e.calls == nil {
		return int(DefaultLimits().Bytes / 8)
	}
	return int(e.calls.budget.maxValue())
}

// oneArg are the builtins that take exactly one argument.
var oneArg = map[string]struct{}{
	"quote_ident": {}, "quote_literal": {}, "quote_nullable": {}, "lower": {}, "upper": {}, "to_regclass": {},
	"md5": {},
}

var builtinNames = map[string]struct{}{
	"quote_ident": {}, "quote_literal": {}, "lower": {}, "upper": {}, "replace": {}, "length": {},
	"char_length": {}, "array_length": {}, "array_upper": {}, "array_lower": {}, "cardinality": {},
	"split_part": {}, "string_to_array": {}, "array_to_string": {}, "to_regclass": {},
	"left": {}, "right": {}, "substr": {}, "substring": {}, "btrim": {}, "ltrim": {}, "rtrim": {},
	"lpad": {}, "rpad": {}, "strpos": {}, "position": {}, "md5": {},
}

func (e *evaluator) subLink(s *pg.SubLink, r *row) (value, error) {
	sel := s.Subselect.GetSelectStmt()
	if sel == nil {
		return unknown, stop("subquery")
	}
	res, err := e.query(sel, r)
	if err != nil {
		return unknown, err
	}
	switch s.SubLinkType {
	case pg.SubLinkType_EXISTS_SUBLINK:
		switch {
		case len(res.rows) > 0:
			return boolean(true), nil
		case res.complete:
			return boolean(false), nil
		}
		return unknown, nil
	case pg.SubLinkType_EXPR_SUBLINK:
		return res.scalar(), nil
	case pg.SubLinkType_ANY_SUBLINK:
		l, err := e.eval(s.Testexpr, r)
		if err != nil {
			return unknown, err
		}
		var elems []value
		for _, row := range res.rows {
			elems = append(elems, row[0])
		}
		if err := e.read(append(elems, l)...); err != nil {
			return unknown, err
		}
		v := anyEqual(l, elems)
		if !res.complete && !(v.kind == vBool && v.b) {
			return unknown, nil
		}
		return v, nil
	}
	return unknown, stop("subquery")
}
