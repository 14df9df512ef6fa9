package chunk

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// FuzzChunkerUpdate: whatever a migration does, the catalog it yields is
// listed in name order, its graph built from the previous version's
// (Graph.Next) is the graph built from nothing, and the Chunker's chunks
// of it, updated from the previous version's, are a fresh chunking's.
func FuzzChunkerUpdate(f *testing.F) {
	testenv.CapFuzzWorker(f)
	for _, s := range []string{
		"CREATE TABLE reviews (id int, customer_id bigint REFERENCES customers (id));",
		"ALTER TABLE orders ADD COLUMN note text; COMMENT ON TABLE events IS 'x';",
		"ALTER TYPE order_status ADD VALUE 'returned';",
		"CREATE TABLE events_2027 PARTITION OF events FOR VALUES FROM ('2027-01-01') TO ('2028-01-01');",
		"ALTER TABLE events_2026 ADD FOREIGN KEY (customer_id) REFERENCES customers (id);",
		"ALTER TABLE events DETACH PARTITION events_2026;",
		"ALTER TABLE customers RENAME TO clients;",
		"ALTER TABLE items RENAME TO products; ALTER TABLE lines RENAME COLUMN item_id TO product_id;",
		"DROP TABLE items CASCADE;",
		"DROP TABLE customers CASCADE;",
		"ALTER TABLE lines DROP CONSTRAINT lines_item_id_fkey;",
		"CREATE SCHEMA s; ALTER TABLE items SET SCHEMA s;",
		"ALTER TABLE child NO INHERIT parent; ALTER TABLE parent ADD COLUMN z int;",
		"CREATE TABLE category (category_id int PRIMARY KEY); ALTER TABLE items ADD COLUMN category_id int;",
		"CREATE UNIQUE INDEX items_name ON items (name); CREATE INDEX ON events (customer_id);",
		"CREATE UNIQUE INDEX ON events (customer_id, at); ALTER TABLE items RENAME COLUMN name TO title;",
	} {
		f.Add(s)
	}
	base, err := catalog.Snapshot("shop", "shop.sql", shopDDL+`
		ALTER TABLE events ADD COLUMN customer_id bigint;
		CREATE TABLE items (id bigint PRIMARY KEY, name text);
		CREATE TABLE lines (item_id bigint REFERENCES items (id), qty int);
		CREATE TABLE parent (id int PRIMARY KEY); CREATE TABLE child (x int) INHERITS (parent);`)
	if err != nil {
		f.Fatal(err)
	}
	base.Version = 1
	prev := catalog.NewGraph(base)
	prev.Warm(true)
	f.Fuzz(func(t *testing.T, sql string) {
		n, err := base.Apply("fuzz.sql", sql)
		if err != nil {
			return
		}
		n.ShareWith(base)
		n.Version = 2
		tables := n.Tables()
		if !slices.IsSortedFunc(tables, func(a, b *catalog.Table) int {
			return strings.Compare(a.Schema+"\x00"+a.Name, b.Schema+"\x00"+b.Name)
		}) {
			t.Fatalf("tables out of name order: %v", tables)
		}
		next, fresh := prev.Next(n), catalog.NewGraph(n)
		next.Warm(true)
		fresh.Warm(true)
		for _, tb := range tables {
			q, key := tb.QualName(), tb.QualName().Key()
			if !reflect.DeepEqual(next.Neighbours(key), fresh.Neighbours(key)) || !reflect.DeepEqual(next.Inferred(key), fresh.Inferred(key)) ||
				!reflect.DeepEqual(next.Incoming(q), fresh.Incoming(q)) || !reflect.DeepEqual(next.Partitions(q), fresh.Partitions(q)) ||
				!reflect.DeepEqual(next.PartitionKeys(q), fresh.PartitionKeys(q)) {
				t.Fatalf("%s: the graph built from the previous one differs from the graph built from nothing", key)
			}
		}
		k := NewChunker(Options{})
		k.Catalog(base)
		if got, want := k.Catalog(n), Catalog(n, Options{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("the chunker's chunks differ from a fresh chunking:\n got %v\nwant %v", ids(got), ids(want))
		}
	})
}
