package catalog

import (
	"fmt"
	"slices"
	"testing"
)

func TestNeighbourhood(t *testing.T) {
	cat, err := New("shop").Apply("0001.sql", `
CREATE TABLE customers (id int PRIMARY KEY, name text);
CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers);
CREATE TABLE categories (id int PRIMARY KEY, name text);
CREATE TABLE products (id int PRIMARY KEY, category_id int REFERENCES categories);
CREATE TABLE order_lines (order_id int REFERENCES orders, product_id int REFERENCES products);
CREATE TABLE reviews (id int, product_id int, stars int);
CREATE TABLE events (id int PRIMARY KEY, payload jsonb) PARTITION BY RANGE (id);
CREATE TABLE events_1 PARTITION OF events FOR VALUES FROM (0) TO (100);
CREATE TABLE event_tags (event_id int REFERENCES events_1 (id), tag text);
CREATE TABLE sources (id int PRIMARY KEY);
ALTER TABLE events_1 ADD COLUMN source_id int REFERENCES sources;
CREATE TABLE lonely (x int);`)
	if err != nil {
		t.Fatal(err)
	}
	g := NewGraph(cat)
	tests := []struct {
		key         string
		hops, limit int
		want        []string // name@hops, in order
		joins       []string // from>to, "~" when inferred
		truncated   bool
	}{
		{"public.orders", 1, 100, []string{"orders@0", "customers@1", "order_lines@1"},
			[]string{"order_lines>orders", "orders>customers"}, false},
		{"public.orders", 2, 100, []string{"orders@0", "customers@1", "order_lines@1", "products@2"},
			[]string{"order_lines>orders", "order_lines>products", "orders>customers"}, false},
		{"public.orders", 3, 100, []string{"orders@0", "customers@1", "order_lines@1", "products@2", "categories@3", "reviews@3"},
			[]string{"order_lines>orders", "order_lines>products", "orders>customers", "products>categories", "reviews~products"}, false},
		{"public.orders", 3, 3, []string{"orders@0", "customers@1", "order_lines@1"},
			[]string{"order_lines>orders", "orders>customers"}, true},
		{"public.orders", 2, 2, []string{"orders@0", "customers@1"}, []string{"orders>customers"}, true},
		// A partition's key is its root's.
		{"public.event_tags", 1, 100, []string{"event_tags@0", "events@1"}, []string{"event_tags>events"}, false},
		// A partition's own key is its root's join too.
		{"public.events", 1, 100, []string{"events@0", "event_tags@1", "sources@1"}, []string{"event_tags>events", "events>sources"}, false},
		{"public.lonely", 3, 100, []string{"lonely@0"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %d %d", tt.key, tt.hops, tt.limit), func(t *testing.T) {
			n, ok := g.Neighbourhood(tt.key, tt.hops, tt.limit)
			if !ok {
				t.Fatal("not found")
			}
			var got []string
			for _, nd := range n.Nodes {
				got = append(got, fmt.Sprintf("%s@%d", nd.Table.Name, nd.Hops))
			}
			var joins []string
			for _, e := range n.Edges {
				sep := ">"
				if !e.Declared {
					sep = "~"
				}
				joins = append(joins, e.From[len("public."):]+sep+e.To[len("public."):])
			}
			slices.Sort(joins)
			if !slices.Equal(got, tt.want) || !slices.Equal(joins, tt.joins) || n.Truncated != tt.truncated {
				t.Errorf("got %v %v truncated=%v\nwant %v %v truncated=%v", got, joins, n.Truncated, tt.want, tt.joins, tt.truncated)
			}
		})
	}
	if _, ok := g.Neighbourhood("public.nope", 1, 10); ok {
		t.Error("an unknown table has a neighbourhood")
	}
}
