package sqlguard

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// What a statement reveals or costs beyond the tables it reads. A READ
// ONLY transaction as a reader role does not stop any of it (shown on a
// real PostgreSQL in TestCheckInPostgres):
//
//   - Casts to the reg* types look names up in the system catalogs:
//     10::regrole::text names a role, 'pg_authid'::regclass::oid finds
//     any relation, readable or not, and generate_series(1, 20000) cast
//     to regrole lists them all. Refused unless system catalogs are
//     allowed.
//   - current_user, session_user, current_role, user, current_schema and
//     current_catalog say who and where the query runs: reconnaissance,
//     never an answer about the schema. Refused unless system catalogs
//     are allowed (the operator's choice, see Options).
//   - XML parsed from text can carry a DTD, and a DTD can name external
//     entities: xmlparse, and casts to xml, are refused unless their text
//     is a constant without one.
//   - Resource bombs recognisable in the text are returned with a
//     warning naming the risk: a huge generate_series or repeat(), a
//     recursive query without LIMIT, a regular expression that nests
//     quantifiers. Refusing them would refuse real reports too; the
//     caller runs the SQL, with a statement_timeout (docs/ask.md).

// regTypes are the object identifier types whose input and output look
// names up in the system catalogs.
var regTypes = setOf("regclass", "regrole", "regproc", "regprocedure", "regoper", "regoperator",
	"regtype", "regnamespace", "regconfig", "regdictionary", "regcollation")

// sessionValues name the session's role, schema or database.
var sessionValues = map[pg.SQLValueFunctionOp]string{
	pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:    "current_user",
	pg.SQLValueFunctionOp_SVFOP_SESSION_USER:    "session_user",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:    "current_role",
	pg.SQLValueFunctionOp_SVFOP_USER:            "user",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:  "current_schema",
	pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG: "current_catalog",
}

// Thresholds past which a constant in the text makes a warning.
const (
	bigSeries = 10_000_000 // rows of a generate_series
	bigRepeat = 1_000_000  // characters a repeat() builds per row
)

// nestedQuantifier finds a group with a quantifier inside that is itself
// quantified, as in (a+)+ or (.*)*: the shape that backtracks
// exponentially.
var nestedQuantifier = regexp.MustCompile(`\([^()]*[+*}][^()]*\)\s*[+*{]`)

// exposure checks one node; it returns a refusal, or warnings.
func exposure(n *pg.Node, opts Options) (*Rejection, []string) {
	switch {
	case n.GetTypeCast() != nil:
		return castExposure(n.GetTypeCast(), opts)
	case n.GetSqlvalueFunction() != nil:
		if name, ok := sessionValues[n.GetSqlvalueFunction().Op]; ok {
			if !opts.SystemCatalogs {
				return reject(ErrUnsafe, "%s says who or where the query runs, which a question about the database's data does not need (system catalogs are not allowed)", name), nil
			}
			return nil, []string{"reads the session's " + name}
		}
	case n.GetXmlExpr() != nil && n.GetXmlExpr().Op == pg.XmlExprOp_IS_XMLPARSE:
		if args := n.GetXmlExpr().Args; len(args) > 0 {
			if why := xmlRisk(args[0]); why != "" {
				return reject(ErrUnsafe, "xmlparse of %s", why), nil
			}
		}
	case n.GetFuncCall() != nil:
		return nil, callWarnings(n.GetFuncCall())
	case n.GetAExpr() != nil:
		return nil, regexWarnings(n.GetAExpr())
	}
	return nil, nil
}

func castExposure(tc *pg.TypeCast, opts Options) (*Rejection, []string) {
	names := pgtree.Strings(tc.GetTypeName().GetNames())
	if len(names) == 0 {
		return nil, nil
	}
	typ := strings.ToLower(names[len(names)-1])
	switch {
	case regTypes[typ]:
		if !opts.SystemCatalogs {
			return reject(ErrUnsafe, "a cast to %s looks names up in the system catalogs, which queries may not read (system catalogs are not allowed)", typ), nil
		}
		return nil, []string{"casts to " + typ + ", which reads the system catalogs"}
	case typ == "xml":
		if why := xmlRisk(tc.Arg); why != "" {
			return reject(ErrUnsafe, "a cast to xml of %s", why), nil
		}
	}
	return nil, nil
}

// xmlRisk says why parsing arg as XML is unsafe: text that is not a
// constant, or a constant with a DTD.
func xmlRisk(arg *pg.Node) string {
	c := arg.GetAConst()
	if c == nil || c.GetSval() == nil {
		return "text that is not a constant, which may carry a DTD naming external entities"
	}
	if s := strings.ToLower(c.GetSval().Sval); strings.Contains(s, "<!doctype") || strings.Contains(s, "<!entity") {
		return "a document with a DTD, which can name external entities"
	}
	return ""
}

// callWarnings flags calls whose constant arguments make them huge.
func callWarnings(fc *pg.FuncCall) []string {
	names := pgtree.Strings(fc.Funcname)
	switch strings.ToLower(names[len(names)-1]) {
	case "generate_series":
		if len(fc.Args) < 2 {
			return nil
		}
		start, ok1 := constNumber(fc.Args[0])
		stop, ok2 := constNumber(fc.Args[1])
		step := 1.0
		if len(fc.Args) > 2 {
			step, _ = constNumber(fc.Args[2])
		}
		if ok1 && ok2 && step != 0 {
			if rows := (stop - start) / step; rows > bigSeries {
				return []string{fmt.Sprintf("generate_series makes about %.0f rows: the query may run for long; run it with a statement_timeout", rows)}
			}
		}
	case "repeat":
		if len(fc.Args) == 2 {
			if n, ok := constNumber(fc.Args[1]); ok && n > bigRepeat {
				return []string{fmt.Sprintf("repeat() builds a string of %.0f characters per row: the query may exhaust memory", n)}
			}
		}
	case "regexp_replace", "regexp_match", "regexp_matches", "regexp_like", "regexp_count", "regexp_substr",
		"regexp_instr", "regexp_split_to_array", "regexp_split_to_table", "substring":
		if len(fc.Args) >= 2 {
			return patternWarning(fc.Args[1])
		}
	}
	return nil
}

// regexWarnings flags a regular-expression match whose constant pattern
// nests quantifiers.
func regexWarnings(e *pg.A_Expr) []string {
	names := pgtree.Strings(e.Name)
	if len(names) == 0 {
		return nil
	}
	switch names[len(names)-1] {
	case "~", "~*", "!~", "!~*":
		return patternWarning(e.Rexpr)
	}
	return nil
}

func patternWarning(arg *pg.Node) []string {
	if c := arg.GetAConst(); c != nil && c.GetSval() != nil && nestedQuantifier.MatchString(c.GetSval().Sval) {
		return []string{fmt.Sprintf("the pattern %s nests quantifiers: matching it can take exponential time", quote(c.GetSval().Sval))}
	}
	return nil
}

// recursionWarning flags a WITH RECURSIVE query without a LIMIT.
func recursionWarning(sel *pg.SelectStmt) []string {
	if sel.GetWithClause().GetRecursive() && sel.LimitCount == nil {
		return []string{"a recursive query without LIMIT runs until its recursion ends; if it never does, only a statement_timeout stops it"}
	}
	return nil
}

// constNumber reads an integer or numeric constant, negated or not.
func constNumber(n *pg.Node) (float64, bool) {
	neg := 1.0
	if e := n.GetAExpr(); e != nil && e.Lexpr == nil && len(e.Name) == 1 && pgtree.Strings(e.Name)[0] == "-" {
		n, neg = e.Rexpr, -1
	}
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	c := n.GetAConst()
	switch {
	case c == nil:
		return 0, false
	case c.GetIval() != nil:
		return neg * float64(c.GetIval().Ival), true
	case c.GetFval() != nil:
		f, err := strconv.ParseFloat(c.GetFval().Fval, 64)
		return neg * f, err == nil
	}
	return 0, false
}

// quote is %q of s, cut to 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}
