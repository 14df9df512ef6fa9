package catalog

import (
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// builtinTypes maps pg_catalog's internal type names to the names
// format_type prints. The parser turns "int" into pg_catalog.int4 and so on.
var builtinTypes = map[string]string{
	"int2": "smallint", "int4": "integer", "int8": "bigint",
	"float4": "real", "float8": "double precision",
	"bool": "boolean", "varchar": "character varying", "bpchar": "character",
	"varbit": "bit varying", "numeric": "numeric", "bit": "bit",
	"interval":  "interval",
	"timestamp": "timestamp", "timestamptz": "timestamp",
	"time": "time", "timetz": "time",
}

// internalNames are builtin types that a producer may write unqualified in
// their internal spelling; the parser leaves those as written.
var internalNames = map[string]bool{"int2": true, "int4": true, "int8": true, "float4": true,
	"float8": true, "bool": true, "varchar": true, "bpchar": true, "varbit": true,
	"timestamptz": true, "timetz": true}

// typeSpec is a parsed column type: enough to render it and to find the
// enum behind it.
type typeSpec struct {
	rendered string
	user     *QualName // schema may be empty when written unqualified
	arrayDim int
}

func (a *applier) typeOf(tn *pg.TypeName) (typeSpec, error) {
	if tn == nil {
		return typeSpec{}, nil
	}
	names := pgtree.Strings(tn.Names)
	var spec typeSpec
	mods := a.typmods(tn.Typmods)
	var base string
	if len(names) == 1 && (internalNames[names[0]] || names[0] == "char") {
		// Written in pg_catalog's internal spelling (int8, bool,
		// timestamptz), or "char", its one-byte type, quoted (char
		// unquoted the parser has made bpchar already).
		names = []string{"pg_catalog", names[0]}
	}
	if len(names) == 2 && names[0] == "pg_catalog" {
		n := names[1]
		pretty, ok := builtinTypes[n]
		if !ok {
			pretty = n
		}
		if n == "char" {
			pretty = `"char"` // as format_type prints it, unlike character
		}
		switch n {
		case "timestamp", "timestamptz", "time", "timetz":
			base = pretty + mods
			if strings.HasSuffix(n, "tz") {
				base += " with time zone"
			} else {
				base += " without time zone"
			}
		case "numeric":
			// numeric(p) is numeric(p,0): format_type prints the scale.
			base = pretty + mods
			if len(tn.Typmods) == 1 && mods != "" {
				base = pretty + strings.TrimSuffix(mods, ")") + ",0)"
			}
		case "interval":
			// Interval typmods encode field masks, not a length: the bare
			// name carries what retrieval and prompts need.
			base = pretty
		default:
			base = pretty + mods
		}
	} else {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = QuoteIdent(n)
		}
		if len(names) == 2 && names[0] == DefaultSchema {
			// format_type leaves off a schema the default search_path
			// sees.
			quoted = quoted[1:]
		}
		base = strings.Join(quoted, ".") + mods
		switch len(names) {
		case 1:
			spec.user = &QualName{Name: names[0]}
		case 2:
			spec.user = &QualName{Schema: names[0], Name: names[1]}
		case 3: // database.schema.type
			spec.user = &QualName{Schema: names[1], Name: names[2]}
		}
	}
	if tn.PctType {
		base += "%TYPE"
	}
	spec.arrayDim = len(tn.ArrayBounds)
	spec.rendered = base + strings.Repeat("[]", spec.arrayDim)
	return spec, nil
}

func (a *applier) typmods(mods []*pg.Node) string {
	if len(mods) == 0 {
		return ""
	}
	parts := make([]string, 0, len(mods))
	for _, m := range mods {
		if c := m.GetAConst(); c != nil {
			switch {
			case c.GetIval() != nil:
				parts = append(parts, strconv.Itoa(int(c.GetIval().Ival)))
				continue
			case c.GetSval() != nil:
				parts = append(parts, c.GetSval().Sval)
				continue
			}
		}
		if cr := m.GetColumnRef(); cr != nil { // e.g. geometry(Point, 4326)
			parts = append(parts, strings.Join(pgtree.Strings(cr.Fields), "."))
			continue
		}
		parts = append(parts, deparseExpr(m))
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// resolveEnum fills col.Enum when the column's type is a known enum:
// qualified names must match exactly, unqualified ones follow search_path.
func (a *applier) setColumnType(col *Column, spec typeSpec) {
	col.Type = spec.rendered
	col.Enum = nil
	if spec.user == nil {
		return
	}
	if spec.user.Schema != "" {
		if a.cat.enums[*spec.user] != nil {
			q := *spec.user
			col.Enum = &q
		}
		return
	}
	for _, s := range a.searchPath {
		q := QualName{s, spec.user.Name}
		if a.cat.enums[q] != nil {
			col.Enum = &q
			// Found along search_path: printed as format_type prints it.
			col.Type = typeName(q) + strings.Repeat("[]", spec.arrayDim)
			return
		}
	}
}

// typeName prints a user type as format_type does under the default
// search_path: bare in public, schema-qualified elsewhere.
func typeName(q QualName) string {
	if q.Schema == DefaultSchema || q.Schema == "" {
		return QuoteIdent(q.Name)
	}
	return q.String()
}
