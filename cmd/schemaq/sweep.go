package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/objectgc"
	"github.com/schemaq/schemaq/pkg/streams"
	"go.uber.org/zap"
)

func runSweep(ctx context.Context, e *env, args []string) (err error) {
	fs := newFlags(e, "sweep", "[flags]")
	var c clientFlags
	defer func() { err = c.jsonFailure(e, err) }()
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
