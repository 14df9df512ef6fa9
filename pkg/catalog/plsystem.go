package catalog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
)

// relDef is a system relation PL/pgSQL may query, built from the catalog.
// fill adds the rows and phantoms; it may use eq (columns a WHERE pins to
// a value) to read fewer rows, as the WHERE is still applied to what it
// adds.
type relDef struct {
	name string
	cols []string
	fill func(a *applier, eq map[string]value, r *relation)
}

// build reads the relation's rows from a's catalog.
func (d *relDef) build(a *applier, eq map[string]value) *relation {
	r := &relation{name: d.name, cols: d.cols}
	d.fill(a, eq, r)
	return r
}

func (d *relDef) colsOf() []string {
	if d == nil {
		return nil
	}
	return d.cols
}

// relationDef resolves a FROM name. System relations are found
// unqualified too (pg_catalog is searched first); a user table's rows are
// data, which a replay does not have.
func (e *evaluator) relationDef(rv *pg.RangeVar) (*relDef, error) {
	schema, name := rv.Schemaname, rv.Relname
	if schema == "" || schema == "pg_catalog" || schema == "information_schema" {
		key := name
		if schema == "information_schema" {
			key = "information_schema." + name
		}
		if d := systemRelations[key]; d != nil {
			return d, nil
		}
	}
	if schema == "pg_catalog" || schema == "information_schema" || strings.HasPrefix(name, "pg_") && schema == "" {
		return nil, stop("a query over %s", displayName(schema, name))
	}
	return nil, stop("a query over the rows of %s (data a replay does not have)", displayName(schema, name))
}

// Oids are the names they stand for: "r:" relations, "n:" schemas;
// notHeld is the oid of an object the catalog does not hold (an index, a
// sequence, a system relation), unlike every oid it does hold.
func relOid(q QualName) value    { return value{kind: vOid, s: "r:" + q.String()} }
func nspOid(schema string) value { return value{kind: vOid, s: "n:" + QuoteIdent(schema)} }

var notHeld = value{kind: vOid, s: "?:"}

var systemSchemas = []string{"pg_catalog", "information_schema", "pg_toast"}

// tablesOf lists the tables eq pins (by schema and name columns), or all.
func tablesOf(a *applier, eq map[string]value, schemaCol, nameCol string) []*Table {
	name, ok := eq[nameCol]
	if ok {
		var out []*Table
		for s := range a.cat.schemas {
			if sv, pinned := eq[schemaCol]; pinned && sv.String() != s {
				continue
			}
			if t := a.cat.tables[QualName{s, name.String()}]; t != nil {
				out = append(out, t)
			}
		}
		return out
	}
	var out []*Table
	for _, t := range a.cat.tables {
		if s, ok := eq[schemaCol]; !ok || s.String() == t.Schema {
			out = append(out, t)
		}
	}
	return out
}

func viewsOf(a *applier, eq map[string]value, schemaCol, nameCol string) []*View {
	var out []*View
	for q, v := range a.cat.views {
		if n, ok := eq[nameCol]; ok && n.String() != q.Name {
			continue
		}
		if s, ok := eq[schemaCol]; ok && s.String() != q.Schema {
			continue
		}
		out = append(out, v)
	}
	return out
}

// sysPhantoms stands for the system relations listed under schemaCol.
func sysPhantoms(cols []string, schemaCol string, set map[string]value) [][]value {
	var out [][]value
	for _, s := range systemSchemas {
		r := unknownRow(len(cols))
		for i, c := range cols {
			switch {
			case c == schemaCol:
				r[i] = str(s)
				if strings.HasPrefix(schemaCol, "rel") || strings.HasSuffix(schemaCol, "namespace") {
					r[i] = nspOid(s)
				}
			case set[c].known():
				r[i] = set[c]
			}
		}
		out = append(out, r)
	}
	return out
}

func yesNo(b bool) value {
	if b {
		return str("YES")
	}
	return str("NO")
}

var typmod = regexp.MustCompile(`\([0-9, ]*\)`)

// dataType is information_schema's data_type for a catalog type.
func dataType(c *Column) value {
	switch {
	case c.Type == "" || c.Type == "unknown":
		return unknown
	case strings.HasSuffix(c.Type, "[]"):
		return str("ARRAY")
	case c.Enum != nil:
		return str("USER-DEFINED")
	}
	t := strings.TrimSpace(typmod.ReplaceAllString(c.Type, ""))
	if infoTypes[t] {
		return str(t)
	}
	return unknown // a domain or an extension's type
}

// udtNames are pg_catalog's internal names of the types infoTypes
// lists, where they differ (information_schema.columns.udt_name).
var udtNames = map[string]string{
	"integer": "int4", "bigint": "int8", "smallint": "int2", "boolean": "bool", "real": "float4",
	"double precision": "float8", "character varying": "varchar", "character": "bpchar",
	"time without time zone": "time", "time with time zone": "timetz",
	"timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz", "bit varying": "varbit",
}

// udtName is the column's type as pg_type names it: an array's with _
// before its element's; unknown for a domain's or an extension's.
func udtName(c *Column) value {
	if c.Type == "" || c.Type == "unknown" {
		return unknown
	}
	elem, array := strings.CutSuffix(c.Type, "[]")
	prefix := ""
	if array {
		if strings.HasSuffix(elem, "[]") {
			return unknown // pg_type has one array type per element type: []
		}
		prefix = "_"
	}
	if c.Enum != nil {
		return str(prefix + c.Enum.Name)
	}
	t := strings.TrimSpace(typmod.ReplaceAllString(elem, ""))
	if !infoTypes[t] {
		return unknown
	}
	if u, ok := udtNames[t]; ok {
		t = u
	}
	return str(prefix + t)
}

// charMaxLength is the length a character or bit type declares: NULL for
// other types, arrays and lengths not declared.
func charMaxLength(c *Column) value {
	t := strings.TrimSpace(typmod.ReplaceAllString(c.Type, ""))
	switch {
	case c.Type == "" || c.Type == "unknown":
		return unknown
	case strings.HasSuffix(c.Type, "[]") || c.Enum != nil:
		return null
	case !infoTypes[t]:
		return unknown // a domain's length is its base type's
	case t != "character varying" && t != "character" && t != "bit" && t != "bit varying":
		return null
	}
	m := typmod.FindString(c.Type)
	if m == "" {
		return null
	}
	n, err := strconv.ParseInt(strings.Trim(m, "() "), 10, 64)
	if err != nil {
		return unknown
	}
	return integer(n)
}

var infoTypes = map[string]bool{}

func init() {
	for _, t := range strings.Split("bigint,integer,smallint,text,boolean,numeric,real,double precision,"+
		"character varying,character,date,time without time zone,time with time zone,"+
		"timestamp without time zone,timestamp with time zone,interval,bytea,json,jsonb,uuid,inet,cidr,macaddr,"+
		"money,xml,tsvector,tsquery,bit,bit varying,oid,point,line,lseg,box,path,polygon,circle", ",") {
		infoTypes[t] = true
	}
}

var systemRelations = map[string]*relDef{}

func register(d *relDef) { systemRelations[d.name] = d }

func init() {
	register(&relDef{name: "information_schema.tables", cols: []string{"table_catalog", "table_schema", "table_name", "table_type"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, t := range tablesOf(a, eq, "table_schema", "table_name") {
				r.rows = append(r.rows, []value{databaseName, str(t.Schema), str(t.Name), str("BASE TABLE")})
			}
			for _, v := range viewsOf(a, eq, "table_schema", "table_name") {
				if !v.Materialized {
					r.rows = append(r.rows, []value{databaseName, str(v.Schema), str(v.Name), str("VIEW")})
				}
			}
			r.phantoms = sysPhantoms(r.cols, "table_schema", map[string]value{"table_name": sysName})
		}})
	register(&relDef{name: "information_schema.columns", cols: []string{"table_catalog", "table_schema", "table_name", "column_name", "ordinal_position", "column_default", "is_nullable", "data_type",
		"udt_name", "character_maximum_length", "is_identity", "identity_generation"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			add := func(schema, name string, cols []*Column, view bool) {
				for i, c := range cols {
					def := null
					if c.Default != "" {
						def = str(c.Default)
					}
					nullable, identity, generation := yesNo(!c.NotNull), str("NO"), null
					if c.Identity != "" {
						identity, generation = str("YES"), str(c.Identity)
					}
					if view {
						nullable, def, identity, generation = str("YES"), null, str("NO"), null
					}
					r.rows = append(r.rows, []value{databaseName, str(schema), str(name), str(c.Name),
						integer(int64(i + 1)), def, nullable, dataType(c), udtName(c), charMaxLength(c), identity, generation})
				}
			}
			for _, t := range tablesOf(a, eq, "table_schema", "table_name") {
				add(t.Schema, t.Name, t.Columns, false)
			}
			for _, v := range viewsOf(a, eq, "table_schema", "table_name") {
				if !v.Materialized {
					add(v.Schema, v.Name, v.Columns, true)
				}
			}
			r.phantoms = sysPhantoms(r.cols, "table_schema", map[string]value{"table_name": sysName})
		}})
	register(&relDef{name: "information_schema.table_constraints", cols: []string{"constraint_schema", "constraint_name", "table_schema", "table_name", "constraint_type"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, t := range tablesOf(a, eq, "table_schema", "table_name") {
				for _, c := range constraintsOf(t) {
					if c.typ == "x" {
						continue // exclusion constraints are not listed there
					}
					r.rows = append(r.rows, []value{str(t.Schema), str(c.name), str(t.Schema), str(t.Name), str(infoConstraintType[c.typ])})
				}
				// Each NOT NULL column is listed as a CHECK constraint
				// named by oids the catalog does not hold.
				for _, c := range t.Columns {
					if c.NotNull {
						r.rows = append(r.rows, []value{str(t.Schema), notNullName, str(t.Schema), str(t.Name), str("CHECK")})
					}
				}
			}
			r.phantoms = sysPhantoms(r.cols, "table_schema", map[string]value{"table_name": sysName, "constraint_name": sysConstraintName})
		}})
	register(&relDef{name: "information_schema.key_column_usage", cols: []string{"constraint_schema", "constraint_name", "table_schema", "table_name",
		"column_name", "ordinal_position", "position_in_unique_constraint"}, fill: fillKeyColumns})
	register(&relDef{name: "information_schema.schemata", cols: []string{"schema_name", "schema_owner"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, row := range namespaces(a) {
				r.rows = append(r.rows, []value{row[1], unknown})
			}
			r.phantoms = [][]value{{sysName, unknown}} // sessions' temporary schemas
		}})
	register(&relDef{name: "information_schema.views", cols: []string{"table_schema", "table_name", "view_definition", "check_option", "is_updatable"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, v := range viewsOf(a, eq, "table_schema", "table_name") {
				if !v.Materialized {
					r.rows = append(r.rows, []value{str(v.Schema), str(v.Name), unknown, unknown, unknown})
				}
			}
			r.phantoms = sysPhantoms(r.cols, "table_schema", map[string]value{"table_name": sysName})
		}})
	register(&relDef{name: "pg_tables", cols: []string{"schemaname", "tablename", "tableowner"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, t := range tablesOf(a, eq, "schemaname", "tablename") {
				r.rows = append(r.rows, []value{str(t.Schema), str(t.Name), unknown})
			}
			r.phantoms = sysPhantoms(r.cols, "schemaname", map[string]value{"tablename": sysName})
		}})
	register(&relDef{name: "pg_views", cols: []string{"schemaname", "viewname", "viewowner", "definition"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, v := range viewsOf(a, eq, "schemaname", "viewname") {
				if !v.Materialized {
					r.rows = append(r.rows, []value{str(v.Schema), str(v.Name), unknown, unknown})
				}
			}
			r.phantoms = sysPhantoms(r.cols, "schemaname", map[string]value{"viewname": sysName})
		}})
	register(&relDef{name: "pg_matviews", cols: []string{"schemaname", "matviewname", "matviewowner", "definition"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, v := range viewsOf(a, eq, "schemaname", "matviewname") {
				if v.Materialized {
					r.rows = append(r.rows, []value{str(v.Schema), str(v.Name), unknown, unknown})
				}
			}
		}})
	register(&relDef{name: "pg_namespace", cols: []string{"oid", "nspname", "nspowner"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, row := range namespaces(a) {
				r.rows = append(r.rows, append(row, unknown))
			}
			// Temporary and toast schemas of sessions.
			r.phantoms = [][]value{{unknown, sysName, unknown}}
		}})
	register(&relDef{name: "pg_class", cols: []string{"oid", "relname", "relnamespace", "relkind", "relowner", "relpersistence"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for q, t := range a.cat.tables {
				if n, ok := eq["relname"]; ok && n.String() != q.Name {
					continue
				}
				kind := "r"
				if t.PartitionBy != "" {
					kind = "p"
				}
				r.rows = append(r.rows, []value{relOid(q), str(q.Name), nspOid(q.Schema), str(kind), unknown, unknown})
			}
			for q, t := range a.cat.tables {
				kind := "i"
				if t.PartitionBy != "" {
					kind = "I"
				}
				for _, name := range t.indexNames() {
					if n, ok := eq["relname"]; ok && n.String() != name {
						continue
					}
					r.rows = append(r.rows, []value{relOid(QualName{q.Schema, name}), str(name), nspOid(q.Schema), str(kind), unknown, unknown})
				}
			}
			for q, v := range a.cat.views {
				if n, ok := eq["relname"]; ok && n.String() != q.Name {
					continue
				}
				kind := "v"
				if v.Materialized {
					kind = "m"
				}
				r.rows = append(r.rows, []value{relOid(q), str(q.Name), nspOid(q.Schema), str(kind), unknown, unknown})
			}
			// Sequences, composite types, toast tables, system relations
			// and the indexes of materialized views are not held; a
			// table's indexes are, as its columns are.
			kinds := []string{"S", "c", "t"}
			if hasMatview(a) {
				kinds = append(kinds, "i")
			}
			for _, k := range kinds {
				r.phantoms = append(r.phantoms, []value{notHeld, unknown, unknown, str(k), unknown, unknown})
			}
			r.phantoms = append(r.phantoms, sysPhantoms(r.cols, "relnamespace", map[string]value{"relname": sysName, "oid": notHeld})...)
		}})
	register(&relDef{name: "pg_constraint", cols: []string{"oid", "conname", "connamespace", "contype", "conrelid", "confrelid"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for q, t := range a.cat.tables {
				if rel, ok := eq["conrelid"]; ok && rel.kind == vOid && rel.s != relOid(q).s {
					continue
				}
				for _, c := range constraintsOf(t) {
					if n, ok := eq["conname"]; ok && n.String() != c.name {
						continue
					}
					ref := integer(0)
					if c.ref != nil {
						ref = relOid(*c.ref)
					}
					r.rows = append(r.rows, []value{unknown, str(c.name), nspOid(q.Schema), str(c.typ), relOid(q), ref})
				}
			}
			// Constraint triggers and domain checks, held by name only,
			// are phantoms that bear their names: such a constraint may
			// have been dropped since (the names only grow), and a
			// trigger's relation is not held.
			r.phantoms = sysPhantoms(r.cols, "connamespace", map[string]value{"conname": sysName, "conrelid": notHeld})
			for _, name := range a.cat.otherConstraints {
				if n, ok := eq["conname"]; ok && n.String() != name {
					continue
				}
				r.phantoms = append(r.phantoms, []value{unknown, str(name), unknown, unknown, unknown, unknown})
			}
		}})
	register(&relDef{name: "pg_indexes", cols: []string{"schemaname", "tablename", "indexname", "tablespace", "indexdef"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for _, t := range tablesOf(a, eq, "schemaname", "tablename") {
				for _, name := range t.indexNames() {
					r.rows = append(r.rows, []value{str(t.Schema), str(t.Name), str(name), unknown, unknown})
				}
			}
			// A table's indexes are held as its columns are: the history
			// made them. A materialized view's and the system catalogs'
			// are not.
			r.phantoms = sysPhantoms(r.cols, "schemaname", map[string]value{"tablename": sysName, "indexname": sysName})
			for _, v := range viewsOf(a, eq, "schemaname", "tablename") {
				if v.Materialized {
					r.phantoms = append(r.phantoms, []value{str(v.Schema), str(v.Name), unknown, unknown, unknown})
				}
			}
		}})
	register(&relDef{name: "pg_attribute", cols: []string{"attrelid", "attname", "attnum", "attnotnull", "attisdropped", "atthasdef", "atttypid"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			add := func(q QualName, cols []*Column, view bool) {
				if rel, ok := eq["attrelid"]; ok && rel.kind == vOid && rel.s != relOid(q).s {
					return
				}
				for i, c := range cols {
					r.rows = append(r.rows, []value{relOid(q), str(c.Name), integer(int64(i + 1)),
						boolean(c.NotNull && !view), boolean(false), boolean(c.Default != "" && !view), unknown})
				}
			}
			for q, t := range a.cat.tables {
				add(q, t.Columns, false)
			}
			for q, v := range a.cat.views {
				add(q, v.Columns, true)
			}
			// System columns of every relation, dropped columns (which
			// keep a slot under a generated name), and the attributes of
			// relations not held (indexes, composite types, system
			// tables).
			for i, sys := range []string{"tableoid", "cmax", "xmax", "cmin", "xmin", "ctid"} {
				r.phantoms = append(r.phantoms, []value{unknown, str(sys), integer(int64(-i - 1)), boolean(true), boolean(false), boolean(false), unknown})
			}
			r.phantoms = append(r.phantoms,
				[]value{unknown, unknown, unknown, boolean(false), boolean(true), boolean(false), unknown},
				[]value{notHeld, unknown, unknown, unknown, unknown, unknown, unknown})
		}})
	register(&relDef{name: "pg_type", cols: []string{"oid", "typname", "typnamespace", "typtype", "typrelid"}, fill: fillTypes})
	register(&relDef{name: "pg_enum", cols: []string{"oid", "enumtypid", "enumsortorder", "enumlabel"},
		fill: func(a *applier, eq map[string]value, r *relation) {
			for q, e := range a.cat.enums {
				if t, ok := eq["enumtypid"]; ok && t.kind == vOid && t.s != typeOid(q).s {
					continue
				}
				for _, l := range e.Labels {
					// The sort order is a float that ADD VALUE BEFORE
					// makes fractional: not held.
					r.rows = append(r.rows, []value{unknown, typeOid(q), unknown, str(l)})
				}
			}
			if slices.Contains(a.cat.otherTypes, unknownTypes) {
				r.phantoms = [][]value{unknownRow(len(r.cols))} // an extension's enums
			}
		}})
	for _, name := range []string{"pg_sequences", "information_schema.sequences", "pg_proc", "pg_extension",
		"pg_trigger", "information_schema.triggers", "pg_policy", "pg_policies", "information_schema.routines"} {
		name := name
		// Not held at all: any column read stops the query, and a query
		// reading none cannot be certain of being empty.
		register(&relDef{name: name, fill: func(a *applier, eq map[string]value, r *relation) {
			r.phantoms = [][]value{{}}
		}})
	}
}

// namespaces are the schemas the catalog holds and the system's, each
// as its oid and name.
func namespaces(a *applier) [][]value {
	var out [][]value
	seen := map[string]bool{}
	for s := range a.cat.schemas {
		seen[s] = true
		out = append(out, []value{nspOid(s), str(s)})
	}
	for _, s := range systemSchemas {
		if !seen[s] {
			out = append(out, []value{nspOid(s), str(s)})
		}
	}
	return out
}

// fillKeyColumns lists information_schema.key_column_usage: a row for
// each column of each primary, unique and foreign key. A key added USING
// INDEX, whose columns the catalog does not hold, is a phantom with its
// name; the system catalogs' keys are pg_….
func fillKeyColumns(a *applier, eq map[string]value, r *relation) {
	for _, t := range tablesOf(a, eq, "table_schema", "table_name") {
		add := func(name string, cols []string, ref func(i int) value) {
			if len(cols) == 0 {
				r.phantoms = append(r.phantoms, []value{str(t.Schema), str(name), str(t.Schema), str(t.Name), unknown, unknown, unknown})
			}
			for i, c := range cols {
				r.rows = append(r.rows, []value{str(t.Schema), str(name), str(t.Schema), str(t.Name), str(c), integer(int64(i + 1)), ref(i)})
			}
		}
		noRef := func(int) value { return null }
		if k := t.PrimaryKey; k != nil {
			add(k.Name, k.Columns, noRef)
		}
		for _, k := range t.Unique {
			add(k.Name, k.Columns, noRef)
		}
		for _, fk := range t.ForeignKeys {
			add(fk.Name, fk.Columns, func(i int) value { return a.positionInKey(fk, i) })
		}
	}
	r.phantoms = append(r.phantoms, sysPhantoms(r.cols, "table_schema", map[string]value{"table_name": sysName, "constraint_name": sysConstraintName})...)
}

// positionInKey is where the i-th column a foreign key references stands
// in the referenced table's key over those columns: unknown when no key
// the catalog holds matches them.
func (a *applier) positionInKey(fk ForeignKey, i int) value {
	ref := a.cat.tables[fk.RefTable]
	if ref == nil || i >= len(fk.RefColumns) {
		return unknown
	}
	keys := ref.Unique
	if ref.PrimaryKey != nil {
		keys = append([]Key{*ref.PrimaryKey}, keys...)
	}
	for _, k := range keys {
		if len(k.Columns) == len(fk.RefColumns) && sameSet(k.Columns, fk.RefColumns) {
			return integer(int64(slices.Index(k.Columns, fk.RefColumns[i]) + 1))
		}
	}
	return unknown
}

func sameSet(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// typeOid is the oid of a type the catalog holds: an enum, or a table's
// or a view's row type (a relation and a type never share a name in a
// schema).
func typeOid(q QualName) value { return value{kind: vOid, s: "t:" + q.String()} }

// fillTypes lists pg_type: the enums and the row types of the tables and
// views, each with its array, as rows; the types held by name only, and
// pg_catalog's and information_schema's, as phantoms.
func fillTypes(a *applier, eq map[string]value, r *relation) {
	add := func(q QualName, typtype string, rel value) {
		if n, ok := eq["typname"]; ok && n.String() != q.Name && !strings.HasPrefix(n.String(), "_") {
			return
		}
		r.rows = append(r.rows, []value{typeOid(q), str(q.Name), nspOid(q.Schema), str(typtype), rel},
			[]value{notHeld, arrayTypeName, nspOid(q.Schema), str("b"), integer(0)})
	}
	for q := range a.cat.enums {
		add(q, "e", integer(0))
	}
	for q := range a.cat.tables {
		add(q, "c", relOid(q))
	}
	for q := range a.cat.views {
		add(q, "c", relOid(q))
	}
	for name := range builtinTypeNames {
		if n, ok := eq["typname"]; ok && n.String() != name {
			continue
		}
		ns := "pg_catalog"
		if infoDomains[name] {
			ns = "information_schema"
		}
		r.rows = append(r.rows, []value{notHeld, str(name), nspOid(ns), unknown, unknown})
	}
	r.phantoms = sysPhantoms(r.cols, "typnamespace", map[string]value{"typname": sysTypeName, "oid": notHeld})
	for _, name := range a.cat.otherTypes {
		n := unknown
		if name != unknownTypes {
			n = str(name)
		}
		r.phantoms = append(r.phantoms, []value{notHeld, n, unknown, unknown, unknown},
			[]value{notHeld, arrayTypeName, unknown, str("b"), integer(0)})
	}
}

type constraintInfo struct {
	name, typ string
	ref       *QualName
}

var infoConstraintType = map[string]string{"p": "PRIMARY KEY", "u": "UNIQUE", "f": "FOREIGN KEY", "c": "CHECK"}

// constraintsOf lists a table's constraints as pg_constraint does.
func constraintsOf(t *Table) []constraintInfo {
	var out []constraintInfo
	if t.PrimaryKey != nil {
		out = append(out, constraintInfo{name: t.PrimaryKey.Name, typ: "p"})
	}
	for _, k := range t.Unique {
		out = append(out, constraintInfo{name: k.Name, typ: "u"})
	}
	for i := range t.ForeignKeys {
		out = append(out, constraintInfo{name: t.ForeignKeys[i].Name, typ: "f", ref: &t.ForeignKeys[i].RefTable})
	}
	for _, c := range t.Checks {
		typ := "c"
		if c.Exclude {
			typ = "x"
		}
		out = append(out, constraintInfo{name: c.Name, typ: typ})
	}
	return out
}

func hasMatview(a *applier) bool {
	for _, v := range a.cat.views {
		if v.Materialized {
			return true
		}
	}
	return false
}
