package catalog

import (
	"slices"
	"strings"
)

// keysStillJoin refuses a retyped column col of t when a foreign key on
// either side of it could no longer compare its columns, as PostgreSQL
// refuses: "foreign key constraint … cannot be implemented". PostgreSQL
// asks for an equality operator of the referenced type's index that
// takes the referencing type, directly or by an implicit cast;
// keyTypesJoin models that for the built-in types and enums, and
// assumes any other pair joins, so the catalog never refuses what
// PostgreSQL takes.
func (a *applier) keysStillJoin(t *Table, col *Column) error {
	q := t.QualName()
	for _, fk := range t.ForeignKeys {
		i := slices.Index(fk.Columns, col.Name)
		if i < 0 || i >= len(fk.RefColumns) {
			continue
		}
		ref := a.cat.tables[fk.RefTable]
		if ref == nil {
			continue
		}
		if rc := ref.Column(fk.RefColumns[i]); rc != nil && !keyTypesJoin(col, rc) {
			return mismatch(fk.Name, col, rc)
		}
	}
	for _, other := range a.cat.tables {
		for _, fk := range other.ForeignKeys {
			if fk.RefTable != q {
				continue
			}
			i := slices.Index(fk.RefColumns, col.Name)
			if i < 0 || i >= len(fk.Columns) {
				continue
			}
			if from := other.Column(fk.Columns[i]); from != nil && !keyTypesJoin(from, col) {
				return mismatch(fk.Name, from, col)
			}
		}
	}
	return nil
}

func mismatch(constraint string, from, to *Column) error {
	return invalid("foreign key constraint %s cannot be implemented: key columns %s and %s are of incompatible types: %s and %s",
		QuoteIdent(constraint), QuoteIdent(from.Name), QuoteIdent(to.Name), from.Type, to.Type)
}

// keyTypesJoin says whether a referencing column of type from can point
// at a referenced key of type to. Within a family every pair joins (the
// integer widths, the date and time stamps, the character strings);
// across the numeric families a referencing type joins a referenced one
// it casts to implicitly: integer to numeric to floating point, never
// back. A type this does not know joins anything.
func keyTypesJoin(from, to *Column) bool {
	f, t := keyFamily(from), keyFamily(to)
	if f == "" || t == "" || f == t {
		return true
	}
	rank := map[string]int{"integer": 1, "numeric": 2, "float": 3}
	return rank[f] > 0 && rank[t] > 0 && rank[f] <= rank[t]
}

// keyFamily names the operator family of a column's type: a built-in
// type as format_type prints it, or an enum (each its own); "" for
// arrays, domains and the types it does not know.
func keyFamily(col *Column) string {
	if strings.HasSuffix(col.Type, "]") {
		return ""
	}
	if col.Enum != nil {
		return "enum " + col.Enum.String()
	}
	base := col.Type
	if i := strings.IndexByte(base, '('); i >= 0 {
		// "numeric(10,2)", "timestamp(3) with time zone"
		base = strings.TrimSpace(base[:i] + base[strings.IndexByte(base, ')')+1:])
	}
	switch base {
	case "smallint", "integer", "bigint":
		return "integer"
	case "numeric":
		return "numeric"
	case "real", "double precision":
		return "float"
	case "text", "character varying", "character", "name":
		return "string"
	case "date", "timestamp without time zone", "timestamp with time zone":
		return "datetime"
	case "time without time zone":
		return "time"
	case "time with time zone":
		return "timetz"
	case "interval", "boolean", "uuid", "bytea", "jsonb":
		return base
	case "inet", "cidr":
		return "network"
	}
	return ""
}
