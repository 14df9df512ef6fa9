package catalog

import (
	"slices"

	pg "github.com/pganalyze/pg_query_go/v5"
)

// ignoredSubcommands change storage, ownership, triggers or statistics:
// nothing a catalog for retrieval and SQL checking holds. ALTER TABLE
// statements made only of these are skipped even when the relation is not
// a table we know (pg_dump issues ALTER TABLE … OWNER TO on sequences).
func catalogSubcommand(t pg.AlterTableType) bool {
	switch t {
	case pg.AlterTableType_AT_AddColumn, pg.AlterTableType_AT_DropColumn,
		pg.AlterTableType_AT_AlterColumnType, pg.AlterTableType_AT_ColumnDefault,
		pg.AlterTableType_AT_DropNotNull, pg.AlterTableType_AT_SetNotNull,
		pg.AlterTableType_AT_AddConstraint, pg.AlterTableType_AT_AddIndexConstraint,
		pg.AlterTableType_AT_DropConstraint,
		pg.AlterTableType_AT_AddIdentity, pg.AlterTableType_AT_DropIdentity,
		pg.AlterTableType_AT_DropExpression,
		pg.AlterTableType_AT_AttachPartition, pg.AlterTableType_AT_DetachPartition,
		pg.AlterTableType_AT_AddInherit, pg.AlterTableType_AT_DropInherit:
		return true
	}
	return false
}

func (a *applier) alterTable(s *pg.AlterTableStmt) error {
	switch s.Objtype {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_FOREIGN_TABLE:
	default:
		return nil // ALTER VIEW/INDEX/SEQUENCE/TYPE …: nothing we model changes
	}
	relevant := false
	for _, c := range s.Cmds {
		if cmd := c.GetAlterTableCmd(); cmd != nil && catalogSubcommand(cmd.Subtype) {
			relevant = true
		}
	}
	if !relevant {
		return nil
	}
	q, kind, ok, err := a.existing(s.Relation, s.MissingOk)
	if !ok {
		return clean(err)
	}
	if kind == relView {
		return nil // ALTER TABLE on a view: only ownership and defaults apply
	}
	t := a.cat.tables[q]
	a.touch(t, touchAltered)
	var retyped []string
	for i, c := range s.Cmds {
		cmd := c.GetAlterTableCmd()
		if cmd == nil {
			continue
		}
		if err := a.alterCmd(t, cmd, s.Relation.Inh); err != nil {
			// These look up what they act on before changing anything;
			// as the statement's first action they leave it untouched.
			if i == 0 && (cmd.Subtype == pg.AlterTableType_AT_DropConstraint || cmd.Subtype == pg.AlterTableType_AT_DropColumn) {
				return clean(err)
			}
			return err
		}
		if cmd.Subtype == pg.AlterTableType_AT_AlterColumnType {
			retyped = append(retyped, cmd.Name)
		}
	}
	// As PostgreSQL, the foreign keys are checked once every column the
	// statement retypes has its type: one that retypes a key and the
	// column referencing it together keeps them comparable.
	for _, name := range retyped {
		if col := t.Column(name); col != nil {
			if err := a.keysStillJoin(t, col); err != nil {
				return err
			}
		}
	}
	return nil
}

func (a *applier) alterCmd(t *Table, cmd *pg.AlterTableCmd, recurse bool) error {
	switch cmd.Subtype {
	case pg.AlterTableType_AT_AddColumn:
		def := cmd.Def.GetColumnDef()
		if def == nil {
			return nil
		}
		if t.Column(def.Colname) != nil && cmd.MissingOk {
			return nil
		}
		if err := a.addColumn(t, def, false); err != nil {
			return err
		}
		return a.eachChild(t, recurse, func(child *Table) error {
			if child.Column(def.Colname) != nil {
				return nil
			}
			c := *t.Column(def.Colname)
			c.Comment = ""
			return child.appendColumn(&c)
		})
	case pg.AlterTableType_AT_DropColumn:
		if t.Column(cmd.Name) == nil {
			if cmd.MissingOk {
				return nil
			}
			return undefined("column %s of relation %s does not exist", QuoteIdent(cmd.Name), t.QualName())
		}
		if err := a.dropColumn(t, cmd.Name, cmd.Behavior == pg.DropBehavior_DROP_CASCADE); err != nil {
			return err
		}
		return a.eachChild(t, recurse, func(child *Table) error {
			if child.Column(cmd.Name) == nil {
				return nil
			}
			return a.dropColumn(child, cmd.Name, true)
		})
	case pg.AlterTableType_AT_AlterColumnType:
		def := cmd.Def.GetColumnDef()
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		if views, err := a.viewsUsing(t, col.Name); err != nil {
			return err
		} else if len(views) > 0 {
			return dependent("cannot alter type of a column used by a view or rule: view %s depends on column %s of %s", views[0], QuoteIdent(col.Name), t.QualName())
		}
		if gen, err := a.reparse.generatedUsing(t, col.Name); err != nil {
			return err
		} else if len(gen) > 0 {
			return dependent("cannot alter type of a column used by a generated column: column %s of %s uses %s", QuoteIdent(gen[0]), t.QualName(), QuoteIdent(col.Name))
		}
		spec, err := a.typeOf(def.TypeName)
		if err != nil {
			return err
		}
		a.setColumnType(col, spec)
		return a.eachChild(t, recurse, func(child *Table) error {
			if cc := child.Column(cmd.Name); cc != nil {
				a.setColumnType(cc, spec)
			}
			return nil
		})
	case pg.AlterTableType_AT_ColumnDefault:
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		col.Default = a.cookDefault(cmd.Def, col.Type)
		// SET and DROP DEFAULT reach the partitions and children too.
		return a.eachChild(t, recurse, func(child *Table) error {
			if cc := child.Column(cmd.Name); cc != nil {
				cc.Default = a.cookDefault(cmd.Def, cc.Type)
			}
			return nil
		})
	case pg.AlterTableType_AT_DropNotNull, pg.AlterTableType_AT_SetNotNull:
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		notNull := cmd.Subtype == pg.AlterTableType_AT_SetNotNull
		if !notNull && t.PrimaryKey != nil && slices.Contains(t.PrimaryKey.Columns, col.Name) {
			return invalid("column %s is in a primary key", QuoteIdent(col.Name))
		}
		col.NotNull = notNull
		return a.eachChild(t, recurse, func(child *Table) error {
			if cc := child.Column(cmd.Name); cc != nil {
				cc.NotNull = notNull
			}
			return nil
		})
	case pg.AlterTableType_AT_AddConstraint, pg.AlterTableType_AT_AddIndexConstraint:
		con := cmd.Def.GetConstraint()
		if con == nil {
			return nil
		}
		return a.addConstraint(t, con, nil)
	case pg.AlterTableType_AT_DropConstraint:
		return a.dropConstraint(t, cmd.Name, cmd.MissingOk, cmd.Behavior == pg.DropBehavior_DROP_CASCADE)
	case pg.AlterTableType_AT_AddIdentity:
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		if con := cmd.Def.GetConstraint(); con != nil {
			col.Identity = identityKind(con.GeneratedWhen)
		}
		col.NotNull = true
	case pg.AlterTableType_AT_DropIdentity:
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		if col.Identity == "" && !cmd.MissingOk {
			return undefined("column %s of relation %s is not an identity column", QuoteIdent(col.Name), t.QualName())
		}
		col.Identity = ""
	case pg.AlterTableType_AT_DropExpression:
		col, err := a.alterColumn(t, cmd.Name)
		if err != nil {
			return err
		}
		col.Generated = ""
	case pg.AlterTableType_AT_AttachPartition:
		pc := cmd.Def.GetPartitionCmd()
		child, err := a.table(pc.Name)
		if err != nil {
			return err
		}
		if err := a.noCycle(child.QualName(), t.QualName()); err != nil {
			return err
		}
		pq := t.QualName()
		child.PartitionOf = &pq
		child.PartitionBound = partitionBound(pc.Bound)
		a.link(pq, child.QualName())
	case pg.AlterTableType_AT_DetachPartition:
		pc := cmd.Def.GetPartitionCmd()
		child, err := a.table(pc.Name)
		if err != nil {
			return err
		}
		// The keys the partition had from its parent stay, its own now,
		// as PostgreSQL keeps the index and constraints it built: made
		// current first, as they are derived only at the script's end.
		a.cat.syncPartitions()
		child.ownKeys()
		child.PartitionOf, child.PartitionBound = nil, ""
	case pg.AlterTableType_AT_AddInherit:
		parent, err := a.table(cmd.Def.GetRangeVar())
		if err != nil {
			return err
		}
		if err := a.noCycle(t.QualName(), parent.QualName()); err != nil {
			return err
		}
		t.Inherits = append(t.Inherits, parent.QualName())
		a.link(parent.QualName(), t.QualName())
	case pg.AlterTableType_AT_DropInherit:
		parent, err := a.table(cmd.Def.GetRangeVar())
		if err != nil {
			return err
		}
		t.Inherits = slices.DeleteFunc(t.Inherits, func(q QualName) bool { return q == parent.QualName() })
	}
	return nil
}

func column(t *Table, name string) (*Column, error) {
	if c := t.Column(name); c != nil {
		return c, nil
	}
	return nil, undefined("column %s of relation %s does not exist", QuoteIdent(name), t.QualName())
}

// alterColumn finds the column an ALTER COLUMN subcommand changes. In a
// tolerant apply a missing one is added as inferred: the history ran
// against a real database, so the statement proves the column exists
// there, made by something a static replay cannot see. Inside a DO block
// the statement may never have run, so nothing is inferred there.
func (a *applier) alterColumn(t *Table, name string) (*Column, error) {
	col, err := column(t, name)
	if err == nil || !a.tolerant || a.inDo {
		return col, err
	}
	col = &Column{Name: name, Inferred: true}
	if err := t.appendColumn(col); err != nil {
		return nil, err
	}
	a.recordDrift(a.stmt, a.raw, err, "column "+t.QualName().String()+"."+QuoteIdent(name))
	return col, nil
}

// eachChild runs fn on every partition and inheritance child of t,
// recursively, unless the statement said ONLY. Each table is visited once,
// so even a cycle that slipped in cannot recurse forever.
func (a *applier) eachChild(t *Table, recurse bool, fn func(*Table) error) error {
	if !recurse {
		return nil
	}
	seen := map[QualName]bool{t.QualName(): true}
	queue := []QualName{t.QualName()}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, child := range a.children(q) {
			if seen[child.QualName()] {
				continue
			}
			seen[child.QualName()] = true
			if err := fn(child); err != nil {
				return err
			}
			queue = append(queue, child.QualName())
		}
	}
	return nil
}

// descendsFrom reports whether t inherits from, or is a partition of,
// ancestor, directly or through other tables.
func (a *applier) descendsFrom(t, ancestor QualName) bool {
	seen := map[QualName]bool{}
	stack := []QualName{t}
	for len(stack) > 0 {
		q := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if q == ancestor {
			return true
		}
		if seen[q] {
			continue
		}
		seen[q] = true
		if tb := a.cat.tables[q]; tb != nil {
			stack = append(stack, tb.Inherits...)
			if tb.PartitionOf != nil {
				stack = append(stack, *tb.PartitionOf)
			}
		}
	}
	return false
}

// noCycle refuses to make child a descendant of parent when parent already
// descends from child (or is child), as PostgreSQL does.
func (a *applier) noCycle(child, parent QualName) error {
	if a.descendsFrom(parent, child) {
		return invalid("circular inheritance not allowed: %s is already a child of %s", parent, child)
	}
	return nil
}

// dropColumn removes a column and, as PostgreSQL does, the table's own
// constraints that use it. Foreign keys of other tables that reference the
// column go only with CASCADE.
func (a *applier) dropColumn(t *Table, name string, cascade bool) error {
	q := t.QualName()
	gen, err := a.reparse.generatedUsing(t, name)
	if err != nil {
		return err
	}
	if len(gen) > 0 {
		if !cascade {
			return dependent("cannot drop column %s of table %s because column %s of table %s depends on it (use CASCADE)", QuoteIdent(name), q, QuoteIdent(gen[0]), q)
		}
		for _, g := range gen {
			if err := a.dropColumn(t, g, true); err != nil {
				return err
			}
		}
	}
	views, err := a.viewsUsing(t, name)
	if err != nil {
		return err
	}
	if len(views) > 0 {
		if !cascade {
			return dependent("cannot drop column %s of table %s because view %s depends on it (use CASCADE)", QuoteIdent(name), q, views[0])
		}
		if err := a.dropRelations(views, true); err != nil {
			return err
		}
	}
	for _, other := range a.cat.tables {
		for _, fk := range other.ForeignKeys {
			// A table's own key that references the column goes with it
			// when it is also the key's column (its constraint involves
			// the column); one that only references it, as a parent_id
			// does its table's id, depends on it like another table's.
			if other == t && slices.Contains(fk.Columns, name) {
				continue
			}
			if fk.RefTable == q && slices.Contains(fk.RefColumns, name) && !cascade {
				return dependent("cannot drop column %s of %s: constraint %s on %s depends on it (use CASCADE)",
					QuoteIdent(name), q, QuoteIdent(fk.Name), other.QualName())
			}
		}
	}
	a.dropForeignKeys(func(fk ForeignKey) bool { return fk.RefTable == q && slices.Contains(fk.RefColumns, name) })
	uses := func(cols []string) bool { return slices.Contains(cols, name) }
	if t.PrimaryKey != nil && uses(t.PrimaryKey.Columns) {
		t.PrimaryKey = nil
	}
	t.Unique = slices.DeleteFunc(t.Unique, func(k Key) bool { return uses(k.Columns) })
	t.ForeignKeys = slices.DeleteFunc(t.ForeignKeys, func(fk ForeignKey) bool { return uses(fk.Columns) })
	// An exclusion constraint lists only its plain elements' columns, as
	// pg_constraint does. It goes with an INCLUDE column too; one its
	// expressions or WHERE read it depends on, as PostgreSQL records.
	var excluded []string
	for _, c := range t.Checks {
		if !c.Exclude || uses(c.Columns) {
			continue
		}
		reads, err := a.reparse.exclusionReads(c.Expr)
		if err != nil {
			return err
		}
		if uses(reads.depends) && !cascade {
			return dependent("cannot drop column %s of table %s because constraint %s on table %s depends on it (use CASCADE)", QuoteIdent(name), q, QuoteIdent(c.Name), q)
		}
		if reads.reads(name) {
			excluded = append(excluded, c.Name)
		}
	}
	t.Checks = slices.DeleteFunc(t.Checks, func(c Check) bool { return uses(c.Columns) || slices.Contains(excluded, c.Name) })
	t.dropIndexesReading(name)
	t.Columns = slices.DeleteFunc(t.Columns, func(c *Column) bool { return c.Name == name })
	return nil
}

// dropConstraint removes a named constraint. Dropping a primary key or
// unique constraint that other tables' foreign keys rely on needs CASCADE,
// which drops those foreign keys too.
func (a *applier) dropConstraint(t *Table, name string, missingOK, cascade bool) error {
	var keyCols []string
	found := false
	if t.PrimaryKey != nil && t.PrimaryKey.Name == name {
		keyCols, found = t.PrimaryKey.Columns, true
		t.PrimaryKey = nil
	}
	if i := slices.IndexFunc(t.Unique, func(k Key) bool { return k.Name == name }); i >= 0 {
		keyCols, found = t.Unique[i].Columns, true
		t.Unique = slices.Delete(t.Unique, i, i+1)
	}
	if i := slices.IndexFunc(t.ForeignKeys, func(f ForeignKey) bool { return f.Name == name }); i >= 0 {
		found = true
		t.ForeignKeys = slices.Delete(t.ForeignKeys, i, i+1)
	}
	if i := slices.IndexFunc(t.Checks, func(c Check) bool { return c.Name == name }); i >= 0 {
		found = true
		t.Checks = slices.Delete(t.Checks, i, i+1)
	}
	if !found {
		if missingOK {
			return nil
		}
		return undefined("constraint %s of relation %s does not exist", QuoteIdent(name), t.QualName())
	}
	if keyCols == nil {
		return nil
	}
	q := t.QualName()
	refers := func(fk ForeignKey) bool { return fk.RefTable == q && slices.Equal(fk.RefColumns, keyCols) }
	if cascade {
		a.dropForeignKeys(refers)
		return nil
	}
	for _, other := range a.cat.tables {
		for _, fk := range other.ForeignKeys {
			if other != t && refers(fk) {
				return dependent("cannot drop constraint %s on %s: constraint %s on %s depends on it (use CASCADE)",
					QuoteIdent(name), q, QuoteIdent(fk.Name), other.QualName())
			}
		}
	}
	return nil
}

// dropForeignKeys removes the foreign keys gone matches from every
// table, copying out (changing) only the tables that lose one: the
// cascade of a dropped column, key or table.
func (a *applier) dropForeignKeys(gone func(ForeignKey) bool) {
	for q, t := range a.cat.tables {
		if slices.ContainsFunc(t.ForeignKeys, gone) {
			t = a.changing(q)
			t.ForeignKeys = slices.DeleteFunc(t.ForeignKeys, gone)
		}
	}
}
