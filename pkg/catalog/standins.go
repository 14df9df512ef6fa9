package catalog

import (
	"regexp"
	"strings"
)

// A stand-in is a name in a system relation's row that the catalog does
// not hold but whose shape it knows: a system relation is named pg_… or
// after one of information_schema's views, and a NOT NULL column's
// constraint is named <schema oid>_<table oid>_<column>_not_null. A
// stand-in equals a name of its shape with no certainty and any other
// name certainly not, so a guard on a name the database could not have
// given one is answered. Nothing else about it is known: an order, a
// pattern, or a text built from it is unknown.
var (
	// sysName stands for the name of a system relation or schema.
	sysName = value{kind: vText, s: "\x00sys"}
	// notNullName stands for the name PostgreSQL 15 gives a NOT NULL
	// column in information_schema.table_constraints.
	notNullName = value{kind: vText, s: "\x00notnull"}
	// sysConstraintName stands for a system relation's constraint: its
	// keys (pg_…) and its NOT NULL columns.
	sysConstraintName = value{kind: vText, s: "\x00sysconstraint"}
	// sysTypeName stands for the name of a type of pg_catalog or
	// information_schema: a built-in type, a system relation's row type,
	// or an array of one.
	sysTypeName = value{kind: vText, s: "\x00systype"}
	// arrayTypeName stands for the name of an array type: _ before the
	// element type's name, or more than one when that name was taken.
	arrayTypeName = value{kind: vText, s: "\x00array"}
	// databaseName stands for current_database(), the table_catalog of
	// every row of information_schema: schemaq's name for a database is
	// not the server's. It is one name, so it equals itself.
	databaseName = value{kind: vText, s: "\x00database"}
)

// shape is what a stand-in knows of the names it stands for: whether a
// name may be one (is), and whether one may start with a text (starts,
// what a LIKE pattern's literal start asks).
type shape struct {
	is, starts func(string) bool
}

// standIns are the shapes of the names each stand-in may be.
var standIns = map[string]shape{
	sysName.s:     {couldBeSystemName, couldStartSystemName},
	notNullName.s: {couldBeNotNullName, couldStartNotNullName},
	sysConstraintName.s: {
		func(s string) bool { return strings.HasPrefix(s, "pg_") || couldBeNotNullName(s) },
		func(p string) bool { return couldStartPG(p) || couldStartNotNullName(p) },
	},
	sysTypeName.s: {
		func(s string) bool { return couldBeSystemName(s) || builtinTypeNames[s] || strings.HasPrefix(s, "_") },
		func(p string) bool {
			return couldStartSystemName(p) || strings.HasPrefix(p, "_") || anyStartsWith(builtinTypeNames, p)
		},
	},
	arrayTypeName.s: {
		func(s string) bool { return strings.HasPrefix(s, "_") },
		func(p string) bool { return strings.HasPrefix(p, "_") },
	},
	databaseName.s: {func(string) bool { return true }, func(string) bool { return true }},
}

func couldStartPG(p string) bool { return strings.HasPrefix(p, "pg_") || strings.HasPrefix("pg_", p) }

func couldStartSystemName(p string) bool { return couldStartPG(p) || anyStartsWith(infoSchemaNames, p) }

func couldStartNotNullName(p string) bool { return p == "" || p[0] >= '0' && p[0] <= '9' }

func anyStartsWith(names map[string]bool, p string) bool {
	for n := range names {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// likePrefix is the literal text a LIKE pattern starts with: up to its
// first unescaped % or _, with \ escapes read.
func likePrefix(pattern string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '%', '_':
			return b.String()
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isStandIn(v value) bool {
	_, ok := standIns[v.s]
	return v.kind == vText && ok
}

func anyStandIn(vs ...value) bool {
	for _, v := range vs {
		if isStandIn(v) {
			return true
		}
	}
	return false
}

// standInEqual compares two values of which at least one is a stand-in:
// they are certainly unequal only when the other is a name the stand-in's
// shape rules out. Two stand-ins may be one name; databaseName is one,
// and equals itself.
func standInEqual(a, b value) (eq, certain bool) {
	if !isStandIn(a) {
		a, b = b, a
	}
	if isStandIn(b) {
		if a.s == databaseName.s && b.s == databaseName.s {
			return true, true
		}
		return false, false
	}
	if standIns[a.s].is(b.String()) {
		return false, false
	}
	return false, true
}

func couldBeSystemName(s string) bool { return strings.HasPrefix(s, "pg_") || infoSchemaNames[s] }

var notNullShape = regexp.MustCompile(`^[0-9]+_[0-9]+_[0-9]+_not_null$`)

func couldBeNotNullName(s string) bool { return notNullShape.MatchString(s) }

// builtinTypeNames are pg_catalog's types but for arrays and the row
// types of its relations, and information_schema's domains (PostgreSQL
// 15).
var builtinTypeNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`aclitem any anyarray anycompatible anycompatiblearray
		anycompatiblemultirange anycompatiblenonarray anycompatiblerange anyelement anyenum
		anymultirange anynonarray anyrange bit bool box bpchar bytea char cid cidr circle cstring
		date datemultirange daterange event_trigger fdw_handler float4 float8 gtsvector
		index_am_handler inet int2 int2vector int4 int4multirange int4range int8 int8multirange
		int8range internal interval json jsonb jsonpath language_handler line lseg macaddr
		macaddr8 money name numeric nummultirange numrange oid oidvector path point polygon
		record refcursor regclass regcollation regconfig regdictionary regnamespace regoper
		regoperator regproc regprocedure regrole regtype table_am_handler text tid time timestamp
		timestamptz timetz trigger tsm_handler tsmultirange tsquery tsrange tstzmultirange
		tstzrange tsvector txid_snapshot unknown uuid varbit varchar void xid xid8 xml
		cardinal_number character_data sql_identifier time_stamp yes_or_no`) {
		builtinTypeNames[n] = true
	}
}

// infoDomains are the builtinTypeNames of information_schema.
var infoDomains = map[string]bool{"cardinal_number": true, "character_data": true, "sql_identifier": true, "time_stamp": true, "yes_or_no": true}

// infoSchemaNames are information_schema's relations (PostgreSQL 15).
var infoSchemaNames = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`administrable_role_authorizations applicable_roles attributes
		character_sets check_constraint_routine_usage check_constraints collation_character_set_applicability
		collations column_column_usage column_domain_usage column_options column_privileges column_udt_usage
		columns constraint_column_usage constraint_table_usage data_type_privileges domain_constraints
		domain_udt_usage domains element_types enabled_roles foreign_data_wrapper_options foreign_data_wrappers
		foreign_server_options foreign_servers foreign_table_options foreign_tables information_schema_catalog_name
		key_column_usage parameters referential_constraints role_column_grants role_routine_grants
		role_table_grants role_udt_grants role_usage_grants routine_column_usage routine_privileges
		routine_routine_usage routine_sequence_usage routine_table_usage routines schemata sequences
		sql_features sql_implementation_info sql_parts sql_sizing table_constraints table_privileges tables
		transforms triggered_update_columns triggers udt_privileges usage_privileges user_defined_types
		user_mapping_options user_mappings view_column_usage view_routine_usage view_table_usage views
		_pg_foreign_data_wrappers _pg_foreign_servers _pg_foreign_table_columns _pg_foreign_tables _pg_user_mappings`) {
		infoSchemaNames[n] = true
	}
}
