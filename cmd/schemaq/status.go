package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/streams"
)

type consumerReport struct {
	Name        string `json:"name,omitempty"`
	Pending     uint64 `json:"pending"`
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	Delivered   uint64 `json:"delivered_seq"`
}

type statusReport struct {
	Stream struct {
		Messages uint64 `json:"messages"`
		Bytes    uint64 `json:"bytes"`
		LastSeq  uint64 `json:"last_seq"`
	} `json:"stream"`
	// Consumer is the shared workers' durable; Consumers lists every
	// durable on the stream, the serve replicas' included.
	Consumer  consumerReport   `json:"consumer"`
	Consumers []consumerReport `json:"consumers"`
	Catalogs  map[string]int64 `json:"catalogs"`
	// Unreadable names, per database, why its catalog entry does not
	// decode; its version is not in Catalogs. The others are reported
	// all the same.
	Unreadable map[string]string `json:"unreadable,omitempty"`
	// Drift counts, per database with any, the statements of its
	// history the catalog could not follow.
	Drift       map[string]int `json:"drift,omitempty"`
	DeadLetters uint64         `json:"dead_letters"`
	// ObjectBytes is the size of the object store: big events' SQL
	// until applied, big catalogs (`schemaq sweep` says what is left over).
	ObjectBytes uint64 `json:"object_bytes"`
	// Daemons are the query service's replicas that answered, and
	// Warnings what they disagree on.
	Daemons  []daemonReport `json:"daemons"`
	Warnings []string       `json:"warnings,omitempty"`
}

// runStatus is parse, gather each part of the report, print.
func runStatus(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "status", "[flags]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
	c.register(fs, e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	rep, err := gatherStatus(ctx, js)
	if err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	rep.print(e)
	return nil
}

// gatherStatus reads the event stream and its consumers, which must be
// there, then what else is: catalogs, dead letters, the object store
// and the daemons answering.
func gatherStatus(ctx context.Context, js jetstream.JetStream) (*statusReport, error) {
	rep := &statusReport{Catalogs: map[string]int64{}}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w (has schemaq run against this server yet?)", events.Stream, err)
	}
	si, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq = si.State.Msgs, si.State.Bytes, si.State.LastSeq
	if err := rep.gatherConsumers(ctx, s); err != nil {
		return nil, err
	}
	if err := rep.gatherCatalogs(ctx, js); err != nil {
		return nil, err
	}
	if d, err := js.Stream(ctx, events.DeadLetterStream); err == nil {
		if di, err := d.Info(ctx); err == nil {
			rep.DeadLetters = di.State.Msgs
		}
	}
	if obj, err := streams.Objects(ctx, js); err == nil {
		if st, err := obj.Status(ctx); err == nil {
			rep.ObjectBytes = st.Size()
		}
	}
	if ds, err := listDaemons(ctx, js.Conn()); err == nil {
		rep.Daemons = ds
		rep.Warnings = daemonWarnings(ds)
	}
	return rep, nil
}

func (rep *statusReport) gatherConsumers(ctx context.Context, s jetstream.Stream) error {
	rep.Consumers = []consumerReport{}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" {
			continue // ordered consumers of CLI commands and replays
		}
		cr := consumerReport{Name: ci.Name, Pending: ci.NumPending, AckPending: ci.NumAckPending,
			Redelivered: ci.NumRedelivered, Delivered: ci.Delivered.Stream}
		rep.Consumers = append(rep.Consumers, cr)
		if ci.Name == streams.Durable {
			rep.Consumer = cr
			rep.Consumer.Name = ""
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("list consumers of %s: %w", events.Stream, err)
	}
	sort.Slice(rep.Consumers, func(i, j int) bool { return rep.Consumers[i].Name < rep.Consumers[j].Name })
	return nil
}

// gatherCatalogs reads every catalog's version and drift; one that does
// not decode is named with why, and the others are reported all the same.
func (rep *statusReport) gatherCatalogs(ctx context.Context, js jetstream.JetStream) error {
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return nil // no catalog written yet
	}
	var opts []catalogkv.Option
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

func (rep *statusReport) print(e *env) {
	fmt.Fprintf(e.stdout, "stream %s: %d events (%d bytes), last seq %d\n", events.Stream, rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq)
	if len(rep.Consumers) == 0 {
		fmt.Fprintln(e.stdout, "consumers: none (no worker or replica has started)")
	}
	for _, c := range rep.Consumers {
		fmt.Fprintf(e.stdout, "consumer %s: %d pending, %d in flight, %d redelivered\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
	}
	rep.printCatalogs(e)
	fmt.Fprintf(e.stdout, "dead letters: %d\n", rep.DeadLetters)
	fmt.Fprintf(e.stdout, "object store %s: %d bytes\n", events.ObjectBucket, rep.ObjectBytes)
	rep.printDaemons(e)
	for _, w := range rep.Warnings {
		fmt.Fprintln(e.stderr, "warning:", w)
	}
}

func (rep *statusReport) printCatalogs(e *env) {
	names := slices.Sorted(maps.Keys(rep.Catalogs))
	fmt.Fprintf(e.stdout, "catalogs: %d\n", len(names))
	for _, n := range names {
		line := fmt.Sprintf("  %-30s version %d", n, rep.Catalogs[n])
		if d := rep.Drift[n]; d > 0 {
			line += fmt.Sprintf(", drift: %d statement(s) skipped, inferred or evaluated in part (schemaq tables --db %s)", d, n)
		}
		fmt.Fprintln(e.stdout, line)
	}
	for _, n := range slices.Sorted(maps.Keys(rep.Unreadable)) {
		fmt.Fprintf(e.stdout, "  %-30s UNREADABLE: %s\n", n, rep.Unreadable[n])
	}
}

func (rep *statusReport) printDaemons(e *env) {
	fmt.Fprintf(e.stdout, "daemons: %d\n", len(rep.Daemons))
	for _, d := range rep.Daemons {
		line := fmt.Sprintf("  %s version %s", d.ID, d.Version)
		if d.Gateway != "" {
			line += ", gateway " + d.Gateway
		}
		if d.Store != "" {
			line += ", store " + d.Store
		}
		if d.AllowSystemCatalogs == "true" {
			line += ", system catalogs allowed"
		}
		fmt.Fprintln(e.stdout, line)
	}
}
