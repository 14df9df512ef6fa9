package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/schemaq/schemaq/pkg/deadletter"
)

// deadLetterView is a letter as dlq prints it: show adds the event.
type deadLetterView struct {
	deadletter.Letter
	Data string `json:"data,omitempty"`
}

func viewOf(l *deadletter.Letter, withData bool) deadLetterView {
	v := deadLetterView{Letter: *l}
	if withData {
		v.Data = string(l.Data)
	}
	return v
}

func runDLQ(ctx context.Context, e *env, args []string) (err error) {
	verb, helped, err := verbOf(e, "dlq", args, []string{"list", "show", "retry", "delete", "purge"}, "list [--db NAME] | show SEQ... | retry SEQ... | delete SEQ... | purge [--db NAME]")
	if helped || err != nil {
		return err
	}
	fs := newFlags(e, "dlq "+verb, "[flags] [SEQ...]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch {
	case verb == "purge" && fs.NArg() > 0:
		return usagef("dlq purge takes no sequence numbers: use dlq delete SEQ... for single letters")
	case verb == "purge" && *c.db != "":
		if err := c.requireDB(); err != nil {
			return err
		}
	case verb != "list" && verb != "purge" && fs.NArg() == 0:
		return usagef("dlq %s: give the dead letter's sequence number (see dlq list)", verb)
	}
	var seqs []uint64
	for _, a := range fs.Args() {
		seq, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return usagef("dlq %s: %q is not a sequence number", verb, a)
		}
		seqs = append(seqs, seq)
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	box, err := deadletter.Open(ctx, js)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		return dlqList(ctx, e, box, &c)
	case "purge":
		n, err := box.Purge(ctx, *c.db)
		if err != nil {
			return err
		}
		what := *c.db
		if what == "" {
			what = "every database"
		}
		fmt.Fprintf(e.stdout, "purged %d dead letter(s) of %s\n", n, what)
		return nil
	}
	for _, seq := range seqs {
		if err := dlqOne(ctx, e, box, &c, verb, seq); err != nil {
			return err
		}
	}
	return nil
}

func dlqList(ctx context.Context, e *env, box *deadletter.Box, c *clientFlags) error {
	letters, err := box.List(ctx, *c.db)
	if err != nil {
		return err
	}
	out := make([]deadLetterView, len(letters))
	for i := range letters {
		out[i] = viewOf(&letters[i], false)
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(out) // [] when there are none, never null
	}
	for _, v := range out {
		fmt.Fprintf(e.stdout, "%d\t%s\t%s\t%s\t%s\n", v.Seq, v.Database, v.Kind, v.Source, v.Reason)
	}
	fmt.Fprintf(e.stdout, "%d dead letter(s)\n", len(out))
	return nil
}

// dlqOne shows, deletes or retries one letter.
func dlqOne(ctx context.Context, e *env, box *deadletter.Box, c *clientFlags, verb string, seq uint64) error {
	switch verb {
	case "delete":
		del, err := box.Delete(ctx, seq)
		if err != nil {
			return notFoundHint(err, seq)
		}
		switch {
		case del.Event:
			fmt.Fprintf(e.stdout, "dead letter %d deleted, and its event from the stream\n", seq)
		case del.EventKept != nil:
			fmt.Fprintf(e.stdout, "dead letter %d deleted; its event stays in the stream (%v)\n", seq, del.EventKept)
		default:
			fmt.Fprintf(e.stdout, "dead letter %d deleted\n", seq)
		}
	case "show":
		l, err := box.Get(ctx, seq)
		if err != nil {
			return notFoundHint(err, seq)
		}
		v := viewOf(l, true)
		if *c.asJSON {
			return json.NewEncoder(e.stdout).Encode(v)
		}
		fmt.Fprintf(e.stdout, "seq: %d\ndatabase: %s\nsubject: %s\nsource: %s\nkind: %s\ndeliveries: %s\nreason: %s\nevent: %s\n",
			v.Seq, v.Database, v.Subject, v.Source, v.Kind, v.Deliveries, v.Reason, v.Data)
	case "retry":
		target, err := box.Retry(ctx, seq)
		if err != nil {
			return notFoundHint(err, seq)
		}
		fmt.Fprintf(e.stdout, "dead letter %d republished to %s\n", seq, target)
	}
	return nil
}

func notFoundHint(err error, seq uint64) error {
	if errors.Is(err, deadletter.ErrNotFound) {
		return fmt.Errorf("dead letter %d: there is no such dead letter (retried, deleted or swept already?); `schemaq dlq list` shows those there are", seq)
	}
	return err
}
