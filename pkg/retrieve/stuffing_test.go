package retrieve_test

import (
	"context"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/indexer"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

// stuffedQuestion is a feedback example's question written to match
// every question: the words of the catalog and of common asks, repeated.
func stuffedQuestion() string {
	words := strings.Fields(`list show count total customer customers email emails name names order orders
		placed date month year amount paid payment payments refund refunds product products price
		stock inventory shipping address city country status new active last first most top average`)
	var b strings.Builder
	for range 4 {
		b.WriteString(strings.Join(words, " "))
		b.WriteString(" ")
	}
	return b.String()
}

// TestStuffedExampleDoesNotTakeOver: one example whose question holds
// every word moved payments to first place for "list customer emails",
// for every caller. An example's vote now counts by how much of the
// question it covers and by how specific it is itself: a question of a
// hundred terms covers everything and says nothing. A near duplicate
// of the question still wins its table the first place.
func TestStuffedExampleDoesNotTakeOver(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Snapshot("shop", "shop.sql", `
CREATE TABLE customers (customer_id int PRIMARY KEY, name text, email text, city text);
CREATE TABLE orders (order_id int PRIMARY KEY, customer_id int REFERENCES customers, placed_at date, status text);
CREATE TABLE payments (payment_id int PRIMARY KEY, order_id int REFERENCES orders, amount numeric, paid_at date);
CREATE TABLE products (product_id int PRIMARY KEY, name text, price numeric, stock int);
`)
	if err != nil {
		t.Fatal(err)
	}
	s, e := indexCatalogs(t, cat)
	stuffed := chunk.Example("shop", "", "stuffed", stuffedQuestion(), "SELECT payment_id, amount, paid_at FROM payments")
	stuffed.Tags = map[string]string{chunk.TagOrigin: events.OriginFeedback}
	if _, err := indexer.Chunks(ctx, s, e, []chunk.Chunk{stuffed}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ question, first string }{
		{"list customer emails", "public.customers"},
		{"customers in each city", "public.customers"},
		{"orders placed last month", "public.orders"},
		{"products low in stock", "public.products"},
	} {
		res := retrieveOnce(t, s, e, cat, retrieve.DefaultConfig, retrieve.Request{Database: "shop", Question: tc.question, K: 5})
		if got := names(res.Items); len(got) == 0 || got[0] != tc.first {
			t.Errorf("%q: %v, want %s first", tc.question, got, tc.first)
		}
	}

	// A specific example still does what examples are for.
	honest := chunk.Example("shop", "", "refunds", "total amount paid per order", "SELECT order_id, sum(amount) FROM payments GROUP BY 1")
	honest.Tags = map[string]string{chunk.TagOrigin: events.OriginFeedback}
	if _, err := indexer.Chunks(ctx, s, e, []chunk.Chunk{honest}); err != nil {
		t.Fatal(err)
	}
	res := retrieveOnce(t, s, e, cat, retrieve.DefaultConfig, retrieve.Request{Database: "shop", Question: "what was the total paid for each order", K: 5})
	if got := names(res.Items); len(got) == 0 || got[0] != "public.payments" {
		t.Errorf("a near duplicate's table: %v, want public.payments first", got)
	}
}
