// Package deadletter is schemaq's dead-letter box: the letters workers
// write for events they give up on (events.DeadLetterStream, a subject
// per database), read back from their headers, and the ways out of the
// box: a re-send to the event's own subject, deletion, purge, and the
// sweep that tidies a database's letters once its catalog moves. The
// workers, the dlq command and publish --wait all go through it.
package deadletter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Letter is a dead letter as its headers tell it.
type Letter struct {
	Seq        uint64    `json:"seq"` // in the dead-letter stream
	Database   string    `json:"database"`
	Subject    string    `json:"subject"` // the event's own
	Source     string    `json:"source,omitempty"`
	Kind       string    `json:"kind,omitempty"` // an events.DLQKind constant
	Reason     string    `json:"reason"`
	Deliveries string    `json:"deliveries,omitempty"`
	Time       time.Time `json:"time"`
	// EventSeq is a schema event's seq (0: none, or not a number);
	// EventID the event's id; StreamSeq its sequence in the event stream.
	EventSeq  int64  `json:"-"`
	EventID   string `json:"-"`
	StreamSeq uint64 `json:"-"`
	// Data is the event as it was published.
	Data []byte `json:"-"`
}

// ErrNotFound is a letter that is not, or no longer, in the box.
var ErrNotFound = errors.New("no such dead letter")

// ErrUnsendable is a letter whose event cannot be re-sent: it does not
// decode, or it names another database than the letter's.
var ErrUnsendable = errors.New("its event cannot be re-sent")

// read is a stored letter.
func read(seq uint64, subject string, h nats.Header, at time.Time, data []byte) Letter {
	l := Letter{Seq: seq, Database: strings.TrimPrefix(subject, events.DeadLetterSubject("")), Subject: h.Get(events.HeaderDLQSubject),
		Source: h.Get(events.HeaderDLQSource), Kind: h.Get(events.HeaderDLQKind), Reason: h.Get(events.HeaderDLQReason),
		Deliveries: h.Get(events.HeaderDLQDeliveries), Time: at, EventID: h.Get(events.HeaderDLQEventID), Data: data}
	l.EventSeq, _ = strconv.ParseInt(h.Get(events.HeaderDLQSeq), 10, 64)
	l.StreamSeq, _ = strconv.ParseUint(h.Get(events.HeaderDLQStreamSeq), 10, 64)
	return l
}

// Publish writes the letter for an event a worker gives up on: l.Data,
// l.Subject, l.StreamSeq and l.Reason are required. A database name that
// is no subject token files it under _invalid. One letter per event
// stream message, however often this runs.
func Publish(ctx context.Context, js jetstream.JetStream, l Letter) error {
	db := l.Database
	if events.ValidateDatabase(db) != nil {
		db = "_invalid"
	}
	m := nats.NewMsg(events.DeadLetterSubject(db))
	m.Data = l.Data
	m.Header.Set(events.HeaderDLQReason, events.OneLine(l.Reason, 2000))
	m.Header.Set(events.HeaderDLQSubject, l.Subject)
	m.Header.Set(events.HeaderDLQStreamSeq, strconv.FormatUint(l.StreamSeq, 10))
	m.Header.Set(events.HeaderDLQDeliveries, l.Deliveries)
	if l.Source != "" {
		m.Header.Set(events.HeaderDLQSource, events.OneLine(l.Source, 500))
	}
	if l.Kind != "" {
		m.Header.Set(events.HeaderDLQKind, l.Kind)
	}
	if l.EventSeq > 0 {
		m.Header.Set(events.HeaderDLQSeq, strconv.FormatInt(l.EventSeq, 10))
	}
	if l.EventID != "" {
		m.Header.Set(events.HeaderDLQEventID, l.EventID)
	}
	m.Header.Set(events.HeaderMsgID, "dlq-"+strconv.FormatUint(l.StreamSeq, 10))
	// The message id makes a publish safe to repeat, so one that went
	// unanswered (its server died, the stream is electing) is sent again.
	_, err := streams.Retried(ctx, streams.WriteAttempt, func(ctx context.Context) (*jetstream.PubAck, error) { return js.PublishMsg(ctx, m) })
	return err
}

// Box is the dead-letter stream.
type Box struct {
	js jetstream.JetStream
	s  jetstream.Stream
}

// Open opens the box; the stream must exist (streams.Ensure).
func Open(ctx context.Context, js jetstream.JetStream) (*Box, error) {
	s, err := streams.Retried(ctx, streams.ReadAttempt, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, events.DeadLetterStream) })
	if err != nil {
		return nil, fmt.Errorf("dead-letter stream %s: %w", events.DeadLetterStream, err)
	}
	return &Box{js: js, s: s}, nil
}

// List returns db's letters ("": every database's), oldest first,
// without their events (Get has a letter's): the box may hold thousands
// of events of up to a MiB, and a listing must not cost what they weigh.
func (b *Box) List(ctx context.Context, db string) ([]Letter, error) {
	var out []Letter
	err := b.Each(ctx, db, func(l Letter) bool {
		out = append(out, l)
		return true
	})
	return out, err
}

// Each calls fn with db's letters ("": every database's), oldest first,
// without their events, until fn returns false.
func (b *Box) Each(ctx context.Context, db string, fn func(Letter) bool) error {
	subject := events.DeadLetterSubjects
	if db != "" {
		subject = events.DeadLetterSubject(db)
	}
	_, err := streams.ReadHeaders(ctx, b.s, subject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return nil
		}
		if !fn(read(meta.Sequence.Stream, m.Subject(), m.Headers(), meta.Timestamp, nil)) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("list dead letters: %w", err)
	}
	return nil
}

// errStop ends a listing its caller has read enough of.
var errStop = errors.New("stop")

// Get returns one letter.
func (b *Box) Get(ctx context.Context, seq uint64) (*Letter, error) {
	m, err := b.s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("dead letter %d: %w", seq, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", seq, err)
	}
	l := read(m.Sequence, m.Subject, m.Header, m.Time, m.Data)
	return &l, nil
}

// Last returns db's newest letter if it is newer than since, else nil.
func (b *Box) Last(ctx context.Context, db string, since time.Time) *Letter {
	m, err := b.s.GetLastMsgForSubject(ctx, events.DeadLetterSubject(db))
	if err != nil || m.Time.Before(since) {
		return nil
	}
	l := read(m.Sequence, m.Subject, m.Header, m.Time, m.Data)
	return &l
}

// Retry publishes a letter's event again, under a new id (the old one
// may still be in the duplicate window), and removes the letter. It goes
// only to the subject of the event the letter holds, in the letter's own
// database (events.ResendSubject): a forged letter sends nothing. It
// returns the subject.
func (b *Box) Retry(ctx context.Context, seq uint64) (string, error) {
	l, err := b.Get(ctx, seq)
	if err != nil {
		return "", err
	}
	target, err := events.ResendSubject(events.DeadLetterSubject(l.Database), l.Data)
	if err != nil {
		return "", fmt.Errorf("retry dead letter %d: %w (%w); nothing was published (dlq show %d prints it, dlq delete %d removes it)", seq, err, ErrUnsendable, seq, seq)
	}
	msg := nats.NewMsg(target)
	msg.Data = l.Data
	msg.Header.Set(events.HeaderMsgID, fmt.Sprintf("%s-retry-%d-%d", l.EventID, seq, time.Now().UnixNano()))
	resentFrom(msg, *l)
	if _, err := b.js.PublishMsg(ctx, msg); err != nil {
		return "", fmt.Errorf("retry dead letter %d: %w", seq, streams.NameFull(err, target))
	}
	if err := b.s.DeleteMsg(ctx, seq); err != nil && !gone(err) {
		return "", fmt.Errorf("retry dead letter %d: republished, but could not remove it: %w", seq, err)
	}
	return target, nil
}

// resentFrom marks msg, a re-send of l's event, with where the event
// first sat in the event stream.
func resentFrom(msg *nats.Msg, l Letter) {
	if l.StreamSeq > 0 {
		msg.Header.Set(events.HeaderResentFrom, strconv.FormatUint(l.StreamSeq, 10))
	}
}

// Deleted is what Delete removed besides the letter.
type Deleted struct {
	// Event: the letter's event left the event stream too (drop.go);
	// EventKept says why it did not, when it was asked to and failed.
	Event     bool
	EventKept error
}

// Delete removes a letter, the object holding its event's SQL, which
// nothing will apply now, and the event itself when nothing rests on it
// (drop.go), so that a replica replaying the stream neither applies it
// nor writes its letter again.
func (b *Box) Delete(ctx context.Context, seq uint64) (Deleted, error) {
	l, err := b.Get(ctx, seq)
	if err != nil {
		return Deleted{}, err
	}
	var out Deleted
	// The event first: a letter deleted before it failed would leave no
	// record of the event to delete.
	out.Event, out.EventKept = b.dropEvent(ctx, l)
	if err := b.s.DeleteMsg(ctx, seq); err != nil && !gone(err) {
		return out, fmt.Errorf("delete dead letter %d: %w", seq, err)
	}
	b.deleteObject(ctx, sqlObject(l.Data))
	return out, nil
}

// Purge removes every letter of db ("": of every database), and the
// objects of their events' SQL. It returns how many it removed.
func (b *Box) Purge(ctx context.Context, db string) (uint64, error) {
	var opts []jetstream.StreamPurgeOpt
	if db != "" {
		opts = append(opts, jetstream.WithPurgeSubject(events.DeadLetterSubject(db)))
	}
	before, err := b.s.Info(ctx)
	if err != nil {
		return 0, err
	}
	// The objects are named inside the events, which the purge removes:
	// read them first, one letter at a time.
	var objects []string
	err = b.Each(ctx, db, func(l Letter) bool {
		if name := b.objectOf(ctx, l); name != "" {
			objects = append(objects, name)
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	if err := b.s.Purge(ctx, opts...); err != nil {
		return 0, fmt.Errorf("purge dead letters: %w", err)
	}
	for _, name := range objects {
		b.deleteObject(ctx, name)
	}
	after, err := b.s.Info(ctx)
	if err != nil {
		return 0, err
	}
	return before.State.Msgs - after.State.Msgs, nil
}

// Swept is what a sweep did.
type Swept struct {
	Resent, Dropped int
	// Obsolete are the letters dropped because the history moved past
	// their events (headers only): those events are in the event stream
	// still, and nothing will apply them.
	Obsolete []Letter
	// Refused are letters not re-sent because the event they hold is not
	// one this database's subject carries: left for a person.
	Refused []error
}

// Sweep tidies db's letters once its catalog is at version: letters of
// schema events the history has moved past are obsolete and deleted
// (with their SQL's objects); gap letters beyond it are re-sent together
// once the first of them can apply (earlier they would only wait and
// time out again), so a history that was stuck behind a missing or
// refused migration resumes by itself once that one is published. A
// re-send carries an id of its own letter, so two workers sweeping at
// once re-send it once.
func (b *Box) Sweep(ctx context.Context, db string, version int64) (Swept, error) {
	var sw Swept
	subject := events.DeadLetterSubject(db)
	var letters []Letter
	nextGap := int64(-1) // the lowest seq of a gap letter beyond version
	if _, err := streams.ReadHeaders(ctx, b.s, subject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return nil
		}
		l := read(meta.Sequence.Stream, m.Subject(), m.Headers(), meta.Timestamp, nil)
		if _, err := strconv.ParseInt(m.Headers().Get(events.HeaderDLQSeq), 10, 64); err != nil {
			return nil // not a schema event's: nothing to tidy by version
		}
		if l.Kind == events.DLQKindGap && l.EventSeq > version && (nextGap < 0 || l.EventSeq < nextGap) {
			nextGap = l.EventSeq
		}
		letters = append(letters, l)
		return nil
	}); err != nil {
		return sw, fmt.Errorf("read dead letters of %s: %w", db, err)
	}
	resend := nextGap == version+1
	for _, l := range letters {
		if err := b.tidy(ctx, &sw, l, version, resend); err != nil {
			return sw, fmt.Errorf("%w of %s", err, db)
		}
	}
	return sw, nil
}

// tidy deletes a letter the history has moved past, with its SQL's
// object, or re-sends a gap letter (resend) and deletes it. Letters are
// listed without their events; one is read when it is re-sent or its
// object dropped.
func (b *Box) tidy(ctx context.Context, sw *Swept, l Letter, version int64, resend bool) error {
	var object string
	switch {
	case l.Kind != events.DLQKindGap && l.Kind != events.DLQKindRefused:
		return nil
	case l.EventSeq <= version:
		// The history moved past it: applied since, or replaced by a
		// fixed migration at that seq. Nothing will read its SQL again.
		object = b.objectOf(ctx, l)
		sw.Dropped++
		sw.Obsolete = append(sw.Obsolete, l)
	case l.Kind == events.DLQKindGap && resend:
		full, err := b.Get(ctx, l.Seq)
		if errors.Is(err, ErrNotFound) {
			return nil // another worker's sweep took it
		}
		if err != nil {
			return fmt.Errorf("re-send %w", err)
		}
		target, err := events.ResendSubject(events.DeadLetterSubject(l.Database), full.Data)
		if err != nil {
			sw.Refused = append(sw.Refused, fmt.Errorf("dead letter %d: %w", l.Seq, err))
			return nil
		}
		re := nats.NewMsg(target)
		re.Data = full.Data
		re.Header.Set(events.HeaderMsgID, "resend-"+strconv.FormatUint(l.Seq, 10))
		resentFrom(re, l)
		if _, err := b.js.PublishMsg(ctx, re); err != nil {
			return fmt.Errorf("re-send dead letter %d: %w", l.Seq, streams.NameFull(err, target))
		}
		sw.Resent++
	default:
		return nil
	}
	if err := b.s.DeleteMsg(ctx, l.Seq); err != nil && !gone(err) {
		return fmt.Errorf("delete dead letter %d: %w", l.Seq, err)
	}
	b.deleteObject(ctx, object)
	return nil
}

// objectOf is the name of the object holding the SQL of the letter's
// event, if it has one. Only a schema event's SQL is ever stored apart,
// so only those letters are read.
func (b *Box) objectOf(ctx context.Context, l Letter) string {
	if l.Subject != "" && !strings.HasPrefix(l.Subject, events.SchemaSubject("")) {
		return ""
	}
	full, err := b.Get(ctx, l.Seq)
	if err != nil {
		return ""
	}
	return sqlObject(full.Data)
}

// sqlObject is the name of the object an event's SQL is stored in, or "".
func sqlObject(data []byte) string {
	ev, err := events.Decode(data, 0)
	if err != nil || ev.SQLObject() == nil {
		return ""
	}
	return ev.SQLObject().Name
}

// deleteObject deletes an object holding an event's SQL ("": none),
// best effort: an orphan costs storage, which the object sweep reclaims.
func (b *Box) deleteObject(ctx context.Context, name string) {
	if name == "" {
		return
	}
	if obj, err := streams.Objects(ctx, b.js); err == nil {
		_ = obj.Delete(ctx, name)
	}
}

// gone reports whether err says the message is not there: deleted
// already, by another worker's sweep or a person. DeleteMsg reports that
// as ErrMsgDeleteUnsuccessful with the server's error in its text, not
// as an APIError: the warning "dead-letter sweep failed … no message
// found" came from two workers sweeping at once.
func gone(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == jetstream.JSErrCodeMessageNotFound
	case errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful):
		// The server's stream-delete failure (10057), for want of the
		// message: nats-server's ErrStoreMsgNotFound.
		return strings.Contains(err.Error(), "no message found")
	}
	return false
}
