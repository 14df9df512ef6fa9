package catalog

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

func (a *applier) createSchema(s *pg.CreateSchemaStmt) error {
	name := s.Schemaname
	if name == "" && s.Authrole != nil { // CREATE SCHEMA AUTHORIZATION role
		name = s.Authrole.Rolename
	}
	if _, ok := a.cat.schemas[name]; ok {
		if s.IfNotExists {
			return nil
		}
		return duplicate("schema %s already exists", QuoteIdent(name))
	}
	a.cat.schemas[name] = ""
	if len(s.SchemaElts) == 0 {
		return nil
	}
	// Elements of CREATE SCHEMA … CREATE TABLE … are created in the new
	// schema whatever search_path says.
	saved := a.searchPath
	a.searchPath = []string{name}
	defer func() { a.searchPath = saved }()
	for _, elt := range s.SchemaElts {
		if err := a.statement(elt); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) createTable(s *pg.CreateStmt) error {
	if s == nil || s.Relation == nil {
		return nil
	}
	q := a.target(s.Relation)
	if a.kindOf(q) != relNone {
		if s.IfNotExists {
			return nil
		}
		return duplicate("relation %s already exists", q)
	}
	t := &Table{Schema: q.Schema, Name: q.Name}
	// Register first so that a self-referencing foreign key resolves.
	a.cat.tables[q] = t
	a.touch(t, touchCreated)

	for _, inh := range s.InhRelations {
		rv := inh.GetRangeVar()
		if rv == nil {
			continue
		}
		parent, err := a.table(rv)
		if err != nil {
			return err
		}
		if parent == t {
			return invalid("%s cannot inherit from itself", q)
		}
		if s.Partbound != nil {
			pq := parent.QualName()
			t.PartitionOf = &pq
			t.PartitionBound = partitionBound(s.Partbound)
		} else {
			t.Inherits = append(t.Inherits, parent.QualName())
		}
		a.link(parent.QualName(), q)
		for _, pc := range parent.Columns {
			if t.Column(pc.Name) != nil {
				continue // merged, as PostgreSQL merges same-named columns
			}
			c := *pc
			c.Comment = ""
			if c.Enum != nil {
				e := *c.Enum
				c.Enum = &e
			}
			if err := t.appendColumn(&c); err != nil {
				return err
			}
		}
	}
	if ps := s.Partspec; ps != nil {
		for _, p := range ps.PartParams {
			unqualify(p.GetPartitionElem().GetExpr(), t.QualName())
		}
		t.PartitionBy = partitionBy(ps)
	}

	a.defaultNamed = map[string]bool{}
	defer func() { a.defaultNamed = nil }()
	var tableConstraints []*pg.Constraint
	var likeKeysOf []*Table
	for _, elt := range s.TableElts {
		switch {
		case elt.GetColumnDef() != nil:
			if err := a.addColumn(t, elt.GetColumnDef(), true); err != nil {
				return err
			}
		case elt.GetConstraint() != nil:
			tableConstraints = append(tableConstraints, elt.GetConstraint())
		case elt.GetTableLikeClause() != nil:
			src, err := a.like(t, elt.GetTableLikeClause())
			if err != nil {
				return err
			}
			if src != nil {
				likeKeysOf = append(likeKeysOf, src)
			}
		}
	}
	for _, con := range tableConstraints {
		if err := a.addConstraint(t, con, nil); err != nil {
			return err
		}
	}
	a.dropDuplicateKeys(t)
	// PostgreSQL builds what LIKE … INCLUDING INDEXES copies once the
	// table exists, after its own keys.
	for _, src := range likeKeysOf {
		if err := a.likeKeys(t, src); err != nil {
			return err
		}
		a.likeIndexes(t, src)
	}
	return nil
}

// noteDefaultName notes, within a CREATE TABLE, a key named by default.
func (a *applier) noteDefaultName(name string) {
	if a.defaultNamed != nil {
		a.defaultNamed[name] = true
	}
}

// dropDuplicateKeys keeps one of the keys a CREATE TABLE declares twice
// over the same columns (id int PRIMARY KEY UNIQUE, or UNIQUE (a) beside
// CONSTRAINT a_key UNIQUE (a)), as PostgreSQL builds one index for
// them: the primary key before any unique key, else the first; it takes
// the name of a duplicate named when its own was a default.
func (a *applier) dropDuplicateKeys(t *Table) {
	var kept []*Key
	if t.PrimaryKey != nil {
		kept = append(kept, t.PrimaryKey)
	}
	unique := make([]Key, 0, len(t.Unique)) // kept points into it: no growing
	for _, k := range t.Unique {
		dup := false
		for _, prior := range kept {
			if len(k.Columns) > 0 && slices.Equal(prior.Columns, k.Columns) {
				if a.defaultNamed[prior.Name] && !a.defaultNamed[k.Name] {
					prior.Name = k.Name
				}
				dup = true
				break
			}
		}
		if !dup {
			unique = append(unique, k)
			kept = append(kept, &unique[len(unique)-1])
		}
	}
	t.Unique = unique
}

// partitionBy renders PARTITION BY for display: strategy and key columns.
func partitionBy(ps *pg.PartitionSpec) string {
	strategy := map[pg.PartitionStrategy]string{
		pg.PartitionStrategy_PARTITION_STRATEGY_LIST:  "LIST",
		pg.PartitionStrategy_PARTITION_STRATEGY_RANGE: "RANGE",
		pg.PartitionStrategy_PARTITION_STRATEGY_HASH:  "HASH",
	}[ps.Strategy]
	var keys []string
	for _, p := range ps.PartParams {
		if pe := p.GetPartitionElem(); pe != nil {
			if pe.Name != "" {
				keys = append(keys, QuoteIdent(pe.Name))
			} else {
				keys = append(keys, "("+deparseExpr(pe.Expr)+")")
			}
		}
	}
	return strategy + " (" + strings.Join(keys, ", ") + ")"
}

// partitionBound renders a partition bound as SQL. libpg_query deparses
// statements only, so the bound is deparsed inside a minimal CREATE TABLE …
// PARTITION OF and cut out of it.
func partitionBound(b *pg.PartitionBoundSpec) string {
	if b == nil {
		return ""
	}
	stmt := &pg.Node{Node: &pg.Node_CreateStmt{CreateStmt: &pg.CreateStmt{
		Relation:     &pg.RangeVar{Relname: "c", Inh: true, Relpersistence: "p"},
		InhRelations: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: &pg.RangeVar{Relname: "p", Inh: true, Relpersistence: "p"}}}},
		Partbound:    b,
	}}}
	out := deparseQuery(stmt)
	if _, after, ok := strings.Cut(out, " PARTITION OF p "); ok {
		return after
	}
	return ""
}

// like copies columns from CREATE TABLE … (LIKE other [INCLUDING …]).
// Columns, types and NOT NULL always come along; defaults, generated
// expressions, identity, comments, checks and keys only when included,
// as in PostgreSQL.
func (a *applier) like(t *Table, l *pg.TableLikeClause) (keysOf *Table, err error) {
	src, err := a.table(l.Relation)
	if err != nil {
		return nil, err
	}
	const (
		comments    = 1 << 0
		compression = 1 << 1
		constraints = 1 << 2
		defaults    = 1 << 3
		generated   = 1 << 4
		identity    = 1 << 5
		indexes     = 1 << 6
	) // CreateStmtLikeOption bits; INCLUDING ALL sets them all
	opt := l.Options
	for _, sc := range src.Columns {
		if t.Column(sc.Name) != nil {
			continue
		}
		c := &Column{Name: sc.Name, Type: sc.Type, NotNull: sc.NotNull}
		if sc.Enum != nil {
			e := *sc.Enum
			c.Enum = &e
		}
		if opt&defaults != 0 {
			c.Default = sc.Default
		}
		if opt&generated != 0 {
			c.Generated = sc.Generated
		}
		if opt&identity != 0 {
			c.Identity = sc.Identity
		}
		if opt&comments != 0 {
			c.Comment = sc.Comment
		}
		if err := t.appendColumn(c); err != nil {
			return nil, err
		}
	}
	if opt&constraints != 0 {
		for _, ch := range src.Checks {
			if !ch.Exclude {
				ch.Columns = slices.Clone(ch.Columns)
				t.Checks = append(t.Checks, ch)
			}
		}
	}
	if opt&indexes != 0 {
		return src, nil // its keys come after the table's own
	}
	return nil, nil
}

// likeKeys copies src's primary key, unique keys and exclusion
// constraints to t, as INCLUDING INDEXES builds their indexes anew under
// t's default names (t_pkey, t_a_b_key, t_a_excl).
func (a *applier) likeKeys(t, src *Table) error {
	if pk := src.PrimaryKey; pk != nil && t.PrimaryKey == nil {
		t.PrimaryKey = &Key{Name: chooseConstraintName(t, "", "pkey"), Columns: slices.Clone(pk.Columns)}
	}
	for _, k := range src.Unique {
		t.Unique = append(t.Unique, Key{Name: chooseConstraintName(t, columnsAddition(k.Columns), "key"), Columns: slices.Clone(k.Columns)})
	}
	for _, ch := range src.Checks {
		if ch.Exclude {
			reads, err := a.reparse.exclusionReads(ch.Expr)
			if err != nil {
				return err
			}
			names := reads.names
			if names == nil { // an older release held only the columns
				names = ch.Columns
			}
			ch.Name = chooseConstraintName(t, columnsAddition(names), "excl")
			ch.Columns = slices.Clone(ch.Columns)
			t.Checks = append(t.Checks, ch)
		}
	}
	return nil
}

// addColumn adds a column definition with its inline constraints. In
// CREATE TABLE a column inherited from a parent (or a partition's column
// options) merges into the existing column instead of failing.
func (a *applier) addColumn(t *Table, def *pg.ColumnDef, creating bool) error {
	col := t.Column(def.Colname)
	switch {
	case col != nil && creating:
		// Merge with an inherited column: local options win.
	case col != nil:
		return duplicate("column %s of relation %s already exists", QuoteIdent(def.Colname), t.QualName())
	default:
		col = &Column{Name: def.Colname}
		if err := t.appendColumn(col); err != nil {
			return err
		}
	}
	if def.TypeName != nil {
		spec, err := a.typeOf(def.TypeName)
		if err != nil {
			return err
		}
		if typ, ok := serialTypes[spec.rendered]; ok {
			// serial is shorthand, not a type: PostgreSQL makes an
			// integer column owning a sequence, NOT NULL, defaulting
			// to the sequence's next value.
			spec.rendered, spec.user = typ, nil
			col.NotNull = true
			col.OwnsSequence = serialSequence(t, col.Name)
			col.Default = sequenceDefaultOf(col.OwnsSequence)
		}
		a.setColumnType(col, spec)
	}
	if def.IsNotNull {
		col.NotNull = true
	}
	if def.RawDefault != nil {
		col.Default = a.cookDefault(def.RawDefault, col.Type)
	}
	for _, cn := range def.Constraints {
		con := cn.GetConstraint()
		if con == nil {
			continue
		}
		if err := a.addConstraint(t, con, col); err != nil {
			return err
		}
	}
	return nil
}

// addConstraint applies a column constraint (col != nil) or a table
// constraint to t, naming it as PostgreSQL would when it has no name.
func (a *applier) addConstraint(t *Table, con *pg.Constraint, col *Column) error {
	switch con.Contype {
	case pg.ConstrType_CONSTR_PRIMARY, pg.ConstrType_CONSTR_UNIQUE, pg.ConstrType_CONSTR_FOREIGN,
		pg.ConstrType_CONSTR_CHECK, pg.ConstrType_CONSTR_EXCLUSION:
		if err := t.roomForName(); err != nil {
			return err
		}
	}
	colNames := func(nodes []*pg.Node) []string {
		if col != nil && len(nodes) == 0 {
			return []string{col.Name}
		}
		return pgtree.Strings(nodes)
	}
	switch con.Contype {
	case pg.ConstrType_CONSTR_NOTNULL:
		if col != nil {
			col.NotNull = true
		}
	case pg.ConstrType_CONSTR_NULL:
		if col != nil {
			col.NotNull = false
		}
	case pg.ConstrType_CONSTR_DEFAULT:
		if col != nil {
			col.Default = a.cookDefault(con.RawExpr, col.Type)
		}
	case pg.ConstrType_CONSTR_GENERATED:
		if col != nil {
			unqualify(con.RawExpr, t.QualName())
			col.Generated = deparseExpr(con.RawExpr)
		}
	case pg.ConstrType_CONSTR_IDENTITY:
		if col != nil {
			col.Identity = identityKind(con.GeneratedWhen)
			col.NotNull = true
		}
	case pg.ConstrType_CONSTR_PRIMARY:
		if t.PrimaryKey != nil {
			return invalid("multiple primary keys for table %s are not allowed", t.QualName())
		}
		cols, name, err := t.keyOf(con, colNames(con.Keys))
		if err != nil {
			return err
		}
		if name == "" {
			name = chooseConstraintName(t, "", "pkey")
			a.noteDefaultName(name)
		}
		t.PrimaryKey = &Key{Name: name, Columns: cols}
		for _, c := range cols {
			t.Column(c).NotNull = true
		}
	case pg.ConstrType_CONSTR_UNIQUE:
		cols, name, err := t.keyOf(con, colNames(con.Keys))
		if err != nil {
			return err
		}
		if name == "" {
			name = chooseConstraintName(t, columnsAddition(cols), "key")
			a.noteDefaultName(name)
		}
		t.Unique = append(t.Unique, Key{Name: name, Columns: cols})
	case pg.ConstrType_CONSTR_FOREIGN:
		return a.addForeignKey(t, con, colNames(con.FkAttrs), true)
	case pg.ConstrType_CONSTR_CHECK, pg.ConstrType_CONSTR_EXCLUSION:
		ch := Check{Name: con.Conname}
		var exclNames []string // an unnamed exclusion constraint's name is built from these, as an index's
		if con.Contype == pg.ConstrType_CONSTR_CHECK {
			unqualify(con.RawExpr, t.QualName())
			ch.Expr = deparseExpr(con.RawExpr)
			ch.Columns = columnRefs(con.RawExpr)
			if col != nil && len(ch.Columns) == 0 {
				ch.Columns = []string{col.Name}
			}
		} else {
			if err := indexColumns(len(con.Exclusions)); err != nil {
				return err
			}
			ch.Exclude = true
			for _, ex := range con.Exclusions {
				if ie := ex.GetList().GetItems(); len(ie) > 0 && ie[0].GetIndexElem().GetName() != "" {
					ch.Columns = append(ch.Columns, ie[0].GetIndexElem().GetName())
				}
			}
			exclNames = exclusionNames(con)
			ch.Expr = exclusionText(con, t.QualName())
		}
		if ch.Name == "" {
			label, name2 := "check", ""
			if ch.Exclude {
				label, name2 = "excl", columnsAddition(exclNames)
			} else if col != nil {
				name2 = col.Name
			} else if len(ch.Columns) == 1 {
				name2 = ch.Columns[0]
			}
			ch.Name = chooseConstraintName(t, name2, label)
		} else if t.hasConstraint(ch.Name) {
			return duplicate("constraint %s for relation %s already exists", QuoteIdent(ch.Name), t.QualName())
		} else if ch.Exclude && t.indexAt(ch.Name) >= 0 {
			return duplicate("relation %s already exists", QuoteIdent(ch.Name)) // an exclusion constraint is an index
		}
		t.Checks = append(t.Checks, ch)
	}
	return nil
}

// keyOf reads a primary key's or unique constraint's columns and name:
// its own, or with USING INDEX the index's, which it takes over (and
// renames to the constraint's name, if it has one). The name is empty
// when PostgreSQL would choose it.
func (t *Table) keyOf(con *pg.Constraint, cols []string) (_ []string, name string, err error) {
	if err := indexColumns(len(cols) + len(con.Including)); err != nil {
		return nil, "", err
	}
	name = con.Conname
	if con.Indexname != "" {
		if t.PartitionBy != "" {
			return nil, "", invalid("ALTER TABLE / ADD CONSTRAINT USING INDEX is not supported on partitioned tables")
		}
		if cols, err = t.takeIndex(con.Indexname); err != nil {
			return nil, "", err
		}
		if name == "" {
			name = con.Indexname
		}
	}
	if err := requireColumns(t, cols); err != nil {
		return nil, "", err
	}
	switch {
	case name == "":
	case t.hasConstraint(name):
		return nil, "", duplicate("constraint %s for relation %s already exists", QuoteIdent(name), t.QualName())
	case t.indexAt(name) >= 0:
		return nil, "", duplicate("relation %s already exists", QuoteIdent(name))
	}
	return cols, name, nil
}

func identityKind(when string) string {
	if when == "d" {
		return "BY DEFAULT"
	}
	return "ALWAYS"
}

func requireColumns(t *Table, cols []string) error {
	for _, c := range cols {
		if t.Column(c) == nil {
			return undefined("column %s named in key does not exist in %s", QuoteIdent(c), t.QualName())
		}
	}
	return nil
}

var fkActions = map[string]string{
	"a": "", // NO ACTION is the default; leave it implicit
	"r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT",
}

// addForeignKey adds a foreign key. With mayDefer, a reference to a table
// that does not exist yet is kept until the end of the script.
func (a *applier) addForeignKey(t *Table, con *pg.Constraint, cols []string, mayDefer bool) error {
	if len(cols) > maxIndexColumns || len(con.PkAttrs) > maxIndexColumns {
		return invalid("cannot have more than %d keys in a foreign key", maxIndexColumns)
	}
	if err := requireColumns(t, cols); err != nil {
		return err
	}
	ref, kind := a.resolveRV(con.Pktable)
	if kind == relNone && mayDefer && !a.inDo {
		a.pending = append(a.pending, pendingFK{table: t, con: con, cols: cols,
			path: a.searchPath, stmt: a.stmt, raw: a.raw})
		return nil
	}
	if kind != relTable {
		return undefined("relation %s referenced by foreign key of %s does not exist",
			displayName(con.Pktable.Schemaname, con.Pktable.Relname), t.QualName())
	}
	rt := a.cat.tables[ref]
	refCols := pgtree.Strings(con.PkAttrs)
	if len(refCols) == 0 {
		if rt.PrimaryKey == nil {
			return invalid("there is no primary key for referenced table %s", ref)
		}
		refCols = slices.Clone(rt.PrimaryKey.Columns)
	}
	if err := requireColumns(rt, refCols); err != nil {
		return err
	}
	if len(refCols) != len(cols) {
		return invalid("number of referencing and referenced columns for foreign key of %s disagree", t.QualName())
	}
	name := con.Conname
	if name == "" {
		name = chooseConstraintName(t, columnsAddition(cols), "fkey")
	} else if t.hasConstraint(name) {
		return duplicate("constraint %s for relation %s already exists", QuoteIdent(name), t.QualName())
	}
	t.ForeignKeys = append(t.ForeignKeys, ForeignKey{
		Name: name, Columns: cols, RefTable: ref, RefColumns: refCols,
		OnDelete: fkActions[con.FkDelAction], OnUpdate: fkActions[con.FkUpdAction],
	})
	return nil
}

// columnRefs lists, in order of first use, the unqualified-or-last column
// names an expression reads.
func columnRefs(n *pg.Node) []string {
	var out []string
	pgtree.Walk(n, func(m *pg.Node) {
		if cr := m.GetColumnRef(); cr != nil {
			names := pgtree.Strings(cr.Fields)
			if len(names) > 0 && !slices.Contains(out, names[len(names)-1]) {
				out = append(out, names[len(names)-1])
			}
		}
	})
	return out
}
