package catalog

import (
	"strings"
)

// Columns of types the catalog does not model: domains, composite and
// range types. It knows such a type only by the name format_type prints
// in a column's type, and follows that name where PostgreSQL's columns
// follow the type itself: after a rename or a SET SCHEMA, of the type or
// of its schema, they print the new name, and a DROP … CASCADE of the
// type or of its schema takes them. Enums are modelled and linked
// (Column.Enum); these are not, so they are found by name.

// userTypeColumn is a column of a table or view typed by a type the
// catalog does not model, split into the type's printed name, its
// typmods and its array dimensions.
type userTypeColumn struct {
	table      *Table // nil for a view's column
	view       *View
	col        *Column
	base, rest string // base plus rest is the column's type
}

// userTypeColumns lists the columns whose type is not an enum or a
// built-in, as typeOf prints a user type: its quoted name, qualified
// unless it lives in public.
func (a *applier) userTypeColumns() []userTypeColumn {
	var out []userTypeColumn
	add := func(t *Table, v *View, cols []*Column) {
		for _, c := range cols {
			if c.Enum != nil || c.Type == "" {
				continue
			}
			base, rest := splitUserType(c.Type)
			if base == "" {
				continue
			}
			out = append(out, userTypeColumn{table: t, view: v, col: c, base: base, rest: rest})
		}
	}
	for _, t := range a.cat.tables {
		add(t, nil, t.Columns)
	}
	for _, v := range a.cat.views {
		add(nil, v, v.Columns)
	}
	return out
}

// splitUserType splits a column type into a user type's printed name and
// what follows it (typmods, array brackets); base is empty for a
// built-in type.
func splitUserType(typ string) (base, rest string) {
	base = strings.TrimRight(typ, "[]")
	if strings.HasSuffix(base, ")") {
		if i := strings.LastIndexByte(base, '('); i > 0 {
			base = base[:i]
		}
	}
	rest = typ[len(base):]
	if builtinTypeNames[base] || infoTypes[strings.TrimSpace(typmod.ReplaceAllString(typ, ""))] ||
		strings.ContainsRune(base, ' ') && !strings.ContainsRune(base, '"') {
		return "", ""
	}
	return base, rest
}

// findUserType resolves a type the catalog does not model by the columns
// that print its name: a qualified name as written, an unqualified one
// along the search path.
func (a *applier) findUserType(schema, name string, cols []userTypeColumn) (QualName, bool) {
	path := []string{schema}
	if schema == "" {
		path = a.lookupPath()
	}
	for _, s := range path {
		q := QualName{s, name}
		shown := typeName(q)
		for _, c := range cols {
			if c.base == shown {
				return q, true
			}
		}
	}
	return QualName{}, false
}

// moveUserType follows a type renamed or moved to another schema into
// the columns it types. A default that casts to the type names it, as
// an enum's does.
func (a *applier) moveUserType(schema, name string, to func(QualName) QualName) {
	cols := a.userTypeColumns()
	from, ok := a.findUserType(schema, name, cols)
	if !ok {
		return
	}
	old, shown := typeName(from), typeName(to(from))
	for _, c := range cols {
		if c.base != old {
			continue
		}
		c.col.Type = shown + c.rest
		if strings.HasSuffix(c.col.Default, "::"+old+c.rest) {
			c.col.Default = strings.TrimSuffix(c.col.Default, "::"+old+c.rest) + "::" + c.col.Type
		}
		if c.table != nil {
			a.touch(c.table, touchAltered)
		}
	}
}

// moveUserTypesOf follows schema from renamed to into the columns typed
// by the types it holds.
func (a *applier) moveUserTypesOf(from, to string) {
	in := inSchema(from)
	for _, c := range a.userTypeColumns() {
		if !in(c.base) {
			continue
		}
		name := c.base
		if from != DefaultSchema {
			name = strings.TrimPrefix(c.base, QuoteIdent(from)+".")
		}
		if to != DefaultSchema {
			name = QuoteIdent(to) + "." + name
		}
		c.col.Type = name + c.rest
		if c.table != nil {
			a.touch(c.table, touchAltered)
		}
	}
}

// dropUserType is DROP TYPE or DROP DOMAIN of a type the catalog does
// not model.
func (a *applier) dropUserType(schema, name string, cascade bool) error {
	if !cascade {
		return nil
	}
	q, ok := a.findUserType(schema, name, a.userTypeColumns())
	if !ok {
		return nil
	}
	shown := typeName(q)
	return a.dropUserTypeColumns(func(base string) bool { return base == shown })
}

// dropUserTypeColumns drops the columns a DROP … CASCADE of a type takes
// with it: those the type prints in (in), and a view with such a column
// whole. Without CASCADE a type in use could not have been dropped, so
// nothing is.
func (a *applier) dropUserTypeColumns(in func(base string) bool) error {
	for _, c := range a.userTypeColumns() {
		if !in(c.base) {
			continue
		}
		if c.view != nil {
			if a.cat.views[c.view.QualName()] == c.view {
				if err := a.dropRelations([]QualName{c.view.QualName()}, true); err != nil {
					return err
				}
			}
			continue
		}
		if a.cat.tables[c.table.QualName()] != c.table || c.table.Column(c.col.Name) == nil {
			continue // gone with an earlier column's cascade
		}
		if err := a.dropColumn(c.table, c.col.Name, true); err != nil {
			return err
		}
	}
	return nil
}

// inSchema reports whether a user type's printed name lives in schema:
// qualified by it, or unqualified for public.
func inSchema(schema string) func(base string) bool {
	prefix := QuoteIdent(schema) + "."
	return func(base string) bool {
		if schema == DefaultSchema {
			return !qualifiedName(base)
		}
		return strings.HasPrefix(base, prefix)
	}
}

// qualifiedName reports whether a printed name has a schema: a dot
// outside double quotes.
func qualifiedName(name string) bool {
	quoted := false
	for i := 0; i < len(name); i++ {
		switch {
		case name[i] == '"':
			quoted = !quoted // a doubled quote toggles twice
		case name[i] == '.' && !quoted:
			return true
		}
	}
	return false
}
