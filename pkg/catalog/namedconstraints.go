package catalog

import (
	"slices"
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Constraints the catalog holds by name only. pg_constraint lists, beside
// the tables' keys and checks, the constraint triggers (CREATE
// CONSTRAINT TRIGGER) and the domains' checks. The catalog keeps neither,
// so a question such as NOT EXISTS (SELECT 1 FROM pg_constraint WHERE
// conname = 'orders_user_fk'), the guard of an idempotent ADD
// CONSTRAINT, could not be answered: one of them might bear the name. It
// keeps their names instead. The set only grows (a trigger dropped keeps
// its name there): a name too many leaves a question unanswered, one too
// few would answer it wrongly.

// noteConstraintName adds name to the names of constraints the catalog
// does not otherwise hold.
func (c *Catalog) noteConstraintName(name string) {
	if name == "" {
		return
	}
	c.otherConstraints = insertName(c.otherConstraints, clipUTF8(name, maxIdentLen))
}

// insertName adds name to the sorted set names, once.
func insertName(names []string, name string) []string {
	if i, found := slices.BinarySearch(names, name); !found {
		return slices.Insert(names, i, name)
	}
	return names
}

// noteConstraints records the constraint names n creates that no table
// holds: a constraint trigger's, a domain's checks (named, or named
// <domain>_check as PostgreSQL names an unnamed one; <domain>_not_null
// where PostgreSQL 17 lists a domain's NOT NULL), and the new name of a
// trigger or domain constraint renamed.
func (a *applier) noteConstraints(n *pg.Node) {
	switch {
	case n.GetCreateTrigStmt() != nil:
		if s := n.GetCreateTrigStmt(); s.Isconstraint {
			a.cat.noteConstraintName(s.Trigname)
		}
	case n.GetCreateDomainStmt() != nil:
		s := n.GetCreateDomainStmt()
		_, domain := qualFromList(pgtree.Strings(s.Domainname))
		for _, c := range s.Constraints {
			a.noteDomainConstraint(domain, c.GetConstraint())
		}
	case n.GetAlterDomainStmt() != nil:
		s := n.GetAlterDomainStmt()
		_, domain := qualFromList(pgtree.Strings(s.TypeName))
		switch s.Subtype {
		case "C":
			a.noteDomainConstraint(domain, s.Def.GetConstraint())
		case "O":
			a.cat.noteConstraintName(domain + "_not_null")
		}
	case n.GetRenameStmt() != nil:
		s := n.GetRenameStmt()
		if s.RenameType == pg.ObjectType_OBJECT_TRIGGER || s.RenameType == pg.ObjectType_OBJECT_DOMCONSTRAINT {
			a.cat.noteConstraintName(s.Newname)
		}
	}
}

func (a *applier) noteDomainConstraint(domain string, c *pg.Constraint) {
	switch {
	case c == nil:
	case c.Conname != "":
		a.cat.noteConstraintName(c.Conname)
	case c.Contype == pg.ConstrType_CONSTR_CHECK:
		// PostgreSQL numbers a name already taken (d_check1 for a
		// domain's second unnamed check): a few of those are noted
		// too, as a name too many is harmless.
		a.cat.noteConstraintName(makeObjectName(domain, "", "check"))
		for i := 1; i < 10; i++ {
			a.cat.noteConstraintName(makeObjectName(domain, "", "check"+strconv.Itoa(i)))
		}
	case c.Contype == pg.ConstrType_CONSTR_NOTNULL:
		a.cat.noteConstraintName(makeObjectName(domain, "", "not_null"))
	}
}
