package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/deadletter"
)

// Retired is what RetireDatabase removed.
type Retired struct {
	Events  uint64 `json:"events"`  // schema, docs and examples events in the stream
	Letters int    `json:"letters"` // dead letters
	Objects int    `json:"objects"` // SQL and catalogs in the object store
}

// RetireDatabase removes what schemaq holds of db: its events from the
// stream (so that nothing replays them), its dead letters, its objects,
// and last its catalog entry, whose deletion tells every worker to drop
// db from its index (workers.forget). Publishing to db again starts a
// new history at seq 1. Stop publishing to db first: an event published
// while it runs may survive it.
func (c *Client) RetireDatabase(ctx context.Context, db string) (*Retired, error) {
	if err := events.ValidateDatabase(db); err != nil {
		return nil, err
	}
	out := &Retired{}
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("retire %s: stream %s: %w", db, events.Stream, err)
	}
	for _, subject := range []string{events.SchemaSubject(db), events.DocsSubject(db), events.ExamplesSubject(db)} {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return out, fmt.Errorf("retire %s: %w", db, err)
		}
		out.Events += info.State.Subjects[subject]
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return out, fmt.Errorf("retire %s: purge %s: %w", db, subject, err)
		}
	}
	box, err := deadletter.Open(ctx, c.js)
	if err != nil {
		return out, fmt.Errorf("retire %s: %w", db, err)
	}
	n, err := box.Purge(ctx, db)
	if err != nil {
		return out, fmt.Errorf("retire %s: dead letters: %w", db, err)
	}
	out.Letters = int(n)
	if out.Objects, err = c.dropObjects(ctx, db); err != nil {
		return out, err
	}
	kv, err := c.catalogs(ctx)
	if err != nil {
		return out, fmt.Errorf("retire %s: %w", db, err)
	}
	if kv == nil {
		return out, nil // no catalog was ever written
	}
	if err := kv.Purge(ctx, db); err != nil {
		return out, fmt.Errorf("retire %s: catalog entry: %w", db, err)
	}
	return out, nil
}

// dropObjects deletes db's objects: its events' SQL and its catalogs.
func (c *Client) dropObjects(ctx context.Context, db string) (int, error) {
	obj, err := c.js.ObjectStore(ctx, events.ObjectBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("retire %s: object store: %w", db, err)
	}
	infos, err := obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("retire %s: list objects: %w", db, err)
	}
	n := 0
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, "events/"+db+"/") && !strings.HasPrefix(info.Name, "catalogs/"+db+"/") {
			continue
		}
		if err := obj.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return n, fmt.Errorf("retire %s: delete object %s: %w", db, info.Name, err)
		}
		n++
	}
	return n, nil
}
