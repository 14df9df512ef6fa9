package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// The PL/pgSQL interpreter. Histories that ran against a real database
// make DDL in functions: a helper called once per table adds tenant_id
// through EXECUTE format(…), another renames a table when
// information_schema has it. When a routine is called with values the
// catalog knows, the interpreter runs it against the catalog: variables,
// IF, loops over arrays and ranges and over catalog queries, EXECUTE of
// the text it computes, PERFORM, CALL, RAISE, RETURN, and exception
// blocks. Whatever depends on data the database held (a table's rows, a
// setting, a function we do not run) is not guessed: the call stops
// there, what it applied before stands (PostgreSQL ran it too), and a
// tolerant Apply records the call as drift naming the construct.

// maxLoopIterations bounds one loop; the rest of the bounds for hostile
// input (a recursion without end, a string doubled thirty times, a query
// joining every table with every column) are the Apply's Limits.
const maxLoopIterations = 100_000

// callState is shared by every routine one top-level statement runs, and
// by what they run in turn (an EXECUTE'd DO block calls routines in the
// same state, so its depth counts). Its budget belongs to the whole
// Apply: a migration of a thousand calls of a routine that loops forever
// must not cost a thousand budgets.
type callState struct {
	budget *budget
	depth  int
	// parsed caches each routine source's PL/pgSQL tree: a helper is
	// called once per table.
	parsed map[string]map[string]any
}

type parsed struct {
	tree *pg.ParseResult
	err  error
}

const maxParsedCache = 4096

func (c *callState) parse(sql string) (*pg.ParseResult, error) {
	if p, ok := c.budget.parsed[sql]; ok {
		return p.tree, p.err
	}
	if err := c.budget.text(sql); err != nil {
		return nil, err
	}
	tree, err := pgtree.Parse(sql)
	if c.budget.parsed == nil {
		c.budget.parsed = map[string]parsed{}
	}
	if len(c.budget.parsed) < maxParsedCache {
		c.budget.parsed[sql] = parsed{tree, err}
	}
	return tree, err
}

func (c *callState) step() error {
	if c == nil {
		return nil
	}
	return c.budget.step(1)
}

// scan counts a row combined by a query: rows are cheaper than steps,
// so they have a bound of their own, on top of the bytes they hold.
func (c *callState) scan() error {
	if c == nil {
		return nil
	}
	c.budget.rows++
	if c.budget.rows > maxQueryRows {
		return c.budget.exceed("queries combining more than %d rows (the row budget)", maxQueryRows)
	}
	if c.budget.rows%checkEvery == 0 {
		return c.budget.checkClock()
	}
	return nil
}

// sqlError is an error SQL raised inside a routine: exception handlers
// catch it by condition name.
type sqlError struct {
	cond string
	err  error
}

func (e *sqlError) Error() string { return e.err.Error() }
func (e *sqlError) Unwrap() error { return e.err }

// condition names the SQLSTATE condition PostgreSQL raises for a catalog
// error, as exception handlers name it.
func condition(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, ErrDuplicate):
		switch {
		case strings.Contains(msg, "column "):
			return "duplicate_column"
		case strings.Contains(msg, "relation "), strings.Contains(msg, "table "), strings.Contains(msg, "view "):
			return "duplicate_table"
		case strings.Contains(msg, "schema "):
			return "duplicate_schema"
		}
		return "duplicate_object"
	case errors.Is(err, ErrUndefined):
		switch {
		case strings.Contains(msg, "column "):
			return "undefined_column"
		case strings.Contains(msg, "relation "), strings.Contains(msg, "table "):
			return "undefined_table"
		case strings.Contains(msg, "schema "):
			return "invalid_schema_name"
		}
		return "undefined_object"
	case errors.Is(err, ErrDependent):
		return "dependent_objects_still_exist"
	case errors.Is(err, ErrSyntax):
		return "syntax_error"
	}
	return "invalid_parameter_value"
}

// conditionClass lets a handler naming a class catch its members.
var conditionClass = map[string]string{
	"duplicate_column": "duplicate_object", "duplicate_table": "duplicate_object", "duplicate_schema": "duplicate_object",
}

// flow is how a statement list ended.
type flow int

const (
	flowNext flow = iota
	flowExit
	flowContinue
	flowReturn
)

// frame is one routine call or DO block.
type frame struct {
	ev     *evaluator
	name   string // for messages: "public.add_tenant_id" or "DO block"
	datums []*value
	names  map[string][]int // refname → datum numbers (several: ambiguous)
	loop   []map[string]*value
	params []value
	ret    value
	label  string // of the EXIT or CONTINUE under way
	// records are the datums declared record or %ROWTYPE.
	records map[int]bool
}

func (f *frame) variable(name string) (value, bool, error) {
	for i := len(f.loop) - 1; i >= 0; i-- {
		if v, ok := f.loop[i][name]; ok {
			return *v, true, nil
		}
	}
	ds := f.names[name]
	switch len(ds) {
	case 0:
		return unknown, false, nil
	case 1:
		return *f.datums[ds[0]], true, nil
	}
	return unknown, false, stop("variable %s, declared in more than one block", name)
}

func (f *frame) qualifies(name string) bool {
	_, bare, _ := strings.Cut(f.name, ".")
	return name == bare
}

func (f *frame) param(n int) (value, bool) {
	if n < 1 || n > len(f.params) {
		return unknown, false
	}
	return f.params[n-1], true
}

// findRoutine resolves a called name to a routine the catalog holds.
func (a *applier) findRoutine(parts []string) *Routine { return findOnPath(a, a.cat.routines, parts) }

// callRoutine runs rt for a call written as f, with its arguments
// evaluated in r.
func (e *evaluator) callRoutine(rt *Routine, f *pg.FuncCall, r *row) (value, error) {
	var pos []value
	named := map[string]value{}
	var names []string
	for _, arg := range f.Args {
		if na := arg.GetNamedArgExpr(); na != nil {
			v, err := e.eval(na.Arg, r)
			if err != nil {
				return unknown, err
			}
			named[na.Name] = v
			names = append(names, na.Name)
			continue
		}
		v, err := e.eval(arg, r)
		if err != nil {
			return unknown, err
		}
		pos = append(pos, v)
	}
	var match *routine
	for _, src := range rt.Sources {
		p, err := parseRoutine(src)
		if err != nil || !p.accepts(len(pos), names) {
			continue
		}
		if match != nil {
			return unknown, stop("call of %s, which more than one overload accepts", rt.QualName())
		}
		match = p
	}
	if match == nil {
		return unknown, stop("call of %s with %d argument(s), which no overload the history created accepts", rt.QualName(), len(f.Args))
	}
	match.name = rt.QualName()
	args, err := e.bind(match, pos, named)
	if err != nil {
		return unknown, err
	}
	return e.run(match.name.String(), match.src, args)
}

// bind lines the call's arguments up with the routine's parameters,
// filling defaults and gathering VARIADIC ones into an array.
func (e *evaluator) bind(rt *routine, pos []value, named map[string]value) ([]value, error) {
	args := make([]value, len(rt.params))
	for i, p := range rt.params {
		switch {
		case p.variadic && i < len(pos):
			args[i] = value{kind: vArray, arr: pos[i:]}
		case i < len(pos):
			args[i] = pos[i]
		case hasKey(named, p.name):
			args[i] = named[p.name]
		case p.def != nil:
			v, err := e.eval(p.def, nil)
			if err != nil {
				return nil, err
			}
			args[i] = v
		case p.variadic:
			args[i] = value{kind: vArray}
		}
		if p.typ != nil && !p.variadic {
			// An untyped literal takes the parameter's type, as
			// '{a,b}' becomes a text[].
			v, err := e.cast(args[i], p.typ)
			var st *stopped
			if errors.As(err, &st) {
				v, err = args[i], nil // a type we do not model keeps the value
			}
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
	}
	return args, nil
}

func hasKey(m map[string]value, k string) bool { _, ok := m[k]; return ok }

// run interprets one routine source (a CREATE FUNCTION or PROCEDURE as
// deparsed) with args, returning what RETURN gave.
func (e *evaluator) run(name, src string, args []value) (value, error) {
	if b := e.calls.budget; e.calls.depth >= b.limits.Depth {
		return unknown, b.tooDeep()
	}
	fn, err := e.calls.function(src)
	if err != nil {
		return unknown, err
	}
	fr := &frame{name: name, names: map[string][]int{}, params: args, ret: null, records: map[int]bool{}}
	fr.ev = &evaluator{a: e.a, vars: fr, calls: e.calls}
	if err := fr.declare(fn, args); err != nil {
		return unknown, err
	}
	e.calls.depth++
	defer func() { e.calls.depth-- }()
	action, _ := fn["action"].(map[string]any)
	fl, err := fr.exec([]any{action})
	if err != nil {
		return unknown, err
	}
	if fl == flowExit || fl == flowContinue {
		return unknown, stop("EXIT or CONTINUE outside a loop")
	}
	return fr.ret, nil
}

func (c *callState) function(src string) (map[string]any, error) {
	if fn, ok := c.parsed[src]; ok {
		return fn, nil
	}
	out, err := plpgsqlJSON(src)
	if err != nil {
		return nil, stop("a routine body PL/pgSQL does not parse (%v)", err)
	}
	var tree []map[string]any
	if err := json.Unmarshal([]byte(out), &tree); err != nil || len(tree) != 1 {
		return nil, stop("a routine body")
	}
	fn, _ := tree[0]["PLpgSQL_function"].(map[string]any)
	if fn == nil {
		return nil, stop("a routine body")
	}
	if c.parsed == nil {
		c.parsed = map[string]map[string]any{}
	}
	c.parsed[src] = fn
	return fn, nil
}

// declare sets up the datums: parameters first, as libpg_query lists
// them, then declared variables with their defaults. Loop variables are
// bound when their loop runs.
func (fr *frame) declare(fn map[string]any, args []value) error {
	datums, _ := fn["datums"].([]any)
	loopVars := map[string]bool{}
	walkJSON(fn["action"], func(key string, v map[string]any) bool {
		if key == "PLpgSQL_stmt_fori" {
			if vr, ok := v["var"].(map[string]any)["PLpgSQL_var"].(map[string]any); ok {
				loopVars[fmt.Sprint(vr["refname"], "@", vr["lineno"])] = true
			}
		}
		return false
	})
	fr.datums = make([]*value, len(datums))
	for i, d := range datums {
		v := null
		fr.datums[i] = &v
		dm, _ := d.(map[string]any)
		vr, ok := dm["PLpgSQL_var"].(map[string]any)
		if !ok {
			continue // rows and record fields point at other datums
		}
		name, _ := vr["refname"].(string)
		typ, _ := vr["datatype"].(map[string]any)["PLpgSQL_type"].(map[string]any)["typname"].(string)
		if t := strings.ToLower(strings.TrimSpace(typ)); t == "record" || strings.HasSuffix(t, "%rowtype") {
			fr.records[i] = true
		}
		if loopVars[fmt.Sprint(name, "@", vr["lineno"])] {
			continue
		}
		switch {
		case i < len(args):
			*fr.datums[i] = args[i]
		case name == "found":
			*fr.datums[i] = boolean(false)
		case name == "sqlstate" || name == "sqlerrm":
			*fr.datums[i] = unknown
		case vr["default_val"] != nil:
			val, err := fr.ev.certainOrUnknown(exprQuery(vr["default_val"]))
			if err != nil {
				return err
			}
			*fr.datums[i] = val
		}
		fr.names[name] = append(fr.names[name], i)
	}
	return nil
}

// certainOrUnknown evaluates expr; a value it cannot know is kept as
// unknown, to stop only if something later decides on it.
func (e *evaluator) certainOrUnknown(expr string) (value, error) {
	v, err := e.evalText(expr)
	var st *stopped
	if errors.As(err, &st) && !strings.HasPrefix(st.what, "a routine") {
		return unknown, nil
	}
	return v, err
}

// exec runs a statement list.
func (fr *frame) exec(stmts []any) (flow, error) {
	for _, s := range stmts {
		m, _ := s.(map[string]any)
		for kind, body := range m {
			node, _ := body.(map[string]any)
			if err := fr.ev.calls.step(); err != nil {
				return flowNext, err
			}
			fl, err := fr.statement(kind, node)
			if err != nil {
				var st *stopped
				if errors.As(err, &st) && !strings.Contains(st.what, " (line ") {
					st.what += fmt.Sprintf(" (line %v of %s)", node["lineno"], fr.name)
				}
				return flowNext, err
			}
			if fl != flowNext {
				return fl, nil
			}
		}
	}
	return flowNext, nil
}

func (fr *frame) statement(kind string, n map[string]any) (flow, error) {
	switch kind {
	case "PLpgSQL_stmt_block":
		return fr.block(n)
	case "PLpgSQL_stmt_assign":
		return flowNext, fr.assign(n)
	case "PLpgSQL_stmt_if":
		return fr.ifStmt(n)
	case "PLpgSQL_stmt_case":
		return fr.caseStmt(n)
	case "PLpgSQL_stmt_fori":
		return fr.forInt(n)
	case "PLpgSQL_stmt_foreach_a":
		return fr.forEach(n)
	case "PLpgSQL_stmt_fors", "PLpgSQL_stmt_dynfors":
		return fr.forQuery(kind, n)
	case "PLpgSQL_stmt_loop", "PLpgSQL_stmt_while":
		return fr.loopStmt(n)
	case "PLpgSQL_stmt_exit":
		return fr.exit(n)
	case "PLpgSQL_stmt_execsql":
		return flowNext, fr.execSQL(n)
	case "PLpgSQL_stmt_dynexecute":
		return flowNext, fr.execute(n)
	case "PLpgSQL_stmt_perform":
		// PERFORM sets FOUND by whether the query made a row.
		res, err := fr.query(exprQuery(n["expr"]))
		if err == nil {
			fr.foundFrom(res)
		}
		return flowNext, err
	case "PLpgSQL_stmt_call":
		return flowNext, fr.call(exprQuery(n["expr"]))
	case "PLpgSQL_stmt_raise":
		return flowNext, fr.raise(n)
	case "PLpgSQL_stmt_return":
		if q := exprQuery(n["expr"]); q != "" {
			v, err := fr.ev.certainOrUnknown(q)
			if err != nil {
				return flowNext, err
			}
			fr.ret = v
		}
		return flowReturn, nil
	case "PLpgSQL_stmt_assert", "PLpgSQL_stmt_commit":
		return flowNext, nil
	case "PLpgSQL_stmt_getdiag":
		for _, it := range asList(n["diag_items"]) {
			if d, ok := it.(map[string]any)["PLpgSQL_diag_item"].(map[string]any); ok {
				fr.set(d["target"], unknown)
			}
		}
		return flowNext, nil
	}
	return flowNext, stop("%s", strings.ToUpper(strings.ReplaceAll(strings.TrimPrefix(kind, "PLpgSQL_stmt_"), "_", " ")))
}

func asList(v any) []any { l, _ := v.([]any); return l }

// set stores v in datum varno (libpg_query leaves a zero varno out).
func (fr *frame) set(varno any, v value) {
	f, _ := varno.(float64)
	if i := int(f); i >= 0 && i < len(fr.datums) {
		*fr.datums[i] = v
	}
}

// block runs a BEGIN … END, with its exception handlers: an error inside
// undoes the block's changes, as its subtransaction did.
func (fr *frame) block(n map[string]any) (flow, error) {
	if label, _ := n["label"].(string); label != "" {
		fl, err := fr.exec(asList(n["body"]))
		if (fl == flowExit) && fr.label == label {
			fr.label = ""
			return flowNext, err
		}
		return fl, err
	}
	exc, _ := n["exceptions"].(map[string]any)
	if exc == nil {
		return fr.exec(asList(n["body"]))
	}
	a := fr.ev.a
	sp := a.savepoint()
	fl, err := fr.exec(asList(n["body"]))
	var se *sqlError
	if !errors.As(err, &se) {
		a.release(sp)
		return fl, err
	}
	a.rollback(sp)
	eb, _ := exc["PLpgSQL_exception_block"].(map[string]any)
	for _, h := range asList(eb["exc_list"]) {
		hm, _ := h.(map[string]any)["PLpgSQL_exception"].(map[string]any)
		for _, c := range asList(hm["conditions"]) {
			cm, _ := c.(map[string]any)["PLpgSQL_condition"].(map[string]any)
			name, _ := cm["condname"].(string)
			if name == "others" || name == se.cond || conditionClass[se.cond] == name {
				return fr.exec(asList(hm["action"]))
			}
		}
	}
	return flowNext, err
}

// assign runs `target := expression`.
func (fr *frame) assign(n map[string]any) error {
	q := exprQuery(n["expr"])
	expr, ok := assignedExpr(q)
	if !ok {
		return stop("assignment %q", excerpt(q))
	}
	v, err := fr.ev.certainOrUnknown(expr)
	if err != nil {
		return err
	}
	fr.set(n["varno"], v)
	return nil
}

// assignedExpr cuts "name := expr" (or "name = expr") to expr; targets
// with subscripts or fields are not evaluated.
func assignedExpr(q string) (string, bool) {
	res, err := pg.Scan(q)
	if err != nil || len(res.Tokens) < 3 {
		return "", false
	}
	t := res.Tokens[1]
	if res.Tokens[0].Token != pg.Token_IDENT && res.Tokens[0].GetKeywordKind() == pg.KeywordKind_NO_KEYWORD {
		return "", false
	}
	if t.Token != pg.Token_COLON_EQUALS && t.Token != pg.Token_ASCII_61 {
		return "", false
	}
	return q[t.End:], true
}

func (fr *frame) condition(q string) (bool, error) {
	v, err := fr.ev.certain(q, "the condition")
	if err != nil {
		return false, err
	}
	b, ok := v.asBool()
	return ok && b, nil
}

func (fr *frame) ifStmt(n map[string]any) (flow, error) {
	ok, err := fr.condition(exprQuery(n["cond"]))
	if err != nil || ok {
		if err != nil {
			return flowNext, err
		}
		return fr.exec(asList(n["then_body"]))
	}
	if taken, fl, err := fr.firstBranch(n["elsif_list"], "PLpgSQL_if_elsif", "cond"); taken || err != nil {
		return fl, err
	}
	return fr.exec(asList(n["else_body"]))
}

// firstBranch runs the statements of the first of branches (ELSIF or
// WHEN nodes of kind, each a condition under condKey and its stmts)
// whose condition holds, and reports whether one did.
func (fr *frame) firstBranch(branches any, kind, condKey string) (taken bool, fl flow, err error) {
	for _, b := range asList(branches) {
		br, _ := b.(map[string]any)[kind].(map[string]any)
		ok, err := fr.condition(exprQuery(br[condKey]))
		if err != nil {
			return false, flowNext, err
		}
		if ok {
			fl, err := fr.exec(asList(br["stmts"]))
			return true, fl, err
		}
	}
	return false, flowNext, nil
}

// caseStmt runs a CASE statement. A simple CASE (CASE x WHEN 1, 2 …)
// is compiled as conditions on a hidden variable ("__Case__Variable_N__"
// IN (1, 2)), which is set to x first. No branch taken and no ELSE is
// PostgreSQL's case_not_found, an error a handler may catch.
func (fr *frame) caseStmt(n map[string]any) (flow, error) {
	if q := exprQuery(n["t_expr"]); q != "" {
		v, err := fr.ev.certain(q, "the CASE value")
		if err != nil {
			return flowNext, err
		}
		fr.set(n["t_varno"], v)
	}
	if taken, fl, err := fr.firstBranch(n["case_when_list"], "PLpgSQL_case_when", "expr"); taken || err != nil {
		return fl, err
	}
	if haveElse, _ := n["have_else"].(bool); haveElse {
		return fr.exec(asList(n["else_stmts"]))
	}
	return flowNext, &sqlError{cond: "case_not_found", err: errors.New("case not found: CASE statement is missing ELSE part")}
}

// loopBody runs one iteration and says whether the loop goes on.
func (fr *frame) loopBody(label string, body []any) (goOn bool, fl flow, err error) {
	fl, err = fr.exec(body)
	if err != nil {
		return false, flowNext, err
	}
	switch fl {
	case flowExit:
		if fr.label == "" || fr.label == label {
			fr.label = ""
			return false, flowNext, nil
		}
		return false, fl, nil
	case flowContinue:
		if fr.label == "" || fr.label == label {
			fr.label = ""
			return true, flowNext, nil
		}
		return false, fl, nil
	case flowReturn:
		return false, fl, nil
	}
	return true, flowNext, nil
}

func (fr *frame) forInt(n map[string]any) (flow, error) {
	lo, err := fr.ev.certain(exprQuery(n["lower"]), "the loop bound")
	if err != nil {
		return flowNext, err
	}
	hi, err := fr.ev.certain(exprQuery(n["upper"]), "the loop bound")
	if err != nil {
		return flowNext, err
	}
	step := integer(1)
	if q := exprQuery(n["step"]); q != "" {
		if step, err = fr.ev.certain(q, "the loop step"); err != nil {
			return flowNext, err
		}
	}
	l, ok1 := lo.asInt()
	h, ok2 := hi.asInt()
	st, ok3 := step.asInt()
	if lo.kind == vNull || hi.kind == vNull || !ok1 || !ok2 || !ok3 || st <= 0 {
		return flowNext, stop("FOR over %s..%s", brief(lo), brief(hi))
	}
	// REVERSE counts down from the first bound to the second.
	rev, _ := n["reverse"].(bool)
	if span := h - l; (!rev && span/st > maxLoopIterations) || (rev && -span/st > maxLoopIterations) {
		return flowNext, stop("a loop of more than %d iterations", maxLoopIterations)
	}
	vr, _ := n["var"].(map[string]any)["PLpgSQL_var"].(map[string]any)
	name, _ := vr["refname"].(string)
	label, _ := n["label"].(string)
	slot := integer(0)
	fr.loop = append(fr.loop, map[string]*value{name: &slot})
	defer func() { fr.loop = fr.loop[:len(fr.loop)-1] }()
	ran := false
	for i := l; (!rev && i <= h) || (rev && i >= h); {
		// Bounds near the integer limits overflow the count above; the
		// step budget bounds the loop whatever its body.
		if err := fr.ev.calls.step(); err != nil {
			return flowNext, err
		}
		slot, ran = integer(i), true
		if goOn, fl, err := fr.loopBody(label, asList(n["body"])); err != nil || !goOn {
			return fr.looped(true, fl, err)
		}
		if rev {
			if i < h+st {
				break
			}
			i -= st
		} else {
			if i > h-st {
				break
			}
			i += st
		}
	}
	return fr.looped(ran, flowNext, nil)
}

func (fr *frame) forEach(n map[string]any) (flow, error) {
	if s, _ := n["slice"].(float64); s != 0 {
		return flowNext, stop("FOREACH … SLICE")
	}
	arr, err := fr.ev.certain(exprQuery(n["expr"]), "the array")
	if err != nil {
		return flowNext, err
	}
	if arr.kind == vNull {
		return flowNext, stop("FOREACH over a NULL array") // PostgreSQL raises here
	}
	if arr.kind != vArray {
		return flowNext, stop("FOREACH over %s", brief(arr))
	}
	label, _ := n["label"].(string)
	for _, el := range arr.arr {
		fr.set(n["varno"], el)
		if goOn, fl, err := fr.loopBody(label, asList(n["body"])); err != nil || !goOn {
			return fr.looped(true, fl, err)
		}
	}
	return fr.looped(len(arr.arr) > 0, flowNext, nil)
}

// looped ends a FOR or FOREACH loop: FOUND says whether it ran its body
// once or more, however it ended, as PostgreSQL sets it on leaving.
func (fr *frame) looped(ran bool, fl flow, err error) (flow, error) {
	if err == nil {
		fr.setFound(ran)
	}
	return fl, err
}

// forQuery runs FOR target IN query (or IN EXECUTE text) over the rows
// the catalog answers with; a query that may miss rows stops.
func (fr *frame) forQuery(kind string, n map[string]any) (flow, error) {
	q := exprQuery(n["query"])
	if kind == "PLpgSQL_stmt_dynfors" {
		if len(asList(n["params"])) > 0 {
			return flowNext, stop("FOR … IN EXECUTE … USING")
		}
		v, err := fr.ev.certain(q, "the query text")
		if err != nil {
			return flowNext, err
		}
		q = v.String()
	}
	res, err := fr.query(q)
	if err != nil {
		return flowNext, err
	}
	if !res.complete {
		return flowNext, stop("FOR over %q, whose rows the catalog may not all hold", excerpt(q))
	}
	label, _ := n["label"].(string)
	for _, r := range res.rows {
		fr.assignRow(n["var"], res.cols, r)
		if goOn, fl, err := fr.loopBody(label, asList(n["body"])); err != nil || !goOn {
			return fr.looped(true, fl, err)
		}
	}
	return fr.looped(len(res.rows) > 0, flowNext, nil)
}

func (fr *frame) setFound(b bool) {
	fr.setFoundValue(boolean(b))
}

func (fr *frame) setFoundValue(v value) {
	for _, i := range fr.names["found"] {
		*fr.datums[i] = v
	}
}

// foundFrom sets FOUND from a query's rows: true for a row found, which
// is certain; false only when the catalog holds every row the query
// could make.
func (fr *frame) foundFrom(res *result) {
	switch {
	case len(res.rows) > 0:
		fr.setFound(true)
	case res.complete:
		fr.setFound(false)
	default:
		fr.setFoundValue(unknown)
	}
}

// assignRow stores a row into a target: a single record variable gets
// the whole row, a list of variables a column each.
func (fr *frame) assignRow(target any, cols []string, vals []value) {
	t, _ := target.(map[string]any)
	rowNode, _ := t["PLpgSQL_row"].(map[string]any)
	var fields []map[string]any
	for _, f := range asList(rowNode["fields"]) {
		fm, _ := f.(map[string]any)
		fields = append(fields, fm)
	}
	if rec, ok := t["PLpgSQL_rec"].(map[string]any); ok {
		fields = []map[string]any{{"varno": rec["dno"], "record": true}}
	}
	if len(fields) == 1 && (len(vals) != 1 || fr.isRecord(fields[0]["varno"])) {
		fr.set(fields[0]["varno"], value{kind: vRecord, rec: &record{cols: cols, vals: vals}})
		return
	}
	for i, f := range fields {
		v := null
		if i < len(vals) {
			v = vals[i]
		}
		fr.set(f["varno"], v)
	}
}

// isRecord reports whether datum varno was declared record or %ROWTYPE.
func (fr *frame) isRecord(varno any) bool {
	f, _ := varno.(float64)
	return fr.records[int(f)]
}

func (fr *frame) loopStmt(n map[string]any) (flow, error) {
	label, _ := n["label"].(string)
	for i := 0; ; i++ {
		if i >= maxLoopIterations {
			return flowNext, stop("a loop of more than %d iterations", maxLoopIterations)
		}
		if c := exprQuery(n["cond"]); c != "" {
			ok, err := fr.condition(c)
			if err != nil || !ok {
				return flowNext, err
			}
		}
		goOn, fl, err := fr.loopBody(label, asList(n["body"]))
		if err != nil || !goOn {
			return fl, err
		}
	}
}

func (fr *frame) exit(n map[string]any) (flow, error) {
	if c := exprQuery(n["cond"]); c != "" {
		ok, err := fr.condition(c)
		if err != nil || !ok {
			return flowNext, err
		}
	}
	fr.label, _ = n["label"].(string)
	if isExit, _ := n["is_exit"].(bool); isExit {
		return flowExit, nil
	}
	return flowContinue, nil
}

// execSQL runs a static statement: DDL applies to the catalog, a query
// with INTO sets its targets, DML changes nothing we hold.
func (fr *frame) execSQL(n map[string]any) error {
	q := exprQuery(n["sqlstmt"])
	if into, _ := n["into"].(bool); into {
		return fr.selectInto(q, n["target"])
	}
	tree, err := parseApplied(q)
	if err != nil {
		return err
	}
	if changesRows(tree) {
		// FOUND says whether it changed a row: the data decides.
		fr.setFoundValue(unknown)
	}
	return fr.applyTree(q, tree)
}

// changesRows reports whether tree is INSERT, UPDATE, DELETE or MERGE,
// the static statements that set FOUND (EXECUTE leaves it alone).
func changesRows(tree *pg.ParseResult) bool {
	for _, st := range tree.Stmts {
		switch n := st.Stmt; {
		case n.GetInsertStmt() != nil, n.GetUpdateStmt() != nil, n.GetDeleteStmt() != nil, n.GetMergeStmt() != nil:
			return true
		}
	}
	return false
}

// execute runs EXECUTE of a computed text.
func (fr *frame) execute(n map[string]any) error {
	if len(asList(n["params"])) > 0 {
		return stop("EXECUTE … USING")
	}
	v, err := fr.ev.certain(exprQuery(n["query"]), "the text of EXECUTE")
	if err != nil {
		return err
	}
	if v.kind == vNull {
		return stop("EXECUTE of NULL") // PostgreSQL raises here
	}
	if into, _ := n["into"].(bool); into {
		return fr.selectInto(v.String(), n["target"])
	}
	return fr.apply(v.String())
}

func (fr *frame) selectInto(q string, target any) error {
	res, err := fr.query(q)
	if err != nil {
		return err
	}
	switch {
	case len(res.rows) > 0 && res.complete:
		fr.assignRow(target, res.cols, res.rows[0])
	case len(res.rows) == 0 && res.complete:
		// No row sets the targets to NULL: a variable, not a record
		// of no columns, whose text was ''.
		fr.assignRow(target, res.cols, slices.Repeat([]value{null}, len(res.cols)))
	default:
		fr.assignRow(target, res.cols, unknownRow(len(res.cols)))
	}
	fr.foundFrom(res)
	return nil
}

// query evaluates a SELECT in the routine's scope.
func (fr *frame) query(q string) (*result, error) {
	tree, err := fr.ev.calls.parse(q)
	if err != nil {
		return nil, stop("query %q (%v)", excerpt(q), err)
	}
	if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
		return nil, stop("statement %q", excerpt(q))
	}
	sel := tree.Stmts[0].Stmt.GetSelectStmt()
	if sel.IntoClause != nil {
		return nil, stop("SELECT … INTO a table")
	}
	return fr.ev.query(sel, nil)
}

// apply runs SQL text a routine executes: DDL goes to the catalog, and an
// error it raises is the routine's to catch.
func (fr *frame) apply(sql string) error {
	tree, err := parseApplied(sql)
	if err != nil {
		return err
	}
	return fr.applyTree(sql, tree)
}

// parseApplied parses SQL a routine runs; a syntax error is the
// routine's to catch.
func parseApplied(sql string) (*pg.ParseResult, error) {
	tree, err := pgtree.Parse(sql)
	if err != nil {
		return nil, &sqlError{cond: "syntax_error", err: fmt.Errorf("%w: %s in %q", ErrSyntax, err.Error(), excerpt(sql))}
	}
	return tree, nil
}

// applyTree runs sql, parsed as tree.
func (fr *frame) applyTree(sql string, tree *pg.ParseResult) error {
	for _, raw := range tree.Stmts {
		n := raw.Stmt
		switch {
		case n.GetSelectStmt() != nil:
			// PERFORM-like side effects only through routine calls.
			if _, err := fr.ev.query(n.GetSelectStmt(), nil); err != nil {
				var st *stopped
				if errors.As(err, &st) && !callsRoutine(fr.ev.a, n) {
					continue // a query of data: no schema change
				}
				return err
			}
			continue
		case n.GetCallStmt() != nil:
			if _, err := fr.ev.callStmt(n.GetCallStmt()); err != nil {
				return err
			}
			continue
		case n.GetTransactionStmt() != nil:
			if n.GetTransactionStmt().Kind == pg.TransactionStmtKind_TRANS_STMT_ROLLBACK {
				return stop("ROLLBACK inside a routine")
			}
			continue
		}
		if err := fr.ev.a.statement(n); err != nil {
			if errors.Is(err, ErrBudget) {
				return err // no handler catches a spent budget
			}
			return &sqlError{cond: condition(err), err: fmt.Errorf("%s: %w", excerpt(sql), err)}
		}
	}
	return nil
}

func (fr *frame) call(q string) error {
	tree, err := pgtree.Parse(q)
	if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetCallStmt() == nil {
		return stop("CALL %q", excerpt(q))
	}
	_, err = fr.ev.callStmt(tree.Stmts[0].Stmt.GetCallStmt())
	return err
}

// raise: notices change nothing; an exception the history ran past
// means the catalog differs from the database there.
func (fr *frame) raise(n map[string]any) error {
	if lvl, _ := n["elog_level"].(float64); lvl < 21 { // ERROR
		return nil
	}
	cond, _ := n["condname"].(string)
	if cond == "" {
		cond = "raise_exception"
	}
	msg, _ := n["message"].(string)
	return &sqlError{cond: cond, err: fmt.Errorf("RAISE EXCEPTION %q", msg)}
}

// callStmt runs CALL of a routine the catalog holds; others are unknown.
func (e *evaluator) callStmt(c *pg.CallStmt) (value, error) {
	if c.Funccall == nil {
		return unknown, nil
	}
	if rt := e.a.findRoutine(pgtree.Strings(c.Funccall.Funcname)); rt != nil {
		return e.callRoutine(rt, c.Funccall, nil)
	}
	return unknown, nil
}

// callsRoutine reports whether n calls a routine the catalog holds.
func callsRoutine(a *applier, n *pg.Node) bool {
	found := false
	pgtree.Walk(n, func(c *pg.Node) {
		if f := c.GetFuncCall(); f != nil && !found {
			found = a.findRoutine(pgtree.Strings(f.Funcname)) != nil
		}
	})
	return found
}

// interpret runs a top-level statement that calls routines. The history
// ran, so whatever stops the interpretation (a construct it cannot
// evaluate, an error the database did not raise, a spent budget) is
// drift, never a refusal: the statement was a no-op to the catalog
// before routines were interpreted at all.
func (a *applier) interpret(run func(e *evaluator) error) error {
	// A statement a routine runs is not inferred from: an exception
	// handler may have caught its error in the database.
	saved := a.inDo
	a.inDo = true
	defer func() { a.inDo = saved }()
	calls, done := a.callState()
	defer done()
	err := containPanic(func() error { return run(&evaluator{a: a, calls: calls}) })
	if err != nil {
		a.recordStop(err)
	}
	return nil
}

// callState is the interpretation under way, or a new one: a statement
// that a routine runs (EXECUTE of a DO block, of a CALL) goes on in the
// state of its caller, so depth and budget count across them.
func (a *applier) callState() (*callState, func()) {
	if a.calls != nil {
		return a.calls, func() {}
	}
	if a.trees == nil {
		a.trees = map[string]map[string]any{}
	}
	a.calls = &callState{parsed: a.trees, budget: a.spent}
	return a.calls, func() { a.calls = nil }
}

// recordStop notes where an interpretation stopped, once per top-level
// statement: what a routine applied before that point stands, and the
// catalog may differ from the database from there on.
func (a *applier) recordStop(err error) {
	if len(a.drift) > 0 {
		last := a.drift[len(a.drift)-1]
		if last.Stopped && last.Statement == a.stmt && last.Source == a.source {
			return
		}
	}
	d := driftOf(a.errorAt(a.stmt, a.raw, err), "")
	d.Stopped = true
	a.drift = append(a.drift, d)
}

// interpretDo runs a DO block's body. It reports false, with the catalog
// as it was, when the block stops at a construct it cannot evaluate: the
// caller then applies its statements leniently, as before blocks were
// interpreted. Either way the stop is drift. A spent budget reports true:
// nothing more of the block is tried.
func (a *applier) interpretDo(src string) bool {
	inDo := a.inDo
	a.inDo = true
	defer func() { a.inDo = inDo }()
	calls, done := a.callState()
	defer done()
	sp := a.savepoint()
	e := &evaluator{a: a, calls: calls}
	err := containPanic(func() error {
		_, err := e.run("DO block", src, nil)
		return err
	})
	if err == nil {
		a.release(sp)
		return true
	}
	a.recordStop(err)
	if errors.Is(err, ErrBudget) {
		// No fallback runs: what the block applied stands, as a
		// routine's does.
		a.release(sp)
		return true
	}
	a.rollback(sp)
	return false
}

// containPanic turns a panic of the interpreter into a stop: a routine
// body is input, and a bug it reaches must cost that call, not the
// worker.
func containPanic(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = stop("a construct that broke the interpreter (%v)", r)
		}
	}()
	return f()
}
