package chunk

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/testenv"
)

const shopDDL = `
CREATE TYPE order_status AS ENUM ('pending', 'paid', 'shipped');
CREATE TABLE customers (id bigint PRIMARY KEY, email text NOT NULL);
COMMENT ON TABLE customers IS 'People who bought something.';
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES customers, status order_status NOT NULL);
COMMENT ON COLUMN orders.status IS 'Where the order is in fulfilment.';
CREATE TABLE events (id int, at date) PARTITION BY RANGE (at);
CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
CREATE VIEW paid_orders AS SELECT o.id, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'paid';
`

func shop(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Snapshot("shop", "shop.sql", shopDDL)
	if err != nil {
		t.Fatal(err)
	}
	c.Version = 7
	return c
}

func byID(chunks []Chunk) map[string]Chunk {
	m := map[string]Chunk{}
	for _, c := range chunks {
		m[c.ID] = c
	}
	return m
}

func TestCatalogChunks(t *testing.T) {
	chunks := Catalog(shop(t), Options{})
	m := byID(chunks)
	var ids []string
	for _, c := range chunks {
		ids = append(ids, c.ID)
	}
	want := []string{"shop:table:public.customers", "shop:table:public.events", "shop:table:public.orders", "shop:view:public.paid_orders"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("chunk ids %v, want %v (partitions are folded into their parent)", ids, want)
	}
	tests := []struct {
		id       string
		contains []string
	}{
		{"shop:table:public.orders", []string{
			"CREATE TABLE public.orders (",
			"status order_status NOT NULL, -- Where the order is in fulfilment.",
			"-- enum public.order_status: pending, paid, shipped",
			"-- join: orders.customer_id → customers.id",
		}},
		{"shop:table:public.customers", []string{"-- People who bought something.", "-- referenced by: orders.customer_id → customers.id"}},
		{"shop:table:public.events", []string{"PARTITION BY RANGE (at)", "-- partitions: public.events_2026"}},
		{"shop:view:public.paid_orders", []string{"CREATE VIEW public.paid_orders (id, email) AS SELECT", "-- reads: public.orders, public.customers"}},
	}
	for _, tc := range tests {
		c, ok := m[tc.id]
		if !ok {
			t.Errorf("no chunk %s", tc.id)
			continue
		}
		for _, s := range tc.contains {
			if !strings.Contains(c.Text, s) {
				t.Errorf("%s does not contain %q:\n%s", tc.id, s, c.Text)
			}
		}
		if c.Version != 7 || c.Hash == "" || c.Database != "shop" {
			t.Errorf("%s: version %d hash %q db %q", tc.id, c.Version, c.Hash, c.Database)
		}
	}
	if got := m["shop:table:public.orders"].Columns; strings.Join(got, ",") != "id,customer_id,status" {
		t.Errorf("orders columns %v", got)
	}
}

// The keys a partitioned table's partitions declare show on the root,
// the only one chunked, once each, and on the table they reference under
// the root's name: pagila's seven payment partitions each reference
// customer.
func TestPartitionKeysShowOnTheRoot(t *testing.T) {
	c, err := catalog.Snapshot("db", "p.sql", `
CREATE TABLE customers (id bigint PRIMARY KEY);
CREATE TABLE payment (id bigint, customer_id bigint, paid date) PARTITION BY RANGE (paid);
CREATE TABLE payment_2022 PARTITION OF payment FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
CREATE TABLE payment_2023 PARTITION OF payment FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
ALTER TABLE payment_2022 ADD FOREIGN KEY (customer_id) REFERENCES customers (id);
ALTER TABLE payment_2023 ADD FOREIGN KEY (customer_id) REFERENCES customers (id);
CREATE TABLE refund (id bigint, customer_id bigint REFERENCES customers (id), at date) PARTITION BY RANGE (at);
CREATE TABLE refund_2022 PARTITION OF refund FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
`)
	if err != nil {
		t.Fatal(err)
	}
	m := byID(Catalog(c, Options{}))
	for _, tc := range []struct {
		id, line string
	}{
		{"db:table:public.payment", "-- join: payment.customer_id → customers.id (declared on its partitions)"},
		{"db:table:public.customers", "-- referenced by: payment.customer_id → customers.id"},
		// Declared on the root, copied to its partitions: the root's own.
		{"db:table:public.refund", "-- join: refund.customer_id → customers.id\n"},
		{"db:table:public.customers", "-- referenced by: refund.customer_id → customers.id"},
	} {
		text := m[tc.id].Text
		if n := strings.Count(text, tc.line); n != 1 {
			t.Errorf("%s has %q %d times, want once:\n%s", tc.id, tc.line, n, text)
		}
		if strings.Contains(text, "_2022.") || strings.Contains(text, "_2023.") {
			t.Errorf("%s names a partition's key instead of the root's:\n%s", tc.id, text)
		}
	}
}

func TestHashTracksContentNotVersion(t *testing.T) {
	c := shop(t)
	a := byID(Catalog(c, Options{}))
	c2 := c.Clone()
	c2.Version = 8
	b := byID(Catalog(c2, Options{}))
	if a["shop:table:public.orders"].Hash != b["shop:table:public.orders"].Hash {
		t.Error("a new version with the same content changed the hash")
	}
	c3, err := c.Apply("m.sql", "ALTER TABLE orders ADD COLUMN note text;")
	if err != nil {
		t.Fatal(err)
	}
	d := byID(Catalog(c3, Options{}))
	if a["shop:table:public.orders"].Hash == d["shop:table:public.orders"].Hash {
		t.Error("a new column did not change the hash")
	}
	if a["shop:table:public.customers"].Hash != d["shop:table:public.customers"].Hash {
		t.Error("an unrelated table's hash changed")
	}
}

func TestWideTableSplitsIntoParts(t *testing.T) {
	var cols []string
	for i := 0; i < 300; i++ {
		cols = append(cols, "metric_number_"+strings.Repeat("x", i%7)+itoa(i)+" numeric(12,4) NOT NULL DEFAULT 0")
	}
	sql := "CREATE TABLE wide (" + strings.Join(cols, ", ") + ", PRIMARY KEY (metric_number_0));\nCOMMENT ON TABLE wide IS 'Daily metrics.';" +
		// A unique index shows with its first column, as a key does; a
		// plain index does not show.
		"\nCREATE UNIQUE INDEX wide_last ON wide (metric_number_xxxxx299, metric_number_0);" +
		"\nCREATE UNIQUE INDEX wide_expr ON wide ((metric_number_xxx150 + 1)) WHERE metric_number_0 > 0;" +
		"\nCREATE INDEX wide_plain ON wide (metric_number_xxxxx299);"
	c, err := catalog.Snapshot("db", "wide.sql", sql)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{MaxTableBytes: 2000}
	parts := Table(c, c.Table(catalog.QualName{Schema: "public", Name: "wide"}), opts)
	if len(parts) < 5 {
		t.Fatalf("got %d parts, want a wide table split", len(parts))
	}
	seen := map[string]int{}
	for i, p := range parts {
		if p.Part != i+1 || p.ID != "db:table:public.wide:"+itoa(i+1) || p.Name != "public.wide" {
			t.Errorf("part %d: id %s part %d name %s", i, p.ID, p.Part, p.Name)
		}
		if !strings.Contains(p.Text, "-- Daily metrics.") || !strings.Contains(p.Text, "CREATE TABLE public.wide (") ||
			!strings.Contains(p.Text, "of table public.wide") {
			t.Errorf("part %d does not repeat the header:\n%s", i+1, p.Text)
		}
		if len(p.Text) > opts.MaxTableBytes {
			t.Errorf("part %d is %d bytes, bound %d", i+1, len(p.Text), opts.MaxTableBytes)
		}
		for _, col := range p.Columns {
			seen[col]++
		}
	}
	if len(seen) != 300 {
		t.Errorf("parts cover %d columns, want 300", len(seen))
	}
	for col, n := range seen {
		if n != 1 {
			t.Errorf("column %s appears in %d parts", col, n)
		}
	}
	if !strings.Contains(parts[0].Text, "PRIMARY KEY (metric_number_0)") {
		t.Error("primary key should go with the part holding its first column")
	}
	for name, col := range map[string]string{"wide_last": "metric_number_xxxxx299", "wide_expr": "metric_number_xxx150", "wide_plain": ""} {
		for i, p := range parts {
			shown := strings.Contains(p.Text, "INDEX "+name+" ")
			if want := slices.Contains(p.Columns, col); shown != want {
				t.Errorf("part %d shows index %s: %v, want %v", i+1, name, shown, want)
			}
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestDocSections(t *testing.T) {
	body := "Intro before any heading.\n\n# Refunds\n\n## Partial refunds\n\nSum payments.amount.\n\n```sql\n# not a heading\nSELECT 1;\n```\n\n## Full refunds ##\n\nMark the order refunded.\n\n### Edge cases\n\nZero-amount orders.\n# Appendix\nSee also."
	chunks := Doc("shop", "guides/refunds.md", "Refund guide", body, map[string]string{"product": "checkout"}, Options{})
	var titles []string
	for _, c := range chunks {
		titles = append(titles, c.Title)
		if c.Tags["product"] != "checkout" || c.Kind != KindDoc || c.Name != "guides/refunds.md" {
			t.Errorf("chunk %s lost its identity: %+v", c.ID, c)
		}
		if !strings.HasPrefix(c.Text, "# "+c.Title+"\n\n") {
			t.Errorf("chunk %s does not lead with its heading path:\n%s", c.ID, c.Text)
		}
	}
	want := []string{
		"Refund guide",
		"Refund guide > Refunds > Partial refunds",
		"Refund guide > Refunds > Full refunds",
		"Refund guide > Refunds > Full refunds > Edge cases",
		"Refund guide > Appendix",
	}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("titles:\n got  %q\n want %q", titles, want)
	}
	if !strings.Contains(chunks[1].Text, "# not a heading") {
		t.Error("a heading inside a code fence split the section")
	}
	if chunks[0].ID != "shop:doc:guides/refunds.md:1" || chunks[4].ID != "shop:doc:guides/refunds.md:5" {
		t.Errorf("ids %s … %s", chunks[0].ID, chunks[4].ID)
	}
}

func TestDocSQL(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"a sql block", "# Q\n\n```sql\nSELECT 1\nFROM t\n```\n", []string{"SELECT 1\nFROM t"}},
		{"unmarked and postgresql blocks", "# Q\n\n```\nSELECT 1\n```\n\ntext\n\n~~~postgresql title=x\nSELECT 2\n~~~\n", []string{"SELECT 1", "SELECT 2"}},
		{"other languages", "# Q\n\n```go\nfmt.Println(1)\n```\n\n```bash\npsql -c 'SELECT 1'\n```\n", nil},
		{"a block the size split cut", "# Q\n\n```sql\nSELECT 1\nFROM t", []string{"SELECT 1\nFROM t"}},
		{"no block", "# Q\n\nSELECT 1 FROM t", nil},
		{"an empty block", "# Q\n\n```sql\n```\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DocSQL(Chunk{Kind: KindDoc, Text: tc.body})
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("DocSQL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDocSizeBound(t *testing.T) {
	para := strings.Repeat("word ", 100)
	body := "# Big\n\n" + strings.Repeat(para+"\n\n", 20) + strings.Repeat("x", 5000)
	chunks := Doc("db", "big.md", "", body, nil, Options{MaxDocBytes: 800})
	if len(chunks) < 10 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	var total int
	for _, c := range chunks {
		if len(c.Text) > 800 {
			t.Errorf("chunk %s is %d bytes", c.ID, len(c.Text))
		}
		if c.Title != "Big" {
			t.Errorf("title %q, want the first heading as title", c.Title)
		}
		total += strings.Count(c.Text, "word")
	}
	if total != 2000 {
		t.Errorf("splitting lost or duplicated text: %d words, want 2000", total)
	}
}

func TestExampleIDs(t *testing.T) {
	a := Example("shop", "", "", "How many orders?", "SELECT count(*) FROM orders")
	b := Example("shop", "", "", "how many   ORDERS?", "SELECT count(*) FROM orders;")
	if a.ID != b.ID || !strings.HasPrefix(a.ID, "shop:example:") {
		t.Errorf("same question should give the same id: %s %s", a.ID, b.ID)
	}
	if a.Hash == b.Hash {
		t.Error("different SQL should give a different hash")
	}
	if c := Example("shop", "", "net-revenue", "q", "SELECT 1"); c.ID != "shop:example:net-revenue" {
		t.Errorf("explicit id: %s", c.ID)
	}
}

// TestCorpusChunks chunks every real dump: every table (bar partitions) and
// view gets chunks, all within the size bound, with unique ids.
func TestCorpusChunks(t *testing.T) {
	for _, path := range []string{"bench/spiderunion/schema.sql", "corpus/gisia/db/structure.sql",
		"corpus/pagila/pagila-schema.sql", "corpus/tbls-sample/testdata/ddl/postgres.sql"} {
		t.Run(path, func(t *testing.T) {
			c, err := catalog.Snapshot("db", path, testenv.ReadShared(t, strings.Split(path, "/")...))
			if err != nil {
				t.Fatal(err)
			}
			chunks := Catalog(c, Options{})
			names := map[string]bool{}
			ids := map[string]bool{}
			for _, ch := range chunks {
				if ids[ch.ID] {
					t.Errorf("duplicate chunk id %s", ch.ID)
				}
				ids[ch.ID] = true
				names[ch.Name] = true
				if ch.Kind == KindTable && len(ch.Text) > DefaultOptions.MaxTableBytes && ch.Part > 0 {
					t.Errorf("%s: part of %d bytes", ch.ID, len(ch.Text))
				}
			}
			want := len(c.Views())
			for _, tb := range c.Tables() {
				if tb.PartitionOf == nil {
					want++
				}
			}
			if len(names) != want {
				t.Errorf("chunks cover %d objects, want %d", len(names), want)
			}
		})
	}
}
