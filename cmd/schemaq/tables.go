package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/schemaq/schemaq/events"
)

func runTables(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "tables", "--db NAME [flags] [TABLE]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
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
		return c.replyFailure(e, err)
	}
	// A listing comes in pages; the command shows the whole catalog.
	for reply.Next != "" {
		page, err := cli.Tables(rctx, &events.TablesRequest{Database: *c.db, Limit: events.MaxTablesLimit, After: reply.Next})
		if err != nil {
			return c.replyFailure(e, err)
		}
		reply.Tables, reply.Next = append(reply.Tables, page.Tables...), page.Next
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(reply)
	}
	if fs.NArg() == 1 {
		if len(reply.Tables) != 1 {
			// The reply comes over the bus: a daemon's that describes no
			// table, or several, is not one to print as this one.
			return fmt.Errorf("tables: the reply describes %d tables, not %s alone", len(reply.Tables), events.Quote(fs.Arg(0)))
		}
		printTable(e, reply)
	} else {
		printListing(e, reply)
	}
	printDrift(e, reply)
	return nil
}

// printTable prints the one table a reply describes: its DDL, then what
// the catalog knows about it, as SQL comments.
func printTable(e *env, reply *events.TablesReply) {
	if r := reply.RenamedTo; r != nil {
		via := ""
		if r.Source != "" {
			via = " in migration " + r.Source
		}
		fmt.Fprintf(e.stdout, "-- %s was renamed to %s%s\n", r.From, r.To, via)
	}
	t := reply.Tables[0]
	fmt.Fprint(e.stdout, t.DDL)
	for _, r := range t.Renamed {
		fmt.Fprintf(e.stdout, "-- %s\n", r)
	}
	for _, h := range t.History {
		fmt.Fprintf(e.stdout, "-- %s\n", h)
	}
	for _, r := range t.ReferencedBy {
		fmt.Fprintf(e.stdout, "-- referenced by: %s\n", r)
	}
	if t.ReferencedByTotal > len(t.ReferencedBy) {
		fmt.Fprintf(e.stdout, "-- … and %d more keys reference it (%d in all)\n", t.ReferencedByTotal-len(t.ReferencedBy), t.ReferencedByTotal)
	}
	if t.View {
		for _, r := range t.References {
			fmt.Fprintf(e.stdout, "-- %s\n", r) // "reads schema.table"
		}
	}
	for _, j := range t.Joins {
		fmt.Fprintf(e.stdout, "-- join (by name): %s\n", j)
	}
	if t.JoinsTotal > len(t.Joins) {
		fmt.Fprintf(e.stdout, "-- … and %d more joins by name (%d in all)\n", t.JoinsTotal-len(t.Joins), t.JoinsTotal)
	}
}

// printListing prints the catalog's tables and views, one a line.
func printListing(e *env, reply *events.TablesReply) {
	fmt.Fprintf(e.stdout, "database %s, catalog version %d\n", reply.Database, reply.Version)
	for _, t := range reply.Tables {
		kind := ""
		if t.View {
			kind = "(view)"
		}
		fmt.Fprintf(e.stdout, "  %-40s %-6s %3d columns  %s\n", t.Name, kind, t.Columns, t.Comment)
	}
}

// printDrift lists, on stderr, the statements of the history the catalog
// could not follow: where it may differ from the real database.
func printDrift(e *env, reply *events.TablesReply) {
	if reply.DriftTotal == 0 {
		return
	}
	fmt.Fprintf(e.stderr, "drift: %d statement(s) of the history name objects the catalog does not know (created by functions, or outside the history), or were evaluated in part; a snapshot clears them\n", reply.DriftTotal)
	for _, d := range reply.Drift {
		what := "skipped"
		switch {
		case d.Inferred != "":
			what = "inferred " + d.Inferred
		case d.Stopped:
			what = "evaluated in part"
		}
		fmt.Fprintf(e.stderr, "  seq %d %s: statement %d (line %d, column %d): %s: %s\n", d.Seq, d.Source, d.Statement, d.Line, d.Column, what, d.Error)
	}
	if n := reply.DriftTotal - len(reply.Drift); n > 0 {
		fmt.Fprintf(e.stderr, "  … and %d more\n", n)
	}
}
