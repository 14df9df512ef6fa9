package catalog

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Function is a user-defined function, as far as the SQL guard needs it:
// whether it may change anything. Overloads share one entry, which keeps
// the most volatile of them, so a name is never trusted beyond its least
// safe overload.
type Function struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Volatility is immutable, stable or volatile (PostgreSQL's default).
	// PostgreSQL refuses writes inside SQL and PL/pgSQL functions that
	// are not volatile, which is what makes the first two safe to call.
	Volatility string `json:"volatility"`
	Language   string `json:"language,omitempty"`
	// Returns is the result type as format_type prints it, for typing
	// view columns that call the function ("" when it returns a set or
	// a record, or overloads disagree). Aggregates are recorded too.
	Returns   string `json:"returns,omitempty"`
	Aggregate bool   `json:"aggregate,omitempty"`
}

// QualName returns the function's schema-qualified name.
func (f *Function) QualName() QualName { return QualName{f.Schema, f.Name} }

// Functions returns every user-defined function sorted by schema and name.
func (c *Catalog) Functions() []*Function { return sortedValues(c.functions) }

// LookupFunction finds a function as Lookup finds a table.
func (c *Catalog) LookupFunction(name string) *Function { return lookup(c.functions, name) }

var volatilityRank = map[string]int{"immutable": 0, "stable": 1, "volatile": 2}

// createFunction records CREATE [OR REPLACE] FUNCTION; procedures are
// called with CALL, which the guard refuses anyway.
func (a *applier) createFunction(s *pg.CreateFunctionStmt) error {
	if err := functionBody(s); err != nil {
		return err
	}
	schema, name := qualFromList(listStrings(&pg.Node{Node: &pg.Node_List{List: &pg.List{Items: s.Funcname}}}))
	if schema == "" {
		schema = a.creationSchema() // search_path may be empty: pg_dump empties it
	}
	a.recordRoutine(s, schema, name)
	if s.IsProcedure {
		return nil
	}
	f := &Function{Schema: schema, Name: name, Volatility: "volatile"}
	for _, o := range s.Options {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		v := ""
		if sv := d.Arg.GetString_(); sv != nil {
			v = strings.ToLower(sv.Sval)
		}
		switch d.Defname {
		case "volatility":
			if _, ok := volatilityRank[v]; ok {
				f.Volatility = v
			}
		case "language":
			f.Language = v
		}
	}
	if rt := s.ReturnType; rt != nil && !rt.Setof {
		if spec, err := a.typeOf(rt); err == nil && spec.rendered != "record" && spec.rendered != "trigger" && spec.rendered != "void" {
			f.Returns = spec.rendered
		}
	}
	a.recordFunction(f)
	return nil
}

// functionBody refuses a routine without a body, as PostgreSQL does.
func functionBody(s *pg.CreateFunctionStmt) error {
	if s.SqlBody != nil {
		if routineLanguage(s) != "sql" {
			return invalid("inline SQL function body only valid for language SQL")
		}
		return nil
	}
	for _, o := range s.Options {
		if d := o.GetDefElem(); d != nil && d.Defname == "as" {
			return nil
		}
	}
	return invalid("no function body specified")
}

// recordFunction adds f, merged with the overloads already recorded: the
// most volatile wins, and a result type only when all agree.
func (a *applier) recordFunction(f *Function) {
	if old := a.cat.functions[f.QualName()]; old != nil {
		if volatilityRank[old.Volatility] > volatilityRank[f.Volatility] {
			f.Volatility = old.Volatility
		}
		if old.Returns != f.Returns {
			f.Returns = ""
		}
	}
	a.cat.functions[f.QualName()] = f
}

// createAggregate records CREATE AGGREGATE: its result is the state type,
// or the final function's result. It is as safe to call as its state
// function.
func (a *applier) createAggregate(s *pg.DefineStmt) {
	schema, name := qualFromList(pgtree.Strings(s.Defnames))
	if schema == "" {
		schema = a.creationSchema() // search_path may be empty: pg_dump empties it
	}
	f := &Function{Schema: schema, Name: name, Volatility: "volatile", Aggregate: true}
	var sfunc, final []string
	for _, o := range s.Definition {
		d := o.GetDefElem()
		if d == nil {
			continue
		}
		switch strings.ToLower(d.Defname) {
		case "stype", "stype1":
			if tn := d.Arg.GetTypeName(); tn != nil {
				if spec, err := a.typeOf(tn); err == nil {
					f.Returns = spec.rendered
				}
			}
		case "sfunc", "sfunc1":
			sfunc = funcName(d.Arg)
		case "finalfunc":
			final = funcName(d.Arg)
		}
	}
	if fn := a.findFunction(sfunc); fn != nil {
		f.Volatility = fn.Volatility
	}
	if len(final) > 0 {
		f.Returns = ""
		if fn := a.findFunction(final); fn != nil {
			f.Returns = fn.Returns
		}
	}
	a.recordFunction(f)
}

// funcName is the name a CREATE AGGREGATE option gives a function, which
// the parser hands over as a type name or a list of strings.
func funcName(n *pg.Node) []string {
	if tn := n.GetTypeName(); tn != nil {
		return pgtree.Strings(tn.Names)
	}
	return listStrings(n)
}

// findFunction resolves a function name as written, following
// search_path when unqualified.
func (a *applier) findFunction(parts []string) *Function {
	return findOnPath(a, a.cat.functions, parts)
}

// findOnPath resolves a name as written in m: qualified as it is,
// unqualified along search_path.
func findOnPath[T any](a *applier, m map[QualName]*T, parts []string) *T {
	schema, name := qualFromList(parts)
	if name == "" {
		return nil
	}
	if schema != "" {
		return m[QualName{schema, name}]
	}
	for _, s := range a.lookupPath() {
		if v := m[QualName{s, name}]; v != nil {
			return v
		}
	}
	return nil
}

// dropFunctions forgets the named functions, all overloads: one that
// remains is unknown to the guard until it is created again, which errs
// on the safe side.
func (a *applier) dropFunctions(s *pg.DropStmt) {
	for _, obj := range s.Objects {
		owa := obj.GetObjectWithArgs()
		if owa == nil {
			continue
		}
		schema, name := qualFromList(listStrings(&pg.Node{Node: &pg.Node_List{List: &pg.List{Items: owa.Objname}}}))
		if schema != "" {
			delete(a.cat.functions, QualName{schema, name})
			continue
		}
		for q := range a.cat.functions {
			if q.Name == name {
				delete(a.cat.functions, q)
			}
		}
	}
}
