package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/deadletter"
)

// A producer in a team's own NATS account has no JetStream API: it may
// not read the dead-letter stream, which holds every team's letters. Its
// `publish --wait` asks the daemon instead, for its database's newest
// letter only (TablesRequest.LettersSince).

// letterBox opens the dead-letter stream once it answers.
type letterBox struct {
	mu  sync.Mutex
	box *deadletter.Box
}

// letterRead bounds one read: a wait polls again.
const letterRead = 2 * time.Second

// newestLetter is db's newest dead letter written at or after since, or
// nil: none, or the stream did not answer this time.
func (d *Daemon) newestLetter(ctx context.Context, db string, since time.Time) *events.LetterInfo {
	ctx, cancel := context.WithTimeout(ctx, letterRead)
	defer cancel()
	box, err := d.letterBox(ctx)
	if err != nil {
		return nil
	}
	l := box.Last(ctx, db, since)
	if l == nil {
		return nil
	}
	return &events.LetterInfo{Seq: l.Seq, Source: l.Source, Kind: l.Kind, Reason: l.Reason, Time: l.Time}
}

// letterBox is the dead-letter stream, opened on first use.
func (d *Daemon) letterBox(ctx context.Context) (*deadletter.Box, error) {
	d.letters.mu.Lock()
	defer d.letters.mu.Unlock()
	if d.letters.box != nil {
		return d.letters.box, nil
	}
	js, err := jetstream.New(d.nc)
	if err != nil {
		return nil, fmt.Errorf("dead letters: %w", err)
	}
	box, err := deadletter.Open(ctx, js)
	if err != nil {
		return nil, err
	}
	d.letters.box = box
	return box, nil
}
