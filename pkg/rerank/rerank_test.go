package rerank

import (
	"context"
	"slices"
	"testing"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/text"
)

func table(name string, cols ...string) Candidate {
	return Candidate{Kind: chunk.KindTable, Name: "public." + name, Title: name, Schema: "public", Columns: cols,
		Text: "CREATE TABLE public." + name + " (...)"}
}

var (
	orders    = table("orders", "id", "customer_id", "order_date", "status")
	products  = table("products", "id", "name", "category", "price")
	customers = table("customers", "id", "name", "country", "city")
)

func titles(cs []Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Title
	}
	return out
}

func clone(cs ...Candidate) []Candidate { return slices.Clone(cs) }

// The acceptance cases of the reranker schemaq grew from.
func TestSchemaRerank(t *testing.T) {
	tests := []struct {
		name     string
		question string
		in       []Candidate
		want     []string // prefix of the output order
		keep     bool     // output order must equal input order
	}{
		{"the named table is pulled to the front", "how many orders were cancelled?", clone(customers, products, orders), []string{"orders"}, false},
		{"no structural signal keeps the fused order", "zzzz qqqq", clone(customers, products, orders), nil, true},
		{"a singular question matches a plural table", "each order", clone(customers, products, orders), []string{"orders"}, false},
		{"inflections: category/categories", "list categories", clone(orders, table("category", "id", "label")), []string{"category"}, false},
		{"naming a table beats naming a column", "status of customers", clone(orders, customers), []string{"customers", "orders"}, false},
		{"a column hit beats free text", "country", clone(table("notes", "id", "body"), customers), []string{"customers"}, false},
		{"an empty list", "anything", nil, nil, true},
		{"a single candidate", "anything", clone(orders), []string{"orders"}, true},
		{"unparseable prose is scored on text, not dropped", "orders", clone(
			Candidate{Kind: chunk.KindDoc, Name: "a.md", Title: "this is not sql", Text: "neither is this"}, orders,
			Candidate{Kind: chunk.KindDoc, Name: "b.md", Title: "notes", Text: "nothing here"}), []string{"orders"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := titles(tc.in)
			out := titles(Schema(DefaultWeights, tc.question, tc.in))
			if len(out) != len(in) {
				t.Fatalf("rerank changed the number of candidates: %v → %v", in, out)
			}
			if tc.keep && !slices.Equal(in, out) {
				t.Errorf("order changed: %v → %v", in, out)
			}
			if len(tc.want) > 0 && !slices.Equal(out[:len(tc.want)], tc.want) {
				t.Errorf("got %v, want it to start with %v", out, tc.want)
			}
		})
	}
}

func TestBothNamedTablesRise(t *testing.T) {
	in := clone(table("unrelated_a", "x"), products, table("unrelated_b", "y"), orders)
	out := titles(Schema(DefaultWeights, "revenue per product for each order", in))
	if !slices.Contains(out[:2], "products") || !slices.Contains(out[:2], "orders") {
		t.Errorf("got %v, want products and orders in the top 2", out)
	}
}

func TestFusedRankStillCounts(t *testing.T) {
	q := Distinct("something unrelated")
	top := SchemaScore(DefaultWeights, q, &orders, 1)
	bottom := SchemaScore(DefaultWeights, q, &orders, 0)
	if top <= bottom {
		t.Errorf("a top-ranked candidate (%f) should outscore a bottom one (%f) when neither matches", top, bottom)
	}
	if SchemaScore(DefaultWeights, Distinct("orders"), &orders, 0) != SchemaScore(DefaultWeights, Distinct("order"), &orders, 0) {
		t.Error("singular and plural should score the same")
	}
}

func TestRerankers(t *testing.T) {
	ctx := context.Background()
	docs := func() []Candidate {
		return []Candidate{
			{Kind: chunk.KindDoc, Name: "a", Title: "shipping", Text: "we ship parcels worldwide and also handle some returns and many other long unrelated topics at length"},
			{Kind: chunk.KindDoc, Name: "b", Title: "billing", Text: "invoices"},
			{Kind: chunk.KindDoc, Name: "returns", Title: "returns", Text: "how returns and refunds of returns work"},
		}
	}
	out, _ := None{}.Rerank(ctx, "returns", docs())
	if got := titles(out); !slices.Equal(got, []string{"shipping", "billing", "returns"}) {
		t.Errorf("None reordered: %v", got)
	}
	out, _ = Lexical{}.Rerank(ctx, "returns refunds", docs())
	if out[0].Name != "returns" {
		t.Errorf("Lexical did not promote the best match: %v", titles(out))
	}
	out, _ = Lexical{}.Rerank(ctx, "zzz", docs())
	if got := titles(out); !slices.Equal(got, []string{"shipping", "billing", "returns"}) {
		t.Errorf("Lexical without overlap should keep the order: %v", got)
	}
	if out, err := (Lexical{}).Rerank(ctx, "x", nil); err != nil || len(out) != 0 {
		t.Errorf("Lexical on nothing: %v %v", out, err)
	}
}

func TestIdentifierScore(t *testing.T) {
	films := Candidate{Kind: chunk.KindTable, Name: "critics.films", Title: "films", Columns: []string{"film_id", "movie_release_year", "Free Meal Count (K-12)"}}
	doc := Candidate{Kind: chunk.KindDoc, Name: "notes", Title: "films", Text: "movie_release_year"}
	for _, tc := range []struct {
		question string
		c        *Candidate
		want     float64
	}{
		{"released in 1945 refers to movie_release_year = 1945", &films, 3},
		{"released in 1945 refers to Movie_Release_Year", &films, 3},
		{"films.movie_release_year and `Free Meal Count (K-12)`", &films, 6},
		{"everything in critics.films", &films, 3}, // schema-qualified
		{"the films table", &films, 0},             // a word, not a name written out
		{"rating_score of each film", &films, 0},
		{"other.movie_release_year", &films, 0}, // another table's column
		{"movie_release_year", &doc, 0},         // docs have no columns
	} {
		if got := IdentifierScore(DefaultWeights, text.Identifiers(tc.question), tc.c); got != tc.want {
			t.Errorf("%q on %s: %v, want %v", tc.question, tc.c.Name, got, tc.want)
		}
	}
	w := DefaultWeights
	w.Identifier = 0
	if got := IdentifierScore(w, text.Identifiers("movie_release_year"), &films); got != 0 {
		t.Errorf("weight 0 scored %v", got)
	}
}
