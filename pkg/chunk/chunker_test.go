package chunk

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestChunkerReusesOnlyWhatStillHolds: through a history, the Chunker's
// chunks equal a fresh chunking of each version, including tables that
// did not change themselves but whose neighbours, partitions or enums
// did; and a migration that touches one table renders one.
func TestChunkerReusesOnlyWhatStillHolds(t *testing.T) {
	steps := []struct {
		name, sql string
		rendered  int  // tables and views rendered anew
		updated   bool // by what changed, not over every table
	}{
		{"a new table pointing at customers", `CREATE TABLE reviews (id int, customer_id bigint REFERENCES customers (id))`, 2, true},
		{"a column of one table", `ALTER TABLE reviews ADD COLUMN stars int`, 1, true},
		{"an enum label", `ALTER TYPE order_status ADD VALUE 'returned'`, 1, false},
		{"a partition attached", `CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01')`, 1, false},
		{"a column of the partitioned table", `ALTER TABLE events ADD COLUMN customer_id bigint`, 1, false},
		{"a key on a partition: its root and the table it references", `ALTER TABLE events_2026 ADD FOREIGN KEY (customer_id) REFERENCES customers (id)`, 2, false},
		{"the same key on another partition", `ALTER TABLE events_2027 ADD FOREIGN KEY (customer_id) REFERENCES customers (id)`, 0, false},
		{"a view replaced", `CREATE OR REPLACE VIEW paid_orders AS SELECT o.id FROM orders o`, 1, true},
		{"the referencing table dropped", `DROP TABLE reviews`, 1, true},
		// The catalog holds indexes, which its chunks do not show: the
		// table is rendered again, to the same text (not embedded again).
		{"an index", `CREATE INDEX ON orders (status)`, 1, true},
		{"nothing the chunks show", `GRANT SELECT ON orders TO reader`, 0, true},
		{"a comment on a partitioned table", `COMMENT ON TABLE events IS 'what happened'`, 1, true},
		{"a key to the partitioned table's neighbour", `ALTER TABLE orders ADD COLUMN note text`, 1, true},
		{"a partition dropped: its root", `DROP TABLE events_2027`, 1, false},
		{"two tables, one referencing the other", `CREATE TABLE items (id bigint PRIMARY KEY); CREATE TABLE lines (item_id bigint REFERENCES items (id))`, 2, true},
		{"the referenced table renamed: it and the one that joins it", `ALTER TABLE items RENAME TO products`, 2, true},
		{"the referenced table dropped with the key to it", `DROP TABLE products CASCADE`, 1, true},
		// A partition's key follows its table: partitions moved.
		{"a table renamed: it, and the two that join it", `ALTER TABLE customers RENAME TO clients`, 3, false},
		{"a table dropped with the keys to it", `DROP TABLE clients CASCADE`, 2, false},
	}
	c := shop(t)
	k := NewChunker(Options{})
	k.Catalog(c)
	for i, st := range steps {
		n, err := c.Apply("m.sql", st.sql)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		n.ShareWith(c) // as a worker does before it writes
		n.Version = c.Version + 1
		before, updates := k.renders.Load(), k.updates.Load()
		got := k.Catalog(n)
		if want := Catalog(n, Options{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d (%s): the chunker's chunks differ from a fresh chunking:\n got %v\nwant %v", i+1, st.name, ids(got), ids(want))
		}
		if want := tablerChunks(n, Options{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d (%s): the chunker's chunks differ from the Tabler's:\n got %v\nwant %v", i+1, st.name, ids(got), ids(want))
		}
		if r := int(k.renders.Load() - before); r != st.rendered {
			t.Errorf("step %d (%s): %d tables and views rendered, want %d", i+1, st.name, r, st.rendered)
		}
		if updated := k.updates.Load() > updates; updated != st.updated {
			t.Errorf("step %d (%s): updated %v, want %v", i+1, st.name, updated, st.updated)
		}
		c = n
	}
}

// TestChunkerLemmy holds the Chunker to a fresh chunking at every one of
// Lemmy's 342 migrations.
func TestChunkerLemmy(t *testing.T) {
	dir := testenv.SharedPath(t, "corpus", "lemmy")
	order, err := os.ReadFile(filepath.Join(dir, "ORDER.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New("lemmy")
	k := NewChunker(Options{MaxTableBytes: 600}) // small, so wide tables split
	for i, rel := range strings.Fields(string(order)) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		n, err := c.Apply(rel, string(b))
		if err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
		n.ShareWith(c) // as a worker does before it writes
		n.Version = int64(i + 1)
		got := k.Catalog(n)
		if want := Catalog(n, Options{MaxTableBytes: 600}); !reflect.DeepEqual(got, want) {
			t.Fatalf("migration %d (%s): the chunker's chunks differ from a fresh chunking", i+1, rel)
		}
		if want := tablerChunks(n, Options{MaxTableBytes: 600}); !reflect.DeepEqual(got, want) {
			t.Fatalf("migration %d (%s): the chunker's chunks differ from the Tabler's", i+1, rel)
		}
		c = n
	}
	// Most migrations change a few tables and no partition.
	if n := k.updates.Load(); n < 300 {
		t.Errorf("%d of 342 catalogs updated by what changed, want most", n)
	}
}

func ids(chunks []Chunk) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.ID + "@" + c.Hash[:8]
	}
	return out
}

// tablerChunks is c chunked table by table through a Tabler, as a daemon
// renders the tables it adds to a result, in the Chunker's order.
func tablerChunks(c *catalog.Catalog, opts Options) []Chunk {
	tb := NewTabler(catalog.NewGraph(c), opts)
	var out []Chunk
	for _, t := range c.Tables() {
		if t.PartitionOf == nil {
			out = appendVersioned(out, tb.Table(t), c.Version)
		}
	}
	for _, v := range c.Views() {
		out = appendVersioned(out, []Chunk{View(c, v)}, c.Version)
	}
	return out
}
