package catalog

import (
	"slices"
	"strings"
)

// DDL renders the table as one canonical CREATE TABLE statement: columns
// in order with type, default, generated/identity and NOT NULL; then
// primary key, unique, foreign key, check and exclusion constraints by
// name. Its unique indexes follow as CREATE UNIQUE INDEX: they say what
// is unique as a unique key does (Prisma and TypeORM make indexes, not
// constraints), where its other indexes say nothing a query's meaning
// needs. Table and column comments ride along as SQL comments, so the
// text stays valid SQL and carries them into a prompt. The output
// depends only on the catalog, never on how the producer formatted its
// DDL.
func (t *Table) DDL() string {
	var b strings.Builder
	t.writeDDL(&b, inline{pk: t.PrimaryKey, unique: t.Unique, fks: t.ForeignKeys, checks: t.Checks})
	for _, ix := range t.Indexes {
		if ix.Shown() {
			b.WriteString(ix.DDL(t.QualName()))
		}
	}
	return b.String()
}

// inline is what a CREATE TABLE writes after its columns: a table's
// DDL writes all its keys, the catalog's script what PostgreSQL would
// not make by itself.
type inline struct {
	pk     *Key
	unique []Key
	fks    []ForeignKey
	checks []Check
	// nullDefaults are columns written DEFAULT NULL: an inheritance
	// child's column without the default its parent's has, which it
	// would otherwise take from the parent.
	nullDefaults map[string]bool
}

func (t *Table) writeDDL(b *strings.Builder, in inline) {
	if t.Comment != "" {
		writeComment(b, "", t.Comment)
	}
	if t.PartitionOf != nil {
		b.WriteString("-- partition of " + t.PartitionOf.String() + " " + t.PartitionBound + "\n")
	}
	b.WriteString("CREATE TABLE " + t.QualName().String() + " (\n")
	var lines []string
	var comments []string
	for _, c := range t.Columns {
		lines = append(lines, "    "+c.definition(in.nullDefaults[c.Name]))
		comment := c.Comment
		if c.Inferred {
			comment = strings.TrimSpace("inferred: altered by the history, never created in it. " + comment)
		}
		comments = append(comments, comment)
	}
	if pk := in.pk; pk != nil && len(pk.Columns) > 0 {
		lines = append(lines, "    CONSTRAINT "+QuoteIdent(pk.Name)+" PRIMARY KEY ("+identList(pk.Columns)+")")
		comments = append(comments, "")
	}
	for _, k := range in.unique {
		if len(k.Columns) > 0 {
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(k.Name)+" UNIQUE ("+identList(k.Columns)+")")
			comments = append(comments, "")
		}
	}
	for _, fk := range in.fks {
		lines = append(lines, "    CONSTRAINT "+QuoteIdent(fk.Name)+" "+fk.Clause())
		comments = append(comments, "")
	}
	for _, ch := range in.checks {
		switch {
		case !ch.Exclude:
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(ch.Name)+" CHECK ("+ch.Expr+")")
		case strings.Contains(ch.Expr, " WITH "):
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(ch.Name)+" "+ch.Expr)
		default:
			continue // an older release held only the columns
		}
		comments = append(comments, "")
	}
	for i, l := range lines {
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteByte(',')
		}
		if comments[i] != "" {
			b.WriteString(" -- " + oneLine(comments[i]))
		}
		b.WriteByte('\n')
	}
	b.WriteString(")")
	if len(t.Inherits) > 0 {
		names := make([]string, len(t.Inherits))
		for i, q := range t.Inherits {
			names[i] = q.String()
		}
		b.WriteString(" INHERITS (" + strings.Join(names, ", ") + ")")
	}
	if t.PartitionBy != "" {
		b.WriteString(" PARTITION BY " + t.PartitionBy)
	}
	b.WriteString(";\n")
}

// Definition renders the column as it appears in CREATE TABLE.
func (c *Column) Definition() string { return c.definition(false) }

func (c *Column) definition(nullDefault bool) string {
	s := QuoteIdent(c.Name)
	switch {
	case c.Type != "":
		s += " " + c.Type
	case c.Inferred:
		s += " unknown" // PostgreSQL's own name for a type not yet known
	default:
		s += " text" // a CREATE TABLE AS column whose type we could not infer
	}
	switch {
	case c.Generated != "":
		s += " GENERATED ALWAYS AS (" + c.Generated + ") STORED"
	case c.Identity != "":
		s += " GENERATED " + c.Identity + " AS IDENTITY"
	case c.Default != "":
		s += " DEFAULT " + c.Default
	case nullDefault:
		s += " DEFAULT NULL"
	}
	if c.NotNull {
		s += " NOT NULL"
	}
	return s
}

// Clause renders the constraint after its name: FOREIGN KEY … REFERENCES ….
func (fk ForeignKey) Clause() string {
	s := "FOREIGN KEY (" + identList(fk.Columns) + ") REFERENCES " + fk.RefTable.String() +
		" (" + identList(fk.RefColumns) + ")"
	if fk.OnDelete != "" {
		s += " ON DELETE " + fk.OnDelete
	}
	if fk.OnUpdate != "" {
		s += " ON UPDATE " + fk.OnUpdate
	}
	return s
}

// DDL renders the view as CREATE [MATERIALIZED] VIEW with its definition.
func (v *View) DDL() string {
	var b strings.Builder
	if v.Comment != "" {
		writeComment(&b, "", v.Comment)
	}
	kind := "VIEW"
	if v.Materialized {
		kind = "MATERIALIZED VIEW"
	}
	b.WriteString("CREATE " + kind + " " + v.QualName().String())
	if len(v.Columns) > 0 {
		names := make([]string, len(v.Columns))
		for i, c := range v.Columns {
			names[i] = c.Name
		}
		b.WriteString(" (" + identList(names) + ")")
	}
	b.WriteString(" AS " + v.Definition + ";\n")
	return b.String()
}

// DDL renders the enum as CREATE TYPE … AS ENUM.
func (e *Enum) DDL() string {
	labels := make([]string, len(e.Labels))
	for i, l := range e.Labels {
		labels[i] = quoteLiteral(l)
	}
	return "CREATE TYPE " + e.QualName().String() + " AS ENUM (" + strings.Join(labels, ", ") + ");\n"
}

// DDL renders the whole catalog as a script that rebuilds it: schemas,
// enums, tables, indexes, foreign keys (after every table, so cycles
// work), views in dependency order, and comments.
func (c *Catalog) DDL() string {
	var b strings.Builder
	for _, s := range c.Schemas() {
		if s != DefaultSchema {
			b.WriteString("CREATE SCHEMA " + QuoteIdent(s) + ";\n")
		}
	}
	for _, e := range c.Enums() {
		b.WriteString(e.DDL())
	}
	tables := c.tablesInDependencyOrder()
	for _, seq := range c.sequencesUsed(tables) {
		b.WriteString("CREATE SEQUENCE IF NOT EXISTS " + seq.String() + ";\n")
	}
	var later []string
	for _, t := range tables {
		in, equal := c.scriptInline(t)
		t.writeDDL(&b, in)
		for _, k := range equal {
			later = append(later, "ALTER TABLE "+t.QualName().String()+" ADD CONSTRAINT "+QuoteIdent(k.Name)+" UNIQUE ("+identList(k.Columns)+");\n")
		}
	}
	for _, s := range later {
		b.WriteString(s)
	}
	// Every index, partitions' copies too, before ATTACH PARTITION, which
	// takes a partition's equal index for its parent's: a copy's name
	// comes from the column names its parent's index was made with, which
	// a rename does not change, so only the copy says it.
	for _, t := range tables {
		for _, ix := range t.Indexes {
			b.WriteString(ix.DDL(t.QualName()))
		}
	}
	for _, t := range tables {
		if t.PartitionOf != nil {
			b.WriteString("ALTER TABLE " + t.PartitionOf.String() + " ATTACH PARTITION " + t.QualName().String() + " " + t.PartitionBound + ";\n")
		}
	}
	for _, t := range tables {
		for _, fk := range t.ForeignKeys {
			if fk.Inherited {
				continue // ATTACH PARTITION and the parent's key make it
			}
			b.WriteString("ALTER TABLE " + t.QualName().String() + " ADD CONSTRAINT " + QuoteIdent(fk.Name) + " " + fk.Clause() + ";\n")
		}
	}
	for _, v := range c.viewsInDependencyOrder() {
		b.WriteString(v.DDL())
	}
	for _, s := range c.Schemas() {
		if cm := c.schemas[s]; cm != "" {
			b.WriteString("COMMENT ON SCHEMA " + QuoteIdent(s) + " IS " + quoteLiteral(cm) + ";\n")
		}
	}
	for _, e := range c.Enums() {
		if e.Comment != "" {
			b.WriteString("COMMENT ON TYPE " + e.QualName().String() + " IS " + quoteLiteral(e.Comment) + ";\n")
		}
	}
	for _, t := range tables {
		writeCommentStmts(&b, "TABLE", t.QualName(), t.Comment, t.Columns)
	}
	for _, v := range c.Views() {
		kind := "VIEW"
		if v.Materialized {
			kind = "MATERIALIZED VIEW"
		}
		writeCommentStmts(&b, kind, v.QualName(), v.Comment, v.Columns)
	}
	return b.String()
}

// scriptInline is what the catalog's script writes in t's CREATE TABLE,
// and the unique keys it must add after: PostgreSQL's CREATE TABLE keeps
// one key of a list of columns, where LIKE … INCLUDING INDEXES and ALTER
// TABLE may have made two. A partition's copies of its parent's keys are
// left to ATTACH PARTITION, which makes them; the parent's checks are
// written, as ATTACH PARTITION requires a partition to have them. Sets
// keep it linear in the table's size, as a table may hold 1,600 columns
// and 1,000 constraints.
func (c *Catalog) scriptInline(t *Table) (in inline, equal []Key) {
	keys := map[string]bool{}
	if t.PrimaryKey != nil && !t.PrimaryKey.Inherited {
		in.pk = t.PrimaryKey
		keys[strings.Join(t.PrimaryKey.Columns, "\x00")] = true
	}
	for _, k := range t.Unique {
		cols := strings.Join(k.Columns, "\x00")
		switch {
		case k.Inherited:
		case keys[cols]:
			equal = append(equal, k)
		default:
			keys[cols] = true
			in.unique = append(in.unique, k)
		}
	}
	in.checks = t.Checks
	names := map[string]bool{}
	for _, ch := range t.Checks {
		names[ch.Name] = true
	}
	for p, hops := t.PartitionOf, 0; p != nil && hops < len(c.tables); hops++ { // bounded, should a cycle slip in
		parent := c.tables[*p]
		if parent == nil {
			break
		}
		for _, ch := range parent.Checks {
			if !ch.Exclude && !names[ch.Name] {
				names[ch.Name] = true
				in.checks = append(slices.Clip(in.checks), ch)
			}
		}
		p = parent.PartitionOf
	}
	if len(t.Inherits) > 0 {
		defaults := map[string]bool{}
		for _, q := range t.Inherits {
			if p := c.tables[q]; p != nil {
				for _, col := range p.Columns {
					defaults[col.Name] = defaults[col.Name] || col.Default != ""
				}
			}
		}
		in.nullDefaults = map[string]bool{}
		for _, col := range t.Columns {
			if col.Default == "" && col.Generated == "" && col.Identity == "" && defaults[col.Name] {
				in.nullDefaults[col.Name] = true
			}
		}
	}
	return in, equal
}

// sequencesUsed lists the sequences the tables' defaults call nextval on,
// once each, in the order the tables use them: the catalog holds no
// sequences, but its script needs them for the defaults to load.
func (c *Catalog) sequencesUsed(tables []*Table) []QualName {
	var out []QualName
	seen := map[QualName]bool{}
	for _, t := range tables {
		for _, col := range t.Columns {
			if seq, ok := nextvalOf(col.Default); ok && !seen[seq] {
				seen[seq] = true
				out = append(out, seq)
			}
		}
	}
	return out
}

// nextvalOf reads the sequence of a default in the form the catalog
// holds it, nextval('name'::regclass). The name is parsed as PostgreSQL's
// regclass input reads it, so no text of a default reaches the script
// but a name.
func nextvalOf(def string) (QualName, bool) {
	lit, ok := strings.CutPrefix(def, "nextval('")
	if !ok {
		return QualName{}, false
	}
	if lit, ok = strings.CutSuffix(lit, "'::regclass)"); !ok {
		return QualName{}, false
	}
	rv, ok := parseName(strings.ReplaceAll(lit, "''", "'"))
	if !ok || rv.Catalogname != "" || rv.Alias != nil {
		return QualName{}, false
	}
	schema := rv.Schemaname
	if schema == "" {
		schema = DefaultSchema
	}
	return QualName{schema, rv.Relname}, true
}

// tablesInDependencyOrder puts inheritance parents before their children.
func (c *Catalog) tablesInDependencyOrder() []*Table {
	var out []*Table
	done := map[QualName]bool{}
	var visit func(t *Table)
	visit = func(t *Table) {
		if done[t.QualName()] {
			return
		}
		done[t.QualName()] = true
		for _, p := range t.Inherits {
			if parent := c.tables[p]; parent != nil {
				visit(parent)
			}
		}
		out = append(out, t)
	}
	for _, t := range c.Tables() {
		visit(t)
	}
	return out
}

func (c *Catalog) viewsInDependencyOrder() []*View {
	var out []*View
	done := map[QualName]bool{}
	var visit func(v *View)
	visit = func(v *View) {
		if done[v.QualName()] {
			return
		}
		done[v.QualName()] = true
		for _, r := range v.Reads {
			if dep := c.views[r]; dep != nil {
				visit(dep)
			}
		}
		out = append(out, v)
	}
	for _, v := range c.Views() {
		visit(v)
	}
	return out
}

func writeCommentStmts(b *strings.Builder, kind string, q QualName, comment string, cols []*Column) {
	if comment != "" {
		b.WriteString("COMMENT ON " + kind + " " + q.String() + " IS " + quoteLiteral(comment) + ";\n")
	}
	for _, col := range cols {
		if col.Comment != "" {
			b.WriteString("COMMENT ON COLUMN " + q.String() + "." + QuoteIdent(col.Name) + " IS " + quoteLiteral(col.Comment) + ";\n")
		}
	}
}

// writeComment writes text as SQL line comments. PostgreSQL ends a line
// comment at \r as well as \n, so both split lines here.
func writeComment(b *strings.Builder, indent, text string) {
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		b.WriteString(indent + "-- " + strings.TrimSpace(line) + "\n")
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func identList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = QuoteIdent(n)
	}
	return strings.Join(q, ", ")
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
