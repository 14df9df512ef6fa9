package catalog

import (
	"fmt"
	"slices"
)

// Drift is a statement of an applied migration that a tolerant Apply left
// out, or applied only by inferring an object it names: where the catalog
// may differ from the database the history ran against.
type Drift struct {
	// Seq and Migration are the migration's seq and its id in the
	// history; Record sets them.
	Seq       int64  `json:"seq,omitempty"`
	Migration string `json:"migration,omitempty"`
	Source    string `json:"source"`
	Statement int    `json:"statement"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Excerpt   string `json:"excerpt,omitempty"`
	Error     string `json:"error"`
	// Inferred names what the statement proved to exist and the catalog
	// now holds, marked inferred ("column public.orders.tenant_id"). It
	// is empty when the statement was skipped.
	Inferred string `json:"inferred,omitempty"`
	// Stopped is set when the statement called a routine the catalog
	// interpreted up to a construct it cannot evaluate (Error names it):
	// the DDL the routine ran before that point was applied.
	Stopped bool `json:"stopped,omitempty"`
}

// String reads as an error does: where, then what happened.
func (d Drift) String() string {
	what := "skipped"
	switch {
	case d.Inferred != "":
		what = "applied by inferring " + d.Inferred
	case d.Stopped:
		what = "evaluated in part"
	}
	src := d.Source
	if src == "" {
		src = "(no source)"
	}
	s := fmt.Sprintf("%s: statement %d (line %d, column %d): %s: %s", src, d.Statement, d.Line, d.Column, what, d.Error)
	if d.Excerpt != "" {
		s += fmt.Sprintf(" in %q", d.Excerpt)
	}
	return s
}

func driftOf(e *Error, inferred string) Drift {
	return Drift{Source: e.Source, Statement: e.Statement, Line: e.Line, Column: e.Column,
		Excerpt: e.Excerpt, Error: e.Err.Error(), Inferred: inferred}
}

// Drift returns what tolerant applies skipped or inferred since the
// catalog's base, oldest first. A snapshot (Rebase) clears it. The slice
// is the catalog's own: do not modify it.
func (c *Catalog) Drift() []Drift { return c.drift }

// stampDrift names the migration a in the drift entries Apply added since
// the last Record.
func (c *Catalog) stampDrift(a Applied) {
	var stamped []Drift
	for i := len(c.drift) - 1; i >= 0 && c.drift[i].Seq == 0 && c.drift[i].Migration == ""; i-- {
		if stamped == nil {
			// The slice may share its array with the catalog Apply was
			// called on.
			stamped = slices.Clone(c.drift)
		}
		stamped[i].Seq, stamped[i].Migration = a.Seq, a.ID
	}
	if stamped != nil {
		c.drift = stamped
	}
}
