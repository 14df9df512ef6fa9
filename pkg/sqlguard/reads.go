package sqlguard

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
	pgparser "github.com/pganalyze/pg_query_go/v5/parser"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Query is what a worked example's SQL reads, as written: parsed once,
// it can be placed in each catalog version without parsing again.
type Query struct {
	// Relations are the relations named after FROM, JOIN and the like
	// (an empty Schema when unqualified), each once, less the statement's
	// own CTEs.
	Relations []catalog.QualName
	// Words are what the SQL names, as a question might: its relations,
	// columns and aliases, and its string constants ('shipped'). SQL's
	// keywords (ORDER BY, GROUP, COUNT) are not among them: they say how
	// the query is written, not what it is about.
	Words []string
	// spans are where each relation is written in the SQL, and columns
	// where each column reference's last name is, for Rewrite; aliases
	// map the names a column can be qualified by to the relation.
	spans   []span
	columns []columnSpan
	aliases map[string]catalog.QualName
	// refs are every column reference's names, qualifier first; named
	// what the query itself names a column (output names, CTE and alias
	// column lists, subquery and CTE names); opaque is set when a source
	// has columns no name lists (a function, VALUES without names), so an
	// unqualified name may come from there.
	refs   [][]string
	named  map[string]bool
	opaque bool
}

// columnSpan is a column reference: its names as written (qualifier
// first) and where its column name is.
type columnSpan struct {
	fields     []string
	start, end int
	// qstart and qend are the qualifier's (the name before the column),
	// when there is one.
	qstart, qend int
}

// span is one relation as written, at [start, end) of the SQL, schema
// and name when written qualified.
type span struct {
	rel        catalog.QualName
	start, end int
}

// ParseQuery parses an example's SQL leniently: identifiers quoted with
// backticks (MySQL, SQLite) read as quoted, since examples come from
// query logs written for other tools. The error is the parser's.
func ParseQuery(sql string) (*Query, error) {
	// Backticks become quotes one for one, so locations stay the same.
	tree, err := pgtree.Parse(backticksAsQuotes(sql))
	if err != nil {
		var pe *pgparser.Error
		if errors.As(err, &pe) && pe.Cursorpos > 0 {
			return nil, fmt.Errorf("parse: %w at character %d", err, pe.Cursorpos)
		}
		var de *pgtree.DepthError
		if errors.As(err, &de) {
			return nil, fmt.Errorf("parse: %w at byte %d", err, de.Offset+1)
		}
		return nil, fmt.Errorf("parse: %w", err)
	}
	ctes := map[string]bool{}
	var rvs []*pg.RangeVar
	q := &Query{named: map[string]bool{}}
	for _, st := range tree.Stmts {
		pgtree.Walk(st.Stmt, func(n *pg.Node) {
			q.noteNames(n)
			switch {
			case n.GetCommonTableExpr() != nil:
				ctes[strings.ToLower(n.GetCommonTableExpr().Ctename)] = true
			case n.GetRangeVar() != nil:
				rv := n.GetRangeVar()
				rvs = append(rvs, rv)
				if sp, ok := relationSpan(sql, rv); ok {
					q.spans = append(q.spans, sp)
				}
				if q.aliases == nil {
					q.aliases = map[string]catalog.QualName{}
				}
				as := rv.Relname
				if rv.Alias != nil {
					as = rv.Alias.Aliasname
				}
				q.aliases[strings.ToLower(as)] = catalog.QualName{Schema: rv.Schemaname, Name: rv.Relname}
				q.Words = append(q.Words, n.GetRangeVar().Relname)
				if a := n.GetRangeVar().Alias; a != nil {
					q.Words = append(q.Words, a.Aliasname)
				}
			case n.GetColumnRef() != nil:
				fields := pgtree.Strings(n.GetColumnRef().Fields)
				q.Words = append(q.Words, fields...)
				if len(fields) == len(n.GetColumnRef().Fields) && len(fields) > 0 {
					q.refs = append(q.refs, fields)
				}
				if len(fields) == len(n.GetColumnRef().Fields) && len(fields) > 0 {
					if sp, ok := columnSpanAt(sql, int(n.GetColumnRef().Location), len(fields)); ok {
						sp.fields = fields
						q.columns = append(q.columns, sp)
					}
				}
			case n.GetResTarget() != nil && n.GetResTarget().Name != "":
				q.Words = append(q.Words, n.GetResTarget().Name)
			case n.GetAConst() != nil && n.GetAConst().GetSval() != nil:
				q.Words = append(q.Words, n.GetAConst().GetSval().Sval)
			}
		})
	}
	for _, rv := range rvs {
		r := catalog.QualName{Schema: rv.Schemaname, Name: rv.Relname}
		if (r.Schema == "" && ctes[strings.ToLower(r.Name)]) || slices.Contains(q.Relations, r) {
			continue
		}
		q.Relations = append(q.Relations, r)
	}
	return q, nil
}

// Names indexes a catalog's tables and views by lower-case name, in any
// schema, and by their former names: built once per catalog, it places
// any number of queries.
type Names struct {
	cat    *catalog.Catalog
	byName map[string][]catalog.QualName
	former map[string][]Followed // by the former name, lower case
}

// Followed is a rename a placement followed: the SQL names From, which
// a migration (Source) renamed to To.
type Followed struct {
	From, To catalog.QualName
	Source   string
}

func (f Followed) String() string {
	s := f.From.Key() + " → " + f.To.Key()
	if f.Source != "" {
		s += " (" + f.Source + ")"
	}
	return s
}

// NewNames indexes cat's tables and views.
func NewNames(cat *catalog.Catalog) *Names {
	n := &Names{cat: cat, byName: map[string][]catalog.QualName{}, former: map[string][]Followed{}}
	add := func(q catalog.QualName, renamed []catalog.Rename) {
		k := strings.ToLower(q.Name)
		n.byName[k] = append(n.byName[k], q)
		for _, r := range renamed {
			schema, name, ok := strings.Cut(r.From, ".")
			if !ok {
				continue
			}
			from := catalog.QualName{Schema: schema, Name: name}
			n.former[strings.ToLower(name)] = append(n.former[strings.ToLower(name)], Followed{From: from, To: q, Source: r.Source})
		}
	}
	for _, t := range cat.Tables() {
		add(t.QualName(), t.Renamed)
	}
	for _, v := range cat.Views() {
		add(v.QualName(), v.Renamed)
	}
	return n
}

// Named returns the tables and views of a lower-case name.
func (n *Names) Named(name string) []catalog.QualName { return n.byName[name] }

// Place resolves the query's relations in a catalog (keys: schema.name,
// lower case, sorted, each once), leniently, for examples written on
// other connections:
//
//   - names match the catalog's in any case;
//   - with schema (the example's search_path) given, an unqualified
//     name is looked up in it, then in public, as PostgreSQL would;
//   - without, in public, else in the one schema that has it, else in
//     the one schema, if there is one, that has the most of the query's
//     unqualified names: the log was written with that schema on its
//     search_path.
//
// missing are the relations it could not place, as written: an example
// that does not fit was written for another database, whatever names the
// two share, or reads a table dropped since. (Its columns are not
// checked: a column renamed since makes an example stale, not foreign,
// and its tables are still the ones it read.)
func (q *Query) Place(n *Names, schema string) (keys, missing []string) {
	p := q.PlaceAll(n, schema)
	return p.Keys, p.Missing
}

// Placement is where a query's relations are in a catalog.
type Placement struct {
	Keys, Missing []string
	// Followed are the renames placing it followed: relations the SQL
	// names by a name they had before a migration renamed them.
	Followed []Followed
	// at is where each relation as written was placed.
	at map[catalog.QualName]catalog.QualName
}

// PlaceAll is Place, saying which renames it followed: a relation the
// catalog does not have under the name written is placed where a
// migration renamed it to (the name written, qualified or on the search
// path as for a current name), so that an example written before a
// rename still reads the same table.
func (q *Query) PlaceAll(n *Names, schema string) Placement {
	var p Placement
	bySchema := map[string]int{}
	for _, r := range q.Relations {
		if r.Schema == "" {
			for _, c := range n.Named(strings.ToLower(r.Name)) {
				bySchema[c.Schema]++
			}
		}
	}
	p.at = map[catalog.QualName]catalog.QualName{}
	for _, r := range q.Relations {
		at, ok := place(n.Named(strings.ToLower(r.Name)), r, schema, bySchema)
		if !ok {
			if f, found := n.followRename(r, schema); found {
				at, ok = f.To, true
				p.Followed = append(p.Followed, f)
			}
		}
		if !ok {
			written := r.Name
			if r.Schema != "" {
				written = r.Schema + "." + r.Name
			}
			p.Missing = append(p.Missing, written)
			continue
		}
		p.at[r] = at
		if k := at.Key(); !slices.Contains(p.Keys, k) {
			p.Keys = append(p.Keys, k)
		}
	}
	slices.Sort(p.Keys)
	return p
}

// FollowedColumn is a column rename a query's reference followed.
type FollowedColumn struct {
	Table    catalog.QualName
	From, To string
	Source   string
	// refs are the query's column references that follow it.
	refs []int
}

func (f FollowedColumn) String() string {
	s := "column " + f.Table.Key() + "." + f.From + " → " + f.To
	if f.Source != "" {
		s += " (" + f.Source + ")"
	}
	return s
}

// FollowColumns finds the column references of a placed query that name
// a column by a name a migration has renamed since: qualified ones by
// their relation's former column names, unqualified ones when none of
// the query's relations has the name and exactly one had it.
func (q *Query) FollowColumns(n *Names, p Placement) []FollowedColumn {
	var out []FollowedColumn
	for i, c := range q.columns {
		f, ok := q.followColumn(n, p, c.fields)
		if !ok {
			continue
		}
		j := slices.IndexFunc(out, func(o FollowedColumn) bool { return o.Table == f.Table && o.From == f.From })
		if j < 0 {
			out, j = append(out, f), len(out)
		}
		out[j].refs = append(out[j].refs, i)
	}
	return out
}

func (q *Query) followColumn(n *Names, p Placement, fields []string) (FollowedColumn, bool) {
	col := fields[len(fields)-1]
	var tables []*catalog.Table
	if len(fields) >= 2 {
		if written, ok := q.aliases[strings.ToLower(fields[len(fields)-2])]; ok {
			if t := n.cat.Table(p.at[written]); t != nil {
				tables = append(tables, t)
			}
		}
	} else {
		for _, at := range p.at {
			if t := n.cat.Table(at); t != nil {
				if t.Column(col) != nil {
					return FollowedColumn{}, false // a current name
				}
				tables = append(tables, t)
			}
		}
	}
	var found []FollowedColumn
	for _, t := range tables {
		if t.Column(col) != nil {
			return FollowedColumn{}, false
		}
		for _, c := range t.Columns {
			if i := slices.IndexFunc(c.Renamed, func(r catalog.Rename) bool { return r.From == col }); i >= 0 {
				found = append(found, FollowedColumn{Table: t.QualName(), From: col, To: c.Name, Source: c.Renamed[i].Source})
			}
		}
	}
	if len(found) != 1 {
		return FollowedColumn{}, false
	}
	return found[0], true
}

// place finds the relation r names among the candidates of its name.
func place(cands []catalog.QualName, r catalog.QualName, schema string, bySchema map[string]int) (catalog.QualName, bool) {
	if r.Schema != "" {
		if i := slices.IndexFunc(cands, func(c catalog.QualName) bool { return strings.EqualFold(c.Schema, r.Schema) }); i >= 0 {
			return cands[i], true
		}
		return catalog.QualName{}, false
	}
	return placeUnqualified(cands, schema, bySchema)
}

// followRename finds the relation that r, by its name written, was
// before a rename.
func (n *Names) followRename(r catalog.QualName, schema string) (Followed, bool) {
	fs := n.former[strings.ToLower(r.Name)]
	if len(fs) == 0 {
		return Followed{}, false
	}
	froms := make([]catalog.QualName, len(fs))
	for i, f := range fs {
		froms[i] = f.From
	}
	at, ok := place(froms, r, schema, nil)
	if !ok {
		return Followed{}, false
	}
	return fs[slices.Index(froms, at)], true
}

// Rewrite returns sql with each relation written by a name that
// followed renames to its current name (qualified as written, quoted
// where it must be), and each column reference that followed a rename to
// its column's current name, so that a model shown an old example writes
// current SQL. sql must be the text the query was parsed from.
func (q *Query) Rewrite(sql string, followed []Followed, columns []FollowedColumn) string {
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	for _, sp := range q.spans {
		i := slices.IndexFunc(followed, func(f Followed) bool {
			return strings.EqualFold(f.From.Name, sp.rel.Name) && (sp.rel.Schema == "" || strings.EqualFold(f.From.Schema, sp.rel.Schema))
		})
		if i < 0 {
			continue
		}
		to := followed[i].To
		name := catalog.QuoteIdent(to.Name)
		if sp.rel.Schema != "" || (to.Schema != followed[i].From.Schema && to.Schema != catalog.DefaultSchema) {
			name = catalog.QuoteIdent(to.Schema) + "." + name
		}
		edits = append(edits, edit{sp.start, sp.end, name})
	}
	for _, f := range columns {
		for _, i := range f.refs {
			if i < len(q.columns) {
				edits = append(edits, edit{q.columns[i].start, q.columns[i].end, catalog.QuoteIdent(f.To)})
			}
		}
	}
	for _, c := range q.columns {
		if len(c.fields) < 2 || c.qend == 0 {
			continue
		}
		// A qualifier that is a renamed relation's old name, not an
		// alias, follows the relation.
		qual := strings.ToLower(c.fields[len(c.fields)-2])
		if written, ok := q.aliases[qual]; ok && strings.EqualFold(written.Name, qual) {
			if i := slices.IndexFunc(followed, func(f Followed) bool { return strings.EqualFold(f.From.Name, qual) }); i >= 0 {
				edits = append(edits, edit{c.qstart, c.qend, catalog.QuoteIdent(followed[i].To.Name)})
			}
		}
	}
	if len(edits) == 0 {
		return sql
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue
		}
		b.WriteString(sql[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(sql[last:])
	return b.String()
}

// columnSpanAt finds the last of n names written from at: the column
// name of a reference written a.b.c, and the qualifier before it.
func columnSpanAt(sql string, at, n int) (columnSpan, bool) {
	names, ok := dottedNames(sql, at, n)
	if !ok {
		return columnSpan{}, false
	}
	sp := columnSpan{start: names[n-1][0], end: names[n-1][1]}
	if n >= 2 {
		sp.qstart, sp.qend = names[n-2][0], names[n-2][1]
	}
	return sp, true
}

// relationSpan finds where rv is written in sql: from its location (the
// first token, its schema when qualified) over schema, dot and name, as
// identifiers or quoted identifiers; ok is false when the text there is
// not that.
func relationSpan(sql string, rv *pg.RangeVar) (span, bool) {
	n := 1
	if rv.Schemaname != "" {
		n = 2
	}
	names, ok := dottedNames(sql, int(rv.Location), n)
	if !ok {
		return span{}, false
	}
	return span{rel: catalog.QualName{Schema: rv.Schemaname, Name: rv.Relname}, start: names[0][0], end: names[n-1][1]}, true
}

// dottedNames finds n names written from at, a.b.c (white space around
// the dots allowed), each as [start, end); ok is false when the text
// there is not that.
func dottedNames(sql string, at, n int) ([][2]int, bool) {
	if at < 0 || at >= len(sql) {
		return nil, false
	}
	space := func(i int) int {
		for i < len(sql) && (sql[i] == ' ' || sql[i] == '\t' || sql[i] == '\n') {
			i++
		}
		return i
	}
	names := make([][2]int, 0, n)
	for i := at; ; {
		if i >= len(sql) {
			return nil, false
		}
		end, ok := identEnd(sql, i)
		if !ok {
			return nil, false
		}
		names = append(names, [2]int{i, end})
		if len(names) == n {
			return names, true
		}
		i = space(end)
		if i >= len(sql) || sql[i] != '.' {
			return nil, false
		}
		i = space(i + 1)
	}
}

// identEnd is the end of the identifier at i: a quoted one (", `, with
// doubled quotes inside) or a run of identifier characters.
func identEnd(sql string, i int) (int, bool) {
	if q := sql[i]; q == '"' || q == '`' {
		for j := i + 1; j < len(sql); j++ {
			if sql[j] == q {
				if j+1 < len(sql) && sql[j+1] == q {
					j++
					continue
				}
				return j + 1, true
			}
		}
		return 0, false
	}
	j := i
	for j < len(sql) && (sql[j] == '_' || sql[j] == '$' || sql[j] >= 0x80 || ('a' <= sql[j]|0x20 && sql[j]|0x20 <= 'z') || ('0' <= sql[j] && sql[j] <= '9')) {
		j++
	}
	return j, j > i
}

// CheckExample says why an example written in schema (its search_path;
// "" for none) cannot count as evidence in the catalog names indexes:
// its SQL does not parse, or does not fit (see Fit). nil: it fits.
func CheckExample(sql, schema string, names *Names) error {
	q, err := ParseQuery(sql)
	if err != nil {
		return err
	}
	return q.Fit(names, schema).Err()
}

// ErrNoRelation: feedback SQL that reads none of the database's tables
// or views, so it can teach retrieval nothing.
var ErrNoRelation = errors.New("no_relation")

// CheckFeedback is what SQL handed back as answering a question must
// pass to be stored as a worked example: the guard of a model's answer,
// with unqualified names looked up in schema first, and it must read at
// least one relation of cat. A refusal is a *Rejection.
func CheckFeedback(sql, schema string, cat *catalog.Catalog) (*Result, error) {
	res, err := CheckWith(sql, cat, Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	if len(res.Tables) == 0 {
		return nil, reject(ErrNoRelation, "reads no table or view of database %s (catalog version %d), so it can teach retrieval nothing", cat.Database, cat.Version)
	}
	// What would be stored must fit as a stored example is judged, or
	// it would be stale the moment it was stored.
	q, err := ParseQuery(sql)
	if err != nil {
		return nil, reject(ErrInvalid, "%v", err)
	}
	if f := q.Fit(NewNames(cat), schema); len(f.Unknown) > 0 {
		return nil, reject(ErrUnknownColumn, "%s", strings.Join(f.Unknown, "; "))
	}
	return res, nil
}

// placeUnqualified picks, among the relations of one unqualified name,
// the one in schema, else in public, else the only one, else the one
// whose schema has the most of the query's unqualified names, if no
// other ties it.
func placeUnqualified(cands []catalog.QualName, schema string, bySchema map[string]int) (catalog.QualName, bool) {
	if len(cands) == 0 {
		return catalog.QualName{}, false
	}
	for _, path := range []string{schema, catalog.DefaultSchema} {
		if i := slices.IndexFunc(cands, func(q catalog.QualName) bool { return path != "" && strings.EqualFold(q.Schema, path) }); i >= 0 {
			return cands[i], true
		}
	}
	if schema != "" {
		return catalog.QualName{}, false // not on the search_path the example ran with
	}
	if len(cands) == 1 {
		return cands[0], true
	}
	best, n, ties := catalog.QualName{}, -1, 0
	for _, q := range cands {
		switch c := bySchema[q.Schema]; {
		case c > n:
			best, n, ties = q, c, 1
		case c == n:
			ties++
		}
	}
	return best, ties == 1
}

// backticksAsQuotes turns identifiers quoted with backticks into
// double-quoted ones, outside string literals and quoted identifiers.
// PostgreSQL has no use for a backtick there, so nothing it would read
// otherwise changes.
func backticksAsQuotes(sql string) string {
	if !strings.Contains(sql, "`") {
		return sql
	}
	b := []byte(sql)
	var in byte // the quote we are inside: ', ", ` or 0
	for i, c := range b {
		switch {
		case in == '`' && c == '`':
			b[i], in = '"', 0
		case in != 0:
			if c == in {
				in = 0 // a doubled quote closes and reopens: the same state
			}
		case c == '\'' || c == '"':
			in = c
		case c == '`':
			b[i], in = '"', '`'
		}
	}
	return string(b)
}
