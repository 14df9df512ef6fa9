package catalog

import (
	"encoding/json"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Routine is a PL/pgSQL function or procedure whose body can change the
// schema (EXECUTE, DDL, PERFORM or CALL of another routine). The catalog
// keeps its source so that a later `SELECT helper('invoices')` or `CALL
// helper(…)` applies the DDL the call generates (see interpret). Overloads
// share one entry.
type Routine struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// Sources holds one CREATE statement per overload, as libpg_query
	// deparses it: the body is kept byte for byte, so line numbers in
	// drift match the migration's.
	Sources []string `json:"sources"`
}

// QualName returns the routine's schema-qualified name.
func (r *Routine) QualName() QualName { return QualName{r.Schema, r.Name} }

// maxRoutineSource bounds what one overload may keep: catalogs are stored
// whole, and a helper is a few hundred bytes.
const maxRoutineSource = 64 << 10

// recordRoutine keeps s when its body can change the schema; otherwise,
// and when it replaces such a routine with a harmless one, the name stops
// being interpreted.
func (a *applier) recordRoutine(s *pg.CreateFunctionStmt, schema, name string) {
	q := QualName{schema, name}
	src := ""
	if routineLanguage(s) == "plpgsql" && !returnsTrigger(s) {
		if out, err := pg.Deparse(&pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: &pg.Node{Node: &pg.Node_CreateFunctionStmt{CreateFunctionStmt: s}}}}}); err == nil && len(out) <= maxRoutineSource && changesSchema(out) {
			src = out
		}
	}
	old := a.cat.routines[q]
	sig := signature(s)
	var keep []string
	if old != nil {
		for _, o := range old.Sources {
			if prev, err := parseRoutine(o); err != nil || signature(prev.stmt) != sig {
				keep = append(keep, o)
			}
		}
	}
	if src != "" {
		keep = append(keep, src)
	}
	if len(keep) == 0 {
		delete(a.cat.routines, q)
		return
	}
	a.cat.routines[q] = &Routine{Schema: schema, Name: name, Sources: keep}
}

func routineLanguage(s *pg.CreateFunctionStmt) string {
	for _, o := range s.Options {
		if d := o.GetDefElem(); d != nil && d.Defname == "language" {
			if sv := d.Arg.GetString_(); sv != nil {
				return strings.ToLower(sv.Sval)
			}
		}
	}
	return "sql"
}

func returnsTrigger(s *pg.CreateFunctionStmt) bool {
	if s.ReturnType == nil {
		return false
	}
	names := pgtree.Strings(s.ReturnType.Names)
	if len(names) == 0 {
		return false
	}
	last := names[len(names)-1]
	return last == "trigger" || last == "event_trigger"
}

// signature is an overload's identity as far as replacement goes: its
// input parameter types. CREATE OR REPLACE of the same signature
// replaces; another signature is another overload.
func signature(s *pg.CreateFunctionStmt) string {
	var b strings.Builder
	for _, p := range s.Parameters {
		fp := p.GetFunctionParameter()
		if fp == nil || fp.Mode == pg.FunctionParameterMode_FUNC_PARAM_OUT || fp.Mode == pg.FunctionParameterMode_FUNC_PARAM_TABLE {
			continue
		}
		if fp.ArgType != nil {
			b.WriteString(strings.Join(pgtree.Strings(fp.ArgType.Names), "."))
			if len(fp.ArgType.ArrayBounds) > 0 {
				b.WriteString("[]")
			}
		}
		b.WriteByte(',')
	}
	return b.String()
}

// changesSchema reports whether a PL/pgSQL routine can change the schema:
// it executes dynamic SQL, a statement other than a query or DML, or calls
// something that might.
func changesSchema(src string) bool {
	out, err := plpgsqlJSON(src)
	if err != nil {
		return false
	}
	var tree any
	if json.Unmarshal([]byte(out), &tree) != nil {
		return false
	}
	return walkJSON(tree, func(key string, v map[string]any) bool {
		switch key {
		case "PLpgSQL_stmt_dynexecute", "PLpgSQL_stmt_dynfors", "PLpgSQL_stmt_perform", "PLpgSQL_stmt_call":
			return true
		case "PLpgSQL_stmt_execsql":
			return !isQueryOrDML(exprQuery(v["sqlstmt"]))
		}
		return false
	})
}

// walkJSON calls f on every object held under a single key, as
// libpg_query writes nodes, until f returns true.
func walkJSON(v any, f func(key string, v map[string]any) bool) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if m, ok := c.(map[string]any); ok && f(k, m) {
				return true
			}
			if walkJSON(c, f) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if walkJSON(c, f) {
				return true
			}
		}
	}
	return false
}

func isQueryOrDML(sql string) bool {
	tree, err := pgtree.Parse(sql)
	if err != nil || len(tree.Stmts) != 1 {
		return false
	}
	n := tree.Stmts[0].Stmt
	return n.GetSelectStmt() != nil || n.GetInsertStmt() != nil || n.GetUpdateStmt() != nil ||
		n.GetDeleteStmt() != nil || n.GetMergeStmt() != nil
}

// Routines returns the schema-changing routines sorted by schema and name.
func (c *Catalog) Routines() []*Routine { return sortedValues(c.routines) }

// dropRoutines forgets routines as dropFunctions forgets functions.
func (a *applier) dropRoutines(s *pg.DropStmt) {
	for _, obj := range s.Objects {
		owa := obj.GetObjectWithArgs()
		if owa == nil {
			continue
		}
		schema, name := qualFromList(pgtree.Strings(owa.Objname))
		for q := range a.cat.routines {
			if q.Name == name && (schema == "" || q.Schema == schema) {
				delete(a.cat.routines, q)
			}
		}
	}
}

// routine is one overload, parsed for a call.
type routine struct {
	name   QualName
	stmt   *pg.CreateFunctionStmt
	src    string
	params []routineParam
}

type routineParam struct {
	name     string
	def      *pg.Node // default expression, or nil
	variadic bool
	typ      *pg.TypeName
}

func parseRoutine(src string) (*routine, error) {
	tree, err := pgtree.Parse(src)
	if err != nil {
		return nil, err
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetCreateFunctionStmt() == nil {
		return nil, errNotRoutine
	}
	s := tree.Stmts[0].Stmt.GetCreateFunctionStmt()
	r := &routine{stmt: s, src: src}
	for _, p := range s.Parameters {
		fp := p.GetFunctionParameter()
		if fp == nil || fp.Mode == pg.FunctionParameterMode_FUNC_PARAM_OUT || fp.Mode == pg.FunctionParameterMode_FUNC_PARAM_TABLE {
			continue
		}
		r.params = append(r.params, routineParam{name: fp.Name, def: fp.Defexpr, typ: fp.ArgType,
			variadic: fp.Mode == pg.FunctionParameterMode_FUNC_PARAM_VARIADIC})
	}
	return r, nil
}

// accepts reports whether a call with n positional arguments and the
// named ones can bind to r.
func (r *routine) accepts(n int, named []string) bool {
	total := n + len(named)
	if total > len(r.params) && (len(r.params) == 0 || !r.params[len(r.params)-1].variadic) {
		return false
	}
	for i := total; i < len(r.params); i++ {
		if r.params[i].def == nil && !slices.Contains(named, r.params[i].name) {
			if !(i == len(r.params)-1 && r.params[i].variadic && total >= i) {
				return false
			}
		}
	}
	for _, nm := range named {
		found := false
		for _, p := range r.params {
			found = found || p.name == nm
		}
		if !found {
			return false
		}
	}
	return true
}
