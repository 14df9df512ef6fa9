package retrieve

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// filmsDDL: film_actor declares no key, so its joins to film and actor
// are inferred, and its primary key makes it a junction; film_category
// is one by declared keys; language, category and fans.fan join film or
// film_category and have a name too; customer has one and joins nothing.
const filmsDDL = `
CREATE TABLE language (language_id int PRIMARY KEY, name text);
CREATE TABLE film (film_id int PRIMARY KEY, title text, length int, language_id int REFERENCES language);
CREATE TABLE actor (actor_id int PRIMARY KEY, first_name text, last_name text);
CREATE TABLE film_actor (actor_id int, film_id int, PRIMARY KEY (actor_id, film_id));
CREATE TABLE store (store_id int PRIMARY KEY, address text);
CREATE TABLE inventory (inventory_id int PRIMARY KEY, film_id int REFERENCES film, store_id int REFERENCES store);
CREATE TABLE rental (rental_id int PRIMARY KEY, inventory_id int REFERENCES inventory, rental_date date);
CREATE TABLE customer (customer_id int PRIMARY KEY, first_name text, last_name text);
CREATE TABLE category (category_id int PRIMARY KEY, name text);
CREATE TABLE film_category (film_id int REFERENCES film, category_id int REFERENCES category, PRIMARY KEY (film_id, category_id));
CREATE SCHEMA fans;
CREATE TABLE fans.fan (fan_id int PRIMARY KEY, fan_name text, film_id int REFERENCES public.film);
CREATE TABLE fans.review (review_id int PRIMARY KEY, fan_id int REFERENCES fans.fan, title text);
`

func TestFillGaps(t *testing.T) {
	cat, err := catalog.Snapshot("films", "films.sql", filmsDDL)
	if err != nil {
		t.Fatal(err)
	}
	r := &Retriever{graphs: newGraphCache()}
	q := func(ws ...string) []Term {
		var out []Term
		for _, w := range ws {
			out = append(out, Term{Term: text.Terms(w)[0], Why: FromQuestion})
		}
		return out
	}
	// "Which films are starred by Kirk Jovovich?": the proper name adds name and person.
	starring := append(q("film", "star", "kirk", "jovovich"), Term{Term: "name", Why: FromValue}, Term{Term: "person", Why: FromValue})
	tests := []struct {
		name    string
		terms   []Term
		ranked  []string
		depth   int
		limit   int
		schemas []string
		want    []string
		placed  map[string]string
	}{
		{"a term none of the first has goes to the junction's far end that has it",
			starring, []string{"film", "film_actor", "inventory", "store", "rental", "language"}, 5, 2, nil,
			[]string{"film", "film_actor", "actor", "inventory", "store", "rental", "language"},
			map[string]string{"actor": "has name, which no table before it covers; joins public.film_actor"}},
		{"a junction by declared keys too",
			starring, []string{"film", "film_category", "inventory", "store", "rental", "language"}, 5, 2, nil,
			[]string{"film", "film_category", "category", "inventory", "store", "rental", "language"},
			map[string]string{"category": "has name, which no table before it covers; joins public.film_category"}},
		{"without the junction, the better ranked of those that join",
			starring, []string{"film", "inventory", "store", "rental", "customer", "language"}[:4], 5, 2, nil,
			[]string{"film", "language", "inventory", "store", "rental"},
			map[string]string{"language": "has name, which no table before it covers; joins public.film"}},
		{"a term the first have only in a key is a gap: the table the key references has it",
			q("film", "store"), []string{"film", "inventory", "rental"}, 5, 2, nil,
			[]string{"film", "inventory", "store", "rental"},
			map[string]string{"store": "has stor, which no table before it covers; joins public.inventory"}},
		{"a term one of the first has is no gap",
			starring, []string{"film", "film_actor", "customer", "inventory"}, 5, 2, nil,
			[]string{"film", "film_actor", "customer", "inventory"}, nil},
		{"a table past the depth does not cover for the first",
			starring, []string{"film", "film_actor", "inventory", "store", "rental", "customer"}, 5, 2, nil,
			[]string{"film", "film_actor", "actor", "inventory", "store", "rental", "customer"},
			map[string]string{"actor": "has name, which no table before it covers; joins public.film_actor"}},
		{"an expansion's term is no gap",
			[]Term{{Term: "film", Why: FromQuestion}, {Term: "name", Why: FromPrefix}}, []string{"film", "film_actor", "inventory"}, 5, 2, nil,
			[]string{"film", "film_actor", "inventory"}, nil},
		{"a word no table of the schema has is no gap",
			q("film", "kirk"), []string{"film", "film_actor", "inventory"}, 5, 2, nil,
			[]string{"film", "film_actor", "inventory"}, nil},
		{"two gaps, the rarer word first, each after the table it joins",
			append(q("length"), Term{Term: "name", Why: FromValue}), []string{"film_actor", "inventory", "store", "rental"}, 5, 2, nil,
			[]string{"film_actor", "actor", "film", "inventory", "store", "rental"},
			map[string]string{"film": "has length, which no table before it covers; joins public.film_actor",
				"actor": "has name, which no table before it covers; joins public.film_actor"}},
		{"up to the limit",
			append(q("length"), Term{Term: "name", Why: FromValue}), []string{"film_actor", "inventory", "store", "rental"}, 5, 1, nil,
			[]string{"film_actor", "film", "inventory", "store", "rental"}, nil},
		{"only the first table's schema: fans.review, not public.film, for the title",
			q("fan", "title"), []string{"fans.fan", "store", "rental", "inventory", "customer", "film"}, 5, 2, nil,
			[]string{"fans.fan", "fans.review", "store", "rental", "inventory", "customer", "film"}, nil},
		{"nor a schema not asked for",
			starring, []string{"film", "film_actor", "inventory"}, 5, 2, []string{"fans"},
			[]string{"film", "film_actor", "inventory"}, nil},
		{"off",
			starring, []string{"film", "film_actor", "inventory"}, 5, 0, nil,
			[]string{"film", "film_actor", "inventory"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := r.fillGaps(cat, rankedTables(tt.ranked), tt.depth, tt.limit, tt.terms, tt.schemas)
			var got []string
			for _, it := range items {
				n := strings.TrimPrefix(it.Name, "public.")
				got = append(got, n)
				if it.Bridge != "" {
					t.Errorf("%s is marked a bridge: a gap's table counts among the k", n)
				}
				if want, ok := tt.placed[n]; ok && it.Placed != want {
					t.Errorf("%s placed %q, want %q", n, it.Placed, want)
				}
				if !slices.Contains(tt.ranked, n) && len(it.Chunks) == 0 {
					t.Errorf("added %s has no chunks", n)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

// BenchmarkFillGapsHub: the worst a first table can make coverage gaps
// do, a hub that thousands of tables reference (a users or projects
// table), with the gap's term in every one of them, and more of them
// than the cache of tables' words holds (maxRendered).
func BenchmarkFillGapsHub(b *testing.B) {
	for _, n := range []int{500, 5000} {
		var ddl strings.Builder
		ddl.WriteString("CREATE TABLE users (id int PRIMARY KEY, login text);\n")
		for i := range 4 {
			fmt.Fprintf(&ddl, "CREATE TABLE x%d (id int PRIMARY KEY, user_id int REFERENCES users, title text);\n", i)
		}
		for i := range n {
			fmt.Fprintf(&ddl, "CREATE TABLE t%d (id int PRIMARY KEY, user_id int REFERENCES users, label_%d text, note text, created_at date);\n", i, i)
		}
		cat, err := catalog.Snapshot("hub", "hub.sql", ddl.String())
		if err != nil {
			b.Fatal(err)
		}
		r := &Retriever{graphs: newGraphCache()}
		r.graphs.get(cat).Warm(true)
		terms := []Term{{Term: "user", Why: FromQuestion}, {Term: "note", Why: FromQuestion}}
		ranked := rankedTables([]string{"users", "x0", "x1", "x2", "x3"})
		b.Run(fmt.Sprintf("neighbours=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				items := r.fillGaps(cat, slices.Clone(ranked), 5, 2, terms, nil)
				if len(items) != len(ranked)+1 || items[1].Name != "public.t0" {
					b.Fatalf("got %v, want t0 placed after users", items)
				}
			}
		})
	}
}
