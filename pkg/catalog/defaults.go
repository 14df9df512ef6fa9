package catalog

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// cookDefault renders a column default as PostgreSQL stores and prints it
// (pg_get_expr of the cooked expression, as \d, pg_dump and
// information_schema show it), not as the producer wrote it: DEFAULT NULL
// is no default at all, 'f' on a boolean is false, 'x' on a text column is
// 'x'::text. A prompt then shows one spelling whatever the migration
// style, and a catalog compares equal to the database it describes.
//
// PostgreSQL coerces the expression to the column type with implicit
// casts, which it does not print, and types literals by their context.
// We follow it for what defaults are made of in practice (literals,
// casts of literals, NULL, nextval, SQL value functions, simple operator
// expressions); anything else keeps libpg_query's deparse.
func (a *applier) cookDefault(n *pg.Node, colType string) string {
	if n == nil {
		return ""
	}
	if isNullConst(n) {
		return "" // PostgreSQL stores no default for a NULL constant
	}
	if tc := n.GetTypeCast(); tc != nil && isNullConst(tc.Arg) {
		// NULL cast to the column's own type folds to a NULL constant,
		// which is no default. Cast to another type, or with a length
		// or precision, it needs a conversion when a row is inserted,
		// and PostgreSQL keeps it as written.
		spec, err := a.typeOf(tc.TypeName)
		if err != nil || spec.rendered == "" {
			return ""
		}
		cast := a.displayType(spec)
		if len(tc.TypeName.Typmods) == 0 && cast == colType {
			return ""
		}
		return "NULL::" + cast
	}
	if c := n.GetAConst(); c != nil {
		return constFor(c, colType)
	}
	return cookExpr(a, n, true)
}

// castArray prints ARRAY[…]::t[] as ruleutils does: the cast goes into
// each element (ARRAY[(1)::bigint, 'x'::text]) and an empty array keeps
// it, named as format_type names it. Only constants are printed so;
// ok is false for other elements.
func castArray(arr *pg.A_ArrayExpr, typ string) (string, bool) {
	elem, isArray := strings.CutSuffix(typ, "[]")
	if len(arr.Elements) == 0 {
		return "ARRAY[]::" + typ, true
	}
	if !isArray || strings.HasSuffix(elem, "[]") {
		return "", false
	}
	parts := make([]string, len(arr.Elements))
	for i, e := range arr.Elements {
		c := e.GetAConst()
		switch {
		case c == nil || c.Isnull:
			return "", false
		case c.GetSval() != nil:
			parts[i] = literalAs(c.GetSval().Sval, elem)
		case c.GetIval() != nil && elem == "integer":
			parts[i] = strconv.Itoa(int(c.GetIval().Ival))
		case c.GetIval() != nil:
			parts[i] = "(" + strconv.Itoa(int(c.GetIval().Ival)) + ")::" + elem
		default:
			return "", false
		}
	}
	return "ARRAY[" + strings.Join(parts, ", ") + "]", true
}

func allStrings(arr *pg.A_ArrayExpr) bool {
	for _, e := range arr.Elements {
		if c := e.GetAConst(); c == nil || c.GetSval() == nil {
			return false
		}
	}
	return true
}

func isNullConst(n *pg.Node) bool {
	c := n.GetAConst()
	return c != nil && c.Isnull
}

// cookExpr renders an expression whose type comes from itself, not from
// a column: top-level operator expressions are parenthesised, as
// ruleutils prints them.
func cookExpr(a *applier, n *pg.Node, top bool) string {
	switch {
	case n.GetAConst() != nil:
		return constFor(n.GetAConst(), "")
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		spec, err := a.typeOf(tc.TypeName)
		if err != nil || spec.rendered == "" {
			break
		}
		if c := tc.Arg.GetAConst(); c != nil && c.GetSval() != nil {
			// A literal cast to a type is a constant of that type.
			return literalAs(c.GetSval().Sval, a.displayType(spec))
		}
		if arr := tc.Arg.GetAArrayExpr(); arr != nil {
			if s, ok := castArray(arr, a.displayType(spec)); ok {
				return s
			}
			break // ARRAY[…]::t prints as written
		}
		return "(" + cookExpr(a, tc.Arg, false) + ")::" + a.displayType(spec)
	case n.GetFuncCall() != nil:
		fc := n.GetFuncCall()
		if fc.AggStar || fc.AggDistinct || fc.Over != nil || len(fc.AggOrder) > 0 || fc.AggFilter != nil {
			break
		}
		name := pgtree.Strings(fc.Funcname)
		args := make([]string, len(fc.Args))
		for i, arg := range fc.Args {
			if c := arg.GetAConst(); c != nil && c.GetSval() != nil {
				// The argument type of the function decides; nextval
				// takes regclass and nearly every other builtin called
				// in a default takes text.
				if len(name) > 0 && name[len(name)-1] == "nextval" {
					// regclass prints the sequence as the default
					// search_path sees it.
					args[i] = quoteLiteral(strings.TrimPrefix(c.GetSval().Sval, DefaultSchema+".")) + "::regclass"
					continue
				}
				args[i] = literalAs(c.GetSval().Sval, "text")
				continue
			}
			args[i] = cookExpr(a, arg, false)
		}
		if fc.Funcformat == pg.CoercionForm_COERCE_SQL_SYNTAX && len(name) == 2 && name[1] == "timezone" && len(args) == 2 {
			// ts AT TIME ZONE zone, which ruleutils prints as written.
			return "(" + args[1] + " AT TIME ZONE " + args[0] + ")"
		}
		quoted := make([]string, len(name))
		for i, p := range name {
			quoted[i] = QuoteIdent(p)
		}
		if len(quoted) == 2 && name[0] == "pg_catalog" {
			quoted = quoted[1:]
		}
		return strings.Join(quoted, ".") + "(" + strings.Join(args, ", ") + ")"
	case n.GetAArrayExpr() != nil:
		// ARRAY['a', 'b'] is a text[]: its literals are text.
		if arr := n.GetAArrayExpr(); len(arr.Elements) > 0 && allStrings(arr) {
			if s, ok := castArray(arr, "text[]"); ok {
				return s
			}
		}
	case n.GetSqlvalueFunction() != nil:
		if s := sqlValueFunction(n.GetSqlvalueFunction()); s != "" {
			return s
		}
	case n.GetAExpr() != nil:
		e := n.GetAExpr()
		op := pgtree.Strings(e.Name)
		if e.Kind != pg.A_Expr_Kind_AEXPR_OP || len(op) != 1 || e.Lexpr == nil || e.Rexpr == nil {
			break
		}
		s := cookExpr(a, e.Lexpr, false) + " " + op[0] + " " + cookExpr(a, e.Rexpr, false)
		return "(" + s + ")"
	}
	s := deparseExpr(n)
	if !top && n.GetAExpr() != nil {
		s = "(" + s + ")"
	}
	return s
}

func sqlValueFunction(f *pg.SQLValueFunction) string {
	withPrec := func(s string) string {
		if f.Typmod >= 0 {
			return s + "(" + strconv.Itoa(int(f.Typmod)) + ")"
		}
		return s
	}
	switch f.Op {
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:
		return "CURRENT_DATE"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:
		return withPrec("CURRENT_TIME")
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP, pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N:
		return withPrec("CURRENT_TIMESTAMP")
	case pg.SQLValueFunctionOp_SVFOP_LOCALTIME, pg.SQLValueFunctionOp_SVFOP_LOCALTIME_N:
		return withPrec("LOCALTIME")
	case pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP, pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		return withPrec("LOCALTIMESTAMP")
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:
		return "CURRENT_ROLE"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:
		return "CURRENT_USER"
	case pg.SQLValueFunctionOp_SVFOP_USER:
		return "USER"
	case pg.SQLValueFunctionOp_SVFOP_SESSION_USER:
		return "SESSION_USER"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:
		return "CURRENT_CATALOG"
	case pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:
		return "CURRENT_SCHEMA"
	}
	return ""
}

// constFor prints a constant the way ruleutils' get_const_expr does once
// the parser has typed it: a string literal takes the column type (typ,
// "" when unknown), numbers their own.
func constFor(c *pg.A_Const, typ string) string {
	switch {
	case c.Isnull:
		return "NULL"
	case c.GetBoolval() != nil:
		return strconv.FormatBool(c.GetBoolval().Boolval)
	case c.GetIval() != nil:
		return intConst(int64(c.GetIval().Ival))
	case c.GetFval() != nil:
		f := c.GetFval().Fval
		// An integer too big for int4 is an int8 constant; anything
		// else is numeric, printed bare (in parentheses when signed).
		if v, err := strconv.ParseInt(f, 10, 64); err == nil {
			return "'" + strconv.FormatInt(v, 10) + "'::bigint"
		}
		if strings.HasPrefix(f, "-") || strings.HasPrefix(f, "+") {
			return "(" + f + ")"
		}
		return f
	case c.GetSval() != nil:
		if typ == "" {
			return quoteLiteral(c.GetSval().Sval)
		}
		return literalAs(c.GetSval().Sval, typ)
	case c.GetBsval() != nil:
		return "B'" + strings.TrimPrefix(c.GetBsval().Bsval, "b") + "'::\"bit\""
	}
	return ""
}

func intConst(v int64) string {
	if v >= 0 {
		return strconv.FormatInt(v, 10)
	}
	return "'" + strconv.FormatInt(v, 10) + "'::integer"
}

var numericLit = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// literalAs prints a string literal coerced to typ (a column or cast type
// as format_type prints it): the type's output form, labelled with the
// type without its typmod, except where PostgreSQL leaves the label off.
func literalAs(s, typ string) string {
	label := typeLabel(typ)
	switch label {
	case "boolean":
		if b, ok := parseBool(s); ok {
			return strconv.FormatBool(b)
		}
	case "integer":
		if v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32); err == nil {
			return intConst(v)
		}
	case "smallint", "bigint":
		if v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
			return "'" + strconv.FormatInt(v, 10) + "'::" + label
		}
	case "numeric":
		t := strings.TrimSpace(s)
		if numericLit.MatchString(t) && !strings.ContainsAny(t, "eE") {
			t = strings.TrimPrefix(t, "+")
			if strings.HasPrefix(t, "-") {
				t = "(" + t + ")"
			}
			if !strings.Contains(t, ".") {
				return t + "::numeric"
			}
			return t
		}
	case "double precision", "real":
		if v, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			return "'" + floatOut(v) + "'::" + label
		}
	case "timestamp without time zone":
		if dateLit.MatchString(s) {
			s += " 00:00:00"
		}
	case "regclass":
		s = strings.TrimPrefix(s, DefaultSchema+".")
	case "interval":
		if out, ok := intervalOut(s); ok {
			s = out
		}
	case "time without time zone":
		if hourMinute.MatchString(s) {
			s += ":00"
		}
	}
	return quoteLiteral(s) + "::" + label
}

var (
	dateLit    = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	hourMinute = regexp.MustCompile(`^\d{2}:\d{2}$`)
)

// floatOut prints a float8 as PostgreSQL's shortest-exact float8out does:
// plain notation up to 15 integer digits, exponent beyond.
func floatOut(v float64) string {
	if v != 0 && (math.Abs(v) >= 1e15 || math.Abs(v) < 1e-4) {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		return strings.Replace(strings.Replace(s, "e+0", "e+", 1), "e-0", "e-", 1)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// typeLabel is the type a constant is labelled with: format_type without
// the typmod (a constant has none), char(n) as bpchar.
func typeLabel(typ string) string {
	l := withoutTypmod(typ)
	if rest, ok := strings.CutPrefix(l, "character"); ok && (rest == "" || strings.HasPrefix(rest, "[")) {
		return "bpchar" + rest
	}
	return l
}

// withoutTypmod is a type as format_type prints it with no typmod, as an
// expression's result has none: numeric(5,2) is numeric, character
// varying(10)[] is character varying[]; a type in public goes bare.
func withoutTypmod(typ string) string {
	base, dims := typ, ""
	for strings.HasSuffix(base, "[]") {
		base, dims = strings.TrimSuffix(base, "[]"), dims+"[]"
	}
	if i := strings.IndexByte(base, '('); i >= 0 {
		if j := strings.IndexByte(base[i:], ')'); j >= 0 {
			base = strings.TrimSpace(base[:i]) + base[i+j+1:]
		}
	}
	return strings.TrimPrefix(base, DefaultSchema+".") + dims
}

// parseBool accepts what boolin accepts: true/false, yes/no, on/off, 1/0
// and unique prefixes of them, any case.
func parseBool(s string) (bool, bool) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return false, false
	}
	for _, w := range []struct {
		word string
		min  int
		val  bool
	}{{"true", 1, true}, {"false", 1, false}, {"yes", 1, true}, {"no", 1, false}, {"on", 2, true}, {"off", 2, false}, {"1", 1, true}, {"0", 1, false}} {
		if len(t) >= w.min && strings.HasPrefix(w.word, t) {
			return w.val, true
		}
	}
	return false, false
}

// displayType is how a type names itself in a printed expression: an
// enum or other user type in the public schema unqualified, as with
// PostgreSQL's default search_path.
func (a *applier) displayType(spec typeSpec) string {
	return strings.TrimPrefix(spec.rendered, DefaultSchema+".")
}

// sequenceDefault is the default a serial column gets: nextval of the
// sequence PostgreSQL names <table>_<column>_seq (shortened to fit 63
// bytes), qualified unless it lives in public.
// serialSequence is the sequence a serial column makes.
func serialSequence(t *Table, column string) QualName {
	return QualName{t.Schema, makeObjectName(t.Name, column, "seq")}
}

func sequenceDefaultOf(seq QualName) string {
	return "nextval(" + quoteLiteral(typeName(seq)) + "::regclass)"
}

// serialTypes maps the serial pseudo-types to the integer type of the
// column they make.
var serialTypes = map[string]string{
	"serial": "integer", "serial4": "integer",
	"bigserial": "bigint", "serial8": "bigint",
	"smallserial": "smallint", "serial2": "smallint",
}

// intervalOut normalises an interval literal made of "<number> <unit>"
// pairs the way interval_out prints it in the postgres style: "1 year 2
// mons 3 days 04:05:06". ok is false for anything else (ISO 8601, "@"
// forms, fractions), which is then kept as written.
func intervalOut(s string) (string, bool) {
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 || len(f)%2 != 0 {
		return "", false
	}
	var months, days, usecs int64
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return "", false
		}
		switch strings.TrimSuffix(f[i+1], "s") {
		case "year", "yr", "y":
			months += 12 * n
		case "mon", "month":
			months += n
		case "week", "w":
			days += 7 * n
		case "day", "d":
			days += n
		case "hour", "hr", "h":
			usecs += n * 3600e6
		case "minute", "min", "m":
			usecs += n * 60e6
		case "second", "sec":
			usecs += n * 1e6
		default:
			return "", false
		}
	}
	var parts []string
	plural := func(n int64, unit string) {
		if n == 0 {
			return
		}
		p := strconv.FormatInt(n, 10) + " " + unit
		if n != 1 && n != -1 {
			p += "s"
		}
		parts = append(parts, p)
	}
	plural(months/12, "year")
	plural(months%12, "mon")
	plural(days, "day")
	if usecs != 0 {
		sign := ""
		if usecs < 0 {
			sign, usecs = "-", -usecs
		}
		sec := usecs / 1e6
		parts = append(parts, fmt.Sprintf("%s%02d:%02d:%02d", sign, sec/3600, sec/60%60, sec%60))
	}
	if len(parts) == 0 {
		return "00:00:00", true
	}
	return strings.Join(parts, " "), true
}
