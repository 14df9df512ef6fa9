// Package catalog keeps a per-database model of a PostgreSQL schema and
// applies DDL to it with PostgreSQL's own parser (libpg_query).
//
// The package is pure: no I/O, clock, logger or globals. A Catalog is a value
// the caller owns; Apply never mutates its receiver and returns a new Catalog,
// so a failed migration leaves nothing half-applied. Catalogs are not safe
// for concurrent mutation, but a Catalog that is no longer mutated may be
// read from any number of goroutines.
package catalog

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultSchema is where unqualified names are created and looked up, as in
// a fresh PostgreSQL database whose search_path is "$user", public.
const DefaultSchema = "public"

// QualName is a schema-qualified object name. Both parts are stored as
// PostgreSQL resolves them: unquoted identifiers folded to lower case,
// quoted ones kept verbatim.
type QualName struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
}

// String renders the name as SQL, quoting each part only where PostgreSQL
// needs it.
func (q QualName) String() string { return QuoteIdent(q.Schema) + "." + QuoteIdent(q.Name) }

// Key is the lower-cased "schema.name" form used to compare with names that
// come from outside SQL (benchmarks, chunk ids, user input).
func (q QualName) Key() string { return strings.ToLower(q.Schema + "." + q.Name) }

// Column is one column of a table or view.
type Column struct {
	Name string `json:"name"`
	// Type is the column type as PostgreSQL's format_type prints it under
	// the default search_path ("character varying(255)", "timestamp with
	// time zone", "mood[]" for an enum in public, "app.mood" elsewhere).
	Type string `json:"type"`
	// Enum is the enum type behind Type (element type for arrays), when the
	// column is enum-typed.
	Enum    *QualName `json:"enum,omitempty"`
	NotNull bool      `json:"not_null,omitempty"`
	// Default is the default as pg_get_expr prints it ('x'::text, false,
	// nextval('t_id_seq'::regclass)); empty for none.
	Default   string `json:"default,omitempty"`
	Generated string `json:"generated,omitempty"` // expression of GENERATED ALWAYS AS (…) STORED
	Identity  string `json:"identity,omitempty"`  // "ALWAYS" or "BY DEFAULT"
	// OwnsSequence is the sequence the column owns (a serial's, or one
	// ALTER SEQUENCE … OWNED BY gave it), which PostgreSQL moves with the
	// table to another schema.
	OwnsSequence QualName `json:"owns_sequence,omitzero"`
	Comment      string   `json:"comment,omitempty"`
	// Inferred marks a column the catalog never saw created: a tolerant
	// Apply added it because a statement altered it (see Tolerant). Its
	// Type is empty unless that statement set one.
	Inferred bool `json:"inferred,omitempty"`
	// Renamed lists the column's former names, oldest first.
	Renamed []Rename `json:"renamed,omitempty"`
}

// Rename is a former name of a table, view or column, and the migration
// (its source file) that renamed it: a question may still use the old
// name, and a prompt should say which is current. Names that kept the old
// name (PostgreSQL does not rename a table's constraints) do not count.
type Rename struct {
	From   string `json:"from"` // schema.name for relations, the name for columns
	Source string `json:"source,omitempty"`
}

// Name is the name, without its schema, a relation had before the
// rename.
func (r Rename) Name() string {
	name := r.From
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return strings.Trim(name, `"`)
}

// NamesOf is a relation's name and its former names: what a question may
// call it by.
func NamesOf(name string, renamed []Rename) []string {
	out := []string{name}
	for _, r := range renamed {
		out = append(out, r.Name())
	}
	return out
}

// Names is the column's name and its former names (a column's From is
// its bare name, which may hold a dot).
func (c *Column) Names() []string {
	out := []string{c.Name}
	for _, r := range c.Renamed {
		out = append(out, r.From)
	}
	return out
}

// maxRenames bounds the renames an object keeps: the latest.
const maxRenames = 8

func addRename(list []Rename, r Rename) []Rename {
	list = append(slices.Clip(list), r)
	if len(list) > maxRenames {
		list = list[len(list)-maxRenames:]
	}
	return list
}

// Key is a primary key or unique constraint.
type Key struct {
	Name string `json:"name"`
	// Columns may be empty for a constraint added USING INDEX, whose
	// columns live in an index the catalog does not model.
	Columns []string `json:"columns"`
	// Inherited marks a partition's copy of its parent's key.
	Inherited bool `json:"inherited,omitempty"`
}

// ForeignKey is a FOREIGN KEY constraint.
type ForeignKey struct {
	Name       string   `json:"name"`
	Columns    []string `json:"columns"`
	RefTable   QualName `json:"ref_table"`
	RefColumns []string `json:"ref_columns"`
	OnDelete   string   `json:"on_delete,omitempty"`
	OnUpdate   string   `json:"on_update,omitempty"`
	// Inherited marks a partition's copy of its parent's foreign key.
	Inherited bool `json:"inherited,omitempty"`
}

// Check is a CHECK or EXCLUDE constraint. Columns lists the columns the
// expression reads, so dropping one of them drops the constraint.
type Check struct {
	Name    string   `json:"name"`
	Expr    string   `json:"expr"`
	Columns []string `json:"columns,omitempty"`
	Exclude bool     `json:"exclude,omitempty"`
}

// Table is a table (plain, partitioned, partition, foreign or CREATE TABLE AS).
type Table struct {
	Schema      string       `json:"schema"`
	Name        string       `json:"name"`
	Columns     []*Column    `json:"columns"`
	PrimaryKey  *Key         `json:"primary_key,omitempty"`
	Unique      []Key        `json:"unique,omitempty"`
	ForeignKeys []ForeignKey `json:"foreign_keys,omitempty"`
	Checks      []Check      `json:"checks,omitempty"`
	Indexes     []Index      `json:"indexes,omitempty"`
	Inherits    []QualName   `json:"inherits,omitempty"`
	PartitionOf *QualName    `json:"partition_of,omitempty"`
	// PartitionBound is the partition's bound as SQL ("FOR VALUES FROM
	// ('2024-01-01') TO ('2025-01-01')", "DEFAULT").
	PartitionBound string `json:"partition_bound,omitempty"`
	PartitionBy    string `json:"partition_by,omitempty"` // e.g. "RANGE (payment_date)"
	Comment        string `json:"comment,omitempty"`
	// Renamed lists the table's former names, oldest first.
	Renamed []Rename `json:"renamed,omitempty"`
	// History lists the migrations that created, altered or renamed the
	// table, oldest first: the first and the latest maxChanges-1.
	History []Change `json:"history,omitempty"`
}

// Change is a migration that changed a table.
type Change struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source,omitempty"`
	// What it did: "created", "altered", "renamed", or "renamed,
	// altered".
	What string `json:"what"`
}

func (c Change) String() string {
	s := c.What + " by " + c.Source
	if c.Source == "" {
		s = c.What + " by migration"
	}
	return fmt.Sprintf("%s (version %d)", s, c.Seq)
}

// maxChanges bounds a table's History: the migration that created it
// and the latest after it.
const maxChanges = 16

func addChange(list []Change, c Change) []Change {
	if n := len(list); n > 0 && list[n-1].Seq == c.Seq {
		return list // one migration, one entry (a run applied twice)
	}
	list = append(slices.Clip(list), c)
	if len(list) > maxChanges {
		list = append(list[:1:1], list[len(list)-maxChanges+1:]...)
	}
	return list
}

// QualName returns the table's schema-qualified name.
func (t *Table) QualName() QualName { return QualName{t.Schema, t.Name} }

// Column returns the named column or nil.
func (t *Table) Column(name string) *Column {
	for _, c := range t.Columns {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// View is a view or materialized view.
type View struct {
	Schema       string `json:"schema"`
	Name         string `json:"name"`
	Materialized bool   `json:"materialized,omitempty"`
	// Definition is the SELECT as libpg_query deparses it: canonical, not
	// the producer's formatting.
	Definition string     `json:"definition"`
	Columns    []*Column  `json:"columns,omitempty"`
	Reads      []QualName `json:"reads,omitempty"` // tables and views it selects from
	Comment    string     `json:"comment,omitempty"`
	// Renamed lists the view's former names, oldest first.
	Renamed []Rename `json:"renamed,omitempty"`
}

// QualName returns the view's schema-qualified name.
func (v *View) QualName() QualName { return QualName{v.Schema, v.Name} }

// Enum is a CREATE TYPE … AS ENUM type.
type Enum struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Labels  []string `json:"labels"`
	Comment string   `json:"comment,omitempty"`
}

// QualName returns the enum's schema-qualified name.
func (e *Enum) QualName() QualName { return QualName{e.Schema, e.Name} }

// Catalog is the schema of one database at one version.
type Catalog struct {
	Database string
	// Version is the sequence number of the last migration or snapshot
	// applied. The catalog does not interpret it; callers set it.
	Version int64

	// history lists the migrations applied since base (or since the
	// start), in seq order.
	history []Applied
	base    *Base
	// drift lists what tolerant applies skipped or inferred since base.
	drift []Drift

	schemas map[string]string // name → comment
	tables  map[QualName]*Table
	// frozen are the tables of the catalog this one was cloned from,
	// which the two share until this one changes them: a table is
	// copied out of it before its first change (thaw). Copying every
	// table at each clone cost a worker a quarter of a migration's time
	// at ten thousand tables, to change one or two. The catalog cloned
	// from is never changed again, so the map is read, never written.
	frozen map[QualName]*Table
	views  map[QualName]*View
	enums  map[QualName]*Enum
	// functions are user-defined functions, for the SQL guard.
	functions map[QualName]*Function
	// routines are the PL/pgSQL routines that can change the schema,
	// for calls later in the history.
	routines map[QualName]*Routine
	// otherConstraints are the names, sorted, of the constraints
	// pg_constraint lists and no table holds (namedconstraints.go).
	otherConstraints []string
	// otherTypes are the names, sorted, of the types pg_type lists that
	// the catalog does not model (namedtypes.go).
	otherTypes []string
	// touched are the tables the last Apply changed, with how, for
	// Record to enter in their History.
	touched map[*Table]touch

	// order caches the objects in name order once the catalog is
	// finished (Apply returned it, or it was decoded): a catalog version
	// is listed by the chunker, the vocabulary, the encoder and every
	// tables request, and sorting it each time was a few percent of a
	// worker's and a daemon's CPU. Nil while the catalog is being built.
	order *order
	// frozenOrder is the order of the catalog this one was cloned from,
	// when it had been computed: the tables of frozen in name order,
	// which this one's order starts from.
	frozenOrder []*Table
}

// order is a finished catalog's objects sorted by schema and name,
// computed on first use.
type order struct {
	once   sync.Once
	done   atomic.Bool
	tables []*Table
	views  []*View
	// from is an earlier version's tables in name order and had the map
	// they are of, lent until the order is computed: a migration adds
	// or drops a few tables of thousands, and sorting them all again
	// took 4.5 ms a version at ten thousand.
	from []*Table
	had  map[QualName]*Table
}

func (o *order) get(c *Catalog) *order {
	o.once.Do(func() {
		if o.from != nil {
			o.tables = resorted(o.from, o.had, c.tables)
		} else {
			o.tables = sortedValues(c.tables)
		}
		o.views = sortedValues(c.views)
		o.from, o.had = nil, nil
		o.done.Store(true)
	})
	return o
}

// sortedTables are c's tables in name order if that has been computed.
func (c *Catalog) sortedTables() []*Table {
	if c.order == nil || !c.order.done.Load() {
		return nil
	}
	return c.order.tables
}

// finish marks c as no longer built: its order may be cached.
func (c *Catalog) finish() {
	c.order = &order{from: c.frozenOrder, had: c.frozen}
	c.frozenOrder = nil
}

// resorted are the tables of now in name order, from those of had in
// name order: the ones still there in their places, each now's version,
// and the new ones merged in.
func resorted(from []*Table, had, now map[QualName]*Table) []*Table {
	out := make([]*Table, 0, len(now))
	for _, t := range from {
		if n := now[t.QualName()]; n != nil {
			out = append(out, n)
		}
	}
	if len(out) == len(now) {
		return out
	}
	var added []*Table
	for q, t := range now {
		if had[q] == nil {
			added = append(added, t)
		}
	}
	slices.SortFunc(added, func(a, b *Table) int { return compareQual(a.QualName(), b.QualName()) })
	merged := make([]*Table, 0, len(now))
	i := 0
	for _, t := range out {
		for i < len(added) && compareQual(added[i].QualName(), t.QualName()) < 0 {
			merged = append(merged, added[i])
			i++
		}
		merged = append(merged, t)
	}
	return append(merged, added[i:]...)
}

// New returns an empty catalog for database, holding only the public schema.
func New(database string) *Catalog {
	return &Catalog{
		Database: database,
		schemas:  map[string]string{DefaultSchema: ""},
		tables:   map[QualName]*Table{},
		views:    map[QualName]*View{},
		enums:    map[QualName]*Enum{},

		functions: map[QualName]*Function{},
		routines:  map[QualName]*Routine{},
	}
}

// Schemas returns the schema names in sorted order.
func (c *Catalog) Schemas() []string {
	out := make([]string, 0, len(c.schemas))
	for s := range c.schemas {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Tables returns every table sorted by schema and name.
func (c *Catalog) Tables() []*Table {
	if c.order != nil {
		return slices.Clone(c.order.get(c).tables)
	}
	return sortedValues(c.tables)
}

// AllTables yields every table in no order: for a walk that needs none,
// without the sort or copy of Tables. The catalog must not change during
// the walk.
func (c *Catalog) AllTables() iter.Seq2[QualName, *Table] { return maps.All(c.tables) }

// AllViews yields every view in no order, as AllTables does tables.
func (c *Catalog) AllViews() iter.Seq2[QualName, *View] { return maps.All(c.views) }

// Views returns every view sorted by schema and name.
func (c *Catalog) Views() []*View {
	if c.order != nil {
		return slices.Clone(c.order.get(c).views)
	}
	return sortedValues(c.views)
}

// Enums returns every enum type sorted by schema and name.
func (c *Catalog) Enums() []*Enum { return sortedValues(c.enums) }

// Table returns the table q or nil.
func (c *Catalog) Table(q QualName) *Table { return c.tables[q] }

// View returns the view q or nil.
func (c *Catalog) View(q QualName) *View { return c.views[q] }

// Enum returns the enum q or nil.
func (c *Catalog) Enum(q QualName) *Enum { return c.enums[q] }

// Lookup finds a table by a name as a user would write it: "schema.table"
// or a bare "table" (searched in public first, then in any schema if that
// is unambiguous). Unquoted-style lookups are case-insensitive.
func (c *Catalog) Lookup(name string) *Table { return lookup(c.tables, name) }

// LookupView finds a view as Lookup finds a table.
func (c *Catalog) LookupView(name string) *View { return lookup(c.views, name) }

// Former finds the table or view a former name (schema.name, or name
// alone, in any case) was renamed to, with that rename; ok is false when
// no relation, or more than one, had the name.
func (c *Catalog) Former(name string) (now QualName, r Rename, ok bool) {
	schema, rel, qualified := strings.Cut(name, ".")
	if !qualified {
		rel, schema = schema, ""
	}
	n := 0
	match := func(q QualName, renamed []Rename) {
		for _, x := range renamed {
			fs, fn, _ := strings.Cut(x.From, ".")
			if strings.EqualFold(fn, rel) && (!qualified || strings.EqualFold(fs, schema)) {
				now, r, n = q, x, n+1
				return
			}
		}
	}
	for q, t := range c.tables {
		match(q, t.Renamed)
	}
	for q, v := range c.views {
		match(q, v.Renamed)
	}
	return now, r, n == 1
}

func lookup[T any](m map[QualName]T, name string) T {
	var zero T
	schema, rel, qualified := strings.Cut(name, ".")
	if !qualified {
		rel, schema = schema, ""
	}
	if t, ok := m[QualName{schema, rel}]; ok && qualified {
		return t
	}
	if !qualified {
		if t, ok := m[QualName{DefaultSchema, rel}]; ok {
			return t
		}
	}
	found, n := zero, 0
	for q, t := range m {
		if strings.EqualFold(q.Name, rel) && (!qualified || strings.EqualFold(q.Schema, schema)) {
			found, n = t, n+1
		}
	}
	if n != 1 {
		return zero // none, or ambiguous
	}
	return found
}

// Clone returns a copy of c to change. It shares c's tables until it
// changes them (see frozen), and nothing else mutable; c must not be
// changed after.
func (c *Catalog) Clone() *Catalog {
	n := &Catalog{
		Database: c.Database,
		Version:  c.Version,
		history:  slices.Clip(c.history), // entries are values; appends copy
		drift:    slices.Clip(c.drift),
		base:     c.base,
		schemas:  make(map[string]string, len(c.schemas)),
		tables:   maps.Clone(c.tables),
		frozen:   c.tables,
		views:    make(map[QualName]*View, len(c.views)),
		enums:    make(map[QualName]*Enum, len(c.enums)),

		frozenOrder: c.sortedTables(),

		functions: make(map[QualName]*Function, len(c.functions)),
		routines:  make(map[QualName]*Routine, len(c.routines)),

		otherConstraints: slices.Clip(c.otherConstraints), // inserts copy
		otherTypes:       slices.Clip(c.otherTypes),
	}
	for k, r := range c.routines {
		n.routines[k] = r // a routine is replaced, never changed, once recorded
	}
	for k, f := range c.functions {
		n.functions[k] = cloneFunction(f)
	}
	for k, v := range c.schemas {
		n.schemas[k] = v
	}
	if n.tables == nil {
		n.tables = map[QualName]*Table{}
	}
	for k, v := range c.views {
		n.views[k] = v.clone()
	}
	for k, e := range c.enums {
		n.enums[k] = cloneEnum(e)
	}
	return n
}

func (t *Table) clone() *Table {
	n := *t
	n.Columns = cloneColumns(t.Columns)
	if t.PrimaryKey != nil {
		pk := *t.PrimaryKey
		pk.Columns = slices.Clone(pk.Columns)
		n.PrimaryKey = &pk
	}
	n.Unique = slices.Clone(t.Unique)
	for i := range n.Unique {
		n.Unique[i].Columns = slices.Clone(n.Unique[i].Columns)
	}
	n.ForeignKeys = slices.Clone(t.ForeignKeys)
	for i := range n.ForeignKeys {
		n.ForeignKeys[i].Columns = slices.Clone(n.ForeignKeys[i].Columns)
		n.ForeignKeys[i].RefColumns = slices.Clone(n.ForeignKeys[i].RefColumns)
	}
	n.Checks = slices.Clone(t.Checks)
	for i := range n.Checks {
		n.Checks[i].Columns = slices.Clone(n.Checks[i].Columns)
	}
	n.Indexes = slices.Clone(t.Indexes)
	for i := range n.Indexes {
		n.Indexes[i] = n.Indexes[i].clone()
	}
	n.Renamed = slices.Clone(t.Renamed)
	n.Inherits = slices.Clone(t.Inherits)
	if t.PartitionOf != nil {
		p := *t.PartitionOf
		n.PartitionOf = &p
	}
	return &n
}

func (v *View) clone() *View {
	n := *v
	n.Columns = cloneColumns(v.Columns)
	n.Reads = slices.Clone(v.Reads)
	n.Renamed = slices.Clone(v.Renamed)
	return &n
}

func cloneColumns(cols []*Column) []*Column {
	out := make([]*Column, len(cols))
	for i, c := range cols {
		c2 := *c
		c2.Renamed = slices.Clone(c.Renamed)
		if c.Enum != nil {
			e := *c.Enum
			c2.Enum = &e
		}
		out[i] = &c2
	}
	return out
}

type named interface {
	QualName() QualName
}

func sortedValues[T named](m map[QualName]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int { return compareQual(a.QualName(), b.QualName()) })
	return out
}

func compareQual(a, b QualName) int {
	if c := strings.Compare(a.Schema, b.Schema); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// wireCatalog is the JSON form: sorted slices, so equal catalogs serialise
// to equal bytes (the worker compares and hashes them). Its fields are
// its head's, the tables, then its tail's, in that order: Encoder writes
// the tables between the two halves.
type wireCatalog struct {
	wireHead
	Tables []*Table `json:"tables"`
	wireTail
}

type wireHead struct {
	Database string       `json:"database"`
	Version  int64        `json:"version"`
	Schemas  []wireSchema `json:"schemas"`
}

type wireTail struct {
	Views   []*View   `json:"views"`
	Enums   []*Enum   `json:"enums"`
	History []Applied `json:"history,omitempty"`
	Base    *Base     `json:"base,omitempty"`
	// Functions is new: catalogs stored before it decode without them.
	Functions []*Function `json:"functions,omitempty"`
	Drift     []Drift     `json:"drift,omitempty"`
	// Routines is newer still.
	Routines []*Routine `json:"routines,omitempty"`
	// OtherConstraints is newest: a catalog stored before it decodes
	// without the names, as one whose history made none.
	OtherConstraints []string `json:"other_constraints,omitempty"`
	// OtherTypes is as new, and decodes the same way.
	OtherTypes []string `json:"other_types,omitempty"`
}

// wireHead and wireTail are c's JSON around its tables.
func (c *Catalog) wireHead() wireHead {
	h := wireHead{Database: c.Database, Version: c.Version}
	for _, s := range c.Schemas() {
		h.Schemas = append(h.Schemas, wireSchema{s, c.schemas[s]})
	}
	return h
}

func (c *Catalog) wireTail() wireTail {
	return wireTail{Views: c.Views(), Enums: c.Enums(), History: c.history, Base: c.base,
		Functions: c.Functions(), Drift: c.drift, Routines: c.Routines(), OtherConstraints: c.otherConstraints,
		OtherTypes: c.otherTypes}
}

type wireSchema struct {
	Name    string `json:"name"`
	Comment string `json:"comment,omitempty"`
}

// MarshalJSON encodes the catalog deterministically. Encoder writes the
// same bytes, keeping each table's JSON for the next version.
func (c *Catalog) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireCatalog{c.wireHead(), c.Tables(), c.wireTail()})
}

// UnmarshalJSON decodes what MarshalJSON wrote, rejecting duplicates.
func (c *Catalog) UnmarshalJSON(b []byte) error {
	var w wireCatalog
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("decode catalog: %w", err)
	}
	n, err := fromWire(w)
	if err != nil {
		return err
	}
	*c = *n
	return nil
}

// wellFormed refuses what MarshalJSON never writes and every reader of a
// catalog relies on: a null table, view, enum or function, or column of
// one, and a foreign key whose columns and referenced columns differ in
// number. An entry is read by every daemon; either stopped the process
// that decoded it.
func wellFormed(w wireCatalog) error {
	for i, t := range w.Tables {
		if t == nil {
			return fmt.Errorf("table %d is null", i+1)
		}
		if j := slices.Index(t.Columns, nil); j >= 0 {
			return fmt.Errorf("column %d of table %s is null", j+1, t.QualName())
		}
		for _, fk := range t.ForeignKeys {
			if len(fk.Columns) != len(fk.RefColumns) {
				return fmt.Errorf("foreign key %s of table %s has %d columns and %d referenced", fk.Name, t.QualName(), len(fk.Columns), len(fk.RefColumns))
			}
		}
	}
	for i, v := range w.Views {
		if v == nil {
			return fmt.Errorf("view %d is null", i+1)
		}
		if j := slices.Index(v.Columns, nil); j >= 0 {
			return fmt.Errorf("column %d of view %s is null", j+1, v.QualName())
		}
	}
	if i := slices.Index(w.Enums, nil); i >= 0 {
		return fmt.Errorf("enum %d is null", i+1)
	}
	if i := slices.Index(w.Functions, nil); i >= 0 {
		return fmt.Errorf("function %d is null", i+1)
	}
	return nil
}

// fromWire is the catalog w holds, refused when it is not one
// MarshalJSON could have written.
func fromWire(w wireCatalog) (*Catalog, error) {
	n := New(w.Database)
	n.Version = w.Version
	n.history, n.base, n.drift = w.History, w.Base, w.Drift
	for _, name := range w.OtherConstraints {
		n.noteConstraintName(name) // sorted and unique, whatever the entry held
	}
	for _, name := range w.OtherTypes {
		n.noteTypeName(name)
	}
	for i := 1; i < len(n.history); i++ {
		if n.history[i].Seq <= n.history[i-1].Seq {
			return nil, fmt.Errorf("decode catalog: history out of order at seq %d", n.history[i].Seq)
		}
	}
	n.schemas = map[string]string{}
	for _, s := range w.Schemas {
		n.schemas[s.Name] = s.Comment
	}
	if err := wellFormed(w); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	for _, t := range w.Tables {
		if _, dup := n.tables[t.QualName()]; dup {
			return nil, fmt.Errorf("decode catalog: duplicate table %s", t.QualName())
		}
		n.tables[t.QualName()] = t
	}
	for _, v := range w.Views {
		if _, dup := n.views[v.QualName()]; dup {
			return nil, fmt.Errorf("decode catalog: duplicate view %s", v.QualName())
		}
		n.views[v.QualName()] = v
	}
	for _, f := range w.Functions {
		n.functions[f.QualName()] = f
	}
	for _, r := range w.Routines {
		if r == nil || len(r.Sources) == 0 {
			return nil, fmt.Errorf("decode catalog: routine without source")
		}
		n.routines[r.QualName()] = r
	}
	for _, e := range w.Enums {
		if _, dup := n.enums[e.QualName()]; dup {
			return nil, fmt.Errorf("decode catalog: duplicate enum %s", e.QualName())
		}
		n.enums[e.QualName()] = e
	}
	n.finish()
	// Catalogs are written with their tables in name order: a decoder
	// need not sort them again.
	if slices.IsSortedFunc(w.Tables, func(a, b *Table) int { return compareQual(a.QualName(), b.QualName()) }) {
		n.order.from, n.order.had = w.Tables, n.tables
	}
	return n, nil
}
