package streams

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
)

// A lane is a durable consumer of one database's events of one kind,
// beside a worker consumer (workers/lanes.go says why and when). Its
// metadata names the consumer it relieves and the database; the
// retirement steps write theirs there too, so that every worker sees
// them.
const (
	LaneOfKey      = "schemaq.lane.of"
	LaneDBKey      = "schemaq.lane.db"
	LaneSealedKey  = "schemaq.lane.sealed"
	LaneHorizonKey = "schemaq.lane.horizon"
	LaneClosingKey = "schemaq.lane.closing"
)

// laneInfix joins a worker consumer's name and a database's in a lane's.
const laneInfix = "-lane-"

// Lane is what a lane's consumer info says of it.
type Lane struct {
	Name, Of, DB string
	// Start is the first stream sequence it delivers: before it, the
	// consumer it relieves keeps the database's events.
	Start uint64
	// Sealed: being retired; the consumer it relieves keeps new events.
	Sealed bool
	// Horizon, once set on a sealed lane, is the last stream sequence it
	// must apply before it is closed (0: not set yet).
	Horizon uint64
	// Closing: it applied everything up to its horizon; no worker reads
	// it any more, and the server deletes it once it has been unread for
	// its InactiveThreshold. What it holds past the horizon the worker
	// consumers hold too.
	Closing bool
}

// LaneOf reads a lane from its consumer's info; ok is false for any
// other consumer.
func LaneOf(ci *jetstream.ConsumerInfo) (Lane, bool) {
	if ci == nil {
		return Lane{}, false
	}
	md := ci.Config.Metadata
	of, db := md[LaneOfKey], md[LaneDBKey]
	if of == "" || db == "" || ci.Name != LaneName(of, db) {
		return Lane{}, false
	}
	l := Lane{Name: ci.Name, Of: of, DB: db, Start: ci.Config.OptStartSeq, Sealed: md[LaneSealedKey] == "true", Closing: md[LaneClosingKey] == "true"}
	l.Horizon, _ = strconv.ParseUint(md[LaneHorizonKey], 10, 64)
	return l, true
}

// Lane reads a lane beside one of c's consumers from its consumer's
// info. ok is false for any other consumer, and for one named and
// marked as a lane that does not read its database's subjects from a
// start, acknowledging each: anyone allowed the JetStream API could make
// one, and the workers would acknowledge the database's events unapplied,
// leaving them to a consumer that never delivers them.
func (c ConsumerConfig) Lane(ci *jetstream.ConsumerInfo) (Lane, bool) {
	l, ok := LaneOf(ci)
	if !ok {
		return Lane{}, false
	}
	want, err := LaneSubjects(c, l.Of, l.DB)
	cfg := ci.Config
	if err != nil || !slices.Equal(cfg.FilterSubjects, want) || cfg.FilterSubject != "" ||
		cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || cfg.AckPolicy != jetstream.AckExplicitPolicy {
		return Lane{}, false
	}
	return l, true
}

// LaneName is db's lane beside the consumer named of.
func LaneName(of, db string) string { return of + laneInfix + db }

// LaneSubjects are the subjects of db's lane beside the consumer named
// of: the database's schema subject beside a schema consumer, its docs
// and examples subjects beside a docs consumer.
func LaneSubjects(c ConsumerConfig, of, db string) ([]string, error) {
	switch of {
	case c.SchemaName():
		return []string{events.SchemaSubject(db)}, nil
	case c.DocsName():
		return []string{events.DocsSubject(db), events.ExamplesSubject(db)}, nil
	}
	return nil, fmt.Errorf("lane for %s: %s is not one of this worker's consumers", db, of)
}

// OpenLane creates db's lane beside the consumer named of, starting at
// stream sequence start, and returns it; a lane that exists is returned
// as it is, whatever its start.
func OpenLane(ctx context.Context, js jetstream.JetStream, c ConsumerConfig, of, db string, start uint64, maxAckPending int) (Lane, error) {
	subjects, err := LaneSubjects(c, of, db)
	if err != nil {
		return Lane{}, err
	}
	name := LaneName(of, db)
	cfg := jetstream.ConsumerConfig{
		Durable:           name,
		Description:       "schemaq workers: the events of database " + db + ", moved out of the way of other databases'",
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		MaxAckPending:     maxAckPending,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		InactiveThreshold: c.InactiveThreshold,
		FilterSubjects:    subjects,
		Metadata:          map[string]string{LaneOfKey: of, LaneDBKey: db},
	}
	cons, err := js.CreateConsumer(ctx, events.Stream, cfg)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		cons, err = js.Consumer(ctx, events.Stream, name)
	}
	if err != nil {
		return Lane{}, fmt.Errorf("open lane %s: %w", name, err)
	}
	l, ok := c.Lane(cons.CachedInfo())
	if !ok {
		return Lane{}, fmt.Errorf("open lane %s: a consumer of that name that is not this database's lane exists", name)
	}
	return l, nil
}

// MarkLane writes key=value into a lane's metadata, keeping the rest of
// its config.
func MarkLane(ctx context.Context, js jetstream.JetStream, ci *jetstream.ConsumerInfo, key, value string) error {
	return updateLane(ctx, js, ci, key, value, 0)
}

// CloseLane marks a lane closing and has the server delete it once no
// worker has read it for after. The server deletes it, not a worker: a
// worker's delete by name could remove a new lane of the same database
// opened between its look and the delete, with the events left to it.
func CloseLane(ctx context.Context, js jetstream.JetStream, ci *jetstream.ConsumerInfo, after time.Duration) error {
	return updateLane(ctx, js, ci, LaneClosingKey, "true", after)
}

func updateLane(ctx context.Context, js jetstream.JetStream, ci *jetstream.ConsumerInfo, key, value string, inactive time.Duration) error {
	cfg := ci.Config
	md := maps.Clone(cfg.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[key] = value
	cfg.Metadata = md
	if inactive > 0 {
		cfg.InactiveThreshold = inactive
	}
	if _, err := js.UpdateConsumer(ctx, events.Stream, cfg); err != nil {
		return fmt.Errorf("mark lane %s %s=%s: %w", ci.Name, key, value, err)
	}
	return nil
}
