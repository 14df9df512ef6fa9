package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/schemaq/schemaq/events"
)

func runDatabases(ctx context.Context, e *env, args []string) (err error) {
	verb, helped, err := verbOf(e, "databases", args, []string{"list", "retire"}, "list | retire --db NAME --yes [--wait DUR]")
	if helped || err != nil {
		return err
	}
	fs := newFlags(e, "databases "+verb, "[--db NAME --yes] [flags]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	yes := fs.Bool("yes", false, "retire: yes, remove the database's catalog, index, events, dead letters and objects for good")
	wait := fs.Duration("wait", 0, "retire: wait up to this long until the daemons no longer know the database")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("databases %s: unexpected argument %s", verb, events.Quote(fs.Arg(0)))
	}
	if verb == "retire" {
		if err := c.requireDB(); err != nil {
			return err
		}
		if !*yes {
			return usagef("databases retire removes %s's catalog, index, events, dead letters and objects for good; say --yes", *c.db)
		}
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	if verb == "list" {
		dbs, err := cli.Databases(rctx)
		if err != nil {
			return err
		}
		if *c.asJSON {
			if dbs == nil {
				return json.NewEncoder(e.stdout).Encode([]any{})
			}
			return json.NewEncoder(e.stdout).Encode(dbs)
		}
		for _, d := range dbs {
			fmt.Fprintf(e.stdout, "%s\tversion %d\n", d.Name, d.Version)
		}
		fmt.Fprintf(e.stdout, "%d database(s)\n", len(dbs))
		return nil
	}
	gone, err := cli.RetireDatabase(rctx, *c.db)
	if err != nil {
		return err
	}
	if *wait > 0 {
		if err := waitForgotten(ctx, &c, *c.db, *wait); err != nil {
			return err
		}
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"database": *c.db, "retired": gone})
	}
	fmt.Fprintf(e.stdout, "retired %s: %d event(s), %d dead letter(s), %d object(s) removed; its catalog is deleted and workers drop its index; publishing to it again starts a new history\n",
		*c.db, gone.Events, gone.Letters, gone.Objects)
	return nil
}

// waitForgotten waits until a daemon answers that db is unknown: its
// catalog is gone from the daemons' view and its index is empty.
func waitForgotten(ctx context.Context, c *clientFlags, db string, limit time.Duration) error {
	cli, closeConn, err := c.client()
	if err != nil {
		return err
	}
	defer closeConn()
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(wctx, 2*time.Second)
		_, err := cli.Search(rctx, &events.SearchRequest{Database: db, Question: "retired?", K: 1})
		rcancel()
		if errors.Is(err, &events.Error{Code: events.CodeUnknownDatabase}) {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("after %v, a daemon still knows %s (last: %v); see the workers' logs", limit, db, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
