package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
)

func runFeedback(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "feedback", "--db NAME --question Q --sql SQL [--ask-id ID [--corrected]]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	question := fs.String("question", "", "the question the SQL answers (- reads it from stdin)")
	sql := fs.String("sql", "", "the SQL that answers it (- reads it from stdin)")
	schema := fs.String("schema", "", "the schema the SQL was written in (its search_path before public)")
	askID := fs.String("ask-id", "", "the ask whose answer this is (ask prints it as -- ask id, --json as ask_id)")
	corrected := fs.Bool("corrected", false, "the SQL is that ask's answer corrected, not accepted as it was (needs --ask-id)")
	wait := fs.Duration("wait", 0, "wait up to this long until the example is searchable (0: return once the stream has it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("feedback: unexpected argument %s; the question and the SQL go in --question and --sql", events.Quote(fs.Arg(0)))
	}
	if *question == "-" && *sql == "-" {
		return usagef("feedback: only one of --question and --sql can read stdin")
	}
	if *question, err = flagOrStdin(e, "question", *question, events.MaxQuestionBytes); err != nil {
		return err
	}
	if *sql, err = flagOrStdin(e, "sql", *sql, events.MaxFeedbackSQLBytes); err != nil {
		return err
	}
	req := &events.FeedbackRequest{Database: *c.db, Question: *question, SQL: *sql, Schema: *schema, AskID: *askID, Corrected: *corrected}
	if err := req.Validate(); err != nil {
		return usagef("feedback: %v", err)
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	since := time.Now()
	reply, err := cli.Feedback(rctx, req)
	if err != nil {
		return c.replyFailure(e, err)
	}
	if *wait > 0 {
		ref := events.IndexedRef{Kind: "example", Name: reply.Example}
		if err := waitIndexed(ctx, cli, *c.db, map[events.IndexedRef]int64{ref: int64(reply.Seq)}, since, *wait); err != nil {
			return fmt.Errorf("feedback stored as example %s, but: %w", reply.Example, err)
		}
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(reply)
	}
	state := "stored"
	if reply.Duplicate {
		state = "already stored"
	}
	fmt.Fprintf(e.stdout, "%s as example %s of %s (catalog version %d; reads %s)\n", state, reply.Example, reply.Database, reply.Version, strings.Join(reply.Tables, ", "))
	for _, w := range reply.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	return nil
}

// flagOrStdin is a flag's value, or stdin's when it is "-", bounded.
func flagOrStdin(e *env, name, value string, limit int) (string, error) {
	if value != "-" {
		return value, nil
	}
	if e.stdin == nil {
		return "", usagef("--%s -: reads stdin, and there is none", name)
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, int64(limit)+1))
	if err != nil {
		return "", fmt.Errorf("--%s: read stdin: %w", name, err)
	}
	if len(b) > limit {
		return "", usagef("--%s: stdin holds over %d bytes", name, limit)
	}
	return string(b), nil
}
