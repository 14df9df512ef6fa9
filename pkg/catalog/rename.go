package catalog

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

func (a *applier) rename(s *pg.RenameStmt) error {
	switch s.RenameType {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE:
		q, _, ok, err := a.existing(s.Relation, s.MissingOk)
		if !ok && s.RenameType == pg.ObjectType_OBJECT_TABLE {
			// ALTER TABLE renames a sequence or an index too.
			if seq, used := a.sequenceAt(s.Relation); used {
				a.moveSequence(seq, QualName{seq.Schema, s.Newname})
				return nil
			}
			if q, found := a.resolveIndexOwner(s.Relation); found {
				return a.renameIndex(a.changing(q), s.Relation.Relname, s.Newname)
			}
		}
		if !ok {
			return clean(err)
		}
		return a.moveRelation(q, QualName{q.Schema, s.Newname})
	case pg.ObjectType_OBJECT_COLUMN:
		return a.renameColumn(s)
	case pg.ObjectType_OBJECT_TABCONSTRAINT:
		t, err := a.table(s.Relation)
		if err != nil {
			if s.MissingOk {
				return nil
			}
			return err
		}
		return renameConstraint(t, s.Subname, s.Newname)
	case pg.ObjectType_OBJECT_INDEX:
		// Renaming the index behind a primary key or unique constraint
		// renames the constraint too.
		q, _ := a.resolveIndexOwner(s.Relation)
		if t := a.cat.tables[q]; t != nil {
			return a.renameIndex(t, s.Relation.Relname, s.Newname)
		}
		return nil
	case pg.ObjectType_OBJECT_TYPE, pg.ObjectType_OBJECT_DOMAIN:
		schema, name := qualFromList(listStrings(s.Object))
		old, ok := a.findEnum(schema, name)
		if !ok || s.RenameType == pg.ObjectType_OBJECT_DOMAIN {
			// A domain, composite or range type: followed by name.
			a.moveUserType(schema, name, func(q QualName) QualName { return QualName{q.Schema, s.Newname} })
			return nil
		}
		return a.moveEnum(old, QualName{old.Schema, s.Newname})
	case pg.ObjectType_OBJECT_SCHEMA:
		return a.renameSchema(s.Subname, s.Newname)
	case pg.ObjectType_OBJECT_SEQUENCE:
		seq, _ := a.sequenceAt(s.Relation)
		a.moveSequence(seq, QualName{seq.Schema, s.Newname})
	}
	return nil
}

// sequenceAt is the sequence rv names, as far as the defaults that call
// it tell: in the schema written, else the first on the search path
// whose sequence of that name a default uses (used), else where it would
// be created.
func (a *applier) sequenceAt(rv *pg.RangeVar) (seq QualName, used bool) {
	if rv.Schemaname != "" {
		seq = QualName{rv.Schemaname, rv.Relname}
		return seq, a.sequenceUsed(seq)
	}
	for _, schema := range a.lookupPath() {
		if seq := (QualName{schema, rv.Relname}); a.sequenceUsed(seq) {
			return seq, true
		}
	}
	return QualName{a.creationSchema(), rv.Relname}, false
}

func (a *applier) sequenceUsed(seq QualName) bool {
	from := sequenceDefaultOf(seq)
	for _, t := range a.cat.tables {
		for _, c := range t.Columns {
			if c.Default == from {
				return true
			}
		}
	}
	return false
}

// moveSequence follows a sequence's rename or move to another schema
// into the defaults that call nextval on it, as PostgreSQL shows them
// (the default holds the sequence's OID). Sequences are not modelled
// otherwise, so one the catalog never saw is accepted.
func (a *applier) moveSequence(from, to QualName) {
	old, repl := sequenceDefaultOf(from), sequenceDefaultOf(to)
	touches := func(c *Column) bool { return c.Default == old || c.OwnsSequence == from }
	for q, t := range a.cat.tables {
		if !slices.ContainsFunc(t.Columns, touches) {
			continue
		}
		for _, c := range a.changing(q).Columns {
			if c.Default == old {
				c.Default = repl
			}
			if c.OwnsSequence == from {
				c.OwnsSequence = to
			}
		}
	}
}

// ownsOption says whether a sequence's options hold OWNED BY.
func ownsOption(options []*pg.Node) bool {
	return slices.ContainsFunc(options, func(o *pg.Node) bool { return o.GetDefElem().GetDefname() == "owned_by" })
}

// ownerColumn splits OWNED BY's [schema.]table.column.
func ownerColumn(names []string) (table *pg.RangeVar, column string, ok bool) {
	n := len(names)
	if n < 2 {
		return nil, "", false
	}
	table = &pg.RangeVar{Relname: names[n-2]}
	if n > 2 {
		table.Schemaname = names[n-3]
	}
	return table, names[n-1], true
}

// ownSequence follows OWNED BY of CREATE or ALTER SEQUENCE: the column
// named owns the sequence, or with NONE no column does.
func (a *applier) ownSequence(seq QualName, options []*pg.Node) error {
	for _, o := range options {
		d := o.GetDefElem()
		if d == nil || d.Defname != "owned_by" {
			continue
		}
		names := listStrings(d.Arg)
		if len(names) == 1 && strings.EqualFold(names[0], "none") {
			for q, t := range a.cat.tables {
				if slices.ContainsFunc(t.Columns, func(c *Column) bool { return c.OwnsSequence == seq }) {
					for _, c := range a.changing(q).Columns {
						if c.OwnsSequence == seq {
							c.OwnsSequence = QualName{}
						}
					}
				}
			}
			continue
		}
		rv, col, ok := ownerColumn(names)
		if !ok {
			continue
		}
		q, kind := a.resolveRV(rv)
		if kind != relTable {
			return undefined("relation %s does not exist", displayName(rv.Schemaname, rv.Relname))
		}
		c := a.changing(q).Column(col)
		if c == nil {
			return undefined("column %s of relation %s does not exist", QuoteIdent(col), q)
		}
		c.OwnsSequence = seq
	}
	return nil
}

func listStrings(n *pg.Node) []string {
	if n == nil {
		return nil
	}
	if l := n.GetList(); l != nil {
		return pgtree.Strings(l.Items)
	}
	if s := n.GetString_(); s != nil {
		return []string{s.Sval}
	}
	if tn := n.GetTypeName(); tn != nil {
		return pgtree.Strings(tn.Names)
	}
	return nil
}

// resolveIndexOwner finds the table with an index of the name rv gives,
// its own or a key's.
func (a *applier) resolveIndexOwner(rv *pg.RangeVar) (QualName, bool) {
	return a.indexOwner(rv.Schemaname, rv.Relname)
}

func renameConstraint(t *Table, from, to string) error {
	if from == to {
		return nil
	}
	if t.hasConstraint(to) {
		return duplicate("constraint %s for relation %s already exists", QuoteIdent(to), t.QualName())
	}
	switch {
	case t.PrimaryKey != nil && t.PrimaryKey.Name == from:
		t.PrimaryKey.Name = to
		return nil
	}
	for i := range t.Unique {
		if t.Unique[i].Name == from {
			t.Unique[i].Name = to
			return nil
		}
	}
	for i := range t.ForeignKeys {
		if t.ForeignKeys[i].Name == from {
			t.ForeignKeys[i].Name = to
			return nil
		}
	}
	for i := range t.Checks {
		if t.Checks[i].Name == from {
			t.Checks[i].Name = to
			return nil
		}
	}
	return undefined("constraint %s of relation %s does not exist", QuoteIdent(from), t.QualName())
}

func (a *applier) renameColumn(s *pg.RenameStmt) error {
	q, kind, ok, err := a.existing(s.Relation, s.MissingOk)
	if !ok {
		return err
	}
	var cols []*Column
	switch kind {
	case relView:
		cols = a.cat.views[q].Columns
	case relTable:
		cols = a.cat.tables[q].Columns
	}
	i := slices.IndexFunc(cols, func(c *Column) bool { return c.Name == s.Subname })
	if i < 0 {
		if kind == relView && len(cols) == 0 {
			return nil // a view whose columns we could not infer
		}
		return undefined("column %s of relation %s does not exist", QuoteIdent(s.Subname), q)
	}
	if slices.ContainsFunc(cols, func(c *Column) bool { return c.Name == s.Newname }) {
		return duplicate("column %s of relation %s already exists", QuoteIdent(s.Newname), q)
	}
	if kind == relTable {
		// Before the rename: an unqualified reference is the table's
		// while no other relation of the view has the name.
		if err := a.renameInViews(a.cat.tables[q], s.Subname, s.Newname); err != nil {
			return err
		}
	}
	cols[i].Name = s.Newname
	cols[i].Renamed = addRename(cols[i].Renamed, Rename{From: s.Subname, Source: a.source})
	if kind != relTable {
		return nil
	}
	t := a.cat.tables[q]
	a.touch(t, touchAltered)
	if err := a.renameColumnIn(t, s.Subname, s.Newname); err != nil {
		return err
	}
	refers := func(fk ForeignKey) bool { return fk.RefTable == q && slices.Contains(fk.RefColumns, s.Subname) }
	for oq, other := range a.cat.tables {
		if !slices.ContainsFunc(other.ForeignKeys, refers) {
			continue
		}
		for _, fk := range a.changing(oq).ForeignKeys {
			if fk.RefTable == q {
				renameIn(fk.RefColumns, s.Subname, s.Newname)
			}
		}
	}
	// Partitions and inheritance children carry the same column.
	return a.eachChild(t, s.Relation.Inh, func(child *Table) error {
		c := child.Column(s.Subname)
		if c == nil {
			return nil
		}
		c.Name = s.Newname
		c.Renamed = addRename(c.Renamed, Rename{From: s.Subname, Source: a.source})
		return a.renameColumnIn(child, s.Subname, s.Newname)
	})
}

// renameColumnIn follows a column's rename into what t holds of it
// besides the column: its keys, checks and indexes, and the SQL text of
// its expressions.
func (a *applier) renameColumnIn(t *Table, from, to string) error {
	if t.PrimaryKey != nil {
		renameIn(t.PrimaryKey.Columns, from, to)
	}
	for _, k := range t.Unique {
		renameIn(k.Columns, from, to)
	}
	for _, fk := range t.ForeignKeys {
		renameIn(fk.Columns, from, to)
	}
	for _, ch := range t.Checks {
		renameIn(ch.Columns, from, to)
	}
	t.renameInIndexes(from, to)
	return a.reparse.renameInExpressions(t, from, to)
}

func renameIn(list []string, from, to string) {
	for i, c := range list {
		if c == from {
			list[i] = to
		}
	}
}

// moveRelation renames a table or view (in place or across schemas) and
// repoints every reference to it: foreign keys, views' read lists,
// partition and inheritance links.
func (a *applier) moveRelation(from, to QualName) error {
	if from == to {
		return nil
	}
	if a.kindOf(to) != relNone {
		return duplicate("relation %s already exists", to)
	}
	if _, ok := a.cat.schemas[to.Schema]; !ok {
		return undefined("schema %s does not exist", QuoteIdent(to.Schema))
	}
	if err := a.moveInViews(from, to); err != nil {
		return err
	}
	r := Rename{From: from.String(), Source: a.source}
	if t := a.cat.tables[from]; t != nil && from.Schema != to.Schema {
		// A table's own sequences go with it to the other schema.
		for _, c := range t.Columns {
			if seq := c.OwnsSequence; seq.Name != "" && seq.Schema != to.Schema {
				a.moveSequence(seq, QualName{to.Schema, seq.Name})
			}
		}
	}
	if t := a.cat.tables[from]; t != nil {
		delete(a.cat.tables, from)
		t.Schema, t.Name = to.Schema, to.Name
		t.Renamed = addRename(t.Renamed, r)
		a.cat.tables[to] = t
		a.touch(t, touchRenamed)
	} else if v := a.cat.views[from]; v != nil {
		delete(a.cat.views, from)
		v.Schema, v.Name = to.Schema, to.Name
		v.Renamed = addRename(v.Renamed, r)
		a.cat.views[to] = v
	}
	a.repoint(from, to)
	return nil
}

func (a *applier) repoint(from, to QualName) {
	a.forgetKinship()
	refers := func(t *Table) bool {
		return (t.PartitionOf != nil && *t.PartitionOf == from) || slices.Contains(t.Inherits, from) ||
			slices.ContainsFunc(t.ForeignKeys, func(fk ForeignKey) bool { return fk.RefTable == from })
	}
	for q, t := range a.cat.tables {
		if !refers(t) {
			continue
		}
		t = a.changing(q)
		for i := range t.ForeignKeys {
			if t.ForeignKeys[i].RefTable == from {
				t.ForeignKeys[i].RefTable = to
			}
		}
		if t.PartitionOf != nil && *t.PartitionOf == from {
			*t.PartitionOf = to
		}
		for i := range t.Inherits {
			if t.Inherits[i] == from {
				t.Inherits[i] = to
			}
		}
	}
	for _, v := range a.cat.views {
		for i := range v.Reads {
			if v.Reads[i] == from {
				v.Reads[i] = to
			}
		}
	}
}

func (a *applier) findEnum(schema, name string) (QualName, bool) {
	if schema != "" {
		q := QualName{schema, name}
		return q, a.cat.enums[q] != nil
	}
	for _, s := range a.lookupPath() {
		q := QualName{s, name}
		if a.cat.enums[q] != nil {
			return q, true
		}
	}
	return QualName{}, false
}

// moveEnum renames an enum type and re-renders the type of every column
// that uses it, keeping array dimensions and the producer's choice to
// qualify the name or not.
func (a *applier) moveEnum(from, to QualName) error {
	if from == to {
		return nil
	}
	if a.cat.enums[to] != nil {
		return duplicate("type %s already exists", to)
	}
	e := a.cat.enums[from]
	delete(a.cat.enums, from)
	e.Schema, e.Name = to.Schema, to.Name
	a.cat.enums[to] = e
	fix := func(cols []*Column) {
		for _, c := range cols {
			if c.Enum == nil || *c.Enum != from {
				continue
			}
			dims := 0
			base := c.Type
			for strings.HasSuffix(base, "[]") {
				base = strings.TrimSuffix(base, "[]")
				dims++
			}
			arr := strings.Repeat("[]", dims)
			c.Type = typeName(to) + arr
			// A default names its type: 'x'::mood becomes 'x'::feeling.
			if old := "::" + typeName(from) + arr; strings.HasSuffix(c.Default, old) {
				c.Default = strings.TrimSuffix(c.Default, old) + "::" + c.Type
			}
			*c.Enum = to
		}
	}
	for _, t := range a.cat.tables {
		fix(t.Columns)
		if err := a.reparse.retypeInExpressions(t, from, to); err != nil {
			return err
		}
	}
	for _, v := range a.cat.views {
		fix(v.Columns)
		if !mayName(v.Definition, from.Name) {
			continue
		}
		if err := a.rewriteView(v, func(stmt *pg.Node) bool { return retypeNodes(stmt, from, to) }); err != nil {
			return err
		}
	}
	return nil
}

func (a *applier) renameSchema(from, to string) error {
	if _, ok := a.cat.schemas[from]; !ok {
		return undefined("schema %s does not exist", QuoteIdent(from))
	}
	if _, ok := a.cat.schemas[to]; ok {
		return duplicate("schema %s already exists", QuoteIdent(to))
	}
	a.cat.schemas[to] = a.cat.schemas[from]
	// The new schema is empty, so nothing is taken there: what can fail
	// is the bound on parsing views and expressions again.
	for _, q := range keysIn(a.cat.tables, from) {
		if err := a.moveRelation(q, QualName{to, q.Name}); err != nil {
			return err
		}
	}
	for _, q := range keysIn(a.cat.views, from) {
		if err := a.moveRelation(q, QualName{to, q.Name}); err != nil {
			return err
		}
	}
	for _, q := range keysIn(a.cat.enums, from) {
		if err := a.moveEnum(q, QualName{to, q.Name}); err != nil {
			return err
		}
	}
	a.moveUserTypesOf(from, to)
	delete(a.cat.schemas, from)
	return nil
}

func keysIn[T any](m map[QualName]T, schema string) []QualName {
	var out []QualName
	for q := range m {
		if q.Schema == schema {
			out = append(out, q)
		}
	}
	return out
}

func (a *applier) setSchema(s *pg.AlterObjectSchemaStmt) error {
	if _, ok := a.cat.schemas[s.Newschema]; !ok {
		return undefined("schema %s does not exist", QuoteIdent(s.Newschema))
	}
	switch s.ObjectType {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE:
		q, _, ok, err := a.existing(s.Relation, s.MissingOk)
		if !ok {
			return clean(err)
		}
		return a.moveRelation(q, QualName{s.Newschema, q.Name})
	case pg.ObjectType_OBJECT_TYPE, pg.ObjectType_OBJECT_DOMAIN:
		schema, name := qualFromList(listStrings(s.Object))
		if q, ok := a.findEnum(schema, name); ok && s.ObjectType == pg.ObjectType_OBJECT_TYPE {
			return a.moveEnum(q, QualName{s.Newschema, q.Name})
		}
		a.moveUserType(schema, name, func(q QualName) QualName { return QualName{s.Newschema, q.Name} })
	case pg.ObjectType_OBJECT_SEQUENCE:
		seq, _ := a.sequenceAt(s.Relation)
		a.moveSequence(seq, QualName{s.Newschema, seq.Name})
	}
	return nil
}

// RenameLines renders an object's renames and its columns', oldest
// first, as "renamed from public.categories (0007_rename.sql)" and
// "column label renamed from title (0009_x.sql)": what chunks and table
// descriptions show after the DDL.
func RenameLines(renamed []Rename, cols []*Column) []string {
	var out []string
	from := func(r Rename) string {
		if r.Source == "" {
			return r.From
		}
		return r.From + " (" + r.Source + ")"
	}
	for _, r := range renamed {
		out = append(out, "renamed from "+from(r))
	}
	for _, c := range cols {
		for _, r := range c.Renamed {
			out = append(out, "column "+c.Name+" renamed from "+from(r))
		}
	}
	return out
}
