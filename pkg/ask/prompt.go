package ask

import (
	"fmt"
	"sort"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// Instructions open every prompt. They never change, so with the schema
// block after them they form a prefix that gateway prompt caches reuse.
const Instructions = `You write one PostgreSQL query that answers the user's question about the database described below.

Rules:
- Use only the tables, views and columns in the schema below. Qualify a name with its schema when the schema is not public.
- Write exactly one read-only statement: SELECT, WITH ... SELECT or VALUES. Never modify data or schema, never call functions with side effects.
- If the schema cannot answer the question, return an empty "sql" and say why in "explanation".
- Answer with one JSON object and nothing else: {"sql": "<the query>", "explanation": "<one sentence>"}`

// Prompt builds the messages for a question: the system message holds the
// instructions, then the chosen tables' and views' DDL, the joins their
// names imply where no key declares them, docs and examples, each group
// in a fixed order (by name, not by retrieval rank), so two asks with the
// same context send byte-identical prefixes; the question comes last,
// with the caller's hints, if any, after it, and a note when retrieval
// could not tell which of the database's schemas the question is about:
// both change per question, so they stay out of the cacheable prefix.
func Prompt(db string, res *retrieve.Result, question, hints string) []Message {
	var schema, docs, examples []retrieve.Item
	joins := res.Joins
	for _, it := range res.Items {
		switch it.Kind {
		case chunk.KindTable, chunk.KindView:
			schema = append(schema, it)
		case chunk.KindDoc:
			docs = append(docs, it)
		case chunk.KindExample:
			examples = append(examples, it)
		}
	}
	var b strings.Builder
	b.WriteString(Instructions)
	b.WriteString("\n\n# Database " + db + "\n")
	section := func(title string, its []retrieve.Item) {
		if len(its) == 0 {
			return
		}
		sort.Slice(its, func(i, j int) bool { return its[i].Name < its[j].Name })
		b.WriteString("\n## " + title + "\n")
		for _, it := range its {
			b.WriteString("\n")
			b.WriteString(strings.TrimRight(it.Text, "\n"))
			b.WriteString("\n")
		}
	}
	section("Schema", schema)
	if len(joins) > 0 {
		// A schema without foreign keys (loaded from files, dumped
		// without constraints) leaves the model to guess its joins;
		// these are the ones the names make plain, marked as inferred
		// so that the model weighs them as such.
		b.WriteString("\n## Joins implied by column names (no foreign key declares them)\n\n")
		for _, j := range joins {
			b.WriteString(column(j.From, j.FromColumn) + " = " + column(j.To, j.ToColumn) + "\n")
		}
	}
	section("Documentation", docs)
	section("Examples", examples)
	user := question
	if h := strings.TrimSpace(hints); h != "" {
		user += "\n\nHints from the asker (definitions and column meanings to rely on):\n" + h
	}
	if res.Ambiguous && len(res.Schemas) > 1 {
		// The context then holds like tables of several schemas (two
		// stores, two years of one warehouse); a query that joins across
		// them answers nothing, and the asker should learn which was
		// taken.
		shares := make([]string, len(res.Schemas))
		for i, s := range res.Schemas {
			shares[i] = fmt.Sprintf("%s (%.2f)", s.Schema, s.Share)
		}
		user += "\n\nNote: the question fits several schemas of this database, likeliest first with the share of the odds retrieval gives each: " +
			strings.Join(shares, ", ") + ". Use the tables of one schema, the one the question's words fit best, and name that schema in the explanation."
	}
	return []Message{{Role: "system", Content: b.String()}, {Role: "user", Content: user}}
}

// column names a table's column as a query would: the schema only when it
// is not public, as the instructions ask.
func column(t catalog.QualName, col string) string {
	s := catalog.QuoteIdent(t.Name) + "." + catalog.QuoteIdent(col)
	if t.Schema != catalog.DefaultSchema {
		s = catalog.QuoteIdent(t.Schema) + "." + s
	}
	return s
}

// repairMessages continues a conversation whose answer was rejected,
// quoting the exact reason.
func repairMessages(msgs []Message, answer, reason string) []Message {
	out := append([]Message(nil), msgs...)
	return append(out,
		Message{Role: "assistant", Content: answer},
		Message{Role: "user", Content: "Your answer was rejected: " + reason +
			"\nAnswer again with one JSON object {\"sql\": ..., \"explanation\": ...} that fixes this."})
}
