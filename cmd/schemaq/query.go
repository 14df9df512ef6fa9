package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// replyError prints a wire error and makes the command fail.
func replyError(e *env, err error) error {
	var we *events.Error
	if errors.As(err, &we) {
		fmt.Fprintf(e.stderr, "schemaq: %s: %s\n", we.Code, we.Message)
		return errSilent
	}
	return err
}

// question parses a query command's flags and returns the question its
// positional arguments spell.
func (c *clientFlags) question(fs *flag.FlagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if err := c.requireDB(); err != nil {
		return "", err
	}
	q := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if q == "" {
		return "", usagef("%s: give a question", fs.Name())
	}
	return q, nil
}

// session connects a one-shot command and bounds it by --timeout; done
// releases both.
func (c *clientFlags) session(ctx context.Context) (*client.Client, context.Context, func(), error) {
	cli, closeConn, err := c.client()
	if err != nil {
		return nil, nil, nil, err
	}
	rctx, cancel := requestCtx(ctx, *c.timeout)
	return cli, rctx, func() { cancel(); closeConn() }, nil
}

func runAsk(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "ask", "--db NAME [flags] QUESTION")
	var c clientFlags
	c.register(fs, e)
	k := fs.Int("k", 0, "how many context items (default 10)")
	explain := fs.Bool("explain", false, "include the retrieval explain record")
	system := fs.Bool("allow-system-catalogs", false, "let the SQL read pg_catalog and information_schema (refused otherwise)")
	hints := fs.String("hints", "", "what you know beside the question (a definition, the columns meant): searched as a weaker second query and shown to the model")
	q, err := c.question(fs, args)
	if err != nil {
		return err
	}
	timeoutSet := false
	fs.Visit(func(f *flag.Flag) { timeoutSet = timeoutSet || f.Name == "timeout" })
	if !timeoutSet {
		// The daemon bounds an ask by its own deadline (a model call and a
		// repair round); waiting less would give up on a good answer.
		*c.timeout = 3 * time.Minute
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	reply, err := cli.Ask(rctx, &events.AskRequest{Database: *c.db, Question: q, K: *k, Explain: *explain, AllowSystemCatalogs: *system, Hints: *hints})
	if *c.asJSON && reply != nil {
		if jerr := json.NewEncoder(e.stdout).Encode(reply); jerr != nil {
			return jerr
		}
		if err != nil {
			return errSilent
		}
		return nil
	}
	if err != nil {
		// Refused SQL goes to stderr, every line commented, and stdout
		// stays empty: `schemaq ask … | psql` must never run it.
		if reply != nil && reply.RejectedSQL != "" {
			fmt.Fprintf(e.stderr, "-- rejected SQL (not safe to run):\n-- %s\n", strings.ReplaceAll(reply.RejectedSQL, "\n", "\n-- "))
		}
		return replyError(e, err)
	}
	if reply.SQL != "" {
		fmt.Fprintln(e.stdout, reply.SQL)
	}
	if reply.Explanation != "" {
		fmt.Fprintf(e.stdout, "-- %s\n", reply.Explanation)
	}
	if len(reply.Tables) > 0 {
		fmt.Fprintf(e.stdout, "-- tables: %s\n", strings.Join(reply.Tables, ", "))
	}
	if reply.RetrievalOnly {
		// What the explanation promises: the context a model would see.
		fmt.Fprintln(e.stdout, "-- context:")
		for i, c := range reply.Context {
			line := fmt.Sprintf("-- %2d  %-7s %s", i+1, c.Kind, displayName(c))
			if c.Bridge != "" {
				line += "  (" + c.Bridge + ")"
			}
			fmt.Fprintln(e.stdout, line)
		}
		for _, j := range reply.Joins {
			fmt.Fprintf(e.stdout, "-- join (by name): %s\n", j.String())
		}
	}
	for _, w := range reply.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	return nil
}

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "search", "--db NAME [flags] QUESTION")
	var c clientFlags
	c.register(fs, e)
	k := fs.Int("k", 0, "how many results (default 10)")
	explain := fs.Bool("explain", false, "print each candidate's ranks and scores at every stage")
	kind := fs.String("kind", "", "only table, view, doc or example (comma-separated)")
	schemas := fs.String("schemas", "", "only tables and views of these schemas (comma-separated)")
	text := fs.Bool("text", false, "print each result's text")
	hints := fs.String("hints", "", "what you know beside the question (a definition, the columns meant): searched as a weaker second query")
	q, err := c.question(fs, args)
	if err != nil {
		return err
	}
	var kinds []string
	if *kind != "" {
		kinds = strings.Split(*kind, ",")
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	var only []string
	if *schemas != "" {
		only = strings.Split(*schemas, ",")
	}
	reply, err := cli.Search(rctx, &events.SearchRequest{Database: *c.db, Question: q, K: *k, Kinds: kinds, Schemas: only, Explain: *explain, Hints: *hints})
	if err != nil {
		return replyError(e, err)
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(reply)
	}
	// The ranked results, then the bridge tables foreign-key expansion
	// added, apart and labelled: they have no score, and come on top of
	// --k.
	rank := 0
	var bridges []events.ContextItem
	for _, r := range reply.Results {
		if r.Bridge != "" {
			bridges = append(bridges, r)
			continue
		}
		rank++
		fmt.Fprintf(e.stdout, "%2d  %-7s %-40s %.4f\n", rank, r.Kind, displayName(r), r.Score)
		printText(e, *text, r.Text)
	}
	if len(bridges) > 0 {
		fmt.Fprintln(e.stdout, "join tables (foreign-key bridges):")
	}
	for _, r := range bridges {
		fmt.Fprintf(e.stdout, "    %-7s %-40s %s\n", r.Kind, r.Name, r.Bridge)
		printText(e, *text, r.Text)
	}
	if len(reply.Joins) > 0 {
		fmt.Fprintln(e.stdout, "joins the column names imply (no foreign key declares them):")
	}
	for _, j := range reply.Joins {
		fmt.Fprintf(e.stdout, "    %s\n", j.String())
	}
	if *explain {
		printQueryTerms(e, "", reply.QueryTerms)
		b, _ := json.MarshalIndent(reply.Explain, "", "  ")
		fmt.Fprintf(e.stdout, "explain:\n%s\n", b)
	}
	for _, w := range reply.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	return nil
}

// displayName is what a person reads a result by: an example by its
// question, since its name is an id.
func displayName(c events.ContextItem) string {
	if c.Kind == "example" && c.Title != "" {
		return c.Title
	}
	return c.Name
}

func runTables(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "tables", "--db NAME [flags] [TABLE]")
	var c clientFlags
	c.register(fs, e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usagef("tables: give at most one table")
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	reply, err := cli.Tables(rctx, &events.TablesRequest{Database: *c.db, Table: fs.Arg(0), Limit: events.MaxTablesLimit})
	if err != nil {
		return replyError(e, err)
	}
	// A listing comes in pages; the command shows the whole catalog.
	for reply.Next != "" {
		page, err := cli.Tables(rctx, &events.TablesRequest{Database: *c.db, Limit: events.MaxTablesLimit, After: reply.Next})
		if err != nil {
			return replyError(e, err)
		}
		reply.Tables, reply.Next = append(reply.Tables, page.Tables...), page.Next
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(reply)
	}
	if fs.NArg() == 1 {
		fmt.Fprint(e.stdout, reply.Tables[0].DDL)
		t := reply.Tables[0]
		for _, j := range t.Joins {
			fmt.Fprintf(e.stdout, "-- join (by name): %s\n", j)
		}
		if t.JoinsTotal > len(t.Joins) {
			fmt.Fprintf(e.stdout, "-- … and %d more joins by name (%d in all)\n", t.JoinsTotal-len(t.Joins), t.JoinsTotal)
		}
		printDrift(e, reply)
		return nil
	}
	fmt.Fprintf(e.stdout, "database %s, catalog version %d\n", reply.Database, reply.Version)
	for _, t := range reply.Tables {
		fmt.Fprintf(e.stdout, "  %-40s %3d columns  %s\n", t.Name, t.Columns, t.Comment)
	}
	printDrift(e, reply)
	return nil
}

// printQueryTerms prints the BM25 query after indent, derived terms with
// their origin ("productcategory (compound of category)").
func printQueryTerms(e *env, indent string, terms []events.QueryTerm) {
	if len(terms) == 0 {
		return
	}
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = t.Term
		if t.Why != retrieve.FromQuestion {
			parts[i] += " (" + t.Why + " of " + t.From + ")"
		}
	}
	fmt.Fprintf(e.stdout, "%squery terms: %s\n", indent, strings.Join(parts, ", "))
}

func printText(e *env, on bool, text string) {
	if !on {
		return
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(e.stdout, "      %s\n", line)
	}
}

// printDrift lists, on stderr, the statements of the history the catalog
// could not follow: where it may differ from the real database.
func printDrift(e *env, reply *events.TablesReply) {
	if reply.DriftTotal == 0 {
		return
	}
	fmt.Fprintf(e.stderr, "drift: %d statement(s) of the history name objects the catalog does not know (created by functions, or outside the history); a snapshot clears them\n", reply.DriftTotal)
	for _, d := range reply.Drift {
		what := "skipped"
		if d.Inferred != "" {
			what = "inferred " + d.Inferred
		}
		fmt.Fprintf(e.stderr, "  seq %d %s: statement %d (line %d, column %d): %s: %s\n", d.Seq, d.Source, d.Statement, d.Line, d.Column, what, d.Error)
	}
	if n := reply.DriftTotal - len(reply.Drift); n > 0 {
		fmt.Fprintf(e.stderr, "  … and %d more\n", n)
	}
}
