// Package sqlguard checks SQL written by a model before it is returned:
// it must be exactly one read-only statement (SELECT, WITH … SELECT,
// VALUES), call only functions on an allowlist of read-only built-ins
// (functions.go), and read only relations the database's catalog has. It parses with PostgreSQL's own parser
// (libpg_query), so comments, quoting and nesting cannot hide anything.
// It never executes SQL.
package sqlguard

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Failure classes; match with errors.Is.
var (
	ErrInvalid      = errors.New("invalid_sql")   // does not parse
	ErrUnsafe       = errors.New("unsafe_sql")    // not a single read-only statement
	ErrUnknownTable = errors.New("unknown_table") // reads a relation the catalog lacks
	// ErrUnknownColumn: a column qualified by a relation the catalog
	// knows is not one of its columns (the stale-schema case).
	ErrUnknownColumn = errors.New("unknown_column")
)

// Rejection says why a statement was refused. It wraps one of the
// sentinels above.
type Rejection struct {
	Kind   error
	Reason string
}

func (r *Rejection) Error() string        { return r.Kind.Error() + ": " + r.Reason }
func (r *Rejection) Unwrap() error        { return r.Kind }
func (r *Rejection) Is(target error) bool { return target == r.Kind }

func reject(kind error, format string, args ...any) *Rejection {
	return &Rejection{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// Result is what a passing statement reads.
type Result struct {
	Tables   []string // schema.name of every catalog relation read, sorted
	Warnings []string // e.g. columns no referenced table has
}

// sideEffects are functions that write, sleep, reach outside the
// database or run other SQL, by name (schema ignored, lower case).
var sideEffects = map[string]bool{
	"pg_sleep": true, "pg_sleep_for": true, "pg_sleep_until": true,
	"pg_read_file": true, "pg_read_binary_file": true, "pg_ls_dir": true, "pg_stat_file": true,
	"pg_file_write": true, "pg_file_rename": true, "pg_file_unlink": true, "pg_logdir_ls": true,
	"pg_terminate_backend": true, "pg_cancel_backend": true, "pg_reload_conf": true, "pg_rotate_logfile": true,
	"pg_switch_wal": true, "pg_create_restore_point": true, "pg_promote": true, "pg_backup_start": true, "pg_backup_stop": true,
	"pg_create_logical_replication_slot": true, "pg_create_physical_replication_slot": true, "pg_drop_replication_slot": true,
	"pg_logical_emit_message": true, "pg_replication_origin_create": true,
	"set_config": true, "nextval": true, "setval": true, "pg_notify": true,
	"pg_advisory_lock": true, "pg_advisory_xact_lock": true, "pg_try_advisory_lock": true, "pg_advisory_lock_shared": true,
	"pg_advisory_unlock": true, "pg_advisory_unlock_all": true,
	"query_to_xml": true, "query_to_xml_and_xmlschema": true, "cursor_to_xml": true, "table_to_xml": true,
	"pg_import_system_collations": true, "pg_stat_reset": true, "pg_stat_reset_shared": true,
	"txid_current": true, "pg_current_xact_id": true,
}

// sideEffectPrefixes cover function families: dblink(), dblink_exec(), …,
// the large-object API lo_*(), and pg_write_* style helpers.
var sideEffectPrefixes = []string{"dblink", "lo_", "pg_write", "pg_replication_origin"}

func hasSideEffects(name string) bool {
	if sideEffects[name] {
		return true
	}
	for _, p := range sideEffectPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// systemSchemas are the catalogs every PostgreSQL has; reading them is
// refused.
var systemSchemas = map[string]bool{"pg_catalog": true, "information_schema": true}

// Options relax the checks for a request that asks for it.
type Options struct {
	// SystemCatalogs allows reading pg_catalog and information_schema
	// (with a warning): for questions about the server itself, asked by a
	// caller who means it.
	SystemCatalogs bool
	// Schema is the schema the SQL was written in (its search_path
	// before public): unqualified names are looked up there first. ""
	// is search_path public.
	Schema string
}

// Check parses and checks sql against cat (nil: skip the table check).
func Check(sql string, cat *catalog.Catalog) (*Result, error) {
	return CheckWith(sql, cat, Options{})
}

// CheckWith is Check with options. It reads as its stages: one
// statement, a walk that refuses what writes or leaks and collects what
// the query names, then the names checked against the catalog.
func CheckWith(sql string, cat *catalog.Catalog, opts Options) (*Result, error) {
	root, err := oneQuery(sql)
	if err != nil {
		return nil, err
	}
	q := &queryScan{opts: opts, cat: cat, ctes: map[string]bool{}, aliases: map[string]bool{}, warnings: recursionWarning(root.GetSelectStmt())}
	pgtree.Walk(root, q.visit)
	if q.problem != nil {
		return nil, q.problem
	}
	res := &Result{Warnings: q.warnings}
	if cat == nil {
		return res, nil
	}
	read, err := q.resolveReads(res)
	if err != nil {
		return nil, err
	}
	if bad := unknownColumns(read, q.colRefs); len(bad) > 0 {
		return nil, reject(ErrUnknownColumn, "%s", strings.Join(bad, "; "))
	}
	res.Warnings = append(res.Warnings, columnWarnings(read, q.colRefs, q.aliases)...)
	return res, nil
}

// oneQuery parses sql as exactly one read-only query and returns its
// statement.
func oneQuery(sql string) (*pg.Node, error) {
	tree, err := pgtree.Parse(sql)
	if err != nil {
		return nil, reject(ErrInvalid, "%v", err)
	}
	switch n := len(tree.Stmts); {
	case n == 0:
		return nil, reject(ErrInvalid, "no statement")
	case n > 1:
		return nil, reject(ErrUnsafe, "%d statements; exactly one is allowed", n)
	}
	root := tree.Stmts[0].Stmt
	if root.GetSelectStmt() == nil {
		return nil, reject(ErrUnsafe, "%s is not a read-only query; only SELECT, WITH … SELECT and VALUES are allowed", statementKind(root))
	}
	return root, nil
}

// queryScan is one walk over a query's tree: the first problem it meets,
// and the relations, columns and aliases the query names.
type queryScan struct {
	opts     Options
	cat      *catalog.Catalog
	problem  *Rejection
	warnings []string
	ctes     map[string]bool
	rels     []*pg.RangeVar
	colRefs  [][]string
	aliases  map[string]bool
}

func (q *queryScan) visit(n *pg.Node) {
	if q.problem != nil {
		return
	}
	rej, warn := exposure(n, q.opts)
	if rej != nil {
		q.problem = rej
		return
	}
	for _, w := range warn {
		q.warnings = appendOnce(q.warnings, w)
	}
	switch {
	case n.GetSelectStmt() != nil:
		s := n.GetSelectStmt()
		if s.IntoClause != nil {
			q.problem = reject(ErrUnsafe, "SELECT … INTO creates a table")
		} else if len(s.LockingClause) > 0 {
			q.problem = reject(ErrUnsafe, "FOR UPDATE/SHARE takes row locks")
		}
	case n.GetInsertStmt() != nil, n.GetUpdateStmt() != nil, n.GetDeleteStmt() != nil, n.GetMergeStmt() != nil:
		q.problem = reject(ErrUnsafe, "a data-modifying statement (%s) inside the query", statementKind(n))
	case n.GetCommonTableExpr() != nil:
		q.ctes[n.GetCommonTableExpr().Ctename] = true
		q.alias("", n.GetCommonTableExpr().Aliascolnames)
	case n.GetFuncCall() != nil:
		q.problem = q.function(pgtree.Strings(n.GetFuncCall().Funcname))
	case n.GetRangeVar() != nil:
		q.rels = append(q.rels, n.GetRangeVar())
	case n.GetColumnRef() != nil:
		q.colRefs = append(q.colRefs, pgtree.Strings(n.GetColumnRef().Fields))
	case n.GetResTarget() != nil && n.GetResTarget().Name != "":
		q.aliases[n.GetResTarget().Name] = true
	case n.GetAlias() != nil:
		q.alias(n.GetAlias().Aliasname, n.GetAlias().Colnames)
	}
}

// alias records a name (if any) and column names the query gives.
func (q *queryScan) alias(name string, cols []*pg.Node) {
	if name != "" {
		q.aliases[name] = true
	}
	for _, c := range pgtree.Strings(cols) {
		q.aliases[c] = true
	}
}

// function refuses a call with side effects or one the catalog does not
// allow.
func (q *queryScan) function(names []string) *Rejection {
	if hasSideEffects(strings.ToLower(names[len(names)-1])) {
		return reject(ErrUnsafe, "function %s() has side effects", strings.Join(names, "."))
	}
	if ok, why := functionAllowed(names, q.cat); !ok {
		return reject(ErrUnsafe, "function %s() %s (see docs/ask.md)", strings.Join(names, "."), why)
	}
	return nil
}

// resolveReads finds each relation the query reads in the catalog (CTEs
// aside), refusing system catalogs unless allowed and naming every
// relation the catalog lacks; it fills res.Tables, sorted.
func (q *queryScan) resolveReads(res *Result) ([]relation, error) {
	var unknown []string
	seen := map[string]bool{}
	var read []relation
	for _, rv := range q.rels {
		if rv.Schemaname == "" && q.ctes[rv.Relname] {
			continue
		}
		if systemSchemas[rv.Schemaname] {
			// System catalogs and statistics views show other databases'
			// objects, roles and sessions: not what a question about this
			// schema needs, unless the request says so.
			if !q.opts.SystemCatalogs {
				return nil, reject(ErrUnsafe, "reads the system catalog %s.%s; queries may read only the database's own tables and views (a request may allow system catalogs)", rv.Schemaname, rv.Relname)
			}
			res.Warnings = appendOnce(res.Warnings, fmt.Sprintf("reads the system catalog %s.%s", rv.Schemaname, rv.Relname))
			continue
		}
		r, ok := resolve(q.cat, rv, q.opts.Schema)
		if !ok {
			name := rv.Relname
			if rv.Schemaname != "" {
				name = rv.Schemaname + "." + name
			}
			unknown = appendOnce(unknown, name)
			continue
		}
		r.alias = rv.Relname
		if rv.Alias != nil {
			r.alias = rv.Alias.Aliasname
		}
		read = append(read, r)
		if !seen[r.name] {
			seen[r.name] = true
			res.Tables = append(res.Tables, r.name)
		}
	}
	if len(unknown) > 0 {
		return nil, reject(ErrUnknownTable, "%s not in database %s (catalog version %d)", plural(unknown), q.cat.Database, q.cat.Version)
	}
	sort.Strings(res.Tables)
	return read, nil
}

// systemColumns every table has besides its own.
var systemColumns = map[string]bool{"ctid": true, "xmin": true, "xmax": true, "cmin": true, "cmax": true, "tableoid": true, "oid": true}

// unknownColumns lists the columns qualified by a catalog relation's name
// or alias that the relation does not have, each with the nearest real
// names, for the repair round. Unqualified names stay warnings
// (columnWarnings): they may come from a subquery or a function.
func unknownColumns(read []relation, refs [][]string) []string {
	byAlias := map[string]relation{}
	for _, r := range read {
		byAlias[r.alias] = r
	}
	var out []string
	for _, ref := range refs {
		if len(ref) < 2 {
			continue
		}
		col, qual := ref[len(ref)-1], ref[len(ref)-2]
		r, ok := byAlias[qual]
		if !ok || len(r.columns) == 0 || r.columns[col] || systemColumns[col] {
			continue
		}
		msg := fmt.Sprintf("column %s.%s does not exist in %s", qual, col, r.name)
		if near := nearest(col, r.columns, 3); len(near) > 0 {
			msg += " (did you mean " + strings.Join(near, ", ") + "?)"
		}
		out = appendOnce(out, msg)
	}
	return out
}

// nearest returns up to n of names closest to s by edit distance, among
// those close enough to be a likely mistake (or a rename's other name).
func nearest(s string, names map[string]bool, n int) []string {
	type cand struct {
		name string
		d    int
	}
	var all []cand
	for name := range names {
		all = append(all, cand{name, editDistance(s, name)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].name < all[j].name
	})
	var out []string
	limit := max(2, len(s)/2)
	for _, c := range all {
		likely := c.d <= limit || strings.Contains(c.name, s) || strings.Contains(s, c.name)
		if len(out) < n && likely {
			out = append(out, c.name)
		}
	}
	return out
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

type relation struct {
	name, alias string
	columns     map[string]bool
}

// resolve finds a relation as PostgreSQL would with search_path schema,
// public: qualified names exactly, unqualified ones in schema, then in
// public, then in the only schema that has one of that name.
func resolve(cat *catalog.Catalog, rv *pg.RangeVar, schema string) (relation, bool) {
	try := func(q catalog.QualName) (relation, bool) {
		if t := cat.Table(q); t != nil {
			return relation{name: q.Schema + "." + q.Name, columns: columnSet(t.Columns)}, true
		}
		if v := cat.View(q); v != nil {
			return relation{name: q.Schema + "." + q.Name, columns: columnSet(v.Columns)}, true
		}
		return relation{}, false
	}
	if rv.Schemaname != "" {
		return try(catalog.QualName{Schema: rv.Schemaname, Name: rv.Relname})
	}
	if schema != "" {
		if r, ok := try(catalog.QualName{Schema: schema, Name: rv.Relname}); ok {
			return r, true
		}
	}
	if r, ok := try(catalog.QualName{Schema: catalog.DefaultSchema, Name: rv.Relname}); ok {
		return r, true
	}
	var found []relation
	for _, t := range cat.Tables() {
		if t.Name == rv.Relname {
			found = append(found, relation{name: t.Schema + "." + t.Name, columns: columnSet(t.Columns)})
		}
	}
	for _, v := range cat.Views() {
		if v.Name == rv.Relname {
			found = append(found, relation{name: v.Schema + "." + v.Name, columns: columnSet(v.Columns)})
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return relation{}, false
}

func columnSet(cols []*catalog.Column) map[string]bool {
	m := make(map[string]bool, len(cols))
	for _, c := range cols {
		m[c.Name] = true
	}
	return m
}

// columnWarnings names column references that no referenced relation has
// (best effort: aliases, CTE columns and output names are allowed).
func columnWarnings(read []relation, refs [][]string, aliases map[string]bool) []string {
	var out []string
	for _, ref := range refs {
		if len(ref) == 0 {
			continue // a bare *
		}
		col := ref[len(ref)-1]
		if aliases[col] {
			continue
		}
		if len(ref) >= 2 {
			continue // qualified: unknownColumns refuses those
		}
		known := false
		for _, r := range read {
			if r.columns[col] || len(r.columns) == 0 {
				known = true
				break
			}
		}
		if !known && len(read) > 0 {
			out = appendOnce(out, fmt.Sprintf("column %s is in none of the tables read", col))
		}
	}
	return out
}

func plural(names []string) string {
	if len(names) == 1 {
		return "relation " + names[0] + " is"
	}
	return "relations " + strings.Join(names, ", ") + " are"
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// statementNames are the statement kinds whose node name is not already
// the SQL a person would recognise.
var statementNames = map[string]string{
	"VariableSet": "SET", "VariableShow": "SHOW", "Transaction": "transaction control",
	"Create": "CREATE TABLE", "Index": "CREATE INDEX", "View": "CREATE VIEW", "Rule": "CREATE RULE",
	"CreateFunction": "CREATE FUNCTION",
}

// statementKind names a statement node for messages: InsertStmt →
// INSERT, CreateTableAsStmt → CREATE TABLE AS.
func statementKind(n *pg.Node) string {
	name := fmt.Sprintf("%T", n.Node)
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	name = strings.TrimSuffix(name, "Stmt")
	if s, ok := statementNames[name]; ok {
		return s
	}
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}
