package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
)

func runAsk(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "ask", "--db NAME [flags] QUESTION (- reads it from stdin)")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	k := fs.Int("k", 0, "how many context items (default 10)")
	explain := fs.Bool("explain", false, "print the query terms and each candidate's ranks and scores at every stage, as SQL comments")
	system := fs.Bool("allow-system-catalogs", false, "let the SQL read pg_catalog and information_schema (refused otherwise)")
	hints := fs.String("hints", "", "what you know beside the question (a definition, the columns meant): searched as a weaker second query and shown to the model")
	// The daemon bounds an ask by its own deadline (a model call and a
	// repair round); waiting less would give up on a good answer.
	*c.timeout = 3 * time.Minute
	fs.Lookup("timeout").DefValue = c.timeout.String()
	q, err := c.question(e, fs, args)
	if err != nil {
		return err
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
		return c.replyFailure(e, err)
	}
	printAnswer(e, reply, *explain)
	for _, w := range reply.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	return nil
}

// printAnswer prints an answer on stdout as SQL a shell can pipe on: the
// SQL, then all else as comments (what was retrieved when no model
// wrote SQL, and the explanation when asked).
func printAnswer(e *env, reply *events.AskReply, explain bool) {
	if reply.SQL != "" {
		fmt.Fprintln(e.stdout, reply.SQL)
	}
	if reply.Explanation != "" {
		fmt.Fprintf(e.stdout, "-- %s\n", reply.Explanation)
	}
	if len(reply.Tables) > 0 {
		fmt.Fprintf(e.stdout, "-- tables: %s\n", strings.Join(reply.Tables, ", "))
	}
	if reply.SQL != "" && reply.AskID != "" {
		fmt.Fprintf(e.stdout, "-- ask id: %s (schemaq feedback --ask-id cites it)\n", reply.AskID)
	}
	if reply.RetrievalOnly {
		// What the explanation promises: the context a model would see.
		fmt.Fprintln(e.stdout, "-- context:")
		for i, c := range reply.Context {
			line := fmt.Sprintf("-- %2d  %-7s %s", i+1, c.Kind, displayName(c))
			if c.Bridge != "" {
				line += "  (" + c.Bridge + ")"
			}
			if c.Placed != "" {
				line += "  (" + c.Placed + ")"
			}
			fmt.Fprintln(e.stdout, line)
		}
		for _, j := range reply.Joins {
			fmt.Fprintf(e.stdout, "-- join (by name): %s\n", j.String())
		}
	}
	if explain {
		// As comments, so that stdout stays SQL a shell can pipe on.
		var b strings.Builder
		printQueryTerms(&env{stdout: &b}, "", reply.QueryTerms)
		ex, _ := json.MarshalIndent(reply.Explain, "", "  ")
		fmt.Fprintf(&b, "explain:\n%s\n", ex)
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Fprintln(e.stdout, "-- "+line)
		}
	}
}
