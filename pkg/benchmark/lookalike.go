package benchmark

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// LookAlike pools copies of every database of a schema file beside it,
// each copy missing a share of its columns: many databases of one
// design that drifted apart, as a platform's tenants or environments do.
// Without Words the questions stay the originals', so a copy that kept
// every column a question names looks as right as the original, and one
// that lost them does not. With Words each copy also says some of its
// words another way (client for customer), and each question is asked of
// one of the databases, in that database's words: look-alikes a question
// can tell apart, as a platform's teams that built one design each in
// their own words are.
type LookAlike struct {
	// Copies is how many databases each original becomes, itself
	// included; 1 or less is off.
	Copies int
	// Drop is the share of a copy's columns dropped, keys and the
	// columns of foreign keys excepted.
	Drop float64
	// Words is the share of a copy's words with a synonym
	// (synonymGroups) that it says with another word of the group, in
	// its schema, table, column and constraint names. 0: the copies keep
	// the original's words and the questions are asked of the originals.
	Words float64
	Seed  uint64
}

// lookAlike applies la to cat, the catalog of sql, and rewrites the
// questions qs for the copies they are asked of.
func lookAlike(cat *catalog.Catalog, source, sql string, la LookAlike, qs []Question) (*catalog.Catalog, []Question, error) {
	if la.Copies <= 1 {
		return cat, qs, nil
	}
	if la.Drop < 0 || la.Drop >= 1 {
		return nil, nil, fmt.Errorf("bench: look-alike copies: the share of columns dropped is from 0 to below 1, got %v", la.Drop)
	}
	if la.Words < 0 || la.Words > 1 {
		return nil, nil, fmt.Errorf("bench: look-alike copies: the share of words said another way is from 0 to 1, got %v", la.Words)
	}
	copies, err := Replicate(sql, len(cat.Tables())*la.Copies)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: look-alike copies: %w", err)
	}
	whole, err := catalog.Snapshot(cat.Database, source, strings.Join(copies.Scripts, "\n"))
	if err != nil {
		return nil, nil, fmt.Errorf("bench: look-alike copies: %w", err)
	}
	original := map[string]bool{}
	for _, s := range cat.Schemas() {
		original[s] = true
	}
	rng := rand.New(rand.NewPCG(la.Seed, la.Seed^0x9e3779b97f4a7c15))
	if whole, err = dropColumns(whole, original, la.Drop, rng); err != nil {
		return nil, nil, err
	}
	if la.Words == 0 {
		return whole, qs, nil
	}
	w := newWording(cat, copies.Of, la, rng)
	if whole, err = w.apply(whole); err != nil {
		return nil, nil, err
	}
	return whole, w.ask(qs, la.Copies, rng), nil
}

// dropColumns drops a share of the columns of every table of a copy
// (a schema not in original), keys and foreign keys kept.
func dropColumns(whole *catalog.Catalog, original map[string]bool, share float64, rng *rand.Rand) (*catalog.Catalog, error) {
	var drops strings.Builder
	for _, t := range whole.Tables() {
		if original[t.Schema] {
			continue
		}
		keep := keyColumns(t)
		for _, c := range t.Columns {
			if !keep[c.Name] && rng.Float64() < share {
				fmt.Fprintf(&drops, "ALTER TABLE %s DROP COLUMN %s CASCADE;\n", t.QualName(), catalog.QuoteIdent(c.Name))
			}
		}
	}
	out, err := whole.Apply("look-alike.sql", drops.String())
	if err != nil {
		return nil, fmt.Errorf("bench: look-alike copies: %w", err)
	}
	return out, nil
}

// keyColumns are the columns of a table's keys and foreign keys: a copy
// keeps its joins.
func keyColumns(t *catalog.Table) map[string]bool {
	keep := map[string]bool{}
	add := func(cols []string) {
		for _, c := range cols {
			keep[c] = true
		}
	}
	if t.PrimaryKey != nil {
		add(t.PrimaryKey.Columns)
	}
	for _, k := range t.Unique {
		add(k.Columns)
	}
	for _, fk := range t.ForeignKeys {
		add(fk.Columns)
	}
	return keep
}
