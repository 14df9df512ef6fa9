package workers

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/deadletter"
)

// Superseded events leave the stream. A team whose CI publishes every
// doc on each run adds an event per doc per run, and the stream kept
// them all: its disk grew without end, and a new replica replayed every
// edit of every doc to index the last. Only each doc's and example's
// newest event decides what the index holds (docs.delete), so once a
// newer edit or delete of every object an event holds is applied, the
// event is deleted from the stream.
//
// The index's mark of a doc or example is the stream sequence of its
// newest event applied, so the worker reads the marks of the objects it
// applies before and after: a mark below the event's sequence names an
// event it may supersede, a mark above it a newer event that may
// supersede this one. Deleting is best effort and off the apply path:
// an event not deleted (the queue was full, the worker stopped) stays,
// as every event did before, and costs disk only. Before deleting, the
// compactor (compactor.go) reads the event back: it must hold the object
// whose mark named it, in the same database, and every object it holds
// must have a newer mark naming an event in the stream that holds that
// object. So marks of an index kept across a stream deleted and made
// again (which numbers from 1) delete nothing, and neither does an
// examples event some of whose examples no later event replaced.

// maxSuperseded bounds the superseded events waiting to be deleted: a
// replay of a long history finds them faster than they are deleted.
const maxSuperseded = 1 << 16

// supersededEvent is an event that may be superseded: a newer event of
// the object named, a doc or example of db, was applied.
type supersededEvent struct {
	db, kind, name string
	seq            uint64
	// by is the schema event that superseded it (a snapshot); docs and
	// examples are superseded by the events their marks name.
	by uint64
	// id is set for a schema event set aside (setAside): the id the
	// event read back must carry, at the schema seq at; by is then the
	// event the history applied that seq from instead.
	id string
	at int64
}

// objectVersion is a doc or example an apply wrote or deleted, at its
// event's stream sequence.
type objectVersion struct {
	name string
	seq  uint64
}

// supersession watches one apply of doc or example events of one kind:
// begin before it, done after it succeeded.
type supersession struct {
	w        *Worker
	db, kind string
	objs     []objectVersion
	before   map[string]int64
}

// supersede begins watching an apply of objects of kind in db; nil when
// the worker keeps superseded events.
func (w *Worker) supersede(ctx context.Context, db, kind string, objs []objectVersion) *supersession {
	if w.compact == nil || len(objs) == 0 {
		return nil
	}
	s := &supersession{w: w, db: db, kind: kind, objs: objs}
	s.before = s.marks(ctx)
	return s
}

// done hands the compactor the events the apply may have superseded,
// and its own events if a newer one superseded them meanwhile.
func (s *supersession) done(ctx context.Context) {
	if s == nil {
		return
	}
	after := s.marks(ctx)
	// An examples event names its predecessor once per example: each
	// event goes to the compactor once.
	seen := map[uint64]bool{}
	var out []supersededEvent
	add := func(name string, seq uint64) {
		if !seen[seq] {
			seen[seq] = true
			out = append(out, supersededEvent{db: s.db, kind: s.kind, name: name, seq: seq})
		}
	}
	for _, o := range s.objs {
		if prev := s.before[o.name]; prev > 0 && uint64(prev) < o.seq {
			add(o.name, uint64(prev))
		}
		if now := after[o.name]; uint64(now) > o.seq {
			add(o.name, o.seq)
		}
	}
	s.w.compact.add(out)
}

// marks reads the objects' marks; nil when the store cannot say, which
// only leaves events in the stream.
func (s *supersession) marks(ctx context.Context) map[string]int64 {
	names := make([]string, len(s.objs))
	for i, o := range s.objs {
		names[i] = o.name
	}
	marks, err := s.w.store.Marks(ctx, s.db, s.kind, names)
	if err != nil {
		s.w.log.Debug("marks unread; superseded events stay in the stream", zap.String("db", s.db), zap.Error(err))
		return nil
	}
	return marks
}

// kindSchema names schema events among superseded ones; the catalog,
// not marks, says they are superseded.
const kindSchema = "schema"

// supersedeSchema hands the compactor the schema events a snapshot, at
// stream sequence by, replaced: those of the catalog it was applied
// over (was).
func (w *Worker) supersedeSchema(was *catalog.Catalog, by uint64) {
	if w.compact == nil {
		return
	}
	var out []supersededEvent
	if b := was.Base(); b != nil && b.StreamSeq > 0 {
		out = append(out, supersededEvent{db: was.Database, kind: kindSchema, name: schemaName(events.TypeSnapshot, b.Seq), seq: b.StreamSeq, by: by})
	}
	for _, a := range was.History() {
		if a.StreamSeq > 0 {
			out = append(out, supersededEvent{db: was.Database, kind: kindSchema, name: schemaName(events.TypeMigration, a.Seq), seq: a.StreamSeq, by: by})
		}
	}
	w.compact.add(out)
}

// setAside hands the compactor the schema events of db whose dead
// letters a sweep dropped because the history moved past them: a
// migration refused, then fixed and published again, or one that waited
// for a predecessor and was re-sent. Each CI run that publishes a broken
// migration adds such an event, and they stayed in the stream for good,
// counted against the database's bound (--max-events-per-database). One
// goes only when the catalog's history applied its seq from another
// event, which it names: then no replica can apply it any more (the
// catalog is past it), and a catalog rebuilt from the stream does not
// read it. A history that names no event there (older than stream
// sequences in histories) or names this very event keeps it.
func (w *Worker) setAside(ctx context.Context, db string, letters []deadletter.Letter) {
	if w.compact == nil || len(letters) == 0 {
		return
	}
	cat, _, err := w.cats.Get(ctx, db)
	if err != nil || cat == nil {
		w.log.Debug("catalog unread; set-aside schema events stay in the stream", zap.String("db", db), zap.Error(err))
		return
	}
	w.compact.add(setAsideEvents(cat, letters))
}

// setAsideEvents are the events of letters that cat's history applied
// from another event.
func setAsideEvents(cat *catalog.Catalog, letters []deadletter.Letter) []supersededEvent {
	var out []supersededEvent
	for _, l := range letters {
		named := appliedAt(cat, l.EventSeq)
		if l.StreamSeq == 0 || l.EventID == "" || named == 0 || named == l.StreamSeq {
			continue
		}
		out = append(out, supersededEvent{db: cat.Database, kind: kindSchema, name: fmt.Sprintf("seq %d", l.EventSeq), seq: l.StreamSeq, by: named,
			id: l.EventID, at: l.EventSeq})
	}
	return out
}

// resentApplied hands the compactor the first publication of a schema
// event re-sent from its dead letter (a gap letter's re-send, `dlq
// retry`), once the copy it applied is the event the history names: the
// letter went at the re-send, and the first event stayed for good.
func (w *Worker) resentApplied(cat *catalog.Catalog, it *item) {
	if w.compact == nil || cat == nil || it.ev == nil {
		return
	}
	if e, ok := resentEvent(cat, it.ev, it.msg.Headers().Get(events.HeaderResentFrom), it.meta.Sequence.Stream); ok {
		w.compact.add([]supersededEvent{e})
	}
}

// resentEvent is the first publication of ev, applied at stream
// sequence here, that the header resentFrom names, when cat's history
// applied ev's seq from here.
func resentEvent(cat *catalog.Catalog, ev *events.Event, resentFrom string, here uint64) (supersededEvent, bool) {
	first, err := strconv.ParseUint(resentFrom, 10, 64)
	if err != nil || first == 0 || first == here || (ev.Migration == nil && ev.Snapshot == nil) {
		return supersededEvent{}, false
	}
	seq := changeOf(ev).seq
	if appliedAt(cat, seq) != here {
		return supersededEvent{}, false
	}
	return supersededEvent{db: cat.Database, kind: kindSchema, name: fmt.Sprintf("seq %d", seq), seq: first, by: here, id: ev.ID, at: seq}, true
}

// appliedAt is the stream sequence of the event the history applied
// seq from (a migration, or the snapshot the history starts at); 0 when
// it does not say.
func appliedAt(cat *catalog.Catalog, seq int64) uint64 {
	if a := cat.AppliedSeq(seq); a != nil {
		return a.StreamSeq
	}
	if b := cat.Base(); b != nil && seq <= b.Seq {
		return b.StreamSeq
	}
	return 0
}

// schemaName names a schema event among superseded ones.
func schemaName(typ string, seq int64) string { return fmt.Sprintf("%s %d", typ, seq) }

// eventObjects is the kind and names of the docs or examples an event
// writes or deletes, as the index names them, or of the schema event.
func eventObjects(ev *events.Event) (kind string, names []string) {
	switch {
	case ev.Migration != nil:
		return kindSchema, []string{schemaName(ev.Type, ev.Migration.Seq)}
	case ev.Snapshot != nil:
		return kindSchema, []string{schemaName(ev.Type, ev.Snapshot.Seq)}
	case ev.DocUpsert != nil:
		return chunk.KindDoc, []string{ev.DocUpsert.DocID}
	case ev.DocDelete != nil:
		return chunk.KindDoc, []string{ev.DocDelete.DocID}
	case ev.Examples != nil:
		for _, ex := range ev.Examples.Examples {
			names = append(names, chunk.ExampleName(ex.ID, ex.Question))
		}
		return chunk.KindExample, names
	case ev.ExamplesDelete != nil:
		return chunk.KindExample, slices.Clone(ev.ExamplesDelete.IDs)
	}
	return "", nil
}

// objectVersions are the objects ev holds, at seq.
func objectVersions(ev *events.Event, seq uint64) (string, []objectVersion) {
	kind, names := eventObjects(ev)
	out := make([]objectVersion, len(names))
	for i, n := range names {
		out[i] = objectVersion{name: n, seq: seq}
	}
	return kind, out
}
