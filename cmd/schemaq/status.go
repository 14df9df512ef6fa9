package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/status"
)

// runStatus is parse, gather each part of the report, print.
func runStatus(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "status", "[flags]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	rep, err := status.Gather(ctx, js)
	if err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	printStatus(e, rep)
	return nil
}

func printStatus(e *env, rep *status.Report) {
	fmt.Fprintf(e.stdout, "stream %s: %d events (%d bytes), last seq %d\n", events.Stream, rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq)
	if len(rep.Consumers) == 0 {
		fmt.Fprintln(e.stdout, "consumers: none (no worker or replica has started)")
	}
	for _, c := range rep.Consumers {
		fmt.Fprintf(e.stdout, "consumer %s: %d pending, %d in flight, %d redelivered\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
	}
	printCatalogs(e, rep)
	printLargest(e, "events in the stream", rep.EventsByDatabase)
	printBound(e, rep)
	fmt.Fprintf(e.stdout, "dead letters: %d\n", rep.DeadLetters)
	printLargest(e, "dead letters", rep.LettersByDatabase)
	fmt.Fprintf(e.stdout, "object store %s: %d bytes\n", events.ObjectBucket, rep.ObjectBytes)
	printDaemons(e, rep)
	for _, w := range rep.Warnings {
		fmt.Fprintln(e.stderr, "warning:", w)
	}
}

func printCatalogs(e *env, rep *status.Report) {
	names := slices.Sorted(maps.Keys(rep.Catalogs))
	fmt.Fprintf(e.stdout, "catalogs: %d\n", len(names))
	for _, n := range names {
		line := fmt.Sprintf("  %-30s version %d", n, rep.Catalogs[n])
		if d := rep.Drift[n]; d > 0 {
			line += fmt.Sprintf(", drift: %d statement(s) skipped, inferred or evaluated in part (schemaq tables --db %s)", d, n)
		}
		fmt.Fprintln(e.stdout, line)
	}
	for _, n := range slices.Sorted(maps.Keys(rep.Unreadable)) {
		fmt.Fprintf(e.stdout, "  %-30s UNREADABLE: %s\n", n, rep.Unreadable[n])
	}
}

// printBound says the stream's bound on events per database, and warns
// of the databases that near it.
func printBound(e *env, rep *status.Report) {
	bound := rep.Stream.MaxEventsPerDatabase
	if bound <= 0 {
		fmt.Fprintln(e.stdout, "events per database: no bound (--max-events-per-database)")
		return
	}
	fmt.Fprintf(e.stdout, "events per database: at most %d of each kind\n", bound)
	for _, db := range slices.Sorted(maps.Keys(rep.NearBound)) {
		for _, kind := range slices.Sorted(maps.Keys(rep.NearBound[db])) {
			fmt.Fprintf(e.stderr, "warning: database %s holds %d %s events of the %d the stream keeps of one database: past it its %s publishes are refused (--max-events-per-database)\n",
				db, rep.NearBound[db][kind], kind, bound, kind)
		}
	}
}

// largestShown is how many databases status names by the events they
// hold (--json has them all).
const largestShown = 5

// printLargest names the databases holding the most of what, largest
// first: the stream's disk is shared, and this is whose events fill it.
func printLargest(e *env, what string, by map[string]uint64) {
	if len(by) == 0 {
		return
	}
	dbs := slices.SortedFunc(maps.Keys(by), func(a, b string) int {
		return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a, b))
	})
	parts := make([]string, 0, largestShown)
	for _, db := range dbs[:min(largestShown, len(dbs))] {
		parts = append(parts, fmt.Sprintf("%s %d", db, by[db]))
	}
	line := fmt.Sprintf("  %s, most first: %s", what, strings.Join(parts, ", "))
	if more := len(dbs) - largestShown; more > 0 {
		line += fmt.Sprintf(" (and %d more databases)", more)
	}
	fmt.Fprintln(e.stdout, line)
}

func printDaemons(e *env, rep *status.Report) {
	fmt.Fprintf(e.stdout, "daemons: %d\n", len(rep.Daemons))
	for _, d := range rep.Daemons {
		line := fmt.Sprintf("  %s version %s", d.ID, d.Version)
		if d.Gateway != "" {
			line += ", gateway " + d.Gateway
		}
		if d.Store != "" {
			line += ", store " + d.Store
		}
		if d.AllowSystemCatalogs == "true" {
			line += ", system catalogs allowed"
		}
		fmt.Fprintln(e.stdout, line)
	}
}
