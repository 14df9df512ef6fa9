package catalog

import (
	"errors"
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Index is an index CREATE INDEX made on a table. The catalog holds what
// later statements read from it: ADD CONSTRAINT … USING INDEX takes its
// columns, PostgreSQL's default names for keys and indexes step around
// its name, DROP COLUMN takes it with a column it reads, and a guard may
// look it up. The index behind a primary key, unique or exclusion
// constraint is that constraint, not one of these.
type Index struct {
	Name string `json:"name"`
	// Method is the access method when it is not btree ("gin", "gist").
	Method  string     `json:"method,omitempty"`
	Keys    []IndexKey `json:"keys"`
	Include []string   `json:"include,omitempty"`
	Unique  bool       `json:"unique,omitempty"`
	// Where is a partial index's predicate, as SQL.
	Where string `json:"where,omitempty"`
	// Reads lists the columns its expressions and predicate read.
	Reads []string `json:"reads,omitempty"`
	// Names are the index's own names for its columns, keys then
	// included ones ("email", "lower", "expr"). A column's rename does not
	// change them, and the default names of LIKE's and partitions' copies
	// are built from them.
	Names []string `json:"names"`
	// Inherited marks a partition's copy of its parent's index.
	Inherited bool `json:"inherited,omitempty"`
}

// IndexKey is one key element of an index: a column, or an expression.
type IndexKey struct {
	Column string `json:"column,omitempty"`
	Expr   string `json:"expr,omitempty"` // as SQL
	// Collation and Opclass are the element's when given ("C",
	// "text_pattern_ops"), as SQL.
	Collation string `json:"collation,omitempty"`
	Opclass   string `json:"opclass,omitempty"`
	// Order is the element's order when it is not the default ("DESC",
	// "NULLS FIRST").
	Order string `json:"order,omitempty"`
}

// indexLabels are the default-name labels of constraints that are
// indexes, whose names PostgreSQL chooses among every relation's.
var indexLabels = map[string]bool{"pkey": true, "key": true, "excl": true}

// createIndex adds CREATE INDEX's index to its table. An index on a view,
// a materialized view or a relation the catalog does not hold changes
// nothing the catalog shows, and is passed over as before indexes were
// held.
func (a *applier) createIndex(s *pg.IndexStmt) error {
	q, kind := a.resolveRV(s.Relation)
	if kind != relTable {
		return nil
	}
	t := a.cat.tables[q]
	if err := t.roomForName(); err != nil {
		return err
	}
	ix, err := indexOf(t, s)
	if err != nil {
		return err
	}
	// A partition's copy of its parent's index is derived, and may have
	// been made before its time: pg_dump makes the parent's index ON ONLY
	// (no copies), then the partition's own, then attaches it. An index
	// made under the copy's name takes its place, and the copy comes back
	// at the script's end if it has no equal then.
	if i := t.indexAt(s.Idxname); i >= 0 && t.Indexes[i].Inherited {
		t.Indexes = slices.Delete(slices.Clip(t.Indexes), i, i+1)
	}
	switch {
	case s.Idxname == "":
		ix.Name = a.cat.chooseIndexName(t, columnsAddition(ix.Names), "idx")
	case a.cat.relationTaken(t, s.Idxname):
		if s.IfNotExists {
			return nil
		}
		err := duplicate("relation %s already exists", QuoteIdent(s.Idxname))
		if t.indexAt(s.Idxname) >= 0 {
			err = staleIndex{err}
		}
		return clean(err)
	}
	t.Indexes = append(t.Indexes, ix)
	if t.PartitionBy != "" {
		// The partitions' copies are derived at the script's end; made
		// now, a later statement of the script finds them by name.
		a.cat.syncPartitions()
	}
	return nil
}

// staleIndex is a CREATE INDEX refused for a name one of the table's
// indexes holds. Indexes are dropped and made again in routines and
// loops over pg_indexes more than tables are, so the catalog may have
// missed a drop PostgreSQL ran: a tolerant apply skips the statement as
// drift (see Tolerant) rather than refuse a migration the database took.
type staleIndex struct{ error }

func (e staleIndex) Unwrap() error { return e.error }

// tolerable reports whether a tolerant apply skips a statement that
// failed with err.
func tolerable(err error) bool {
	return errors.Is(err, ErrUndefined) || errors.As(err, new(staleIndex))
}

// indexOf reads an index's definition.
func indexOf(t *Table, s *pg.IndexStmt) (ix Index, err error) {
	if err := indexColumns(len(s.IndexParams) + len(s.IndexIncludingParams)); err != nil {
		return ix, err
	}
	ix = Index{Name: s.Idxname, Unique: s.Unique}
	if s.AccessMethod != "btree" {
		ix.Method = s.AccessMethod
	}
	for _, p := range s.IndexParams {
		e := p.GetIndexElem()
		if e == nil {
			continue
		}
		k := IndexKey{Column: e.Name, Order: elemOrder(e), Collation: sqlName(e.Collation), Opclass: sqlName(e.Opclass)}
		name := e.Name
		if e.Name == "" {
			unqualify(e.Expr, t.QualName())
			k.Expr = deparseExpr(e.Expr)
			ix.Reads = appendNew(ix.Reads, columnRefs(e.Expr)...)
			if name = columnName(e.Expr); name == "?column?" {
				name = "expr"
			}
		} else if t.Column(e.Name) == nil {
			return ix, undefined("column %s does not exist", QuoteIdent(e.Name))
		}
		if e.Indexcolname != "" {
			name = e.Indexcolname
		}
		ix.Keys = append(ix.Keys, k)
		ix.Names = append(ix.Names, name)
	}
	for _, p := range s.IndexIncludingParams {
		if e := p.GetIndexElem(); e != nil && e.Name != "" {
			if t.Column(e.Name) == nil {
				return ix, undefined("column %s does not exist", QuoteIdent(e.Name))
			}
			ix.Include = append(ix.Include, e.Name)
			ix.Names = append(ix.Names, e.Name)
		}
	}
	if s.WhereClause != nil {
		unqualify(s.WhereClause, t.QualName())
		ix.Where = deparseExpr(s.WhereClause)
		ix.Reads = appendNew(ix.Reads, columnRefs(s.WhereClause)...)
	}
	ix.Names = uniqueColumnNames(ix.Names)
	return ix, nil
}

// elemOrder is an index element's order as pg_get_indexdef shows it, or
// "" for the default (ASC, with NULLS LAST).
func elemOrder(e *pg.IndexElem) string {
	desc := e.Ordering == pg.SortByDir_SORTBY_DESC
	var order string
	if desc {
		order = "DESC"
	}
	switch {
	case e.NullsOrdering == pg.SortByNulls_SORTBY_NULLS_FIRST && !desc:
		order = "NULLS FIRST"
	case e.NullsOrdering == pg.SortByNulls_SORTBY_NULLS_LAST && desc:
		order += " NULLS LAST"
	}
	return order
}

// uniqueColumnNames makes an index's column names distinct as
// ChooseIndexColumnNames does: a repeated name gains 1, 2, …
func uniqueColumnNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		cur := n
		for i := 1; slices.Contains(out, cur); i++ {
			cur = n + itoa(i)
		}
		out = append(out, cur)
	}
	return out
}

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// chooseIndexName picks a default index name as ChooseRelationName does:
// name2 and label after the table's name, then label1, label2, … while
// the name is taken.
func (c *Catalog) chooseIndexName(t *Table, name2, label string) string {
	name := makeObjectName(t.Name, name2, label)
	if !c.relationTaken(t, name) {
		return name
	}
	// The set made once, as chooseConstraintName does. A foreign key's
	// or a check's name does not take an index's, but a table's does.
	own := t.indexSet()
	taken := func(name string) bool {
		q := QualName{t.Schema, name}
		return own[name] || c.tables[q] != nil || c.views[q] != nil
	}
	for pass := 1; taken(name); pass++ {
		name = makeObjectName(t.Name, name2, label+itoa(pass))
	}
	return name
}

// relationTaken reports whether name is taken in t's schema for a new
// index: by one of t's indexes or index-backed constraints, or by a table
// or view. Another table's indexes are not searched (that would cost a
// scan of the schema per index): their names start with that table's.
func (c *Catalog) relationTaken(t *Table, name string) bool {
	q := QualName{t.Schema, name}
	return t.hasIndex(name) || c.tables[q] != nil || c.views[q] != nil
}

// hasIndex reports whether t has an index of that name, its own or one
// behind a constraint.
func (t *Table) hasIndex(name string) bool {
	if t.PrimaryKey != nil && t.PrimaryKey.Name == name {
		return true
	}
	return slices.ContainsFunc(t.Unique, func(k Key) bool { return k.Name == name }) ||
		slices.ContainsFunc(t.Checks, func(c Check) bool { return c.Exclude && c.Name == name }) ||
		t.indexAt(name) >= 0
}

// indexNames lists t's indexes, hasIndex's names: its keys' and
// exclusion constraints' and those CREATE INDEX made.
func (t *Table) indexNames() []string {
	out := make([]string, 0, len(t.Unique)+len(t.Indexes)+1)
	if t.PrimaryKey != nil {
		out = append(out, t.PrimaryKey.Name)
	}
	for _, k := range t.Unique {
		out = append(out, k.Name)
	}
	for _, c := range t.Checks {
		if c.Exclude {
			out = append(out, c.Name)
		}
	}
	for _, ix := range t.Indexes {
		out = append(out, ix.Name)
	}
	return out
}

// indexSet is indexNames as a set.
func (t *Table) indexSet() map[string]bool {
	set := map[string]bool{}
	for _, n := range t.indexNames() {
		set[n] = true
	}
	return set
}

func (t *Table) indexAt(name string) int {
	return slices.IndexFunc(t.Indexes, func(ix Index) bool { return ix.Name == name })
}

// takeIndex hands the index named name to a new primary key or unique
// constraint (ADD CONSTRAINT … USING INDEX), which owns it from then on:
// the key's columns are the index's. PostgreSQL's conditions apply. An
// index the catalog does not hold (made by means it never saw) gives
// no columns and no error.
func (t *Table) takeIndex(name string) ([]string, error) {
	if k := t.keyNamed(name); k != nil {
		return nil, invalid("index %s is already associated with a constraint", QuoteIdent(name))
	}
	i := t.indexAt(name)
	if i < 0 {
		return nil, nil
	}
	ix := t.Indexes[i]
	switch {
	case !ix.Unique:
		return nil, invalid("%s is not a unique index", QuoteIdent(name))
	case ix.Where != "":
		return nil, invalid("%s is a partial index", QuoteIdent(name))
	}
	cols := make([]string, 0, len(ix.Keys))
	for n, k := range ix.Keys {
		if k.Column == "" {
			return nil, invalid("index %s contains expressions", QuoteIdent(name))
		}
		if k.Order != "" || k.Collation != "" || k.Opclass != "" {
			return nil, invalid("index %s column number %d does not have default sorting behavior", QuoteIdent(name), n+1)
		}
		cols = append(cols, k.Column)
	}
	t.Indexes = slices.Delete(slices.Clip(t.Indexes), i, i+1)
	return cols, nil
}

// keyNamed is t's primary or unique key of that name, or nil.
func (t *Table) keyNamed(name string) *Key {
	if t.PrimaryKey != nil && t.PrimaryKey.Name == name {
		return t.PrimaryKey
	}
	if i := slices.IndexFunc(t.Unique, func(k Key) bool { return k.Name == name }); i >= 0 {
		return &t.Unique[i]
	}
	return nil
}

// indexOwner finds the table with an index of that name, its own or a
// key's, in schema or, unqualified, on the search path. A partition's
// copy made earlier in the script is found too.
func (a *applier) indexOwner(schema, name string) (QualName, bool) {
	if q, ok := a.findIndex(schema, name); ok {
		return q, true
	}
	if a.cat.mayBeCopy(name) && a.cat.syncPartitions() {
		return a.findIndex(schema, name)
	}
	return QualName{}, false
}

// mayBeCopy reports whether name may be a partition's copy of its
// parent's index that the script's end has not derived yet. A copy's
// name starts with its partition's (chooseIndexName), of which
// makeObjectName keeps at least the first 20 bytes; a name that starts
// with no partition's is not one, and spares a DROP INDEX IF EXISTS of
// some other index the derivation of every partition (8 ms at 1,000).
func (c *Catalog) mayBeCopy(name string) bool {
	for _, t := range c.tables {
		if t.PartitionOf != nil && strings.HasPrefix(name, clipUTF8(t.Name, 20)) {
			return true
		}
	}
	return false
}

func (a *applier) findIndex(schema, name string) (QualName, bool) {
	path := []string{schema}
	if schema == "" {
		path = a.lookupPath()
	}
	for _, s := range path {
		for q, t := range a.cat.tables {
			if q.Schema == s && t.hasIndex(name) {
				return q, true
			}
		}
	}
	return QualName{}, false
}

// dropIndexes drops the indexes DROP INDEX names. An index behind a
// constraint cannot be dropped, even with CASCADE; one the catalog does
// not hold is passed over, as it may have been made by means it never
// saw.
func (a *applier) dropIndexes(s *pg.DropStmt) error {
	for _, obj := range s.Objects {
		schema, name := qualFromList(listStrings(obj))
		q, ok := a.indexOwner(schema, name)
		if !ok {
			continue
		}
		t := a.changing(q)
		i := t.indexAt(name)
		switch {
		case i < 0:
			return dependent("cannot drop index %s because constraint %s on table %s requires it",
				QuoteIdent(name), QuoteIdent(name), q)
		case t.Indexes[i].Inherited:
			return dependent("cannot drop index %s because index of %s's parent requires it", QuoteIdent(name), q)
		}
		t.Indexes = slices.Delete(slices.Clip(t.Indexes), i, i+1)
	}
	return nil
}

// renameIndex renames one of t's indexes, or the constraint behind one.
func (a *applier) renameIndex(t *Table, from, to string) error {
	i := t.indexAt(from)
	if i < 0 {
		return renameConstraint(t, from, to)
	}
	if from == to {
		return nil
	}
	if a.cat.relationTaken(t, to) {
		return duplicate("relation %s already exists", QuoteIdent(to))
	}
	t.Indexes[i].Name = to
	return nil
}

// dropIndexesReading drops t's indexes that read the column, as
// PostgreSQL does when the column goes.
func (t *Table) dropIndexesReading(col string) {
	t.Indexes = slices.DeleteFunc(slices.Clip(t.Indexes), func(ix Index) bool { return ix.reads(col) })
}

func (ix Index) reads(col string) bool {
	return slices.ContainsFunc(ix.Keys, func(k IndexKey) bool { return k.Column == col }) ||
		slices.Contains(ix.Include, col) || slices.Contains(ix.Reads, col)
}

// renameInIndexes follows a column's rename into t's indexes. The
// expressions keep their text, as a check constraint's does.
func (t *Table) renameInIndexes(from, to string) {
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		for j := range ix.Keys {
			if ix.Keys[j].Column == from {
				ix.Keys[j].Column = to
			}
		}
		renameIn(ix.Include, from, to)
		renameIn(ix.Reads, from, to)
	}
}

// likeIndexes copies src's indexes to t, as LIKE … INCLUDING INDEXES
// builds them anew under t's default names.
func (a *applier) likeIndexes(t, src *Table) {
	for _, ix := range src.Indexes {
		cp := ix.clone()
		cp.Name = a.cat.chooseIndexName(t, columnsAddition(ix.Names), "idx")
		cp.Inherited = false
		t.Indexes = append(t.Indexes, cp)
	}
}

func (ix Index) clone() Index {
	ix.Keys = slices.Clone(ix.Keys)
	ix.Include = slices.Clone(ix.Include)
	ix.Reads = slices.Clone(ix.Reads)
	ix.Names = slices.Clone(ix.Names)
	return ix
}

// indexReach is the table a CREATE INDEX changes.
func (a *applier) indexReach(s *pg.IndexStmt) reach {
	if q, kind := a.resolveRV(s.Relation); kind == relTable {
		return reach{tables: []QualName{q}}
	}
	return reach{}
}

// dropIndexReach is the tables a DROP INDEX changes.
func (a *applier) dropIndexReach(s *pg.DropStmt) reach {
	var r reach
	for _, obj := range s.Objects {
		if q, ok := a.indexOwner(qualFromList(listStrings(obj))); ok {
			r.tables = append(r.tables, q)
		}
	}
	return r
}

// inheritIndexes gives partition t a copy of each of its parent p's
// indexes it has no equal of, as PostgreSQL builds one when the partition
// is created or attached and when the parent gains an index, under t's
// default name (t_a_b_idx, unique or not). An equal index t already has,
// or a key on the same columns for a plain unique index, is attached
// instead: pg_dump's ALTER INDEX … ATTACH PARTITION after CREATE INDEX ON
// ONLY comes out the same.
func (c *Catalog) inheritIndexes(t, p *Table) {
	attached := make([]bool, len(t.Indexes))
	for _, pix := range p.Indexes {
		i := -1
		for j, ix := range t.Indexes {
			if !attached[j] && ix.sameAs(pix) {
				i = j
				break
			}
		}
		if i >= 0 {
			attached[i] = true
			continue
		}
		if cols, ok := pix.keyColumns(); ok && pix.Unique && t.hasKeyOn(cols) {
			continue
		}
		cp := pix.clone()
		cp.Name, cp.Inherited = c.chooseIndexName(t, columnsAddition(pix.Names), "idx"), true
		t.Indexes = append(t.Indexes, cp)
		attached = append(attached, true)
	}
}

// sameAs reports whether ix indexes what o does, the same way.
func (ix Index) sameAs(o Index) bool {
	return ix.Method == o.Method && slices.Equal(ix.Keys, o.Keys) && slices.Equal(ix.Include, o.Include) &&
		ix.Unique == o.Unique && ix.Where == o.Where
}

// keyColumns are ix's columns when a key could own it: plain columns in
// the default order, nothing included, no predicate.
func (ix Index) keyColumns() ([]string, bool) {
	if ix.Where != "" || len(ix.Include) > 0 {
		return nil, false
	}
	cols := make([]string, 0, len(ix.Keys))
	for _, k := range ix.Keys {
		if k.Column == "" || k.Order != "" || k.Collation != "" || k.Opclass != "" {
			return nil, false
		}
		cols = append(cols, k.Column)
	}
	return cols, true
}

// sqlName renders a possibly qualified name (a collation, an
// operator class) as SQL, or "" for none.
func sqlName(parts []*pg.Node) string {
	names := pgtree.Strings(parts)
	for i, n := range names {
		names[i] = QuoteIdent(n)
	}
	return strings.Join(names, ".")
}

// sql renders the element as an index or exclusion constraint lists it.
func (k IndexKey) sql() string {
	e := QuoteIdent(k.Column)
	if k.Column == "" {
		e = "(" + k.Expr + ")"
	}
	if k.Collation != "" {
		e += " COLLATE " + k.Collation
	}
	for _, opt := range []string{k.Opclass, k.Order} {
		if opt != "" {
			e += " " + opt
		}
	}
	return e
}

// Shown reports whether a table's DDL, and so its prompt, shows the
// index: a unique one of its own.
func (ix Index) Shown() bool { return ix.Unique && !ix.Inherited }

// Lead is the column a table's part in a chunk shows the index with:
// its first key column, else the first its expressions read.
func (ix Index) Lead() string {
	for _, k := range ix.Keys {
		if k.Column != "" {
			return k.Column
		}
	}
	if len(ix.Reads) > 0 {
		return ix.Reads[0]
	}
	return ""
}

// DDL renders the index as CREATE INDEX.
func (ix Index) DDL(t QualName) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	if ix.Unique {
		b.WriteString("UNIQUE ")
	}
	b.WriteString("INDEX " + QuoteIdent(ix.Name) + " ON " + t.String())
	if ix.Method != "" {
		b.WriteString(" USING " + QuoteIdent(ix.Method))
	}
	keys := make([]string, len(ix.Keys))
	for i, k := range ix.Keys {
		keys[i] = k.sql()
	}
	b.WriteString(" (" + strings.Join(keys, ", ") + ")")
	if len(ix.Include) > 0 {
		b.WriteString(" INCLUDE (" + identList(ix.Include) + ")")
	}
	if ix.Where != "" {
		b.WriteString(" WHERE " + ix.Where)
	}
	b.WriteString(";\n")
	return b.String()
}
