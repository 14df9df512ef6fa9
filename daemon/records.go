package daemon

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/impact"
	"github.com/schemaq/schemaq/pkg/namewords"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// The console's pages about what a team published: its examples (with
// whether each still fits the catalog), its docs as sections, and the
// check of a migration not yet published. They read the stream, as
// `schemaq examples`, `docs` and `check` do, and the catalog this daemon
// holds.

// Records is what was published for a database, read from the stream,
// and the deletes the console publishes; *client.Client is one.
type Records interface {
	Examples(ctx context.Context, db string) ([]client.StoredExample, error)
	Docs(ctx context.Context, db string) ([]client.StoredDoc, error)
	DocsWithBodies(ctx context.Context, db string) ([]client.StoredDoc, error)
	DocBodies(ctx context.Context, db string, docs []client.StoredDoc, each func(d client.StoredDoc, body string) bool) error
	DeleteExamples(ctx context.Context, db string, ids []string) ([]client.Published, error)
	ApproveExamples(ctx context.Context, db string, ids []string, by string) (client.Published, error)
}

// WithRecords lets the console list examples and docs, delete examples
// and check migrations through r. Without it those pages answer
// stream_unavailable.
func WithRecords(r Records) Option { return func(d *Daemon) { d.records = r } }

// Bounds of the console's requests: one page deletes a page of examples,
// and a check is of what one pull request adds.
const (
	maxConsoleIDs        = events.MaxExamplesDeleted
	maxCheckedMigrations = 200
	maxMigrationName     = 1024
)

// ExamplesRequest lists a database's examples, a page at a time.
type ExamplesRequest struct {
	Database string `json:"database"`
	// Stale keeps only those that no longer fit the catalog.
	Stale bool `json:"stale,omitempty"`
	// AfterSeq and AfterID continue a listing after the example of that
	// id stored at that stream sequence: a reply's next_seq and next_id
	// (one event stores many examples, so the sequence alone is not a
	// place in the listing).
	AfterSeq uint64 `json:"after_seq,omitempty"`
	AfterID  string `json:"after_id,omitempty"`
	// Limit bounds the examples in a page (0: defaultExamplesLimit, at
	// most maxExamplesLimit). A page also stops once its questions and
	// SQL pass maxRecordsPageBytes, after at least one example.
	Limit int `json:"limit,omitempty"`
}

func (r *ExamplesRequest) databaseName() string { return r.Database }

// ExampleRecord is a stored example and, when it no longer fits the
// catalog, why.
type ExampleRecord struct {
	client.StoredExample
	Stale string `json:"stale,omitempty"`
}

// ExamplesReply is a page of examples, oldest first.
type ExamplesReply struct {
	Database string          `json:"database"`
	Version  int64           `json:"version"`
	Examples []ExampleRecord `json:"examples"`
	// Total is how many examples the listing has in all (with stale,
	// how many are stale).
	Total int `json:"total"`
	// NextSeq and NextID, when set, are the after_seq and after_id of
	// the next page.
	NextSeq uint64 `json:"next_seq,omitempty"`
	NextID  string `json:"next_id,omitempty"`
}

// ExampleIDsRequest names examples of a database, to delete or approve.
type ExampleIDsRequest struct {
	Database string   `json:"database"`
	IDs      []string `json:"ids"`
}

func (r *ExampleIDsRequest) databaseName() string { return r.Database }

// ExamplesDeleteReply says what was deleted, by which stream sequences.
type ExamplesDeleteReply struct {
	Database string   `json:"database"`
	Deleted  []string `json:"deleted"`
	Seqs     []uint64 `json:"seqs"`
}

// ExamplesApproveReply says which examples were approved, by whom, at
// which stream sequence.
type ExamplesApproveReply struct {
	Database   string   `json:"database"`
	Approved   []string `json:"approved"`
	ApprovedBy string   `json:"approved_by"`
	Seq        uint64   `json:"seq,omitempty"`
	// Duplicate: they were approved already; nothing new was stored.
	Duplicate bool `json:"duplicate,omitempty"`
}

// DocsRequest lists a database's docs, a page at a time.
type DocsRequest struct {
	Database string `json:"database"`
	// AfterSeq continues a listing after the doc stored at this stream
	// sequence: a reply's next_seq.
	AfterSeq uint64 `json:"after_seq,omitempty"`
	// Limit bounds the docs in a page (0: defaultDocsLimit, at most
	// maxDocsLimit). A page also stops once its sections pass
	// maxRecordsPageBytes, after at least one doc.
	Limit int `json:"limit,omitempty"`
}

func (r *DocsRequest) databaseName() string { return r.Database }

// DocSection is one section of a doc, as retrieval indexes it.
type DocSection struct {
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

// DocRecord is a stored doc with its sections.
type DocRecord struct {
	client.StoredDoc
	Sections []DocSection `json:"sections"`
}

// DocsReply is a page of docs, oldest first.
type DocsReply struct {
	Database string      `json:"database"`
	Docs     []DocRecord `json:"docs"`
	// Total is how many docs the database has.
	Total int `json:"total"`
	// NextSeq, when set, is the after_seq of the next page.
	NextSeq uint64 `json:"next_seq,omitempty"`
}

// A page of docs or examples is bounded in count and in bytes: a
// database may hold thousands of docs of up to a MiB each, or a query
// log of a hundred thousand examples, and one reply of all of them
// would be gigabytes in the daemon's memory and the browser's.
const (
	defaultDocsLimit     = 50
	maxDocsLimit         = 500
	defaultExamplesLimit = 200
	maxExamplesLimit     = 1000
	maxRecordsPageBytes  = 4 << 20
)

// CheckRequest checks migrations not yet published, in order, after the
// catalog's version, as `schemaq check` does.
type CheckRequest struct {
	Database   string           `json:"database"`
	Migrations []CheckMigration `json:"migrations"`
	// Strict applies as workers started with --strict-catalog do.
	Strict bool `json:"strict,omitempty"`
	// AllowDrift keeps drift from making the check fail.
	AllowDrift bool `json:"allow_drift,omitempty"`
}

// CheckMigration is one migration file: its name and its SQL.
type CheckMigration struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

func (r *CheckRequest) databaseName() string { return r.Database }

// CheckReply is check's report, and whether it fails a CI gate.
type CheckReply struct {
	*impact.Report
	Breaks bool `json:"breaks"`
}

func (d *Daemon) recordsRoutes() map[string]http.Handler {
	long := 3 * d.cfg.RequestTimeout // a check replays DDL; a listing reads the stream
	return map[string]http.Handler{
		"examples":         consoleRoute(d, "examples", mayRead, long, d.listExamples),
		"examples/delete":  consoleRoute(d, "examples/delete", mayWrite, long, d.deleteExamples),
		"examples/approve": consoleRoute(d, "examples/approve", mayWrite, long, d.approveExamples),
		"docs":             consoleRoute(d, "docs", mayRead, long, d.listDocs),
		"check":            consoleRoute(d, "check", mayRead, long, d.checkMigrations),
	}
}

// heldCatalog is db's catalog as this daemon holds it, or unknown_database.
func (d *Daemon) heldCatalog(db string) (*catalog.Catalog, error) {
	if db == "" {
		return nil, events.Errorf(events.CodeBadRequest, "field database is required")
	}
	cat := d.cats.Catalog(db)
	if cat == nil {
		return nil, events.Errorf(events.CodeUnknownDatabase, "database %s has no catalog here", events.Quote(db))
	}
	return cat, nil
}

func (d *Daemon) recordsOrUnavailable() (Records, error) {
	if d.records == nil {
		return nil, events.Errorf(events.CodeStreamUnavailable, "this daemon was started without a way to read the stream")
	}
	return d.records, nil
}

func (d *Daemon) listExamples(ctx context.Context, _ *principal, req *ExamplesRequest) (any, error) {
	if req.Limit < 0 || req.Limit > maxExamplesLimit {
		return nil, events.Errorf(events.CodeBadRequest, "field limit: must be between 0 and %d, got %d", maxExamplesLimit, req.Limit)
	}
	cat, err := d.heldCatalog(req.Database)
	if err != nil {
		return nil, err
	}
	recs, err := d.recordsOrUnavailable()
	if err != nil {
		return nil, err
	}
	stored, err := recs.Examples(ctx, req.Database)
	if err != nil {
		return nil, fmt.Errorf("examples of %s: %w", req.Database, err)
	}
	// The one check of whether SQL still fits, as `examples list --stale`
	// and retrieval use. A page of every example checks its own; a page
	// of the stale ones needs them all checked, to find them and to say
	// how many there are.
	names := sqlguard.NewNames(cat)
	stale := func(ex client.StoredExample) string {
		if err := d.checkExample(ex.SQL, ex.Schema, names); err != nil {
			return err.Error()
		}
		return ""
	}
	listed := make([]ExampleRecord, 0, len(stored))
	for _, s := range stored {
		rec := ExampleRecord{StoredExample: s}
		if req.Stale {
			if rec.Stale = stale(s); rec.Stale == "" {
				continue
			}
		}
		listed = append(listed, rec)
	}
	page := examplesPage(req, cat.Version, listed)
	if !req.Stale {
		for i := range page.Examples {
			page.Examples[i].Stale = stale(page.Examples[i].StoredExample)
		}
	}
	return page, nil
}

// examplesPage is the page of listed (in stream order, then by id) that
// follows the request's place.
func examplesPage(req *ExamplesRequest, version int64, listed []ExampleRecord) *ExamplesReply {
	limit := req.Limit
	if limit == 0 {
		limit = defaultExamplesLimit
	}
	out := &ExamplesReply{Database: req.Database, Version: version, Examples: []ExampleRecord{}, Total: len(listed)}
	from, found := slices.BinarySearchFunc(listed, req, func(r ExampleRecord, req *ExamplesRequest) int {
		return cmp.Or(cmp.Compare(r.Seq, req.AfterSeq), cmp.Compare(r.ID, req.AfterID))
	})
	if found {
		from++
	}
	bytes := 0
	for _, rec := range listed[from:] {
		if len(out.Examples) == limit || (len(out.Examples) > 0 && bytes >= maxRecordsPageBytes) {
			last := out.Examples[len(out.Examples)-1]
			out.NextSeq, out.NextID = last.Seq, last.ID
			break
		}
		out.Examples = append(out.Examples, rec)
		bytes += len(rec.Question) + len(rec.SQL) + len(rec.Stale)
	}
	return out
}

// maxParsedExamples bounds the examples whose parsed SQL the console's
// listing keeps.
const maxParsedExamples = 100_000

// parsedSQL is an example's SQL as parsed, or why it does not parse.
type parsedSQL struct {
	q   *sqlguard.Query
	err error
}

// checkExample is sqlguard.CheckExample with the parse kept: parsing is
// most of its cost (about 100 µs an example), it depends on the SQL
// alone, and a listing of ten thousand examples would otherwise parse
// them all again on every view. Only the fit to the catalog is done
// each time.
func (d *Daemon) checkExample(sql, schema string, names *sqlguard.Names) error {
	sum := sha256.Sum256([]byte(sql))
	p := d.parsedExamples.Get(string(sum[:]), func() parsedSQL {
		q, err := sqlguard.ParseQuery(sql)
		return parsedSQL{q, err}
	})
	if p.err != nil {
		return p.err
	}
	return p.q.Fit(names, schema).Err()
}

// exampleIDs checks a request naming examples to act on (verb: delete,
// approve) and returns the records to act through.
func (d *Daemon) exampleIDs(req *ExampleIDsRequest, verb string) (Records, error) {
	if _, err := d.heldCatalog(req.Database); err != nil {
		return nil, err
	}
	switch {
	case len(req.IDs) == 0:
		return nil, events.Errorf(events.CodeBadRequest, "field ids: give the ids of the examples to %s", verb)
	case len(req.IDs) > maxConsoleIDs:
		return nil, events.Errorf(events.CodeBadRequest, "field ids: %d ids, at most %d in one request", len(req.IDs), maxConsoleIDs)
	}
	return d.recordsOrUnavailable()
}

func (d *Daemon) deleteExamples(ctx context.Context, who *principal, req *ExampleIDsRequest) (any, error) {
	recs, err := d.exampleIDs(req, "delete")
	if err != nil {
		return nil, err
	}
	pubs, err := recs.DeleteExamples(ctx, req.Database, req.IDs)
	switch {
	case errors.Is(err, client.ErrNoExample):
		// A delete of an id that is not there is a mistake to name,
		// not a success to report.
		return nil, events.Errorf(events.CodeNotFound, "%v; nothing was deleted", err)
	case err != nil:
		return nil, events.Errorf(events.CodeStreamUnavailable, "the stream did not take the delete (%v); sending it again is safe", err)
	}
	out := &ExamplesDeleteReply{Database: req.Database, Deleted: req.IDs}
	for _, p := range pubs {
		out.Seqs = append(out.Seqs, p.Sequence)
	}
	d.log.Info("examples deleted from the console", zap.String("database", req.Database), zap.Int("examples", len(req.IDs)), zap.String("by", who.nameOr("http")))
	return out, nil
}

func (d *Daemon) approveExamples(ctx context.Context, who *principal, req *ExampleIDsRequest) (any, error) {
	recs, err := d.exampleIDs(req, "approve")
	if err != nil {
		return nil, err
	}
	// The approver is who the token says, as feedback's author is.
	by := "http"
	if who != nil {
		by = "http:" + who.Name
	}
	pub, err := recs.ApproveExamples(ctx, req.Database, req.IDs, by)
	switch {
	case errors.Is(err, client.ErrNoExample):
		return nil, events.Errorf(events.CodeNotFound, "%v; nothing was approved", err)
	case errors.Is(err, client.ErrNotFeedback):
		return nil, events.Errorf(events.CodeBadRequest, "%v; nothing was approved", err)
	case err != nil:
		return nil, events.Errorf(events.CodeStreamUnavailable, "the stream did not take the approval (%v); sending it again is safe", err)
	}
	d.log.Info("examples approved from the console", zap.String("database", req.Database), zap.Strings("examples", req.IDs), zap.String("by", by))
	return &ExamplesApproveReply{Database: req.Database, Approved: req.IDs, ApprovedBy: by, Seq: pub.Sequence, Duplicate: pub.Duplicate}, nil
}

func (d *Daemon) listDocs(ctx context.Context, _ *principal, req *DocsRequest) (any, error) {
	if req.Limit < 0 || req.Limit > maxDocsLimit {
		return nil, events.Errorf(events.CodeBadRequest, "field limit: must be between 0 and %d, got %d", maxDocsLimit, req.Limit)
	}
	if _, err := d.heldCatalog(req.Database); err != nil {
		return nil, err
	}
	recs, err := d.recordsOrUnavailable()
	if err != nil {
		return nil, err
	}
	stored, err := recs.Docs(ctx, req.Database)
	if err != nil {
		return nil, fmt.Errorf("docs of %s: %w", req.Database, err)
	}
	return docsPage(ctx, recs, req, stored)
}

// docsPage reads the bodies of the page's docs and splits each into the
// sections retrieval indexes, so a page shows what a search can find. A
// doc whose event left the stream since the listing (the stream's
// limits, a purge) is passed over: the next listing says what is stored
// now.
func docsPage(ctx context.Context, recs Records, req *DocsRequest, stored []client.StoredDoc) (*DocsReply, error) {
	limit := req.Limit
	if limit == 0 {
		limit = defaultDocsLimit
	}
	out := &DocsReply{Database: req.Database, Docs: []DocRecord{}, Total: len(stored)}
	from, _ := slices.BinarySearchFunc(stored, req.AfterSeq+1, func(s client.StoredDoc, seq uint64) int { return cmp.Compare(s.Seq, seq) })
	rest := stored[from:]
	bytes := 0
	err := recs.DocBodies(ctx, req.Database, rest, func(s client.StoredDoc, body string) bool {
		rec := DocRecord{StoredDoc: s, Sections: []DocSection{}}
		for _, c := range chunk.Doc(req.Database, s.DocID, s.Title, body, s.Tags, chunk.Options{}) {
			rec.Sections = append(rec.Sections, DocSection{Heading: c.Title, Text: c.Text})
			bytes += len(c.Title) + len(c.Text)
		}
		out.Docs = append(out.Docs, rec)
		if len(out.Docs) < limit && bytes < maxRecordsPageBytes {
			return true
		}
		if s.Seq != rest[len(rest)-1].Seq {
			out.NextSeq = s.Seq
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("docs of %s: %w", req.Database, err)
	}
	return out, nil
}

func (d *Daemon) checkMigrations(ctx context.Context, _ *principal, req *CheckRequest) (any, error) {
	switch {
	case req.Database == "":
		return nil, events.Errorf(events.CodeBadRequest, "field database is required")
	case len(req.Migrations) == 0:
		return nil, events.Errorf(events.CodeBadRequest, "field migrations: give at least one migration")
	case len(req.Migrations) > maxCheckedMigrations:
		return nil, events.Errorf(events.CodeBadRequest, "field migrations: %d migrations, at most %d in one check", len(req.Migrations), maxCheckedMigrations)
	}
	for i, m := range req.Migrations {
		if strings.TrimSpace(m.Name) == "" || len(m.Name) > maxMigrationName {
			return nil, events.Errorf(events.CodeBadRequest, "field migrations[%d].name: a file name of at most %d bytes is required", i, maxMigrationName)
		}
	}
	recs, err := d.recordsOrUnavailable()
	if err != nil {
		return nil, err
	}
	// A database nobody published to yet is checked from an empty
	// catalog, as its first migrations would apply.
	cat := d.cats.Catalog(req.Database)
	if cat == nil {
		cat = catalog.New(req.Database)
	}
	var pending []impact.Migration
	for i, m := range req.Migrations {
		pending = append(pending, impact.Migration{Seq: cat.Version + int64(i) + 1, Source: m.Name, SQL: m.SQL})
	}
	in, err := impact.Gather(ctx, recs, cat, pending)
	if err != nil {
		return nil, err
	}
	// The workers' setting is theirs; the check refuses as their default.
	in.Strict, in.MaxWords = req.Strict, namewords.DefaultMaxPerDatabase
	rep := impact.Check(ctx, *in)
	if err := ctx.Err(); err != nil {
		return nil, events.Errorf(events.CodeTimeout, "the check did not finish within its deadline")
	}
	return &CheckReply{Report: rep, Breaks: rep.Breaks(req.AllowDrift)}, nil
}
