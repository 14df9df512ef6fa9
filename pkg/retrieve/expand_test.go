package retrieve

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// completionDDL: authors — titleauthor — titles — sales is a chain;
// publishers references titles' publisher too, and shop.orders lives in
// another schema beside a direct link (stores ↔ sales).
const completionDDL = `
CREATE TABLE authors (id int PRIMARY KEY, name text);
CREATE TABLE titles (id int PRIMARY KEY, title text);
CREATE TABLE titleauthor (author_id int REFERENCES authors, title_id int REFERENCES titles);
CREATE TABLE stores (id int PRIMARY KEY, city text);
CREATE TABLE sales (store_id int REFERENCES stores, title_id int REFERENCES titles, qty int);
CREATE TABLE x1 (id int); CREATE TABLE x2 (id int); CREATE TABLE x3 (id int);
CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY);
CREATE TABLE shop.products (id int PRIMARY KEY);
CREATE TABLE shop.orders (customer_id int REFERENCES shop.customers, product_id int REFERENCES shop.products);
`

func TestJoinCompletion(t *testing.T) {
	cat, err := catalog.Snapshot("pubs", "pubs.sql", completionDDL)
	if err != nil {
		t.Fatal(err)
	}
	r := &Retriever{graphs: newGraphCache()}
	tests := []struct {
		name         string
		ranked       []string
		depth, limit int
		schemas      []string
		want         []string // "=" marks a bridge
	}{
		{"a bridge ranked lower moves up after the later of the two",
			[]string{"authors", "titles", "x1", "x2", "titleauthor"}, 20, 3, nil,
			[]string{"authors", "titles", "=titleauthor", "x1", "x2"}},
		{"a bridge no list ranked is added",
			[]string{"authors", "titles", "x1"}, 20, 3, nil,
			[]string{"authors", "titles", "=titleauthor", "x1"}},
		{"two tables that join each other need no bridge",
			[]string{"titles", "sales", "x1"}, 20, 3, nil,
			[]string{"titles", "sales", "x1"}},
		{"a chain of three finds both middles",
			[]string{"authors", "stores", "titles", "x1"}, 20, 3, nil,
			[]string{"authors", "stores", "titles", "=titleauthor", "=sales", "x1"}},
		{"the limit keeps the earliest",
			[]string{"authors", "titles", "x1", "stores", "x2"}, 20, 1, nil,
			[]string{"authors", "titles", "=titleauthor", "x1", "stores", "x2"}},
		{"beyond the depth nothing is bridged",
			[]string{"authors", "x1", "x2", "x3", "titles"}, 3, 3, nil,
			[]string{"authors", "x1", "x2", "x3", "titles"}},
		{"a bridge outside the schemas asked for is not added",
			[]string{"shop.customers", "shop.products"}, 20, 3, []string{"public"},
			[]string{"shop.customers", "shop.products"}},
		{"in its own schema it is",
			[]string{"shop.customers", "shop.products"}, 20, 3, []string{"shop"},
			[]string{"shop.customers", "shop.products", "=shop.orders"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranked := rankedTables(tt.ranked)
			items := r.complete(cat, ranked, tt.depth, tt.limit, tt.schemas)
			var got []string
			for _, it := range items {
				n := strings.TrimPrefix(it.Name, "public.")
				if it.Bridge != "" {
					n = "=" + n
					if !slices.Contains(tt.ranked, n[1:]) && len(it.Chunks) == 0 {
						t.Errorf("bridge %s has no chunks", it.Name)
					}
				}
				got = append(got, n)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// rankedTables is a ranking of the tables named, in public unless
// qualified.
func rankedTables(names []string) []Item {
	var ranked []Item
	for _, n := range names {
		ranked = append(ranked, Item{Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: qualify(n)}})
	}
	return ranked
}

func qualify(n string) string {
	if strings.Contains(n, ".") {
		return n
	}
	return "public." + n
}

// TestCutIsAPrefix: whatever k, the results are the first of a longer
// list, and bridges come on top of the k.
func TestCutIsAPrefix(t *testing.T) {
	var items []Item
	for i := range 12 {
		it := Item{Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: fmt.Sprint("t", i)}}
		if i%4 == 2 {
			it.Bridge = "joins"
		}
		items = append(items, it)
	}
	long := cut(items, 9)
	for k := 1; k <= 9; k++ {
		short := cut(items, k)
		ranked := 0
		for _, it := range short {
			if it.Bridge == "" {
				ranked++
			}
		}
		if ranked != k || !slices.EqualFunc(short, long[:len(short)], func(a, b Item) bool { return a.Name == b.Name }) {
			t.Errorf("k=%d: %d ranked, not a prefix of k=9", k, ranked)
		}
	}
}
