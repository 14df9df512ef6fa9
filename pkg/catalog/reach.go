package catalog

import (
	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// reachOf says what statement n may change, for its tables to be copied
// out of the shared ones (thawReach) and for an exception block to save
// first (see savepoint). It names objects only where it is sure; a
// statement whose effects spread (a SET SCHEMA, a DROP SCHEMA or TYPE
// and their cascades) reaches everything. Where a drop's cascade or a
// rename's references are found as they run, what they change beyond
// the reach is reached there (changing).
func (a *applier) reachOf(n *pg.Node) reach {
	switch {
	case n.GetCreateStmt() != nil:
		return a.creating(n.GetCreateStmt().Relation, false)
	case n.GetCreateForeignTableStmt() != nil && n.GetCreateForeignTableStmt().BaseStmt != nil:
		return a.creating(n.GetCreateForeignTableStmt().BaseStmt.Relation, false)
	case n.GetCreateTableAsStmt() != nil:
		if into := n.GetCreateTableAsStmt().Into; into != nil {
			return a.creating(into.Rel, true)
		}
		return reach{}
	case n.GetViewStmt() != nil:
		return a.creating(n.GetViewStmt().View, true)
	case n.GetSelectStmt() != nil && n.GetSelectStmt().IntoClause != nil:
		return a.creating(n.GetSelectStmt().IntoClause.Rel, false)
	case n.GetIndexStmt() != nil:
		return a.indexReach(n.GetIndexStmt())
	case n.GetAlterTableStmt() != nil:
		return a.altering(n.GetAlterTableStmt())
	case n.GetCommentStmt() != nil:
		return a.commenting(n.GetCommentStmt())
	case n.GetCreateEnumStmt() != nil:
		schema, name := qualFromList(pgtree.Strings(n.GetCreateEnumStmt().TypeName))
		if schema == "" {
			schema = a.creationSchema()
		}
		// The schema too: an enum made in one the script never created
		// makes it, as a table does.
		return reach{enums: []QualName{{schema, name}}, schemas: []string{schema}}
	case n.GetAlterEnumStmt() != nil:
		s := n.GetAlterEnumStmt()
		if s.OldVal != "" {
			return reach{all: true} // a renamed label follows into defaults
		}
		q, _ := a.findEnum(qualFromList(pgtree.Strings(s.TypeName)))
		return reach{enums: []QualName{q}}
	case n.GetCreateSchemaStmt() != nil:
		s := n.GetCreateSchemaStmt()
		if len(s.SchemaElts) > 0 {
			return reach{all: true}
		}
		name := s.Schemaname
		if name == "" && s.Authrole != nil {
			name = s.Authrole.Rolename
		}
		return reach{schemas: []string{name}}
	case n.GetCreateFunctionStmt() != nil:
		return a.defining(listStrings(&pg.Node{Node: &pg.Node_List{List: &pg.List{Items: n.GetCreateFunctionStmt().Funcname}}}))
	case n.GetDefineStmt() != nil:
		return a.defining(pgtree.Strings(n.GetDefineStmt().Defnames))
	case n.GetRenameStmt() != nil:
		return a.renaming(n.GetRenameStmt())
	case n.GetCreateSeqStmt() != nil:
		return a.owning(n.GetCreateSeqStmt().Options)
	case n.GetAlterSeqStmt() != nil:
		return a.owning(n.GetAlterSeqStmt().Options)
	case n.GetAlterObjectSchemaStmt() != nil:
		return reach{all: true}
	case n.GetDropStmt() != nil:
		switch n.GetDropStmt().RemoveType {
		case pg.ObjectType_OBJECT_FUNCTION, pg.ObjectType_OBJECT_PROCEDURE:
			return a.droppingRoutines(n.GetDropStmt())
		case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_FOREIGN_TABLE,
			pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW:
			return reach{} // dropRelations reaches what it takes as it goes
		case pg.ObjectType_OBJECT_INDEX:
			return a.dropIndexReach(n.GetDropStmt())
		case pg.ObjectType_OBJECT_SEQUENCE, pg.ObjectType_OBJECT_TRIGGER,
			pg.ObjectType_OBJECT_POLICY, pg.ObjectType_OBJECT_RULE, pg.ObjectType_OBJECT_EXTENSION:
			return reach{} // not modelled: DROP leaves the catalog as it is
		}
		return reach{all: true}
	}
	// DO blocks, routine calls and CREATE SCHEMA's elements change the
	// catalog through statements that come here themselves; the rest
	// (indexes, grants, DML, SET, …) change nothing a block must undo.
	return reach{}
}

// creating reaches the relation rv names for creation, and its schema,
// which creation may make implicitly (see target).
func (a *applier) creating(rv *pg.RangeVar, view bool) reach {
	if rv == nil {
		return reach{}
	}
	schema := rv.Schemaname
	if schema == "" {
		schema = a.creationSchema()
	}
	if isTemp(rv) {
		schema = tempSchema
	}
	q := QualName{schema, rv.Relname}
	r := reach{schemas: []string{schema}, tables: []QualName{q}}
	if view {
		r.views = []QualName{q}
	}
	return r
}

// altering reaches the table an ALTER TABLE changes, its descendants, and
// a partition it attaches or detaches. The foreign keys of other tables
// that a dropped column or key takes with it are reached where they go
// (changing).
func (a *applier) altering(s *pg.AlterTableStmt) reach {
	if s.Relation == nil {
		return reach{}
	}
	var also []QualName
	for _, c := range s.Cmds {
		cmd := c.GetAlterTableCmd()
		if cmd == nil {
			continue
		}
		if pc := cmd.Def.GetPartitionCmd(); pc != nil && pc.Name != nil {
			if q, kind := a.resolveRV(pc.Name); kind == relTable {
				also = append(also, q)
			}
		}
	}
	q, kind := a.resolveRV(s.Relation)
	if kind != relTable {
		return reach{tables: also}
	}
	r := reach{tables: append(also, a.lineage(q)...)}
	return r
}

// commenting reaches the object a COMMENT ON sets.
func (a *applier) commenting(s *pg.CommentStmt) reach {
	parts := listStrings(s.Object)
	switch s.Objtype {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE, pg.ObjectType_OBJECT_COLUMN:
		if s.Objtype == pg.ObjectType_OBJECT_COLUMN {
			if len(parts) < 2 {
				return reach{}
			}
			parts = parts[:len(parts)-1]
		}
		q, _ := a.resolve(qualFromList(parts))
		return reach{tables: []QualName{q}, views: []QualName{q}}
	case pg.ObjectType_OBJECT_TYPE:
		q, _ := a.findEnum(qualFromList(parts))
		return reach{enums: []QualName{q}}
	case pg.ObjectType_OBJECT_SCHEMA:
		return reach{schemas: parts}
	}
	return reach{}
}

// defining reaches a function or aggregate and the routine recorded with
// it.
func (a *applier) defining(parts []string) reach {
	schema, name := qualFromList(parts)
	if schema == "" {
		schema = a.creationSchema()
	}
	q := QualName{schema, name}
	return reach{functions: []QualName{q}, routines: []QualName{q}}
}

// droppingRoutines reaches the functions and routines a DROP FUNCTION or
// PROCEDURE may remove: those of its names, in every schema when a name
// has none (see dropFunctions). Migrations drop and recreate functions
// often; reaching everything copied every table for them.
func (a *applier) droppingRoutines(s *pg.DropStmt) reach {
	var r reach
	for _, obj := range s.Objects {
		owa := obj.GetObjectWithArgs()
		if owa == nil {
			continue
		}
		schema, name := qualFromList(pgtree.Strings(owa.Objname))
		named := func(q QualName) bool { return q.Name == name && (schema == "" || q.Schema == schema) }
		for q := range a.cat.functions {
			if named(q) {
				r.functions = append(r.functions, q)
			}
		}
		for q := range a.cat.routines {
			if named(q) {
				r.routines = append(r.routines, q)
			}
		}
	}
	return r
}

// lineage is q and every table that descends from it, by partition or
// inheritance.
func (a *applier) lineage(q QualName) []QualName {
	out := []QualName{q}
	seen := map[QualName]bool{q: true}
	for i := 0; i < len(out); i++ {
		for _, child := range a.children(out[i]) {
			if cq := child.QualName(); !seen[cq] {
				seen[cq] = true
				out = append(out, cq)
			}
		}
	}
	return out
}

// renaming reaches the table a RENAME changes itself: a relation, one of
// its columns (and its descendants' column), a constraint, the key an
// index is. The references that follow a relation, a column or a
// sequence into other tables are reached where they are repointed
// (changing). Inside an exception block a rename reaches everything:
// the views it repoints are saved only that way.
func (a *applier) renaming(s *pg.RenameStmt) reach {
	if len(a.savepoints) > 0 {
		return reach{all: true}
	}
	switch s.RenameType {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW,
		pg.ObjectType_OBJECT_FOREIGN_TABLE, pg.ObjectType_OBJECT_TABCONSTRAINT:
		if q, kind := a.resolveRV(s.Relation); kind == relTable {
			return reach{tables: []QualName{q}}
		}
		if q, ok := a.resolveIndexOwner(s.Relation); ok && s.RenameType == pg.ObjectType_OBJECT_TABLE {
			return reach{tables: []QualName{q}} // ALTER TABLE renames an index too
		}
		return reach{}
	case pg.ObjectType_OBJECT_COLUMN:
		if q, kind := a.resolveRV(s.Relation); kind == relTable {
			return reach{tables: a.lineage(q)}
		}
		return reach{}
	case pg.ObjectType_OBJECT_INDEX:
		if q, ok := a.resolveIndexOwner(s.Relation); ok {
			return reach{tables: []QualName{q}}
		}
		return reach{}
	case pg.ObjectType_OBJECT_SEQUENCE:
		return reach{}
	}
	return reach{all: true}
}

// owning reaches the table OWNED BY names, whose column comes to own the
// sequence; NONE takes it from whichever column owned it.
func (a *applier) owning(options []*pg.Node) reach {
	for _, o := range options {
		d := o.GetDefElem()
		if d == nil || d.Defname != "owned_by" {
			continue
		}
		rv, _, ok := ownerColumn(listStrings(d.Arg))
		if !ok {
			return reach{all: true} // NONE
		}
		if q, kind := a.resolveRV(rv); kind == relTable {
			return reach{tables: []QualName{q}}
		}
	}
	return reach{}
}
