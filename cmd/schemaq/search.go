package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

func runSearch(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "search", "--db NAME [flags] QUESTION (- reads it from stdin)")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	k := fs.Int("k", 0, "how many results (default 10)")
	explain := fs.Bool("explain", false, "print each candidate's ranks and scores at every stage")
	kind := fs.String("kind", "", "only table, view, doc or example (comma-separated)")
	schemas := fs.String("schemas", "", "only tables and views of these schemas (comma-separated)")
	text := fs.Bool("text", false, "print each result's text")
	hints := fs.String("hints", "", "what you know beside the question (a definition, the columns meant): searched as a weaker second query")
	q, err := c.question(e, fs, args)
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
		return c.replyFailure(e, err)
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(reply)
	}
	// The ranked results, then the bridge tables join completion placed
	// among them, apart and labelled: they come on top of --k.
	rank := 0
	var bridges []events.ContextItem
	for _, r := range reply.Results {
		if r.Bridge != "" {
			bridges = append(bridges, r)
			continue
		}
		rank++
		fmt.Fprintf(e.stdout, "%2d  %-7s %-40s %.4f\n", rank, r.Kind, displayName(r), r.Score)
		if r.Placed != "" {
			fmt.Fprintf(e.stdout, "    placed: %s\n", r.Placed)
		}
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
