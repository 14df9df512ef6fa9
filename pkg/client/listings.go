package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// A database's docs and examples are a fold of its subject, and folding
// reads every event on it: every body of thousands of docs, for each
// page of a console listing. The last fold of each subject is kept and
// used again while the subject is as that fold read it, which two small
// requests tell: how many messages it holds and the sequence of its
// last. A publish changes the last; a message removed (a purge, the
// stream's limits) changes the count without adding one.

// subjectState says whether a subject changed: equal states, equal
// messages.
type subjectState struct {
	count, last uint64
}

// listing is a subject's fold as of state.
type listing[T any] struct {
	state subjectState
	items []T
	bytes int
}

// What is kept is bounded per kind, in subjects and in bytes: a daemon
// serves many teams, and a team's query log may be a hundred thousand
// examples.
const (
	maxListings     = 64
	maxListingBytes = 64 << 20
)

// listed is what a listing holds: it says about how many bytes it
// keeps.
type listed interface {
	keptBytes() int
}

// listings keeps the last fold of the subjects listed most recently.
type listings[T listed] struct {
	mu    sync.Mutex
	kept  map[string]listing[T]
	bytes int
}

// entry is the kept fold of subject, whatever its state.
func (l *listings[T]) entry(subject string) (listing[T], bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	got, ok := l.kept[subject]
	return got, ok
}

func (l *listings[T]) put(subject string, st subjectState, items []T) {
	n := 0
	for _, it := range items {
		n += it.keptBytes()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kept == nil {
		l.kept = make(map[string]listing[T])
	}
	l.drop(subject)
	if n > maxListingBytes {
		return // folded anew each time, as before anything was kept
	}
	for s := range l.kept { // any: the next listing of it folds again
		if len(l.kept) < maxListings && l.bytes+n <= maxListingBytes {
			break
		}
		l.drop(s)
	}
	l.kept[subject] = listing[T]{state: st, items: slices.Clone(items), bytes: n}
	l.bytes += n
}

func (l *listings[T]) drop(subject string) {
	if old, ok := l.kept[subject]; ok {
		l.bytes -= old.bytes
		delete(l.kept, subject)
	}
}

// stateOf is subject's message count and last sequence in s; a subject
// with no message has the zero state.
func stateOf(ctx context.Context, s jetstream.Stream, subject string) (subjectState, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return subjectState{}, fmt.Errorf("state of %s: %w", subject, err)
	}
	n := info.State.Subjects[subject]
	if n == 0 {
		return subjectState{}, nil
	}
	msg, err := s.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return subjectState{}, nil // purged since the count
	case err != nil:
		return subjectState{}, fmt.Errorf("state of %s: %w", subject, err)
	}
	return subjectState{count: n, last: msg.Sequence}, nil
}

// folding is how a kind of listing folds its events: how an event
// changes it, what keys it, and in which order it is listed.
type folding[T any] struct {
	key     func(T) string
	apply   func(byID map[string]T, ev *events.Event, seq uint64)
	compare func(a, b T) int
}

func (f folding[T]) sorted(byID map[string]T) []T {
	out := make([]T, 0, len(byID))
	for _, it := range byID {
		out = append(out, it)
	}
	slices.SortFunc(out, f.compare)
	return out
}

// fold folds db's events on subject from the start, and returns the
// state of what it read.
func fold[T any](ctx context.Context, s jetstream.Stream, db, subject string, f folding[T]) ([]T, subjectState, error) {
	byID := map[string]T{}
	read, err := readEvents(ctx, s, db, subject, func(ev *events.Event, seq uint64) { f.apply(byID, ev, seq) })
	if err != nil {
		return nil, subjectState{}, err
	}
	return f.sorted(byID), read, nil
}

// foldKept is the fold of db's events on subject: the kept one when the
// subject is as that fold read it, the kept one carried on when events
// were only added since (extend), else a fold from the start. A fold is
// kept under the state it read itself (readEvents), which names its
// messages exactly: sequences only grow, so no other set of messages on
// the subject has the same count and last.
func foldKept[T listed](ctx context.Context, c *Client, l *listings[T], db, subject string, f folding[T]) ([]T, error) {
	s, err := c.js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	now, err := stateOf(ctx, s, subject)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", subject, err)
	}
	if kept, ok := l.entry(subject); ok {
		if kept.state == now {
			return slices.Clone(kept.items), nil
		}
		if items, ok := extend(ctx, s, db, subject, f, kept, now); ok {
			l.put(subject, now, items)
			return items, nil
		}
	}
	items, read, err := fold(ctx, s, db, subject, f)
	if err != nil {
		return nil, err
	}
	l.put(subject, read, items)
	return items, nil
}

// maxExtend bounds the events extend reads one at a time.
const maxExtend = 256

// extend is kept carried on over the events published on subject since,
// when that is all that changed: the subject now holds kept's count and
// the events after kept's last, read one by one (at most maxExtend), and
// its state is the same after the read as before it. Anything else (a
// removal, more events, a change while reading) is not extended.
func extend[T any](ctx context.Context, s jetstream.Stream, db, subject string, f folding[T], kept listing[T], now subjectState) ([]T, bool) {
	added := now.count - kept.state.count
	if now.last <= kept.state.last || now.count <= kept.state.count || added > maxExtend {
		return nil, false
	}
	byID := make(map[string]T, len(kept.items)+int(added))
	for _, it := range kept.items {
		byID[f.key(it)] = it
	}
	var read uint64
	for seq := kept.state.last + 1; seq <= now.last; read++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil || m.Sequence > now.last || read == added {
			return nil, false
		}
		if ev, err := events.Decode(m.Data, 0); err == nil && ev.Database == db {
			f.apply(byID, ev, m.Sequence)
		}
		seq = m.Sequence + 1
	}
	if read != added {
		return nil, false // some were removed: the count is not theirs
	}
	if after, err := stateOf(ctx, s, subject); err != nil || after != now {
		return nil, false
	}
	return f.sorted(byID), true
}

// readEvents calls fn with db's events on subject, oldest first, and
// returns the state of what it read: every message, whether an event of
// db or not (those were dead-lettered when they came).
func readEvents(ctx context.Context, s jetstream.Stream, db, subject string, fn func(ev *events.Event, seq uint64)) (subjectState, error) {
	var last uint64
	n, err := streams.ReadSubject(ctx, s, subject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return nil
		}
		seq := meta.Sequence.Stream
		last = max(last, seq)
		if ev, err := events.Decode(m.Data(), 0); err == nil && ev.Database == db {
			fn(ev, seq)
		}
		return nil
	})
	if err != nil {
		return subjectState{}, fmt.Errorf("list %s: %w", subject, err)
	}
	return subjectState{count: uint64(n), last: last}, nil
}

// keptBytes counts a doc's metadata; its body is not kept.
func (d StoredDoc) keptBytes() int {
	n := 128 + len(d.DocID) + len(d.Title) + len(d.Event)
	for k, v := range d.Tags {
		n += 32 + len(k) + len(v)
	}
	return n
}

// keptBytes counts an example's strings.
func (e StoredExample) keptBytes() int {
	n := 256 + len(e.ID) + len(e.Question) + len(e.SQL) + len(e.Schema) + len(e.Event) + len(e.Author) + len(e.AskID)
	for _, t := range e.Tables {
		n += 16 + len(t)
	}
	return n
}
