package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/deadletter"
	"github.com/schemaq/schemaq/pkg/objectgc"
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
}

// jetStreamSession is session for commands that read the streams
// directly: a JetStream handle, the request context and one cleanup.
func (c *clientFlags) jetStreamSession(ctx context.Context) (jetstream.JetStream, context.Context, func(), error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	rctx, cancel := requestCtx(ctx, *c.timeout)
	return js, rctx, func() { cancel(); nc.Close() }, nil
}

func runStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "status", "[flags]")
	var c clientFlags
	c.register(fs, e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	var rep statusReport
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w (has schemaq run against this server yet?)", events.Stream, err)
	}
	si, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", events.Stream, err)
	}
	rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq = si.State.Msgs, si.State.Bytes, si.State.LastSeq
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
	rep.Catalogs = map[string]int64{}
	if kv, err := js.KeyValue(ctx, events.CatalogBucket); err == nil {
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
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fmt.Fprintf(e.stdout, "stream %s: %d events (%d bytes), last seq %d\n", events.Stream, rep.Stream.Messages, rep.Stream.Bytes, rep.Stream.LastSeq)
	if len(rep.Consumers) == 0 {
		fmt.Fprintln(e.stdout, "consumers: none (no worker or replica has started)")
	}
	for _, c := range rep.Consumers {
		fmt.Fprintf(e.stdout, "consumer %s: %d pending, %d in flight, %d redelivered\n", c.Name, c.Pending, c.AckPending, c.Redelivered)
	}
	names := make([]string, 0, len(rep.Catalogs))
	for k := range rep.Catalogs {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(e.stdout, "catalogs: %d\n", len(names))
	for _, n := range names {
		line := fmt.Sprintf("  %-30s version %d", n, rep.Catalogs[n])
		if d := rep.Drift[n]; d > 0 {
			line += fmt.Sprintf(", drift: %d statement(s) skipped or inferred (schemaq tables --db %s)", d, n)
		}
		fmt.Fprintln(e.stdout, line)
	}
	for _, n := range slices.Sorted(maps.Keys(rep.Unreadable)) {
		fmt.Fprintf(e.stdout, "  %-30s UNREADABLE: %s\n", n, rep.Unreadable[n])
	}
	fmt.Fprintf(e.stdout, "dead letters: %d\n", rep.DeadLetters)
	fmt.Fprintf(e.stdout, "object store %s: %d bytes\n", events.ObjectBucket, rep.ObjectBytes)
	return nil
}

// deadLetterView is a letter as dlq prints it: show adds the event.
type deadLetterView struct {
	deadletter.Letter
	Data string `json:"data,omitempty"`
}

func viewOf(l *deadletter.Letter, withData bool) deadLetterView {
	v := deadLetterView{Letter: *l}
	if withData {
		v.Data = string(l.Data)
	}
	return v
}

func runDLQ(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || !slices.Contains([]string{"list", "show", "retry", "delete", "purge"}, args[0]) {
		fmt.Fprintln(e.stderr, "Usage: schemaq dlq list [--db NAME] | show SEQ... | retry SEQ... | delete SEQ... | purge [--db NAME]")
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
			return nil
		}
		return usagef("dlq: say list, show, retry, delete or purge")
	}
	verb := args[0]
	fs := newFlags(e, "dlq "+verb, "[flags] [SEQ...]")
	var c clientFlags
	c.register(fs, e)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch {
	case verb == "purge" && fs.NArg() > 0:
		return usagef("dlq purge takes no sequence numbers: use dlq delete SEQ... for single letters")
	case verb == "purge" && *c.db != "":
		if err := c.requireDB(); err != nil {
			return err
		}
	case verb != "list" && verb != "purge" && fs.NArg() == 0:
		return usagef("dlq %s: give the dead letter's sequence number (see dlq list)", verb)
	}
	var seqs []uint64
	for _, a := range fs.Args() {
		seq, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return usagef("dlq %s: %q is not a sequence number", verb, a)
		}
		seqs = append(seqs, seq)
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	box, err := deadletter.Open(ctx, js)
	if err != nil {
		return err
	}
	switch verb {
	case "list":
		return dlqList(ctx, e, box, &c)
	case "purge":
		n, err := box.Purge(ctx, *c.db)
		if err != nil {
			return err
		}
		what := *c.db
		if what == "" {
			what = "every database"
		}
		fmt.Fprintf(e.stdout, "purged %d dead letter(s) of %s\n", n, what)
		return nil
	}
	for _, seq := range seqs {
		if err := dlqOne(ctx, e, box, &c, verb, seq); err != nil {
			return err
		}
	}
	return nil
}

func dlqList(ctx context.Context, e *env, box *deadletter.Box, c *clientFlags) error {
	letters, err := box.List(ctx, *c.db)
	if err != nil {
		return err
	}
	out := make([]deadLetterView, len(letters))
	for i := range letters {
		out[i] = viewOf(&letters[i], false)
	}
	if *c.asJSON {
		if len(out) == 0 {
			out = nil // null, as before
		}
		return json.NewEncoder(e.stdout).Encode(out)
	}
	for _, v := range out {
		fmt.Fprintf(e.stdout, "%d\t%s\t%s\t%s\t%s\n", v.Seq, v.Database, v.Kind, v.Source, v.Reason)
	}
	fmt.Fprintf(e.stdout, "%d dead letter(s)\n", len(out))
	return nil
}

// dlqOne shows, deletes or retries one letter.
func dlqOne(ctx context.Context, e *env, box *deadletter.Box, c *clientFlags, verb string, seq uint64) error {
	switch verb {
	case "delete":
		if err := box.Delete(ctx, seq); err != nil {
			return notFoundHint(err, seq)
		}
		fmt.Fprintf(e.stdout, "dead letter %d deleted\n", seq)
	case "show":
		l, err := box.Get(ctx, seq)
		if err != nil {
			return notFoundHint(err, seq)
		}
		v := viewOf(l, true)
		if *c.asJSON {
			return json.NewEncoder(e.stdout).Encode(v)
		}
		fmt.Fprintf(e.stdout, "seq: %d\ndatabase: %s\nsubject: %s\nsource: %s\nkind: %s\ndeliveries: %s\nreason: %s\nevent: %s\n",
			v.Seq, v.Database, v.Subject, v.Source, v.Kind, v.Deliveries, v.Reason, v.Data)
	case "retry":
		target, err := box.Retry(ctx, seq)
		if err != nil {
			return notFoundHint(err, seq)
		}
		fmt.Fprintf(e.stdout, "dead letter %d republished to %s\n", seq, target)
	}
	return nil
}

func notFoundHint(err error, seq uint64) error {
	if errors.Is(err, deadletter.ErrNotFound) {
		return fmt.Errorf("dead letter %d: there is no such dead letter (retried, deleted or swept already?); `schemaq dlq list` shows those there are", seq)
	}
	return err
}

func runSweep(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "sweep", "[flags]")
	var c clientFlags
	c.nats.register(fs, e)
	c.asJSON = fs.Bool("json", false, "print JSON")
	c.timeout = fs.Duration("timeout", 5*time.Minute, "how long the sweep may take")
	cfg := objectgc.DefaultConfig
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "leave objects younger than this: their events may still be being published")
	fs.BoolVar(&cfg.DryRun, "dry-run", false, "say what would be deleted, delete nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("sweep takes no arguments, got %q", fs.Args())
	}
	if cfg.Grace <= 0 {
		return usagef("--grace must be more than zero, got %v", cfg.Grace)
	}
	js, ctx, done, err := c.jetStreamSession(ctx)
	if err != nil {
		return err
	}
	defer done()
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w (has schemaq run against this server yet?)", events.CatalogBucket, err)
	}
	objs, err := streams.Objects(ctx, js)
	if err != nil {
		return err
	}
	s, err := objectgc.New(js, catalogkv.New(kv, catalogkv.WithObjects(objs)), zap.NewNop(), cfg)
	if err != nil {
		return usagef("%v", err)
	}
	rep, err := s.Once(ctx)
	if err != nil {
		return err
	}
	if *c.asJSON {
		return json.NewEncoder(e.stdout).Encode(rep)
	}
	fmt.Fprintf(e.stdout, "object store %s: %d object(s), %d bytes\n", events.ObjectBucket, rep.Objects, rep.Bytes)
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(e.stdout, "%s %d object(s), %d bytes\n", verb, len(rep.Removed), rep.RemovedBytes)
	for _, r := range rep.Removed {
		fmt.Fprintf(e.stdout, "  %s (%d bytes): %s\n", r.Name, r.Size, r.Why)
	}
	fmt.Fprintf(e.stdout, "kept %d needed, %d younger than %v\n", rep.Kept, rep.Young, cfg.Grace)
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(e.stderr, "schemaq: left the event objects of %s: what references them could not be read in full; run the sweep again\n", strings.Join(rep.Skipped, ", "))
		return errSilent
	}
	return nil
}
