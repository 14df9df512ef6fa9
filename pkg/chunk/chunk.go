// Package chunk turns a catalog, documents and examples into the units the
// index stores and retrieval ranks: one chunk per table (wide tables in
// parts), view, document section and example.
//
// Chunks are pure values. Each has a stable id (db:kind:name[:part]) so a
// re-index replaces rather than duplicates, and a content hash so an
// unchanged chunk is never embedded twice.
package chunk

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
)

// Kinds of chunk.
const (
	KindTable   = "table"
	KindView    = "view"
	KindDoc     = "doc"
	KindExample = "example"
)

// Chunk is one retrievable unit.
type Chunk struct {
	ID       string `json:"id"`
	Database string `json:"database"`
	Kind     string `json:"kind"`
	// Name is what the chunk is about: schema.table for tables and views,
	// the doc id for docs, the example id for examples. All parts of a
	// wide table or sections of a doc share it.
	Name string `json:"name"`
	Part int    `json:"part,omitempty"` // 1-based; 0 when not split
	// Schema is the schema of a table or view chunk, or the one an
	// example's SQL was written in.
	Schema string `json:"schema,omitempty"`
	// Title is the table or view name (without schema), or a doc's title
	// and heading path, or an example's question: the field BM25 weighs
	// most.
	Title string `json:"title"`
	// Columns are the column names a table or view chunk covers: the
	// field BM25 weighs second.
	Columns []string `json:"columns,omitempty"`
	// Text is what is embedded, searched as the body, and put in prompts.
	Text string            `json:"text"`
	Tags map[string]string `json:"tags,omitempty"`
	// Hash is the SHA-256 of the content fields (not of Version).
	Hash string `json:"hash"`
	// Version is the catalog version a schema chunk was derived from, so
	// that a slow writer never replaces chunks of a newer version.
	Version int64 `json:"version"`
}

// Options bound chunk sizes. Sizes are in bytes of Text; a rough token
// estimate is bytes/4.
type Options struct {
	// MaxTableBytes splits a table whose rendering is larger into parts
	// that each repeat the table header.
	MaxTableBytes int
	// MaxDocBytes splits a document section that is larger.
	MaxDocBytes int
}

// DefaultOptions suit prompts of a few thousand tokens: a table part is at
// most ~1,000 tokens and a doc section ~400.
var DefaultOptions = Options{MaxTableBytes: 4000, MaxDocBytes: 1600}

func (o Options) withDefaults() Options {
	if o.MaxTableBytes <= 0 {
		o.MaxTableBytes = DefaultOptions.MaxTableBytes
	}
	if o.MaxDocBytes <= 0 {
		o.MaxDocBytes = DefaultOptions.MaxDocBytes
	}
	return o
}

// ID builds a chunk id.
func ID(db, kind, name string, part int) string {
	id := db + ":" + kind + ":" + name
	if part > 0 {
		id += ":" + strconv.Itoa(part)
	}
	return id
}

func (c *Chunk) seal() {
	h := sha256.New()
	for _, s := range []string{c.Kind, c.Name, strconv.Itoa(c.Part), c.Schema, c.Title, strings.Join(c.Columns, "\x1f"), c.Text} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	keys := make([]string, 0, len(c.Tags))
	for k := range c.Tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte(k + "=" + c.Tags[k] + "\x00"))
	}
	c.Hash = hex.EncodeToString(h.Sum(nil))
	c.ID = ID(c.Database, c.Kind, c.Name, c.Part)
}

// Catalog chunks every table and view of c, in a deterministic order.
// Partitions are not chunked on their own: they repeat their parent, whose
// chunk lists them.
func Catalog(c *catalog.Catalog, opts Options) []Chunk { return NewChunker(opts).Catalog(c) }

// Table chunks one table. To chunk many tables of one catalog, use a
// Tabler, which builds the catalog's join graph once.
func Table(c *catalog.Catalog, t *catalog.Table, opts Options) []Chunk {
	return NewTabler(catalog.NewGraph(c), opts).Table(t)
}

// Tabler chunks tables of one catalog on demand, from its join graph. It
// is safe for concurrent use.
type Tabler struct {
	g    *catalog.Graph
	opts Options
}

// NewTabler chunks the tables of g's catalog. A daemon renders a few
// tables per question and builds the graph anyway, so nothing is
// indexed ahead: at ten thousand tables that was 13 ms per catalog
// version.
func NewTabler(g *catalog.Graph, opts Options) *Tabler {
	return &Tabler{g: g, opts: opts.withDefaults()}
}

// Table chunks one table of the Tabler's catalog.
func (tb *Tabler) Table(t *catalog.Table) []Chunk {
	c := tb.g.Catalog()
	return table(c, t, aroundOf(c, tb.g, t, hintsOf), tb.opts)
}

// around is what a table's chunk shows of the tables around it.
type around struct {
	// incoming are the foreign keys pointing at it, as hints.
	incoming []string
	// partitions are its partitions' names.
	partitions []string
	// partJoins are the foreign keys its partitions declare, as its
	// own (each once): only the root is chunked, and queries join
	// through it.
	partJoins []string
}

// hintsOf renders t's foreign keys as the hints the tables they reference
// show, one per key ("" for a key to t itself): what a Chunker remembers
// with the table, as joinHint is not free.
func hintsOf(t *catalog.Table) []string {
	out := make([]string, len(t.ForeignKeys))
	for i, fk := range t.ForeignKeys {
		if fk.RefTable != t.QualName() {
			out[i] = joinHint(t.QualName(), fk)
		}
	}
	return out
}

// aroundOf renders t's place in the join graph g of c as hints: the keys
// that reference it, the keys its partitions declare (once, by t's name:
// pagila's seven payment partitions each reference customer), and its
// partitions. A partition has none: it is not chunked, its root shows
// it. hints gives a table's own keys as hints (hintsOf, or remembered).
func aroundOf(c *catalog.Catalog, g *catalog.Graph, t *catalog.Table, hints func(*catalog.Table) []string) around {
	var a around
	if t.PartitionOf != nil {
		return a
	}
	q := t.QualName()
	seen := map[string]bool{}
	once := func(list *[]string, h string) {
		if !seen[h] {
			seen[h] = true
			*list = append(*list, h)
		}
	}
	for _, in := range g.Incoming(q) {
		if in.From.PartitionOf == nil {
			if h := hints(in.From)[in.Index]; h != "" {
				a.incoming = append(a.incoming, h)
			}
			continue
		}
		root := c.PartitionRoot(in.From)
		if in.Key.Inherited || in.Key.RefTable == in.From.QualName() || in.Key.RefTable == root.QualName() {
			continue // a copy of a parent's key, or a join within the root
		}
		once(&a.incoming, joinHint(root.QualName(), in.Key))
	}
	for _, p := range g.Partitions(q) {
		a.partitions = append(a.partitions, displayName(p.QualName()))
	}
	for _, fk := range g.PartitionKeys(q) {
		once(&a.partJoins, joinHint(q, fk))
	}
	return a
}

// displayName is schema.table as people write it: unquoted unless needed.
func displayName(q catalog.QualName) string { return q.String() }

func joinHint(from catalog.QualName, fk catalog.ForeignKey) string {
	pairs := make([]string, len(fk.Columns))
	for i := range fk.Columns {
		pairs[i] = from.Name + "." + fk.Columns[i] + " → " + fk.RefTable.Name + "." + fk.RefColumns[i]
	}
	return strings.Join(pairs, ", ")
}

// table renders a table chunk: canonical DDL (columns with comments), enum
// labels of enum-typed columns and join hints both ways. A table too large
// for one chunk is split by columns; every part repeats the header (name
// and comment) and names the part.
func table(c *catalog.Catalog, t *catalog.Table, near around, opts Options) []Chunk {
	q := t.QualName()
	var hints []string
	for _, fk := range t.ForeignKeys {
		hints = append(hints, "-- join: "+joinHint(q, fk))
	}
	for _, h := range near.partJoins {
		hints = append(hints, "-- join: "+h+" (declared on its partitions)")
	}
	for _, h := range near.incoming {
		hints = append(hints, "-- referenced by: "+h)
	}
	if parts := near.partitions; len(parts) > 0 {
		hints = append(hints, "-- partitions: "+strings.Join(parts, ", "))
	}
	var enums []string
	seen := map[catalog.QualName]bool{}
	for _, col := range t.Columns {
		if col.Enum == nil || seen[*col.Enum] {
			continue
		}
		seen[*col.Enum] = true
		if e := c.Enum(*col.Enum); e != nil {
			enums = append(enums, "-- enum "+e.QualName().String()+": "+strings.Join(e.Labels, ", "))
		}
	}
	footer := strings.Join(append(append(renameLines(t.Renamed, t.Columns), enums...), hints...), "\n")
	ddl := t.DDL()
	whole := ddl
	if footer != "" {
		whole += footer + "\n"
	}
	names := columnNames(t.Columns)
	if len(whole) <= opts.MaxTableBytes || len(t.Columns) < 2 {
		ch := Chunk{Database: c.Database, Kind: KindTable, Name: q.Key(), Schema: q.Schema, Title: q.Name,
			Columns: names, Text: whole, Version: c.Version}
		ch.seal()
		return []Chunk{ch}
	}
	return splitTable(c, t, footer, opts)
}

func columnNames(cols []*catalog.Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

// splitTable renders a wide table in parts. Each part is a CREATE TABLE
// with the header comment and a run of the columns; key, foreign key and
// check constraints go with the part that holds their first column, and
// the enum and join footer with the last part. Parts are sized from the
// exact rendered lines, so each stays within MaxTableBytes unless a single
// column is larger.
func splitTable(c *catalog.Catalog, t *catalog.Table, footer string, opts Options) []Chunk {
	q := t.QualName()
	groups := groupColumns(t.Columns, columnCosts(t), opts.MaxTableBytes-partFixedCost(t, footer))
	var out []Chunk
	for i, g := range groups {
		text := "-- part " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(groups)) + " of table " + q.String() + "\n" + tablePart(t, g, i == 0).DDL()
		if i == len(groups)-1 && footer != "" {
			text += footer + "\n"
		}
		ch := Chunk{Database: c.Database, Kind: KindTable, Name: q.Key(), Part: i + 1,
			Schema: q.Schema, Title: q.Name, Columns: columnNames(g), Text: text, Version: c.Version}
		ch.seal()
		out = append(out, ch)
	}
	return out
}

// partFixedCost is what every part of t costs besides its columns: the
// part marker, the comment header, the CREATE TABLE line and the closing
// line (generously: 99 parts, a PARTITION BY or INHERITS suffix), and
// the footer.
func partFixedCost(t *catalog.Table, footer string) int {
	q := t.QualName()
	fixed := len("-- part 99 of 99 of table "+q.String()+"\n") + len("CREATE TABLE "+q.String()+" (\n") +
		len(");\n") + len(t.PartitionBy) + 16
	for _, in := range t.Inherits {
		fixed += len(in.String()) + 12
	}
	if t.Comment != "" {
		fixed += len(t.Comment) + 8*(strings.Count(t.Comment, "\n")+1)
	}
	if footer != "" {
		fixed += len(footer) + 1
	}
	return fixed
}

// columnCosts is each column's rendered size with its comment, plus
// the constraints charged to it: a constraint is charged to, and
// rendered with, the part holding its first column; one that reads no
// column goes with the first part.
func columnCosts(t *catalog.Table) map[string]int {
	cost := map[string]int{}
	for _, col := range t.Columns {
		n := len(col.Definition()) + 6
		if col.Comment != "" {
			n += len(" -- ") + len(strings.Join(strings.Fields(col.Comment), " "))
		}
		cost[col.Name] += n
	}
	charge := func(cols []string, line string) {
		if len(cols) > 0 {
			cost[cols[0]] += len(line) + 6
		} else if len(t.Columns) > 0 {
			cost[t.Columns[0].Name] += len(line) + 6
		}
	}
	if pk := t.PrimaryKey; pk != nil {
		charge(pk.Columns, "CONSTRAINT "+pk.Name+" PRIMARY KEY ("+strings.Join(pk.Columns, ", ")+")")
	}
	for _, k := range t.Unique {
		charge(k.Columns, "CONSTRAINT "+k.Name+" UNIQUE ("+strings.Join(k.Columns, ", ")+")")
	}
	for _, fk := range t.ForeignKeys {
		charge(fk.Columns, "CONSTRAINT "+fk.Name+" "+fk.Clause())
	}
	for _, ch := range t.Checks {
		charge(ch.Columns, "CONSTRAINT "+ch.Name+" CHECK ("+ch.Expr+")")
	}
	for _, ix := range t.Indexes {
		if ix.Shown() {
			charge(leadOf(ix), ix.DDL(t.QualName()))
		}
	}
	return cost
}

// leadOf is the column a part shows the index with, as a key's columns.
func leadOf(ix catalog.Index) []string {
	if c := ix.Lead(); c != "" {
		return []string{c}
	}
	return nil
}

// groupColumns cuts cols into runs that each cost at most budget, but
// for a run of one column that is larger alone.
func groupColumns(cols []*catalog.Column, cost map[string]int, budget int) [][]*catalog.Column {
	var groups [][]*catalog.Column
	var cur []*catalog.Column
	size := 0
	for _, col := range cols {
		if len(cur) > 0 && size+cost[col.Name] > budget {
			groups = append(groups, cur)
			cur, size = nil, 0
		}
		cur = append(cur, col)
		size += cost[col.Name]
	}
	return append(groups, cur)
}

// tablePart is t with only the columns g and the constraints whose first
// column is among them (those of no column go with the first part).
func tablePart(t *catalog.Table, g []*catalog.Column, firstPart bool) *catalog.Table {
	part := &catalog.Table{Schema: t.Schema, Name: t.Name, Columns: g, Comment: t.Comment,
		Inherits: t.Inherits, PartitionBy: t.PartitionBy}
	in := map[string]bool{}
	for _, col := range g {
		in[col.Name] = true
	}
	first := func(cols []string) bool {
		if len(cols) == 0 {
			return firstPart
		}
		return in[cols[0]]
	}
	if t.PrimaryKey != nil && first(t.PrimaryKey.Columns) {
		part.PrimaryKey = t.PrimaryKey
	}
	for _, k := range t.Unique {
		if first(k.Columns) {
			part.Unique = append(part.Unique, k)
		}
	}
	for _, fk := range t.ForeignKeys {
		if first(fk.Columns) {
			part.ForeignKeys = append(part.ForeignKeys, fk)
		}
	}
	for _, ch := range t.Checks {
		if first(ch.Columns) {
			part.Checks = append(part.Checks, ch)
		}
	}
	for _, ix := range t.Indexes {
		if ix.Shown() && first(leadOf(ix)) {
			part.Indexes = append(part.Indexes, ix)
		}
	}
	return part
}

// View chunks one view: its definition, columns and the relations it reads.
func View(c *catalog.Catalog, v *catalog.View) Chunk {
	text := v.DDL()
	if len(v.Reads) > 0 {
		reads := make([]string, len(v.Reads))
		for i, r := range v.Reads {
			reads[i] = displayName(r)
		}
		text += "-- reads: " + strings.Join(reads, ", ") + "\n"
	}
	for _, l := range renameLines(v.Renamed, v.Columns) {
		text += l + "\n"
	}
	var cols []string
	for _, col := range v.Columns {
		cols = append(cols, col.Name)
		if col.Comment != "" {
			text += "-- " + col.Name + ": " + strings.Join(strings.Fields(col.Comment), " ") + "\n"
		}
	}
	ch := Chunk{Database: c.Database, Kind: KindView, Name: v.QualName().Key(), Schema: v.Schema, Title: v.Name,
		Columns: cols, Text: text, Version: c.Version}
	ch.seal()
	return ch
}

// Example chunks one question/SQL pair; schema, when set, is the schema
// the SQL was written in (its search_path). An empty id becomes a hash of
// the question, so re-publishing the same question replaces it.
func Example(db, schema, id, question, sql string) Chunk {
	ch := Chunk{Database: db, Kind: KindExample, Name: ExampleName(id, question), Schema: schema, Title: strings.TrimSpace(question),
		Text: "Question: " + strings.TrimSpace(question) + "\nSQL: " + strings.TrimSpace(sql) + "\n"}
	ch.seal()
	return ch
}

// ExampleName is an example's name in the index: its id, or one its
// question makes (events.ExampleID).
func ExampleName(id, question string) string {
	if id == "" {
		return events.ExampleID(question)
	}
	return id
}

// TagOrigin is the tag an example chunk carries when it did not come
// from the team's published log: events.OriginFeedback for SQL a caller
// handed back, which retrieval trusts less.
const TagOrigin = "origin"

// ExampleSQL is the SQL of an example chunk (Example), "" for any other.
func ExampleSQL(c Chunk) string {
	if c.Kind != KindExample {
		return ""
	}
	_, sql, ok := strings.Cut(c.Text, "\nSQL: ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(sql)
}

// EmbedText is what an embedder should see for the chunk. For tables and
// views it is the words a person would use — name, schema, columns, and
// the comments, enum labels and join hints of the text — without SQL
// keywords and type names, which every table shares and which would
// otherwise dominate a bag-of-words vector (docs/retrieval.md measures
// what leaving them out gains). Docs and examples embed their text as it
// is.
func (c *Chunk) EmbedText() string {
	if c.Kind != KindTable && c.Kind != KindView {
		return c.Text
	}
	var b strings.Builder
	b.WriteString(c.Title)
	b.WriteString(" (")
	b.WriteString(c.Schema)
	b.WriteString("): ")
	b.WriteString(strings.Join(c.Columns, ", "))
	for _, line := range strings.Split(c.Text, "\n") {
		if i := strings.Index(line, "-- "); i >= 0 {
			b.WriteString(". ")
			b.WriteString(strings.TrimSpace(line[i+3:]))
		}
	}
	return b.String()
}

// SortByID orders chunks by id, for deterministic output.
func SortByID(chunks []Chunk) {
	slices.SortFunc(chunks, func(a, b Chunk) int { return strings.Compare(a.ID, b.ID) })
}

// RenamedPrefix starts the line of a chunk that gives a former name of
// its table or view; RenamedColumnPrefix one of a column. Search reads
// the former names from them (index.SearchFields), so a question that
// still uses the old name finds the object; a prompt shows them beside
// the current DDL, so the model writes the current name.
const (
	RenamedPrefix       = "-- renamed from "
	RenamedColumnPrefix = "-- column "
)

// renameLines is catalog.RenameLines as chunk comment lines.
func renameLines(renamed []catalog.Rename, cols []*catalog.Column) []string {
	lines := catalog.RenameLines(renamed, cols)
	for i, l := range lines {
		lines[i] = "-- " + l
	}
	return lines
}

// FormerNames reads a table or view chunk's former names, and its
// columns', from its rename lines. Most chunks have none, and cost one
// substring search.
func FormerNames(text string) (relations, columns []string) {
	if !strings.Contains(text, " renamed from ") {
		return nil, nil
	}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, RenamedPrefix); ok {
			name, _, _ := strings.Cut(rest, " (")
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				name = name[i+1:]
			}
			relations = append(relations, strings.Trim(name, `"`))
			continue
		}
		if rest, ok := strings.CutPrefix(line, RenamedColumnPrefix); ok {
			if _, old, ok := strings.Cut(rest, " renamed from "); ok {
				name, _, _ := strings.Cut(old, " (")
				columns = append(columns, strings.Trim(name, `"`))
			}
		}
	}
	return relations, columns
}
