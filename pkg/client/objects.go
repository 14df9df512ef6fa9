package client

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nuid"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Listing docs and examples. The stream is the record of what was
// published; the index is built from it. So the docs and examples of a
// database are its events folded in stream order: an upsert stores,
// a delete removes. Events that do not decode, or that name another
// database than their subject, were dead-lettered when they came and are
// left out here too.

// StoredExample is an example the stream holds: the last upsert of its
// id, not deleted since.
type StoredExample struct {
	events.Example // ID is always set
	// Event, Seq and Time say which event stored it: its id, its stream
	// sequence (the version the index holds it at) and when the
	// producer made it.
	Event string    `json:"event"`
	Seq   uint64    `json:"seq"`
	Time  time.Time `json:"time,omitzero"`
}

// StoredDoc is a doc the stream holds, without its body.
type StoredDoc struct {
	DocID string            `json:"doc_id"`
	Title string            `json:"title,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Bytes int               `json:"bytes"`
	// Body is the markdown, for a caller that reads it (schemaq check);
	// listings leave it out.
	Body  string    `json:"-"`
	Event string    `json:"event"`
	Seq   uint64    `json:"seq"`
	Time  time.Time `json:"time,omitzero"`
}

// Examples lists db's examples, oldest first.
func (c *Client) Examples(ctx context.Context, db string) ([]StoredExample, error) {
	byID := map[string]StoredExample{}
	err := c.fold(ctx, db, events.ExamplesSubject(db), func(ev *events.Event, seq uint64) {
		switch {
		case ev.Examples != nil:
			for _, ex := range ev.Examples.Examples {
				if ex.ID == "" {
					ex.ID = events.ExampleID(ex.Question)
				}
				byID[ex.ID] = StoredExample{Example: ex, Event: ev.ID, Seq: seq, Time: ev.Time}
			}
		case ev.ExamplesDelete != nil:
			for _, id := range ev.ExamplesDelete.IDs {
				delete(byID, id)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]StoredExample, 0, len(byID))
	for _, ex := range byID {
		out = append(out, ex)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seq != out[j].Seq {
			return out[i].Seq < out[j].Seq
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Docs lists db's docs, oldest first.
func (c *Client) Docs(ctx context.Context, db string) ([]StoredDoc, error) {
	byID := map[string]StoredDoc{}
	err := c.fold(ctx, db, events.DocsSubject(db), func(ev *events.Event, seq uint64) {
		switch {
		case ev.DocUpsert != nil:
			d := ev.DocUpsert
			byID[d.DocID] = StoredDoc{DocID: d.DocID, Title: d.Title, Tags: d.Tags, Bytes: len(d.Body), Body: d.Body, Event: ev.ID, Seq: seq, Time: ev.Time}
		case ev.DocDelete != nil:
			delete(byID, ev.DocDelete.DocID)
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]StoredDoc, 0, len(byID))
	for _, d := range byID {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// fold reads every event on subject, oldest first.
func (c *Client) fold(ctx context.Context, db, subject string, fn func(ev *events.Event, seq uint64)) error {
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	if err := streams.ReadEvents(ctx, s, subject, db, 0, fn); err != nil {
		return fmt.Errorf("list %s: %w", subject, err)
	}
	return nil
}

// DeleteExamples publishes one examples.delete event per thousand ids.
// Each event has a unique id (retries of one publish keep it): a delete
// of an example published again after an earlier delete must not be
// dropped as a duplicate.
func (c *Client) DeleteExamples(ctx context.Context, db string, ids []string) ([]Published, error) {
	var out []Published
	now := time.Now()
	for start := 0; start < len(ids); start += events.MaxExamplesDeleted {
		part := ids[start:min(start+events.MaxExamplesDeleted, len(ids))]
		ev, err := events.New("examples-delete-"+nuid.Next(), db, now, &events.ExamplesDelete{IDs: part})
		if err != nil {
			return out, err
		}
		p, err := c.Publish(ctx, ev)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// DeleteDoc publishes a docs.delete event.
func (c *Client) DeleteDoc(ctx context.Context, db, docID string) (Published, error) {
	now := time.Now()
	ev, err := events.New("doc-delete-"+nuid.Next(), db, now, &events.DocDelete{DocID: docID})
	if err != nil {
		return Published{}, err
	}
	return c.Publish(ctx, ev)
}
