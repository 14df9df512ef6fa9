package catalog

import (
	"maps"
	"slices"

	pg "github.com/pganalyze/pg_query_go/v5"
)

func (a *applier) drop(s *pg.DropStmt) error {
	cascade := s.Behavior == pg.DropBehavior_DROP_CASCADE
	switch s.RemoveType {
	case pg.ObjectType_OBJECT_TABLE, pg.ObjectType_OBJECT_FOREIGN_TABLE,
		pg.ObjectType_OBJECT_VIEW, pg.ObjectType_OBJECT_MATVIEW:
		want := relTable
		if s.RemoveType == pg.ObjectType_OBJECT_VIEW || s.RemoveType == pg.ObjectType_OBJECT_MATVIEW {
			want = relView
		}
		// Resolve every name first: one DROP of several tables may remove
		// a table and the one that references it together.
		var targets []QualName
		for _, obj := range s.Objects {
			schema, name := qualFromList(listStrings(obj))
			q, kind := a.resolve(schema, name)
			if kind == relNone {
				if s.MissingOk {
					continue
				}
				// Clean: nothing is dropped before every name resolves.
				return clean(undefined("relation %s does not exist", displayName(schema, name)))
			}
			if kind != want {
				return invalid("%s is not a %s", q, map[relKind]string{relTable: "table", relView: "view"}[want])
			}
			targets = append(targets, q)
		}
		return a.dropRelations(targets, cascade)
	case pg.ObjectType_OBJECT_TYPE, pg.ObjectType_OBJECT_DOMAIN:
		for _, obj := range s.Objects {
			schema, name := qualFromList(listStrings(obj))
			q, ok := a.findEnum(schema, name)
			if !ok || s.RemoveType == pg.ObjectType_OBJECT_DOMAIN {
				// Domains, composite, range and base types are not
				// modelled: a missing one is not an error we can vouch
				// for, and CASCADE takes the columns printing its name.
				if err := a.dropUserType(schema, name, cascade); err != nil {
					return err
				}
				continue
			}
			if err := a.dropEnum(q, cascade); err != nil {
				return err
			}
		}
	case pg.ObjectType_OBJECT_INDEX:
		return a.dropIndexes(s)
	case pg.ObjectType_OBJECT_FUNCTION:
		a.dropFunctions(s)
		a.dropRoutines(s)
	case pg.ObjectType_OBJECT_PROCEDURE:
		a.dropRoutines(s)
	case pg.ObjectType_OBJECT_SCHEMA:
		for _, obj := range s.Objects {
			name := listStrings(obj)
			if len(name) == 0 {
				continue
			}
			if err := a.dropSchema(name[0], s.MissingOk, cascade); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropRelations drops tables and views. Partitions go with their parent.
// Views that read a dropped relation, inheritance children and other
// tables' foreign keys to it go only with CASCADE; without it their
// existence is an error, as in PostgreSQL.
func (a *applier) dropRelations(targets []QualName, cascade bool) error {
	doomed := map[QualName]bool{}
	var mark func(q QualName) error
	mark = func(q QualName) error {
		if doomed[q] {
			return nil
		}
		doomed[q] = true
		for _, t := range a.cat.tables {
			tq := t.QualName()
			if doomed[tq] {
				continue
			}
			switch {
			case t.PartitionOf != nil && *t.PartitionOf == q:
				if err := mark(tq); err != nil {
					return err
				}
			case slices.Contains(t.Inherits, q):
				if !cascade {
					return dependent("cannot drop %s because table %s inherits from it (use CASCADE)", q, tq)
				}
				if err := mark(tq); err != nil {
					return err
				}
			}
		}
		for _, v := range a.cat.views {
			vq := v.QualName()
			if doomed[vq] || !slices.Contains(v.Reads, q) {
				continue
			}
			if !cascade && !slices.Contains(targets, vq) {
				return dependent("cannot drop %s because view %s depends on it (use CASCADE)", q, vq)
			}
			if err := mark(vq); err != nil {
				return err
			}
		}
		return nil
	}
	for _, q := range targets {
		if err := mark(q); err != nil {
			return err
		}
	}
	if !cascade {
		for q, t := range a.cat.tables {
			if doomed[q] {
				continue
			}
			for _, fk := range t.ForeignKeys {
				if doomed[fk.RefTable] {
					return dependent("cannot drop %s because constraint %s on table %s depends on it (use CASCADE)",
						fk.RefTable, QuoteIdent(fk.Name), t.QualName())
				}
			}
		}
	}
	gone := slices.Collect(maps.Keys(doomed))
	a.keep(reach{tables: gone, views: gone})
	for q := range doomed {
		delete(a.cat.tables, q)
		delete(a.cat.views, q)
	}
	// What is left loses its keys to what went.
	a.dropForeignKeys(func(fk ForeignKey) bool { return doomed[fk.RefTable] })
	return nil
}

// dropEnum drops an enum type. With CASCADE the columns of that type go
// too, as in PostgreSQL; without it they make the DROP fail.
func (a *applier) dropEnum(q QualName, cascade bool) error {
	uses := func(c *Column) bool { return c.Enum != nil && *c.Enum == q }
	for _, t := range a.cat.Tables() {
		for _, c := range t.Columns {
			if !uses(c) {
				continue
			}
			if !cascade {
				return dependent("cannot drop type %s because column %s of table %s depends on it (use CASCADE)",
					q, QuoteIdent(c.Name), t.QualName())
			}
			if err := a.dropColumn(t, c.Name, true); err != nil {
				return err
			}
		}
	}
	for _, v := range a.cat.views {
		if slices.ContainsFunc(v.Columns, uses) {
			if !cascade {
				return dependent("cannot drop type %s because view %s depends on it (use CASCADE)", q, v.QualName())
			}
			if err := a.dropRelations([]QualName{v.QualName()}, true); err != nil {
				return err
			}
		}
	}
	delete(a.cat.enums, q)
	return nil
}

func (a *applier) dropSchema(name string, missingOK, cascade bool) error {
	if _, ok := a.cat.schemas[name]; !ok {
		if missingOK {
			return nil
		}
		return undefined("schema %s does not exist", QuoteIdent(name))
	}
	rels := append(keysIn(a.cat.tables, name), keysIn(a.cat.views, name)...)
	enums := keysIn(a.cat.enums, name)
	if !cascade && len(rels)+len(enums) > 0 {
		return dependent("cannot drop schema %s because other objects depend on it (use CASCADE)", QuoteIdent(name))
	}
	if err := a.dropRelations(rels, true); err != nil {
		return err
	}
	for _, q := range enums {
		if err := a.dropEnum(q, true); err != nil {
			return err
		}
	}
	if err := a.dropUserTypeColumns(inSchema(name)); err != nil {
		return err
	}
	for q := range a.cat.functions {
		if q.Schema == name {
			delete(a.cat.functions, q)
		}
	}
	for q := range a.cat.routines {
		if q.Schema == name {
			delete(a.cat.routines, q)
		}
	}
	delete(a.cat.schemas, name)
	return nil
}
