package catalog

import (
	"cmp"
	"slices"

	"github.com/schemaq/schemaq/events"
)

// Applied is a migration the catalog records as applied: the history's
// form is part of the catalog entry clients read (events.CatalogHistory).
type Applied = events.AppliedMigration

// Base is the snapshot a catalog's history starts from, when it does.
type Base = events.SnapshotBase

// History returns the applied migrations in seq order. The slice is the
// catalog's own: do not modify it.
func (c *Catalog) History() []Applied { return c.history }

// Base returns the snapshot the history starts from, or nil.
func (c *Catalog) Base() *Base { return c.base }

// AppliedSeq returns the history entry of seq, or nil.
func (c *Catalog) AppliedSeq(seq int64) *Applied {
	i, ok := slices.BinarySearchFunc(c.history, seq, func(a Applied, s int64) int { return cmp.Compare(a.Seq, s) })
	if !ok {
		return nil
	}
	return &c.history[i]
}

// Record returns a copy of c with a migrated entry appended at a's seq
// (which must be above every recorded one) and its version set to it.
// It does not clone the schema: the caller passes a catalog it owns, such
// as the one Apply returned.
func (c *Catalog) Record(a Applied) *Catalog {
	c.history = append(slices.Clip(c.history), a)
	c.Version = a.Seq
	c.stampDrift(a)
	c.stampChanges(a.Seq, a.Source)
	return c
}

// touch is how one migration changed a table.
type touch uint8

const (
	touchCreated touch = 1 << iota
	touchAltered
	touchRenamed
)

func (t touch) String() string {
	switch {
	case t&touchCreated != 0:
		return "created"
	case t == touchRenamed|touchAltered:
		return "renamed, altered"
	case t&touchRenamed != 0:
		return "renamed"
	}
	return "altered"
}

// stampChanges enters the last Apply's changes in the tables' History.
func (c *Catalog) stampChanges(seq int64, source string) {
	for t, how := range c.touched {
		t.History = addChange(t.History, Change{Seq: seq, Source: source, What: how.String()})
	}
	c.touched = nil
}

// Rebase marks c as built from the snapshot base: its history starts
// anew, without drift. c is a catalog Snapshot returned, whose tables are
// all its own: every one is changed.
func (c *Catalog) Rebase(b Base) *Catalog {
	c.history, c.base, c.Version, c.drift = nil, &b, b.Seq, nil
	for _, t := range c.tables {
		t.History = nil
	}
	for t := range c.touched {
		c.touched[t] = touchCreated // a snapshot creates what it holds
	}
	c.stampChanges(b.Seq, b.Source)
	return c
}

// Lineage is the catalog's version and history, as its entry records them
// for publishers (events.CatalogHistory).
func (c *Catalog) Lineage() *events.CatalogHistory {
	return &events.CatalogHistory{Database: c.Database, Version: c.Version, History: c.history, Base: c.base}
}
