package daemon

import (
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/kept"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// TestCheckExampleKeepsOnlyTheParse: the console's listing parses an
// example's SQL once, but fits it to each catalog anew: a table dropped
// makes it stale on the next view.
func TestCheckExampleKeepsOnlyTheParse(t *testing.T) {
	d := &Daemon{parsedExamples: kept.Map[parsedSQL]{Max: 10}}
	before, err := catalog.Snapshot("shop", "s.sql", "CREATE TABLE orders (id int, total numeric);")
	if err != nil {
		t.Fatal(err)
	}
	after, err := before.Apply("drop.sql", "DROP TABLE orders;")
	if err != nil {
		t.Fatal(err)
	}
	const sql = "SELECT sum(total) FROM orders"
	if err := d.checkExample(sql, "", sqlguard.NewNames(before)); err != nil {
		t.Errorf("fits the catalog before: %v", err)
	}
	if err := d.checkExample(sql, "", sqlguard.NewNames(after)); err == nil {
		t.Error("still fits once orders is dropped")
	}
	if err := d.checkExample("SELEC nonsense", "", sqlguard.NewNames(before)); err == nil {
		t.Error("SQL that does not parse fits")
	}
	if err := d.checkExample("SELEC nonsense", "", sqlguard.NewNames(before)); err == nil {
		t.Error("SQL that does not parse fits, asked again")
	}
	if n := d.parsedExamples.Len(); n != 2 {
		t.Errorf("%d parses kept, want 2", n)
	}
}
