package client

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/schemaq/schemaq/events"
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

// StoredDoc is a doc the stream holds.
type StoredDoc struct {
	DocID string            `json:"doc_id"`
	Title string            `json:"title,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	Bytes int               `json:"bytes"`
	// Body is the markdown: DocsWithBodies sets it, Docs does not
	// (DocBody reads one).
	Body  string    `json:"-"`
	Event string    `json:"event"`
	Seq   uint64    `json:"seq"`
	Time  time.Time `json:"time,omitzero"`
}

// Examples lists db's examples, oldest first (by stream sequence, then
// id).
func (c *Client) Examples(ctx context.Context, db string) ([]StoredExample, error) {
	return foldKept(ctx, c, &c.exampleListings, db, events.ExamplesSubject(db), exampleFold)
}

// exampleFold folds examples.upsert and examples.delete events.
var exampleFold = folding[StoredExample]{
	key: func(ex StoredExample) string { return ex.ID },
	apply: func(byID map[string]StoredExample, ev *events.Event, seq uint64) {
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
	},
	compare: func(a, b StoredExample) int { return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID)) },
}

// Docs lists db's docs, oldest first, without their bodies: a listing
// of thousands of docs of up to a MiB each need not hold them all
// (DocBody reads the one a caller shows).
func (c *Client) Docs(ctx context.Context, db string) ([]StoredDoc, error) {
	return foldKept(ctx, c, &c.docListings, db, events.DocsSubject(db), docFold(false))
}

// DocsWithBodies lists db's docs, oldest first, with their bodies: a
// check of what a migration breaks reads every one. It folds the
// stream each time; its bodies are not kept.
func (c *Client) DocsWithBodies(ctx context.Context, db string) ([]StoredDoc, error) {
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	docs, _, err := fold(ctx, s, db, events.DocsSubject(db), docFold(true))
	return docs, err
}

// docFold folds docs.upsert and docs.delete events, with the docs'
// bodies or without.
func docFold(bodies bool) folding[StoredDoc] {
	return folding[StoredDoc]{
		key: func(d StoredDoc) string { return d.DocID },
		apply: func(byID map[string]StoredDoc, ev *events.Event, seq uint64) {
			switch {
			case ev.DocUpsert != nil:
				d := ev.DocUpsert
				sd := StoredDoc{DocID: d.DocID, Title: d.Title, Tags: d.Tags, Bytes: len(d.Body), Event: ev.ID, Seq: seq, Time: ev.Time}
				if bodies {
					sd.Body = d.Body
				}
				byID[d.DocID] = sd
			case ev.DocDelete != nil:
				delete(byID, ev.DocDelete.DocID)
			}
		},
		compare: func(a, b StoredDoc) int { return cmp.Compare(a.Seq, b.Seq) },
	}
}

// DocBody reads the body of a doc a listing gave, from the event that
// stored it: the version the listing saw, even if the doc was stored
// again since. ErrNoDoc when that event is gone from the stream (its
// limits or a purge took it) or the sequence holds something else than
// that doc's upsert in db.
func (c *Client) DocBody(ctx context.Context, db string, d StoredDoc) (string, error) {
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return "", fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	return docBody(ctx, s, db, d)
}

// DocBodies calls each with docs, in order, and their bodies as DocBody
// reads them, one at a time and looking the stream up once, until each
// returns false. A doc whose event has left the stream since the
// listing is passed over; any other failure ends the read.
func (c *Client) DocBodies(ctx context.Context, db string, docs []StoredDoc, each func(d StoredDoc, body string) bool) error {
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	for _, d := range docs {
		body, err := docBody(ctx, s, db, d)
		switch {
		case errors.Is(err, ErrNoDoc):
			continue
		case err != nil:
			return err
		case !each(d, body):
			return nil
		}
	}
	return nil
}

func docBody(ctx context.Context, s jetstream.Stream, db string, d StoredDoc) (string, error) {
	msg, err := s.GetMsg(ctx, d.Seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return "", fmt.Errorf("doc %s at stream sequence %d: %w", events.Quote(d.DocID), d.Seq, ErrNoDoc)
	case err != nil:
		return "", fmt.Errorf("doc %s at stream sequence %d: %w", events.Quote(d.DocID), d.Seq, err)
	}
	ev, err := events.Decode(msg.Data, 0)
	if err != nil || msg.Subject != events.DocsSubject(db) || ev.Database != db || ev.DocUpsert == nil || ev.DocUpsert.DocID != d.DocID {
		return "", fmt.Errorf("doc %s: stream sequence %d does not hold its upsert: %w", events.Quote(d.DocID), d.Seq, ErrNoDoc)
	}
	return ev.DocUpsert.Body, nil
}

// DeleteExamples publishes one examples.delete event per thousand ids.
// Every id must be one of db's stored examples: a delete naming one
// that is not is a mistake to name (ErrNoExample, with every such id),
// not a success to report, and then nothing is published. Each event has
// a unique id (retries of one publish keep it): a delete of an example
// published again after an earlier delete must not be dropped as a
// duplicate.
func (c *Client) DeleteExamples(ctx context.Context, db string, ids []string) ([]Published, error) {
	stored, err := c.Examples(ctx, db)
	if err != nil {
		return nil, err
	}
	if _, err := allStored(db, "example", ids, stored, func(s StoredExample) string { return s.ID }, ErrNoExample); err != nil {
		return nil, err
	}
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

// allStored returns the ids of stored (by key) when every id is one of
// them, and otherwise an error naming those that are not, as is
// (ErrNoExample, ErrNoDoc).
func allStored[T any](db, kind string, ids []string, stored []T, key func(T) string, is error) (map[string]bool, error) {
	have := make(map[string]bool, len(stored))
	for _, s := range stored {
		have[key(s)] = true
	}
	var missing []string
	for _, id := range ids {
		if !have[id] {
			missing = append(missing, events.Quote(id))
		}
	}
	if len(missing) > 0 {
		return nil, &missingIDs{db: db, kind: kind, ids: missing, is: is}
	}
	return have, nil
}

// missingIDs names the ids a database holds no example or doc of.
type missingIDs struct {
	db, kind string
	ids      []string // quoted
	is       error
}

func (e *missingIDs) Error() string {
	return fmt.Sprintf("%s has no %s %s", e.db, e.kind, strings.Join(e.ids, ", "))
}

func (e *missingIDs) Is(target error) bool { return target == e.is }

// ErrNoExample is an id the database has no example of.
var ErrNoExample = errors.New("no such example")

// ErrNoDoc is an id the database has no doc of.
var ErrNoDoc = errors.New("no such doc")

// ErrNotFeedback is an approval of an example that is not feedback: a
// published example is the team's own already.
var ErrNotFeedback = errors.New("not a feedback example")

// ApproveExamples marks db's feedback examples ids approved by by: each
// is published again, as it was, with ApprovedBy set, and from then on
// counts as the team's own. Every id must be a stored feedback example
// (ErrNoExample, ErrNotFeedback); those approved already are left as
// they are. The event is named by the examples and their stored
// versions, so the same approval twice stores once.
func (c *Client) ApproveExamples(ctx context.Context, db string, ids []string, by string) (Published, error) {
	stored, err := c.Examples(ctx, db)
	if err != nil {
		return Published{}, err
	}
	byID := make(map[string]StoredExample, len(stored))
	for _, s := range stored {
		byID[s.ID] = s
	}
	var approve []events.Example
	name := "examples-approve"
	for _, id := range ids {
		s, ok := byID[id]
		switch {
		case !ok:
			return Published{}, fmt.Errorf("example %s: %w", events.Quote(id), ErrNoExample)
		case s.Origin != events.OriginFeedback:
			return Published{}, fmt.Errorf("example %s: %w: a published example is the team's own already", events.Quote(id), ErrNotFeedback)
		case s.ApprovedBy != "":
			continue
		}
		ex := s.Example
		ex.ApprovedBy = by
		approve = append(approve, ex)
		name += fmt.Sprintf("-%s.%d", id, s.Seq)
	}
	if len(approve) == 0 {
		return Published{Duplicate: true}, nil
	}
	if len(name) > 200 {
		name = fmt.Sprintf("examples-approve-%x", sha256.Sum256([]byte(name)))
	}
	ev, err := events.New(name, db, time.Now(), &events.ExamplesUpsert{Examples: approve})
	if err != nil {
		return Published{}, err
	}
	return c.Publish(ctx, ev)
}

// DeleteDocs publishes one docs.delete event per id. Every id must be
// one of db's stored docs, as DeleteExamples asks of examples
// (ErrNoDoc, with every such id, and then nothing is published). Each
// event has a unique id, so that deleting a doc published again after an
// earlier delete is not dropped as a duplicate. An id given twice is
// deleted once.
func (c *Client) DeleteDocs(ctx context.Context, db string, ids []string) ([]Published, error) {
	stored, err := c.Docs(ctx, db)
	if err != nil {
		return nil, err
	}
	have, err := allStored(db, "doc", ids, stored, func(d StoredDoc) string { return d.DocID }, ErrNoDoc)
	if err != nil {
		return nil, err
	}
	out := make([]Published, 0, len(ids))
	now := time.Now()
	for _, id := range ids {
		if !have[id] {
			continue // given twice
		}
		delete(have, id)
		ev, err := events.New("doc-delete-"+nuid.Next(), db, now, &events.DocDelete{DocID: id})
		if err != nil {
			return out, err
		}
		p, err := c.Publish(ctx, ev)
		if err != nil {
			return out, fmt.Errorf("delete doc %s: %w", events.Quote(id), err)
		}
		out = append(out, p)
	}
	return out, nil
}
