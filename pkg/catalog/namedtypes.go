package catalog

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Types the catalog holds by name only. pg_type lists, beside the enums
// and the row types of tables and views, the domains, composite and range
// types, base and shell types, and what extensions define. The catalog
// models none of them, so the usual guard of an idempotent CREATE TYPE,
// IF NOT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'mood'), could not
// be answered. It keeps their names instead, as it keeps the constraint
// names pg_constraint lists (namedconstraints.go): the set only grows,
// and a name too many leaves a question unanswered where one too few
// would answer it wrongly. unknownTypes, the empty name, stands for the
// types of an extension whose types are not listed here.

const unknownTypes = ""

// noteTypeName adds name to the names of types the catalog does not
// otherwise hold.
func (c *Catalog) noteTypeName(name string) {
	if name != unknownTypes {
		name = clipUTF8(name, maxIdentLen)
	}
	c.otherTypes = insertName(c.otherTypes, name)
}

// noteTypes records the type names n creates that the catalog does not
// model: a domain's, a composite type's, a range type's and its
// multirange's, a base or shell type's, an extension's, and the new name
// of such a type renamed.
func (a *applier) noteTypes(n *pg.Node) {
	switch {
	case n.GetCreateDomainStmt() != nil:
		_, name := qualFromList(pgtree.Strings(n.GetCreateDomainStmt().Domainname))
		a.cat.noteTypeName(name)
	case n.GetCompositeTypeStmt() != nil:
		if rv := n.GetCompositeTypeStmt().Typevar; rv != nil {
			a.cat.noteTypeName(rv.Relname)
		}
	case n.GetCreateRangeStmt() != nil:
		s := n.GetCreateRangeStmt()
		_, name := qualFromList(pgtree.Strings(s.TypeName))
		a.cat.noteTypeName(name)
		a.cat.noteTypeName(multirangeName(name, s.Params))
	case n.GetDefineStmt() != nil:
		if s := n.GetDefineStmt(); s.Kind == pg.ObjectType_OBJECT_TYPE {
			_, name := qualFromList(pgtree.Strings(s.Defnames))
			a.cat.noteTypeName(name)
		}
	case n.GetCreateExtensionStmt() != nil:
		types, known := extensionTypes[n.GetCreateExtensionStmt().Extname]
		if !known {
			a.cat.noteTypeName(unknownTypes)
		}
		for _, t := range types {
			a.cat.noteTypeName(t)
		}
	case n.GetRenameStmt() != nil:
		s := n.GetRenameStmt()
		if s.RenameType != pg.ObjectType_OBJECT_TYPE && s.RenameType != pg.ObjectType_OBJECT_DOMAIN {
			return
		}
		// An enum's new name is held with the enum.
		if l := s.Object.GetList(); l != nil {
			if _, isEnum := a.findEnum(qualFromList(pgtree.Strings(l.Items))); isEnum {
				return
			}
		}
		a.cat.noteTypeName(s.Newname)
	}
}

// multirangeName is the multirange type CREATE TYPE … AS RANGE makes
// beside the range: the one multirange_type_name gives, or PostgreSQL's
// name for it, "multi" before the name's first "range" (floatrange,
// floatmultirange) or "_multirange" after a name without one.
func multirangeName(rangeName string, params []*pg.Node) string {
	for _, p := range params {
		if d := p.GetDefElem(); d != nil && d.Defname == "multirange_type_name" {
			if names := pgtree.Strings(d.Arg.GetTypeName().GetNames()); len(names) > 0 {
				return names[len(names)-1]
			}
		}
	}
	if i := strings.Index(rangeName, "range"); i >= 0 {
		return rangeName[:i] + "multi" + rangeName[i:]
	}
	return rangeName + "_multirange"
}

// extensionTypes are the types (and views' row types) each extension
// shipped with PostgreSQL 15 defines, arrays aside, as read from
// pg_depend after CREATE EXTENSION. An extension not listed (PostGIS,
// pgvector, TimescaleDB, …) defines types of unknown names.
var extensionTypes = map[string][]string{
	"btree_gist":         {"gbtreekey16", "gbtreekey2", "gbtreekey32", "gbtreekey4", "gbtreekey8", "gbtreekey_var"},
	"citext":             {"citext"},
	"cube":               {"cube"},
	"dblink":             {"dblink_pkey_results"},
	"earthdistance":      {"earth"},
	"hstore":             {"ghstore", "hstore"},
	"intarray":           {"intbig_gkey", "query_int"},
	"isn":                {"ean13", "isbn", "isbn13", "ismn", "ismn13", "issn", "issn13", "upc"},
	"lo":                 {"lo"},
	"ltree":              {"lquery", "ltree", "ltree_gist", "ltxtquery"},
	"pg_buffercache":     {"pg_buffercache"},
	"pg_stat_statements": {"pg_stat_statements", "pg_stat_statements_info"},
	"pg_trgm":            {"gtrgm"},
	"seg":                {"seg"},
	"tablefunc":          {"tablefunc_crosstab_2", "tablefunc_crosstab_3", "tablefunc_crosstab_4"},
}

func init() {
	// The rest of PostgreSQL 15's extensions define no type.
	for _, e := range strings.Fields(`adminpack amcheck autoinc bloom btree_gin dict_int dict_xsyn
		file_fdw fuzzystrmatch insert_username intagg moddatetime old_snapshot pageinspect
		pg_freespacemap pg_prewarm pg_surgery pg_visibility pg_walinspect pgcrypto pgrowlocks
		pgstattuple plpgsql postgres_fdw refint sslinfo tcn tsm_system_rows tsm_system_time
		unaccent uuid-ossp xml2`) {
		extensionTypes[e] = nil
	}
}
