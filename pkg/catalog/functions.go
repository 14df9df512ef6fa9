package catalog

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
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
func (a *applier) createFunction(s *pg.CreateFunctionStmt) {
	if s.IsProcedure {
		return
	}
	schema, name := qualFromList(listStrings(&pg.Node{Node: &pg.Node_List{List: &pg.List{Items: s.Funcname}}}))
	if schema == "" {
		schema = a.searchPath[0]
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
	if old := a.cat.functions[f.QualName()]; old != nil && volatilityRank[old.Volatility] > volatilityRank[f.Volatility] {
		f.Volatility = old.Volatility
	}
	a.cat.functions[f.QualName()] = f
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
