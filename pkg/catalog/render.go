package catalog

import (
	"strings"
)

// DDL renders the table as one canonical CREATE TABLE statement: columns in
// order with type, default, generated/identity and NOT NULL; then primary
// key, unique, foreign key and check constraints by name. Its unique
// indexes follow as CREATE UNIQUE INDEX: they say what is unique as a
// unique key does (Prisma and TypeORM make indexes, not constraints),
// where its other indexes say nothing a query's meaning needs. Table and
// column comments ride along as SQL comments, so the text stays valid SQL
// and carries them into a prompt. The output depends only on the catalog,
// never on how the producer formatted its DDL.
func (t *Table) DDL() string {
	var b strings.Builder
	t.writeDDL(&b, true)
	for _, ix := range t.Indexes {
		if ix.Shown() {
			b.WriteString(ix.DDL(t.QualName()))
		}
	}
	return b.String()
}

func (t *Table) writeDDL(b *strings.Builder, withFKs bool) {
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
		lines = append(lines, "    "+c.Definition())
		comment := c.Comment
		if c.Inferred {
			comment = strings.TrimSpace("inferred: altered by the history, never created in it. " + comment)
		}
		comments = append(comments, comment)
	}
	if pk := t.PrimaryKey; pk != nil && len(pk.Columns) > 0 {
		lines = append(lines, "    CONSTRAINT "+QuoteIdent(pk.Name)+" PRIMARY KEY ("+identList(pk.Columns)+")")
		comments = append(comments, "")
	}
	for _, k := range t.Unique {
		if len(k.Columns) > 0 {
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(k.Name)+" UNIQUE ("+identList(k.Columns)+")")
			comments = append(comments, "")
		}
	}
	if withFKs {
		for _, fk := range t.ForeignKeys {
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(fk.Name)+" "+fk.Clause())
			comments = append(comments, "")
		}
	}
	for _, ch := range t.Checks {
		if !ch.Exclude {
			lines = append(lines, "    CONSTRAINT "+QuoteIdent(ch.Name)+" CHECK ("+ch.Expr+")")
			comments = append(comments, "")
		}
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
func (c *Column) Definition() string {
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
	if len(v.Columns) > 0 && !v.Materialized {
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
	for _, t := range tables {
		t.writeDDL(&b, false)
	}
	for _, t := range tables {
		if t.PartitionOf != nil {
			b.WriteString("ALTER TABLE " + t.PartitionOf.String() + " ATTACH PARTITION " + t.QualName().String() + " " + t.PartitionBound + ";\n")
		}
	}
	for _, t := range tables {
		for _, ix := range t.Indexes {
			if !ix.Inherited {
				b.WriteString(ix.DDL(t.QualName()))
			}
		}
	}
	for _, t := range tables {
		for _, fk := range t.ForeignKeys {
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
