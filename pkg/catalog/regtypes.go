package catalog

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// An oid is a number the database assigned; the catalog names the object
// instead (relOid, typeOid, nspOid), which answers every comparison of
// two oids. Cast to regclass, regtype or regnamespace, an oid prints as
// its object's name, quoted and qualified as PostgreSQL prints it; a
// plain oid prints as its number, which only the database knows, so its
// text is unknown (opaque).

// opaque reports whether v has no text the catalog knows: a stand-in for
// a name it does not hold, or a plain oid.
func opaque(v value) bool {
	return isStandIn(v) || v.kind == vOid && v.text == ""
}

// regKind is a reg* type over qualified names: the prefix of its oids,
// how a name resolves, and the value it prints as.
type regKind struct {
	name    string // regclass, regtype
	prefix  string // "r:" relations, "t:" types
	resolve func(name string) (QualName, bool)
	oid     func(QualName) value
	of      func(QualName) value
	holds   string // what the catalog holds of the kind, for the stop
}

// regclass is v::regclass: an oid of a relation the catalog holds, or
// its name as ::regclass reads one.
func (e *evaluator) regclass(v value) (value, error) {
	return e.regcast(v, regKind{"regclass", "r:", e.a.regclass, relOid, e.a.regclassOf, "table or view"})
}

// regtype is v::regtype, for the enums and the tables' and views' row
// types.
func (e *evaluator) regtype(v value) (value, error) {
	return e.regcast(v, regKind{"regtype", "t:", e.a.regtype, typeOid, e.a.regtypeOf, "enum, table or view"})
}

func (e *evaluator) regcast(v value, k regKind) (value, error) {
	if v.kind == vOid {
		if rest, ok := strings.CutPrefix(v.s, k.prefix); ok {
			if q, ok := k.resolve(rest); ok && k.oid(q).s == v.s {
				return k.of(q), nil
			}
		}
		return value{kind: vOid, s: v.s}, nil // not one the catalog holds: its number
	}
	q, ok := k.resolve(v.String())
	if !ok {
		return unknown, stop("%s %q, which names no %s the catalog holds", k.name, brief(v), k.holds)
	}
	return k.of(q), nil
}

// regnamespace is v::regnamespace: a schema's name is read as an
// identifier (App is app, "App" is App).
func (e *evaluator) regnamespace(v value) (value, error) {
	if v.kind == vOid {
		if rest, ok := strings.CutPrefix(v.s, "n:"); ok {
			if schema, ok := e.a.schemaNamed(rest); ok {
				return e.a.namespaceOf(schema)
			}
		}
		return value{kind: vOid, s: v.s}, nil
	}
	schema, ok := e.a.schemaNamed(v.String())
	if !ok {
		return unknown, stop("regnamespace %q", brief(v))
	}
	return e.a.namespaceOf(schema)
}

// regclassOf is q's oid as a regclass: it prints as q's name, qualified
// when the search path would find another relation of that name first,
// or none.
func (a *applier) regclassOf(q QualName) value {
	v := relOid(q)
	first, kind := a.resolve("", q.Name)
	if kind == relNone {
		first = QualName{}
	}
	v.text = a.visibleName(q, first)
	return v
}

func (a *applier) regtypeOf(q QualName) value {
	v := typeOid(q)
	first := QualName{}
	for _, s := range a.lookupPath() {
		if c := (QualName{s, q.Name}); a.cat.enums[c] != nil || a.kindOf(c) != relNone {
			first = c
			break
		}
	}
	v.text = a.visibleName(q, first)
	return v
}

// visibleName prints q as PostgreSQL's reg* output functions do: its
// name alone when the search path finds it first, else qualified. The
// quotes are quote_ident()'s.
func (a *applier) visibleName(q, first QualName) string {
	name, err := quoteIdentFunc(q.Name)
	if err != nil {
		return "" // the server's version decides: not known
	}
	if first == q {
		return name
	}
	schema, err := quoteIdentFunc(q.Schema)
	if err != nil {
		return ""
	}
	return schema + "." + name
}

func (a *applier) namespaceOf(schema string) (value, error) {
	v := nspOid(schema)
	text, err := quoteIdentFunc(schema)
	if err != nil {
		return unknown, err
	}
	v.text = text
	return v, nil
}

// schemaNamed reads name as an identifier, as regnamespace does, and
// reports whether the catalog holds that schema.
func (a *applier) schemaNamed(name string) (string, bool) {
	rv, ok := parseName(name + ".t")
	if !ok || rv.Catalogname != "" || rv.Schemaname == "" {
		return "", false
	}
	_, ok = a.cat.schemas[rv.Schemaname]
	return rv.Schemaname, ok
}

// regclass resolves a relation name as ::regclass does: parsed as a
// possibly qualified, possibly quoted name, found along search_path.
func (a *applier) regclass(name string) (QualName, bool) {
	rv, ok := parseName(name)
	if !ok {
		return QualName{}, false
	}
	q, kind := a.resolveRV(rv)
	return q, kind != relNone
}

// regtype resolves the name of an enum or of a table's or a view's row
// type, as ::regtype does.
func (a *applier) regtype(name string) (QualName, bool) {
	if q, ok := a.regclass(name); ok {
		return q, true
	}
	rv, ok := parseName(name)
	if !ok {
		return QualName{}, false
	}
	return a.findEnum(rv.Schemaname, rv.Relname)
}

// parseName parses text a reg* cast reads as a possibly qualified,
// possibly quoted name (App is app, "App" is App). Nothing else parses:
// not a list, not an expression.
func parseName(text string) (*pg.RangeVar, bool) {
	tree, err := pgtree.Parse("SELECT * FROM " + text)
	if err != nil || len(tree.Stmts) != 1 {
		return nil, false
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel == nil || len(sel.FromClause) != 1 || sel.FromClause[0].GetRangeVar() == nil {
		return nil, false
	}
	return sel.FromClause[0].GetRangeVar(), true
}
