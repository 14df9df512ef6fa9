package catalog

import (
	pg "github.com/pganalyze/pg_query_go/v5"
)

// Temporary relations. A migration may stage data in a temporary table
// (CREATE TEMP TABLE ids AS SELECT …) and leave it to vanish with the
// session. Held as an ordinary table, it stayed in the catalog, and in
// every prompt, for good. A temporary relation lives in the session's
// schema instead, which unqualified names find first, and goes when the
// script ends, with the views over it (PostgreSQL makes those temporary
// too). A migration is one session: tools run it on one connection, and a
// history that relied on a temporary table of an earlier migration could
// not be replayed into a new database.

// tempSchema is the session's temporary schema as a script names it;
// PostgreSQL's is pg_temp_N.
const tempSchema = "pg_temp"

// isTemp reports whether rv names a temporary relation: made with TEMP or
// TEMPORARY, or in pg_temp.
func isTemp(rv *pg.RangeVar) bool {
	return rv != nil && (rv.Relpersistence == "t" || rv.Schemaname == tempSchema)
}

// endSession drops the temporary relations the script made, and what
// depends on them.
func (a *applier) endSession() error {
	if !a.temp {
		return nil
	}
	var temps []QualName
	for q := range a.cat.tables {
		if q.Schema == tempSchema {
			temps = append(temps, q)
		}
	}
	for q := range a.cat.views {
		if q.Schema == tempSchema {
			temps = append(temps, q)
		}
	}
	return a.dropRelations(temps, true)
}
