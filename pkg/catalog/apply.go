package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	pg "github.com/pganalyze/pg_query_go/v5"
	pgparser "github.com/pganalyze/pg_query_go/v5/parser"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Apply applies the DDL in sql to a copy of c and returns the copy. By
// default the whole script is one unit: when any statement fails to parse
// or to apply, Apply returns an *Error naming source, statement and
// position, and c is left exactly as it was. With Tolerant, statements that
// fail only because they name an object the catalog does not know are left
// out instead and recorded as drift (see Tolerant). Statements that do not
// change a catalog (indexes, grants, functions, triggers, DML, transaction
// control, …) are accepted and skipped. The returned catalog has c's
// Version; callers set it.
func (c *Catalog) Apply(source, sql string, opts ...ApplyOption) (*Catalog, error) {
	return c.ApplyContext(context.Background(), source, sql, opts...)
}

// ApplyContext is Apply bounded by ctx as well as by its Limits: when ctx
// ends, routines still running stop as drift and statements not yet
// applied fail the Apply with ctx's error.
func (c *Catalog) ApplyContext(ctx context.Context, source, sql string, opts ...ApplyOption) (*Catalog, error) {
	sc, err := prepare(source, sql, opts)
	if err != nil {
		return nil, err
	}
	return c.applyCopy(ctx, sc)
}

// script is a migration parsed for Apply, with the options it runs under.
type script struct {
	source, clean string
	tree          *pg.ParseResult
	opts          applyOptions
}

func prepare(source, sql string, opts []ApplyOption) (*script, error) {
	s := &script{source: source, clean: stripClientData(sql)}
	for _, opt := range opts {
		opt(&s.opts)
	}
	tree, err := pgtree.Parse(s.clean)
	if err != nil {
		return nil, parseError(source, s.clean, err)
	}
	s.tree = tree
	return s, nil
}

// applyCopy applies s to copies of c until one takes it.
//
// A statement is all or nothing, as in PostgreSQL, but the applier
// mutates its working copy as it goes. Rather than clone the catalog
// before every statement, a skipped statement restarts the script from c
// with that statement left out: drift is rare, clones are not free.
func (c *Catalog) applyCopy(ctx context.Context, s *script) (*Catalog, error) {
	skipped := map[int]*Error{}
	spent := newBudget(ctx, s.opts.limits)
	defer spent.close()
	for {
		work, err := c.Clone().applyInPlace(s, skipped, spent)
		if err == nil {
			return work, nil
		}
		var ce *Error
		if !s.opts.tolerant || !tolerable(err) || !errors.As(err, &ce) || skipped[ce.Statement] != nil {
			return nil, err
		}
		skipped[ce.Statement] = ce
	}
}

// applyInPlace applies s to c itself, leaving out the statements in
// skipped, and returns the catalog it ends in: c, or the copy an
// exception block rolled back to. When it fails, c is half changed and
// must be thrown away.
func (c *Catalog) applyInPlace(s *script, skipped map[int]*Error, spent *budget) (*Catalog, error) {
	c.order = nil // it is being built again: nothing sorted holds
	a := &applier{cat: c, searchPath: []string{DefaultSchema},
		source: s.source, sql: s.clean, tolerant: s.opts.tolerant, skip: skipped, spent: spent, reparse: &spent.reparse}
	if err := a.run(s.tree); err != nil {
		return nil, err
	}
	// The drift may share its array with the catalog this one was cloned
	// from, up to that one's length: an append past it copies.
	a.cat.drift = append(a.cat.drift, a.collectDrift()...)
	a.cat.touched = a.touched
	a.cat.finish()
	return a.cat, nil
}

// ApplyOption changes how Apply treats a failing statement.
type ApplyOption func(*applyOptions)

type applyOptions struct {
	tolerant bool
	limits   Limits
}

// Tolerant makes Apply skip a statement that fails only because it names
// a table, column, constraint, index, type or schema the catalog does not
// know (ErrUndefined), apply the rest, and record the statement as drift
// on the returned catalog. A history that ran against a real database
// can create objects a static replay cannot see (DDL run by a function
// through EXECUTE format(…)), and one such object must not stop every
// migration after it. Where the failing statement alters a column of a
// known table (ALTER COLUMN … SET DEFAULT, TYPE, SET/DROP NOT NULL), it
// proves the column exists: the column is added, marked Inferred, and
// the statement applies; that is recorded as drift too. So is a CREATE
// INDEX under a name one of the table's indexes holds (staleIndex): it
// is skipped. Other syntax errors and contradictions (creating what
// exists, dropping what others depend on) still fail the script.
func Tolerant() ApplyOption { return func(o *applyOptions) { o.tolerant = true } }

// run applies every statement of tree, then the foreign keys that waited
// for the end of the script.
func (a *applier) run(tree *pg.ParseResult) error {
	for i, raw := range tree.Stmts {
		a.stmt, a.raw = i+1, raw
		if a.skip[i+1] != nil {
			continue
		}
		if err := a.spent.parent.Err(); err != nil {
			return a.errorAt(i+1, raw, fmt.Errorf("apply cancelled: %w", err))
		}
		if err := a.statement(raw.Stmt); err != nil {
			var c cleanErr
			if a.tolerant && tolerable(err) && errors.As(err, &c) {
				a.recordDrift(i+1, raw, c.error, "")
				continue
			}
			return a.errorAt(i+1, raw, err)
		}
	}
	for _, p := range a.pending {
		if a.cat.tables[p.table.QualName()] != p.table {
			continue // the referencing table was dropped later in the script
		}
		a.searchPath = p.path
		err := a.addForeignKey(p.table, p.con, p.cols, false)
		if err != nil && a.tolerant && errors.Is(err, ErrUndefined) {
			// The table stays; only the reference to what we cannot see
			// is left out.
			a.recordDrift(p.stmt, p.raw, err, "")
			continue
		}
		if err != nil {
			return a.errorAt(p.stmt, p.raw, err)
		}
	}
	if err := a.endSession(); err != nil {
		return err
	}
	a.cat.syncPartitions()
	return nil
}

func (a *applier) errorAt(stmt int, raw *pg.RawStmt, err error) *Error {
	return statementError(a.source, a.sql, stmt, raw, err)
}

// recordDrift notes statement stmt as drift of this run: left out for
// err, or applied by inferring what (an object it names that the catalog
// did not hold).
func (a *applier) recordDrift(stmt int, raw *pg.RawStmt, err error, inferred string) {
	a.drift = append(a.drift, driftOf(a.errorAt(stmt, raw, err), inferred))
}

// collectDrift lists the skipped statements and the inferences of one
// run, in statement order.
func (a *applier) collectDrift() []Drift {
	out := slices.Clone(a.drift)
	for _, e := range a.skip {
		out = append(out, driftOf(e, ""))
	}
	slices.SortStableFunc(out, func(x, y Drift) int { return x.Statement - y.Statement })
	return out
}

// Snapshot builds a fresh catalog for database from a whole schema dump.
func Snapshot(database, source, sql string) (*Catalog, error) {
	return SnapshotContext(context.Background(), database, source, sql)
}

// SnapshotContext is Snapshot bounded by ctx, as ApplyContext is.
func SnapshotContext(ctx context.Context, database, source, sql string) (*Catalog, error) {
	return New(database).ApplyContext(ctx, source, sql)
}

// applier carries the session state of one Apply: the working copy and the
// search_path that SET statements in the script change.
type applier struct {
	cat *Catalog
	// touched are the tables this run created, altered or renamed.
	touched    map[*Table]touch
	searchPath []string
	source     string
	sql        string
	// tolerant, skip and drift implement Tolerant: the statements left
	// out of this run, and what this run recorded as drift.
	tolerant bool
	skip     map[int]*Error
	drift    []Drift
	// inDo is set while applying statements extracted from a DO block,
	// whose conditions we cannot evaluate; see do.
	inDo bool
	// trees caches routine bodies parsed for calls, by source; spent is
	// what interpreting them has cost this Apply, and calls the
	// interpretation under way.
	trees map[string]map[string]any
	spent *budget
	calls *callState
	// savepoints are the exception blocks (and DO blocks) entered, whose
	// errors undo what they changed.
	savepoints []*savepoint
	// kin finds a table's children; see kinship.
	kin kinship
	// stmt and raw locate the statement being applied, for errors found
	// only at the end of the script.
	stmt int
	raw  *pg.RawStmt
	// defaultNamed holds, while a CREATE TABLE is applied, the keys it
	// named by default (dropDuplicateKeys).
	defaultNamed map[string]bool
	// temp is set once the script creates a temporary relation, which
	// lives in tempSchema until the script ends (temp.go).
	temp bool
	// pending holds foreign keys to tables not created yet: generated
	// schema files (SpiderUnion's among them) declare a reference before
	// the table it points to, and the script is applied as one unit.
	pending []pendingFK
	// reparse memoises and bounds parsing again the SQL text the catalog
	// holds (tables' expressions, views' definitions): the budget's, so
	// that the runs a tolerant Apply restarts share it.
	reparse *reparse
}

type pendingFK struct {
	table *Table
	con   *pg.Constraint
	cols  []string
	path  []string
	stmt  int
	raw   *pg.RawStmt
}

// stripClientData blanks what pg_dump and psql put in a script that is not
// SQL: the data lines of COPY … FROM stdin (ended by "\.") and backslash
// meta-commands such as \connect or \restrict. Blanking with spaces keeps
// every byte offset and line number of the remaining SQL unchanged.
func stripClientData(sql string) string {
	if !strings.Contains(sql, "\\") {
		return sql
	}
	b := []byte(sql)
	inCopy := false
	for start := 0; start < len(b); {
		end := start
		for end < len(b) && b[end] != '\n' {
			end++
		}
		line := string(b[start:end])
		trimmed := strings.TrimSpace(line)
		blank := false
		switch {
		case inCopy:
			blank = true
			if trimmed == `\.` {
				inCopy = false
			}
		case strings.HasPrefix(trimmed, `\`):
			blank = true
		case isCopyFromStdin(trimmed):
			inCopy = true
		}
		if blank {
			for i := start; i < end; i++ {
				if b[i] != '\r' {
					b[i] = ' '
				}
			}
		}
		start = end + 1
	}
	return string(b)
}

func isCopyFromStdin(line string) bool {
	up := strings.ToUpper(line)
	return strings.HasPrefix(up, "COPY ") && strings.HasSuffix(up, "FROM STDIN;")
}

// parseError turns libpg_query's error into an *Error. libpg_query reports
// the cursor as a 1-based character offset into the whole script.
func parseError(source, sql string, err error) error {
	e := &Error{Source: source, Err: syntaxError(err.Error())}
	off := -1
	var pe *pgparser.Error
	var de *pgtree.DepthError
	switch {
	case errors.As(err, &pe) && pe.Cursorpos > 0:
		off = charToByte(sql, pe.Cursorpos-1)
	case errors.As(err, &de):
		off = de.Offset
	}
	if off >= 0 {
		e.Line, e.Column = lineCol(sql, off)
		e.Statement = statementAt(sql, off)
		e.Excerpt = excerptAround(sql, off)
	}
	return e
}

func statementError(source, sql string, idx int, raw *pg.RawStmt, err error) *Error {
	start := int(raw.StmtLocation)
	end := len(sql)
	if raw.StmtLen > 0 {
		end = start + int(raw.StmtLen)
	}
	start = skipSpaceAndComments(sql, start, end)
	line, col := lineCol(sql, start)
	return &Error{Source: source, Statement: idx, Line: line, Column: col,
		Excerpt: excerpt(sql[start:end]), Err: err}
}

func charToByte(s string, chars int) int {
	off := 0
	for i := 0; i < chars && off < len(s); i++ {
		_, n := utf8.DecodeRuneInString(s[off:])
		off += n
	}
	return off
}

func lineCol(s string, off int) (line, col int) {
	if off > len(s) {
		off = len(s)
	}
	before := s[:off]
	line = strings.Count(before, "\n") + 1
	lineStart := strings.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCountInString(before[lineStart:]) + 1
}

// statementAt counts the top-level semicolons before off with the SQL
// scanner (which knows strings, dollar quotes and comments) to tell which
// statement a syntax error is in. Only the text before the error is
// scanned, so an unterminated string at off does not stop the count. It
// returns 0 when even that prefix does not scan.
func statementAt(sql string, off int) int {
	res, err := pg.Scan(sql[:off])
	if err != nil {
		return 0
	}
	n := 1
	for _, t := range res.Tokens {
		if int(t.Start) >= off {
			break
		}
		if t.Token == pg.Token_ASCII_59 {
			n++
		}
	}
	return n
}

func skipSpaceAndComments(s string, i, end int) int {
	for i < end {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				return end
			}
			i += nl + 1
		case strings.HasPrefix(s[i:], "/*"):
			cl := strings.Index(s[i+2:], "*/")
			if cl < 0 {
				return end
			}
			i += cl + 4
		default:
			return i
		}
	}
	return i
}

const excerptLen = 80

func excerpt(stmt string) string {
	if len(stmt) > 16*excerptLen {
		// A routine's text may be megabytes: only its start is shown.
		stmt = strings.ToValidUTF8(stmt[:16*excerptLen], "")
	}
	s := strings.Join(strings.Fields(stmt), " ")
	if utf8.RuneCountInString(s) > excerptLen {
		s = string([]rune(s)[:excerptLen]) + "…"
	}
	return s
}

// excerptAround shows the source line holding off, for syntax errors where
// the statement's extent is unknown.
func excerptAround(s string, off int) string {
	lineStart := strings.LastIndexByte(s[:off], '\n') + 1
	lineEnd := strings.IndexByte(s[off:], '\n')
	if lineEnd < 0 {
		lineEnd = len(s)
	} else {
		lineEnd += off
	}
	return excerpt(s[lineStart:lineEnd])
}

// statement applies one parsed statement to the working catalog.
func (a *applier) statement(n *pg.Node) error {
	if err := a.beforeChange(n); err != nil {
		return err
	}
	// Triggers, domains and types other than enums are not modelled:
	// only the constraint and type names they make are kept, and the
	// switch below leaves them.
	a.noteConstraints(n)
	a.noteTypes(n)
	switch {
	case n.GetCreateSchemaStmt() != nil:
		return a.createSchema(n.GetCreateSchemaStmt())
	case n.GetCreateStmt() != nil:
		return a.createTable(n.GetCreateStmt())
	case n.GetCreateForeignTableStmt() != nil:
		return a.createTable(n.GetCreateForeignTableStmt().BaseStmt)
	case n.GetAlterTableStmt() != nil:
		return a.alterTable(n.GetAlterTableStmt())
	case n.GetRenameStmt() != nil:
		return a.rename(n.GetRenameStmt())
	case n.GetAlterObjectSchemaStmt() != nil:
		return a.setSchema(n.GetAlterObjectSchemaStmt())
	case n.GetDropStmt() != nil:
		return a.drop(n.GetDropStmt())
	case n.GetCommentStmt() != nil:
		// A comment is set once its object is found, or not at all.
		err := a.comment(n.GetCommentStmt())
		if errors.Is(err, ErrUndefined) {
			err = clean(err)
		}
		return err
	case n.GetCreateEnumStmt() != nil:
		return a.createEnum(n.GetCreateEnumStmt())
	case n.GetAlterEnumStmt() != nil:
		return a.alterEnum(n.GetAlterEnumStmt())
	case n.GetViewStmt() != nil:
		return a.createView(n.GetViewStmt())
	case n.GetCreateTableAsStmt() != nil:
		return a.createTableAs(n.GetCreateTableAsStmt())
	case n.GetIndexStmt() != nil:
		return a.createIndex(n.GetIndexStmt())
	case n.GetVariableSetStmt() != nil:
		a.setVariable(n.GetVariableSetStmt())
		return nil
	case n.GetDoStmt() != nil:
		return a.do(n.GetDoStmt())
	case n.GetSelectStmt() != nil && n.GetSelectStmt().IntoClause != nil:
		return a.createTableAs(selectIntoTable(n.GetSelectStmt()))
	case n.GetSelectStmt() != nil && callsRoutine(a, n):
		return a.interpret(func(e *evaluator) error {
			_, err := e.query(n.GetSelectStmt(), nil)
			return err
		})
	case n.GetCallStmt() != nil:
		return a.interpret(func(e *evaluator) error {
			_, err := e.callStmt(n.GetCallStmt())
			return err
		})
	case n.GetCreateSeqStmt() != nil:
		s := n.GetCreateSeqStmt()
		seq := QualName{s.Sequence.GetSchemaname(), s.Sequence.GetRelname()}
		if seq.Schema == "" {
			seq.Schema = a.creationSchema()
		}
		return a.ownSequence(seq, s.Options)
	case n.GetAlterSeqStmt() != nil:
		s := n.GetAlterSeqStmt()
		if !ownsOption(s.Options) {
			return nil
		}
		// A qualified name (pg_dump's) needs no search of the defaults:
		// a dump of ten thousand tables has as many of these.
		seq := QualName{s.Sequence.GetSchemaname(), s.Sequence.GetRelname()}
		if seq.Schema == "" {
			seq, _ = a.sequenceAt(s.Sequence)
		}
		return a.ownSequence(seq, s.Options)
	case n.GetCreateFunctionStmt() != nil:
		return a.createFunction(n.GetCreateFunctionStmt())
	case n.GetDefineStmt() != nil && n.GetDefineStmt().Kind == pg.ObjectType_OBJECT_AGGREGATE:
		a.createAggregate(n.GetDefineStmt())
		return nil
	}
	// Everything else (grants, functions, triggers, sequences,
	// policies, extensions, DML, transaction control, …) leaves the
	// catalog as it is.
	return nil
}

// setVariable follows SET search_path, which decides where unqualified
// names are created and found for the rest of the script.
func (a *applier) setVariable(s *pg.VariableSetStmt) {
	if s.Name != "search_path" {
		return
	}
	switch s.Kind {
	case pg.VariableSetKind_VAR_SET_VALUE:
		var path []string
		for _, arg := range s.Args {
			if c := arg.GetAConst(); c != nil && c.GetSval() != nil {
				for _, p := range strings.Split(c.GetSval().Sval, ",") {
					if p = strings.Trim(strings.TrimSpace(p), `"`); p != "" {
						path = append(path, p)
					}
				}
			}
		}
		a.searchPath = path
	case pg.VariableSetKind_VAR_SET_DEFAULT, pg.VariableSetKind_VAR_RESET, pg.VariableSetKind_VAR_RESET_ALL:
		a.searchPath = []string{DefaultSchema}
	}
}

// creationSchema is the schema unqualified CREATEs go to: the first schema
// of search_path that exists, as in PostgreSQL. With none (search_path
// emptied by pg_dump's preamble) it falls back to public rather than fail,
// because such scripts qualify every name anyway.
func (a *applier) creationSchema() string {
	for _, s := range a.searchPath {
		if _, ok := a.cat.schemas[s]; ok {
			return s
		}
	}
	return DefaultSchema
}

// lookupPath is the search order for unqualified names: search_path, then
// public, so that scripts that empty search_path still resolve.
func (a *applier) lookupPath() []string {
	path := a.searchPath
	if len(path) == 0 {
		path = []string{DefaultSchema}
	}
	if a.temp {
		// The session's temporary schema is searched first.
		return append([]string{tempSchema}, path...)
	}
	return path
}

// target names a relation to be created.
func (a *applier) target(rv *pg.RangeVar) QualName {
	if isTemp(rv) {
		a.temp = true
		return QualName{tempSchema, rv.Relname}
	}
	schema := rv.Schemaname
	if schema == "" {
		schema = a.creationSchema()
	}
	// A schema the script never created is created implicitly: producers
	// publish histories that start after their schemas were made by other
	// means (extensions, ops tooling).
	if _, ok := a.cat.schemas[schema]; !ok {
		a.cat.schemas[schema] = ""
	}
	return QualName{schema, rv.Relname}
}

// relKind says what a name resolves to.
type relKind int

const (
	relNone relKind = iota
	relTable
	relView
)

// resolve finds an existing table or view by schema and name, following
// search_path for unqualified names.
func (a *applier) resolve(schema, name string) (QualName, relKind) {
	if schema != "" {
		q := QualName{schema, name}
		return q, a.kindOf(q)
	}
	for _, s := range a.lookupPath() {
		q := QualName{s, name}
		if k := a.kindOf(q); k != relNone {
			return q, k
		}
	}
	return QualName{a.creationSchema(), name}, relNone
}

// existing resolves the relation an ALTER, RENAME or SET SCHEMA names. ok
// is false with no error when it is missing and the statement said IF
// EXISTS; a missing relation otherwise is an error.
func (a *applier) existing(rv *pg.RangeVar, missingOK bool) (q QualName, kind relKind, ok bool, err error) {
	q, kind = a.resolveRV(rv)
	switch {
	case kind != relNone:
		return q, kind, true, nil
	case missingOK:
		return q, kind, false, nil
	}
	return q, kind, false, undefined("relation %s does not exist", displayName(rv.Schemaname, rv.Relname))
}

func (a *applier) resolveRV(rv *pg.RangeVar) (QualName, relKind) {
	return a.resolve(rv.Schemaname, rv.Relname)
}

func (a *applier) kindOf(q QualName) relKind {
	if a.cat.tables[q] != nil {
		return relTable
	}
	if a.cat.views[q] != nil {
		return relView
	}
	return relNone
}

// qualFromList resolves a dotted name given as a list of String nodes, as
// DROP, COMMENT and ALTER TYPE carry them.
func qualFromList(parts []string) (schema, name string) {
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	default:
		return parts[len(parts)-2], parts[len(parts)-1]
	}
}

func (a *applier) table(rv *pg.RangeVar) (*Table, error) {
	q, kind := a.resolveRV(rv)
	switch kind {
	case relTable:
		return a.cat.tables[q], nil
	case relView:
		return nil, invalid("%s is a view, not a table", q)
	}
	return nil, undefined("relation %s does not exist", displayName(rv.Schemaname, rv.Relname))
}

func displayName(schema, name string) string {
	if schema == "" {
		return QuoteIdent(name)
	}
	return QualName{schema, name}.String()
}

// deparseExpr renders an expression node as SQL by deparsing it as the
// only target of a SELECT: libpg_query deparses statements, not bare
// expressions.
func deparseExpr(n *pg.Node) string {
	if n == nil {
		return ""
	}
	tree := &pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: &pg.Node{Node: &pg.Node_SelectStmt{
		SelectStmt: &pg.SelectStmt{TargetList: []*pg.Node{{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}}},
	}}}}}
	out, err := pg.Deparse(tree)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(out, "SELECT ")
}

// deparseQuery renders a query node (a view's SELECT) as SQL.
func deparseQuery(n *pg.Node) string {
	if n == nil {
		return ""
	}
	out, err := pg.Deparse(&pg.ParseResult{Stmts: []*pg.RawStmt{{Stmt: n}}})
	if err != nil {
		return ""
	}
	return out
}

// touch notes that this run changed t (Catalog.touched).
func (a *applier) touch(t *Table, how touch) {
	if t == nil {
		return
	}
	if a.touched == nil {
		a.touched = map[*Table]touch{}
	}
	a.touched[t] |= how
}
