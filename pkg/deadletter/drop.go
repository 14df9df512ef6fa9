package deadletter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// A letter deleted by a person says its event is never to be applied.
// The event stayed in the stream, so a replica started later replayed
// it: past the letters' day of dedupe it wrote the letter again, and a
// gap event whose predecessor had since applied it even applied. So a
// deleted letter's event leaves the stream too, when it is sure that
// nothing rests on it:
//   - it is the very event the letter holds: the same bytes, on the
//     subject the letter names, at the stream sequence it names;
//   - a failed letter's event stays: its failure was passing, and other
//     replicas may have applied it;
//   - a schema event stays when the catalog's history names it (a
//     replica applied it after all) or cannot be read: a catalog rebuilt
//     from the stream replays what the history names.

// dropEvent deletes the event l holds from the event stream when nothing
// rests on it, and says whether it did.
func (b *Box) dropEvent(ctx context.Context, l *Letter) (bool, error) {
	if l.StreamSeq == 0 || l.Kind == events.DLQKindFailed || l.Kind == "" {
		return false, nil
	}
	s, err := b.js.Stream(ctx, events.Stream)
	if err != nil {
		return false, err
	}
	if there, err := holds(ctx, s, l); err != nil || !there {
		return false, err
	}
	if strings.HasPrefix(l.Subject, events.SchemaSubject("")) {
		if named, err := b.historyNames(ctx, l.Database, l.StreamSeq); err != nil || named {
			return false, err
		}
	}
	if err := s.DeleteMsg(ctx, l.StreamSeq); err != nil && !gone(err) {
		return false, err
	}
	return true, nil
}

// holds reports whether the event stream holds l's very event where l
// says: the same bytes on the same subject. Another event there, or none,
// is a stream made again, or an event superseded and deleted since.
func holds(ctx context.Context, s jetstream.Stream, l *Letter) (bool, error) {
	m, err := s.GetMsg(ctx, l.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return m.Subject == l.Subject && bytes.Equal(m.Data, l.Data), nil
}

// historyNames reports whether db's catalog history applied the event
// at stream sequence seq (a migration, or the snapshot it starts from).
func (b *Box) historyNames(ctx context.Context, db string, seq uint64) (bool, error) {
	kv, err := b.js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return false, fmt.Errorf("catalog bucket: %w", err)
	}
	e, err := kv.Get(ctx, db)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil // no catalog: nothing applied
	}
	if err != nil {
		return false, fmt.Errorf("catalog %s: %w", db, err)
	}
	h, err := streams.CatalogHistory(ctx, b.js, e)
	if err != nil {
		return false, err
	}
	if h.Base != nil && h.Base.StreamSeq == seq {
		return true, nil
	}
	for _, a := range h.History {
		if a.StreamSeq == seq {
			return true, nil
		}
	}
	return false, nil
}
