package catalog

import (
	"cmp"
	"slices"
)

// Applied is one migration in a catalog's history: what migration tools
// keep in their schema_migrations table, so a publisher can tell which of
// its files are applied whatever order they sort in, and notice an applied
// file whose content changed.
type Applied struct {
	Seq int64 `json:"seq"`
	// ID is the migration's identity in its tool (its version, or its
	// file name without one).
	ID     string `json:"id"`
	Source string `json:"source,omitempty"`
	// Checksum is Checksum of the SQL that was applied.
	Checksum string `json:"checksum"`
	// StreamSeq is where the applied event sits in the event stream (0
	// when not recorded). An event at the same seq that sits before it
	// was superseded (a broken migration, fixed and published again), not
	// a conflict: a replica replaying the stream meets it first.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
}

// Base is the snapshot a catalog's history starts from, when it does.
type Base struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source,omitempty"`
}

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
	return c
}

// Rebase marks c as built from the snapshot base: its history starts
// anew, without drift.
func (c *Catalog) Rebase(b Base) *Catalog {
	c.history, c.base, c.Version, c.drift = nil, &b, b.Seq, nil
	return c
}
