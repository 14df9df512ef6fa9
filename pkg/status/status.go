// Package status reads how a running schemaq stands: the event stream
// and its consumers, the catalogs' versions and drift, the dead letters,
// the object store and the daemons answering. `schemaq status` prints it
// and the console's operations page shows it.
package status

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Consumer is a durable consumer of the event stream and how far behind it is.
type Consumer struct {
	Name        string `json:"name,omitempty"`
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	Delivered   uint64 `json:"delivered_seq"`
}

// add counts o's events in c: the shared pool's two consumers, schema
// and docs, read as one.
func (c *Consumer) add(o Consumer) {
	c.Pending += o.Pending
	c.AckPending += o.AckPending
	c.Redelivered += o.Redelivered
	c.Delivered = max(c.Delivered, o.Delivered)
}

// Report is how a running schemaq stands.
type Report struct {
	Stream struct {
		Messages uint64 `json:"messages"`
		Bytes    uint64 `json:"bytes"`
		LastSeq  uint64 `json:"last_seq"`
		// MaxEventsPerDatabase is the stream's bound on one database's
		// events of one kind (0: none).
		MaxEventsPerDatabase int64 `json:"max_events_per_database"`
	} `json:"stream"`
	// Consumer is the shared workers' two durables (schema, and docs
	// with examples) and their lanes summed; Consumers lists every durable on the
	// stream, the serve replicas' included.
	Consumer  Consumer         `json:"consumer"`
	Consumers []Consumer       `json:"consumers"`
	Catalogs  map[string]int64 `json:"catalogs"`
	// Unreadable names, per database, why its catalog entry does not
	// decode; its version is not in Catalogs. The others are reported
	// all the same.
	Unreadable map[string]string `json:"unreadable,omitempty"`
	// Drift counts, per database with any, the statements of its
	// history the catalog could not follow.
	Drift       map[string]int `json:"drift,omitempty"`
	DeadLetters uint64         `json:"dead_letters"`
	// EventsByDatabase counts, per database, the events the stream holds
	// (schema, docs and examples), and LettersByDatabase its dead
	// letters: whose events fill the stream's disk, which every database
	// shares.
	EventsByDatabase  map[string]uint64 `json:"events_by_database,omitempty"`
	LettersByDatabase map[string]uint64 `json:"dead_letters_by_database,omitempty"`
	// NearBound counts, per database and kind, the events of those
	// holding nine tenths of the bound or more: past it their publishes
	// of that kind are refused.
	NearBound map[string]map[string]uint64 `json:"near_bound,omitempty"`
	// ObjectBytes is the size of the object store: big events' SQL
	// until applied, big catalogs (`schemaq sweep` says what is left over).
	ObjectBytes uint64 `json:"object_bytes"`
	// Daemons are the query service's replicas that answered, and
	// Warnings what they disagree on.
	Daemons  []Daemon `json:"daemons"`
	Warnings []string `json:"warnings,omitempty"`
}

// Gather reads the event stream and its consumers, which must be
// there, then what else is: catalogs, dead letters, the object store
// and the daemons answering.
func Gather(ctx context.Context, js jetstream.JetStream) (*Report, error) {
	rep := &Report{Catalogs: map[string]int64{}}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w (has schemaq run against this server yet?)", events.Stream, err)
	}
	si, err := s.Info(ctx, jetstream.WithSubjectFilter(everySubject))
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq = si.State.Msgs, si.State.Bytes, si.State.LastSeq
	rep.EventsByDatabase = perDatabase(si.State.Subjects)
	rep.Stream.MaxEventsPerDatabase = max(si.Config.MaxMsgsPerSubject, 0)
	rep.NearBound = nearBound(si.State.Subjects, rep.Stream.MaxEventsPerDatabase)
	if err := rep.consumers(ctx, s); err != nil {
		return nil, err
	}
	if err := rep.catalogs(ctx, js); err != nil {
		return nil, err
	}
	if d, err := js.Stream(ctx, events.DeadLetterStream); err == nil {
		if di, err := d.Info(ctx, jetstream.WithSubjectFilter(everySubject)); err == nil {
			rep.DeadLetters = di.State.Msgs
			rep.LettersByDatabase = perDatabase(di.State.Subjects)
		}
	}
	if obj, err := streams.Objects(ctx, js); err == nil {
		if st, err := obj.Status(ctx); err == nil {
			rep.ObjectBytes = st.Size()
		}
	}
	if ds, err := ListDaemons(ctx, js.Conn()); err == nil {
		rep.Daemons = ds
		rep.Warnings = DaemonWarnings(ds)
	}
	return rep, nil
}

// everySubject has a stream's info count its messages per subject too.
const everySubject = "schemaq.>"

// perDatabase sums a stream's messages per subject by the database the
// subject names (schemaq.<kind>.<database>).
func perDatabase(subjects map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for subject, n := range subjects {
		if parts := strings.Split(subject, "."); len(parts) == 3 && n > 0 {
			out[parts[2]] += n
		}
	}
	return out
}

// nearBound picks, per database and kind, the subjects holding
// streams.NearShare of bound or more (none without a bound).
func nearBound(subjects map[string]uint64, bound int64) map[string]map[string]uint64 {
	if bound <= 0 {
		return nil
	}
	var out map[string]map[string]uint64
	for subject, n := range subjects {
		parts := strings.Split(subject, ".")
		if len(parts) != 3 || float64(n) < streams.NearShare*float64(bound) {
			continue
		}
		if out == nil {
			out = map[string]map[string]uint64{}
		}
		if out[parts[2]] == nil {
			out[parts[2]] = map[string]uint64{}
		}
		out[parts[2]][parts[1]] = n
	}
	return out
}

func (rep *Report) consumers(ctx context.Context, s jetstream.Stream) error {
	rep.Consumers = []Consumer{}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" {
			continue // ordered consumers of CLI commands and replays
		}
		cr := Consumer{Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending,
			Redelivered: ci.NumRedelivered, Delivered: ci.Delivered.Stream}
		rep.Consumers = append(rep.Consumers, cr)
		if poolConsumer(ci) {
			rep.Consumer.add(cr)
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("list consumers of %s: %w", events.Stream, err)
	}
	sort.Slice(rep.Consumers, func(i, j int) bool { return rep.Consumers[i].Name < rep.Consumers[j].Name })
	return nil
}

// poolConsumer reports whether ci is one of the shared worker pool's:
// its two consumers and their open lanes.
func poolConsumer(ci *jetstream.ConsumerInfo) bool {
	of := ci.Name
	if l, ok := streams.LaneOf(ci); ok {
		if l.Closing {
			return false // what it holds, the consumers hold too
		}
		of = l.Of
	}
	return of == streams.Durable || of == streams.Durable+streams.DocsSuffix
}

// catalogs reads every catalog's version and drift; one that does
// not decode is named with why, and the others are reported all the same.
func (rep *Report) catalogs(ctx context.Context, js jetstream.JetStream) error {
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return nil // no catalog written yet
	}
	opts := []catalogkv.Option{catalogkv.WithJetStream(js)}
	if objs, err := streams.Objects(ctx, js); err == nil {
		opts = append(opts, catalogkv.WithObjects(objs)) // big catalogs live there
	}
	store := catalogkv.New(kv, opts...)
	keys, err := store.Keys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		cat, _, err := store.Get(ctx, k)
		if err != nil {
			if rep.Unreadable == nil {
				rep.Unreadable = map[string]string{}
			}
			rep.Unreadable[k] = err.Error()
			continue
		}
		rep.Catalogs[k] = cat.Version
		if n := len(cat.Drift()); n > 0 {
			if rep.Drift == nil {
				rep.Drift = map[string]int{}
			}
			rep.Drift[k] = n
		}
	}
	return nil
}
