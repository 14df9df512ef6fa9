package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
)

// Every team's events land in the one stream, so one producer
// publishing ever new docs or migrations would fill the disk all teams
// share. JetStream bounds bytes per stream, not per subject, but it
// bounds messages per subject, and a subject is one database's events
// of one kind (schemaq.<kind>.<database>): with the per-subject discard
// policy the server refuses that database's next publish of that kind,
// and nobody else's. Events are at most a MiB, so the bound on messages
// bounds bytes too.

// DefaultMaxEventsPerDatabase is the bound a stream gets when no process
// sets one. An honest database stays far below it (the stream keeps each
// doc's and example's newest event and the schema events since the last
// snapshot); it bounds one database to 100,000 events of each kind.
const DefaultMaxEventsPerDatabase = 100_000

// NearShare is the share of the bound past which a database is warned
// of (status, the workers' log).
const NearShare = 0.9

// NoEventLimit, as Config.MaxEventsPerDatabase, removes the bound.
const NoEventLimit = -1

// limitKey records in the stream's metadata the bound schemaq set, so
// that a stream an operator freed of it ("none") is told from one made
// before the bound existed, which gets the default.
const limitKey = "schemaq.max_events_per_database"

const noLimit = "none"

// eventLimit resolves want (Config.MaxEventsPerDatabase) against the
// stream as it is (s; nil when there is none yet): the per-subject bound
// to set (0: none), and whether to record it as chosen (not when the
// default was held back). Lowering a bound below what a database holds would have the server delete that
// database's oldest events, the history its catalog replays from, so it
// is refused, naming the database; the default is not applied over such
// a database either (onKept hears why).
func eventLimit(ctx context.Context, s jetstream.Stream, want int64, onKept func(string)) (per int64, record bool, err error) {
	if s == nil {
		return newStreamLimit(want), true, nil
	}
	cfg := s.CachedInfo().Config
	have := max(cfg.MaxMsgsPerSubject, 0)
	if per, ok := limitWithoutCounts(want, have, cfg.Metadata[limitKey]); ok {
		return per, true, nil
	}
	return limitOverCounts(ctx, s, want, have, onKept)
}

// newStreamLimit is the bound of a stream made now.
func newStreamLimit(want int64) int64 {
	switch {
	case want == 0:
		return DefaultMaxEventsPerDatabase
	case want < 0:
		return 0
	}
	return want
}

// limitWithoutCounts is the bound when no database's events need
// counting first: removed, kept, or raised.
func limitWithoutCounts(want, have int64, recorded string) (int64, bool) {
	switch {
	case want < 0:
		return 0, true
	case want == 0 && (have > 0 || recorded == noLimit):
		return have, true
	case want > 0 && have > 0 && want >= have:
		return want, true
	}
	return 0, false
}

// limitOverCounts sets a bound where there was none, or lowers one,
// once no database holds more than it.
func limitOverCounts(ctx context.Context, s jetstream.Stream, want, have int64, onKept func(string)) (int64, bool, error) {
	target := want
	if want == 0 {
		target = DefaultMaxEventsPerDatabase
	}
	subject, held, _, err := Fullest(ctx, s)
	if err != nil {
		return 0, false, fmt.Errorf("count the events each database holds: %w", err)
	}
	if held <= uint64(target) {
		return target, true, nil
	}
	why := fmt.Sprintf("%s holds %d events, more than %d: the server would delete its oldest", subject, held, target)
	if want == 0 {
		if onKept != nil {
			onKept(fmt.Sprintf("no bound on events per database set: %s; set --max-events-per-database above it", why))
		}
		return have, false, nil
	}
	return 0, false, fmt.Errorf("--max-events-per-database %d: %s, the history its catalog replays from; raise the bound, or publish a snapshot of that database first", want, why)
}

// Fullest reads the event subject holding the most events (one
// database's of one kind), how many, and the stream's bound on each (0:
// none).
func Fullest(ctx context.Context, s jetstream.Stream) (subject string, held uint64, bound int64, err error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return "", 0, 0, err
	}
	for sub, n := range info.State.Subjects {
		if n > held || n == held && sub < subject {
			subject, held = sub, n
		}
	}
	return subject, held, max(info.Config.MaxMsgsPerSubject, 0), nil
}

// limitConfig sets cfg's bound on events per subject (0: none), and
// its record when the bound was chosen.
func limitConfig(cfg *jetstream.StreamConfig, per int64, record bool) {
	cfg.Metadata = map[string]string{}
	if record {
		cfg.Metadata[limitKey] = noLimit
	}
	if per > 0 {
		cfg.MaxMsgsPerSubject = per
		cfg.Discard = jetstream.DiscardNew
		cfg.DiscardNewPerSubject = true
		cfg.Metadata[limitKey] = strconv.FormatInt(per, 10)
	}
}

// sameLimits: the bound and its record are as wanted.
func sameLimits(have, want jetstream.StreamConfig) bool {
	return sameLimit(have.MaxMsgsPerSubject, want.MaxMsgsPerSubject) && have.Discard == want.Discard &&
		have.DiscardNewPerSubject == want.DiscardNewPerSubject && have.Metadata[limitKey] == want.Metadata[limitKey]
}

// jsStoreFailed is JetStream's error for a message its store refused,
// among them one past the per-subject bound.
const jsStoreFailed jetstream.ErrorCode = 10077

// DatabaseFull reports whether err is the stream refusing an event
// because its database holds the most events of that kind it may keep.
func DatabaseFull(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == jsStoreFailed && strings.Contains(api.Description, "per subject")
}

// FullError is the stream refusing an event for its database's bound:
// nothing was stored.
type FullError struct {
	Database, Kind string
	Err            error // JetStream's answer
}

func (e *FullError) Error() string {
	return fmt.Sprintf("database %s holds the most %s events the stream keeps of one database (--max-events-per-database, the operator's setting); nothing was stored. "+
		"Events leave the stream as newer ones replace them (a doc's, an example's, a snapshot's), or an operator raises the bound (docs/deploy.md, \"Bounds per database\")",
		events.Quote(e.Database), e.Kind)
}

func (e *FullError) Unwrap() error { return e.Err }

// NameFull says what err means when it is the stream refusing an event
// on subject for its database's bound (DatabaseFull): a *FullError. Any
// other err is returned as it is.
func NameFull(err error, subject string) error {
	if !DatabaseFull(err) {
		return err
	}
	full := &FullError{Kind: subject, Err: err}
	if parts := strings.Split(subject, "."); len(parts) == 3 {
		full.Kind, full.Database = parts[1], parts[2]
	}
	return full
}
