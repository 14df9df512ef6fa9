package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/streams"
)

// History reads db's catalog history from the catalog bucket: its
// version, the migrations applied and the snapshot it starts from. A
// database without a catalog (or a server without the bucket yet) has an
// empty one.
func (c *Client) History(ctx context.Context, db string) (*events.CatalogHistory, error) {
	e, err := c.catalogEntry(ctx, db)
	if noJetStream(err) {
		return c.daemonHistory(ctx, db)
	}
	if e == nil || err != nil {
		return &events.CatalogHistory{Database: db}, err
	}
	return streams.CatalogHistory(ctx, c.js, e)
}

// CatalogVersion is db's catalog version, read from its entry's header
// alone (0: no catalog): what a snapshot numbers itself after, even when
// the catalog's body is damaged.
func (c *Client) CatalogVersion(ctx context.Context, db string) (int64, error) {
	e, err := c.catalogEntry(ctx, db)
	if noJetStream(err) {
		h, err := c.daemonHistory(ctx, db)
		if err != nil {
			return 0, err
		}
		return h.Version, nil
	}
	if e == nil || err != nil {
		return 0, err
	}
	return entryVersion(e)
}

// daemonHistory asks a daemon for db's history: a producer in a team's
// own account (docs/deploy.md) has no JetStream to read the bucket with.
// The daemon's copy follows the bucket by a watch, so it may lag a
// publish made just before.
func (c *Client) daemonHistory(ctx context.Context, db string) (*events.CatalogHistory, error) {
	rep, err := c.Tables(ctx, &events.TablesRequest{Database: db, Limit: 1, History: true})
	if err != nil {
		return nil, fmt.Errorf("catalog history of %s (asked of a daemon: this account has no JetStream): %w", db, err)
	}
	if rep.History == nil {
		return nil, fmt.Errorf("catalog history of %s: the daemon that answered predates history in tables replies; upgrade it, or publish from an account with JetStream", db)
	}
	return rep.History, nil
}

// catalogEntry is db's entry in the catalog bucket; nil without one (or
// without the bucket yet).
func (c *Client) catalogEntry(ctx context.Context, db string) (jetstream.KeyValueEntry, error) {
	kv, err := c.catalogs(ctx)
	if kv == nil || err != nil {
		return nil, err
	}
	return c.entry(ctx, kv, db)
}

// MigrationEvents plans the migration files at paths against db's
// catalog, as migration tools plan against their schema_migrations table
// (migrate.MakePlan), and returns the pending ones as events numbered
// after what the catalog has applied, with the plan's warnings. A
// migration event's id carries a token of this run: the duplicate window
// still drops a retried publish of the same event, while planning again
// re-sends what is still pending (a refused migration, fixed) instead of
// having it dropped as a duplicate. Workers apply a seq once.
func (c *Client) MigrationEvents(ctx context.Context, db string, paths []string, opts migrate.PlanOptions, now time.Time) ([]*events.Event, []string, error) {
	found, err := migrate.DiscoverAll(paths...)
	if err != nil {
		return nil, nil, err
	}
	steps, err := migrate.Read(found.Files)
	if err != nil {
		return nil, nil, err
	}
	h := &events.CatalogHistory{Database: db}
	if opts.Positional == 0 {
		if h, err = c.History(ctx, db); err != nil {
			return nil, nil, err
		}
	}
	plan, err := migrate.MakePlan(steps, h, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("publish migrations to %s: %w", db, err)
	}
	run := RunToken()
	var out []*events.Event
	for i, s := range plan.Pending {
		seq := plan.From + int64(i)
		m := &events.Migration{Seq: seq, Source: filepath.ToSlash(s.Name), MigrationID: s.ID(), Repeatable: s.Repeatable}
		m.SQL, m.SQLGzip = SQLPayload(s.SQL)
		ev, err := events.New(fmt.Sprintf("%s-m-%d-%s-%s", db, seq, s.Checksum[:12], run), db, now, m)
		if err != nil {
			return nil, nil, fmt.Errorf("migration %s: %w", s.Name, err)
		}
		out = append(out, ev)
	}
	return out, append(found.Skipped, plan.Warnings...), nil
}

// PublishedMigrations is what PublishMigrations did.
type PublishedMigrations struct {
	Events    []*events.Event
	Published []Published // one per event
	Warnings  []string    // the plan's: back-dated migrations, accepted changes
}

// PublishMigrations plans the migration files at paths against db's
// catalog (MigrationEvents) and publishes the pending ones in order.
// WaitApplied then waits for the last.
func (c *Client) PublishMigrations(ctx context.Context, db string, paths []string, opts migrate.PlanOptions) (*PublishedMigrations, error) {
	evs, warnings, err := c.MigrationEvents(ctx, db, paths, opts, time.Now())
	if err != nil {
		return nil, err
	}
	out := &PublishedMigrations{Events: evs, Warnings: warnings}
	for _, ev := range evs {
		p, err := c.Publish(ctx, ev)
		if err != nil {
			return out, err
		}
		out.Published = append(out.Published, p)
	}
	return out, nil
}

// compressAbove is the script size from which events carry the SQL
// gzip-compressed: schema dumps of large applications exceed the event
// limit as text, but compress tenfold.
const compressAbove = 256 << 10

// SQLPayload is a script as an event carries it: as text, or
// gzip-compressed when large.
func SQLPayload(sql string) (string, []byte) {
	if len(sql) > compressAbove {
		return "", events.GzipSQL(sql)
	}
	return sql, nil
}

// RunToken names one publish run in its events' ids: a publish retried
// within the run is dropped by the stream's duplicate window, and a run
// after it publishes again.
func RunToken() string {
	var tok [4]byte
	_, _ = rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}
