package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// The examples and docs commands list what the stream holds for a
// database and publish deletes. Listing reads the stream, not the index:
// it needs no daemon, and it shows what was published even before a
// worker indexed it.

// exampleView is an example as examples list and show print it.
type exampleView struct {
	client.StoredExample
	// Stale says why the example no longer fits the current catalog
	// (--stale, and show).
	Stale string `json:"stale,omitempty"`
}

// runExamples is parse, then list, show, approve or delete.
func runExamples(ctx context.Context, e *env, args []string) (err error) {
	verb, helped, err := verbOf(e, "examples", args, []string{"list", "show", "approve", "delete"}, "list --db NAME [--stale] | show --db NAME ID | approve --db NAME [--by NAME] ID... | delete --db NAME [--wait DUR] ID...")
	if helped || err != nil {
		return err
	}
	fs := newFlags(e, "examples "+verb, "--db NAME [flags] [ID...]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	stale := fs.Bool("stale", false, "list: only the examples whose SQL no longer fits the current catalog (a relation or column gone), with why")
	wait := fs.Duration("wait", 0, "delete: wait up to this long until the index no longer has them")
	by := fs.String("by", "", "approve: who approves, recorded on the examples (default cli:$USER)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	if err := checkExampleArgs(verb, fs.NArg(), *stale); err != nil {
		return err
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch verb {
	case "delete":
		return deleteExamples(ctx, rctx, e, cli, &c, fs.Args(), *wait)
	case "approve":
		return approveExamples(rctx, e, cli, &c, fs.Args(), approver(e, *by))
	case "show":
		return showExample(rctx, e, cli, &c, fs.Arg(0))
	}
	return listExamples(rctx, e, cli, &c, *stale)
}

func checkExampleArgs(verb string, ids int, stale bool) error {
	switch {
	case verb == "list" && ids > 0:
		return usagef("examples list takes no ids: use examples show ID")
	case verb == "show" && ids != 1:
		return usagef("examples show: give one example id (see examples list)")
	case verb == "delete" && ids == 0:
		return usagef("examples delete: give the ids of the examples to delete (see examples list)")
	case verb == "approve" && ids == 0:
		return usagef("examples approve: give the ids of the feedback examples to approve (see examples list)")
	case verb != "list" && stale:
		return usagef("examples %s: --stale is for list", verb)
	}
	return nil
}

// storedExamples lists db's examples from the stream; none from a
// database nobody published to is an error, not an empty list.
func storedExamples(ctx context.Context, cli *client.Client, db string) ([]exampleView, error) {
	stored, err := cli.Examples(ctx, db)
	if err != nil {
		return nil, err
	}
	if len(stored) == 0 {
		if err := knownDatabase(ctx, cli, db); err != nil {
			return nil, err
		}
	}
	views := make([]exampleView, len(stored))
	for i, s := range stored {
		views[i] = exampleView{StoredExample: s}
	}
	return views, nil
}

func listExamples(ctx context.Context, e *env, cli *client.Client, c *clientFlags, stale bool) error {
	views, err := storedExamples(ctx, cli, *c.db)
	if err != nil {
		return err
	}
	if stale {
		if views, err = markStale(ctx, c, *c.db, views, true); err != nil {
			return err
		}
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(views)
	}
	for _, v := range views {
		line := fmt.Sprintf("%s\t%d\t%s\t%s", v.ID, v.Seq, origin(v.Example), clip(v.Question, 80))
		if v.Stale != "" {
			line += "\tstale: " + v.Stale
		}
		fmt.Fprintln(e.stdout, line)
	}
	what := "example(s)"
	if stale {
		what = "stale example(s)"
	}
	fmt.Fprintf(e.stdout, "%d %s of %s\n", len(views), what, *c.db)
	return nil
}

// showExample prints one example, with whether it still fits.
func showExample(ctx context.Context, e *env, cli *client.Client, c *clientFlags, id string) error {
	views, err := storedExamples(ctx, cli, *c.db)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(views, func(v exampleView) bool { return v.ID == id })
	if i < 0 {
		return fmt.Errorf("examples show: %s has no example %s (examples list shows %d)", *c.db, events.Quote(id), len(views))
	}
	if views, err = markStale(ctx, c, *c.db, views[i:i+1], false); err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(views[0])
	}
	printExample(e, views[0])
	return nil
}

func origin(ex events.Example) string {
	switch {
	case ex.Origin == "":
		return "published"
	case ex.ApprovedBy != "":
		return ex.Origin + " (approved)"
	case ex.Corrected:
		return ex.Origin + " (corrected)"
	}
	return ex.Origin
}

func printExample(e *env, v exampleView) {
	fmt.Fprintf(e.stdout, "id:       %s\n", v.ID)
	fmt.Fprintf(e.stdout, "question: %s\n", v.Question)
	fmt.Fprintf(e.stdout, "origin:   %s\n", origin(v.Example))
	if v.Author != "" {
		fmt.Fprintf(e.stdout, "author:   %s\n", v.Author)
	}
	if v.ApprovedBy != "" {
		fmt.Fprintf(e.stdout, "approved: by %s\n", v.ApprovedBy)
	}
	if v.AskID != "" {
		fmt.Fprintf(e.stdout, "ask id:   %s\n", v.AskID)
	}
	if v.Schema != "" {
		fmt.Fprintf(e.stdout, "schema:   %s\n", v.Schema)
	}
	if v.CatalogVersion > 0 {
		fmt.Fprintf(e.stdout, "checked:  at catalog version %d, reading %s\n", v.CatalogVersion, strings.Join(v.Tables, ", "))
	}
	fmt.Fprintf(e.stdout, "event:    %s (stream sequence %d", v.Event, v.Seq)
	if !v.Time.IsZero() {
		fmt.Fprintf(e.stdout, ", %s", v.Time.Format(time.RFC3339))
	}
	fmt.Fprintln(e.stdout, ")")
	if v.Stale != "" {
		fmt.Fprintf(e.stdout, "stale:    %s\n", v.Stale)
	}
	fmt.Fprintf(e.stdout, "sql:\n%s\n", v.SQL)
}

// markStale checks each example's SQL against the database's current
// catalog with the verdict retrieval and check give (sqlguard.Fit): SQL
// that does not parse or does not fit is stale. only keeps just those.
func markStale(ctx context.Context, c *clientFlags, db string, views []exampleView, only bool) ([]exampleView, error) {
	cat, err := currentCatalog(ctx, c, db)
	if err != nil {
		return nil, err
	}
	names := sqlguard.NewNames(cat)
	out := views[:0]
	for _, v := range views {
		if err := sqlguard.CheckExample(v.SQL, v.Schema, names); err != nil {
			v.Stale = err.Error()
		}
		if v.Stale != "" || !only {
			out = append(out, v)
		}
	}
	return out, nil
}

// currentCatalog reads db's catalog from the bucket.
func currentCatalog(ctx context.Context, c *clientFlags, db string) (*catalog.Catalog, error) {
	js, _, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return catalogOf(ctx, js, db)
}

// catalogOf reads db's catalog from the bucket, through the object
// store when it is large.
func catalogOf(ctx context.Context, js jetstream.JetStream, db string) (*catalog.Catalog, error) {
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return nil, fmt.Errorf("catalog bucket %s: %w", events.CatalogBucket, err)
	}
	objs, err := js.ObjectStore(ctx, events.ObjectBucket)
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", events.ObjectBucket, err)
	}
	cat, _, err := catalogkv.New(kv, catalogkv.WithObjects(objs)).Get(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("catalog of %s: %w", db, err)
	}
	if cat == nil {
		return nil, fmt.Errorf("%w: %s (publish a migration or snapshot)", errNoCatalog, db)
	}
	return cat, nil
}

// errNoCatalog: the database has no catalog yet.
var errNoCatalog = errors.New("no catalog yet")

func deleteExamples(ctx, rctx context.Context, e *env, cli *client.Client, c *clientFlags, ids []string, wait time.Duration) error {
	for i, id := range ids {
		if id == "" || len(id) > 256 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return usagef("examples delete: id %d (%s) is empty, over 256 bytes or has white space", i+1, events.Quote(id))
		}
	}
	since := time.Now()
	pubs, err := cli.DeleteExamples(rctx, *c.db, ids)
	if errors.Is(err, client.ErrNoExample) {
		return notStored(rctx, cli, *c.db, "examples", err)
	}
	if err != nil {
		return err
	}
	if err := waitRemoved(ctx, cli, *c.db, "example", ids, since, wait); err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"database": *c.db, "deleted": ids, "events": len(pubs)})
	}
	fmt.Fprintf(e.stdout, "deleted %d example(s) of %s\n", len(ids), *c.db)
	return nil
}

// approver is who approves: --by, or the user running the command.
func approver(e *env, by string) string {
	if by != "" {
		return by
	}
	if u := e.getenv("USER"); u != "" && !strings.ContainsFunc(u, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "cli:" + u
	}
	return "cli"
}

// approveExamples marks feedback examples as the team's own.
func approveExamples(ctx context.Context, e *env, cli *client.Client, c *clientFlags, ids []string, by string) error {
	pub, err := cli.ApproveExamples(ctx, *c.db, ids, by)
	if err != nil {
		return fmt.Errorf("examples approve: %w; nothing was approved", err)
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"database": *c.db, "approved": ids, "approved_by": by, "seq": pub.Sequence, "duplicate": pub.Duplicate})
	}
	if pub.Duplicate {
		fmt.Fprintf(e.stdout, "%d example(s) of %s were approved already\n", len(ids), *c.db)
		return nil
	}
	fmt.Fprintf(e.stdout, "approved %d example(s) of %s as %s: they count as the team's own from now on\n", len(ids), *c.db, by)
	return nil
}

func runDocs(ctx context.Context, e *env, args []string) (err error) {
	verb, helped, err := verbOf(e, "docs", args, []string{"list", "delete"}, "list --db NAME | delete --db NAME [--wait DUR] DOC_ID...  (publish docs adds them)")
	if helped || err != nil {
		return err
	}
	fs := newFlags(e, "docs "+verb, "--db NAME [flags] [DOC_ID...]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	wait := fs.Duration("wait", 0, "delete: wait up to this long until the index no longer has them")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if err := c.requireDB(); err != nil {
		return err
	}
	switch {
	case verb == "list" && fs.NArg() > 0:
		return usagef("docs list takes no doc ids")
	case verb == "delete" && fs.NArg() == 0:
		return usagef("docs delete: give the doc ids to delete (see docs list)")
	}
	cli, rctx, done, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer done()
	if verb == "delete" {
		return deleteDocs(ctx, rctx, e, cli, &c, fs.Args(), *wait)
	}
	return listDocs(rctx, e, cli, &c)
}

func listDocs(ctx context.Context, e *env, cli *client.Client, c *clientFlags) error {
	docs, err := cli.Docs(ctx, *c.db)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		if err := knownDatabase(ctx, cli, *c.db); err != nil {
			return err
		}
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(docs)
	}
	for _, d := range docs {
		fmt.Fprintf(e.stdout, "%s\t%d\t%d bytes\t%s\n", d.DocID, d.Seq, d.Bytes, clip(d.Title, 80))
	}
	fmt.Fprintf(e.stdout, "%d doc(s) of %s\n", len(docs), *c.db)
	return nil
}

func deleteDocs(ctx, rctx context.Context, e *env, cli *client.Client, c *clientFlags, ids []string, wait time.Duration) error {
	since := time.Now()
	_, err := cli.DeleteDocs(rctx, *c.db, ids)
	if errors.Is(err, client.ErrNoDoc) {
		return notStored(rctx, cli, *c.db, "docs", err)
	}
	if err != nil {
		return err
	}
	if err := waitRemoved(ctx, cli, *c.db, "doc", ids, since, wait); err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"database": *c.db, "deleted": ids})
	}
	fmt.Fprintf(e.stdout, "deleted %d doc(s) of %s\n", len(ids), *c.db)
	return nil
}

// notStored is a delete naming what the stream does not hold (err):
// deleting nothing is not a success to report, and a database schemaq
// does not know is the mistake to name first.
func notStored(ctx context.Context, cli *client.Client, db, listed string, err error) error {
	if err := knownDatabase(ctx, cli, db); err != nil {
		return err
	}
	return &events.Error{Code: events.CodeNotFound, Message: fmt.Sprintf("%v (%s list shows what it has); nothing was deleted", err, listed)}
}

// knownDatabase refuses a database schemaq has no catalog for, so that an
// empty listing of a misspelt name is not read as "none". When the
// catalogs cannot be listed (an account without JetStream) it says
// nothing.
func knownDatabase(ctx context.Context, cli *client.Client, db string) error {
	dbs, err := cli.Databases(ctx)
	if err != nil {
		return nil
	}
	if slices.ContainsFunc(dbs, func(d client.Database) bool { return d.Name == db }) {
		return nil
	}
	return &events.Error{Code: events.CodeUnknownDatabase, Message: fmt.Sprintf("no database %s: schemaq has no catalog, example or doc for it (`schemaq databases` lists them)", events.Quote(db))}
}

// waitRemoved waits up to limit (0: not at all) until the index no
// longer has the ids of kind it had since then (client.WaitRemoved).
func waitRemoved(ctx context.Context, cli *client.Client, db, kind string, ids []string, since time.Time, limit time.Duration) error {
	if limit <= 0 {
		return nil
	}
	refs := make([]events.IndexedRef, len(ids))
	for i, id := range ids {
		refs[i] = events.IndexedRef{Kind: kind, Name: id}
	}
	return waitFor(ctx, db, limit, func(ctx context.Context) error { return cli.WaitRemoved(ctx, db, refs, since) })
}

// clip shortens s to n characters for a one-line listing.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
