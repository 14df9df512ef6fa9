package retrieve

import (
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// gamesDDL: game_publisher and game_platform hold the names of the
// tables they lead to; video.publisher is another schema's; rent's
// film_category declares no key, and leads by the joins its names imply.
const gamesDDL = `
CREATE TABLE genre (id int PRIMARY KEY, genre_name text);
CREATE TABLE game (id int PRIMARY KEY, genre_id int REFERENCES genre, game_name text);
CREATE TABLE publisher (id int PRIMARY KEY, publisher_name text);
CREATE TABLE game_publisher (id int PRIMARY KEY, game_id int REFERENCES game, publisher_id int REFERENCES publisher);
CREATE TABLE platform (id int PRIMARY KEY, platform_name text);
CREATE TABLE game_platform (id int PRIMARY KEY, game_publisher_id int REFERENCES game_publisher, platform_id int REFERENCES platform);
CREATE TABLE region_sales (game_platform_id int REFERENCES game_platform, num_sales real);
CREATE SCHEMA video;
CREATE TABLE video.publisher (id int PRIMARY KEY, name text);
CREATE TABLE video.game_publisher (publisher_id int REFERENCES video.publisher, title text);
CREATE SCHEMA rent;
CREATE TABLE rent.film (film_id int PRIMARY KEY, title text);
CREATE TABLE rent.category (category_id int PRIMARY KEY, name text);
CREATE TABLE rent.film_category (film_id int, category_id int, PRIMARY KEY (film_id, category_id));
`

func TestNamedTargets(t *testing.T) {
	cat, err := catalog.Snapshot("games", "games.sql", gamesDDL)
	if err != nil {
		t.Fatal(err)
	}
	r := &Retriever{graphs: newGraphCache()}
	tests := []struct {
		name     string
		question string
		ranked   []string
		depth    int
		schemas  []string
		want     []string
	}{
		{"the table a junction's word names moves up after it",
			"Which games has the publisher 10TACLE Studios?",
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}, 5, nil,
			[]string{"game", "game_publisher", "publisher", "genre", "platform", "game_platform", "region_sales"}},
		{"one no list ranked is added",
			"Which games has the publisher 10TACLE Studios?",
			[]string{"game", "game_publisher", "genre"}, 5, nil,
			[]string{"game", "game_publisher", "publisher", "genre"}},
		{"a word the table's name extends leads there too",
			"Which games were published by 10TACLE Studios?",
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}, 5, nil,
			[]string{"game", "game_publisher", "publisher", "genre", "platform", "game_platform", "region_sales"}},
		{"but not one that is only its start",
			"Which games did Nintendo publicise?",
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}, 5, nil,
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}},
		{"without the word, nothing moves",
			"Which games sold best in Europe?",
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}, 5, nil,
			[]string{"game", "game_publisher", "genre", "platform", "game_platform", "region_sales", "publisher"}},
		{"one within the first depth stays where it is",
			"Which games has the publisher 10TACLE Studios?",
			[]string{"publisher", "game", "game_publisher", "genre"}, 5, nil,
			[]string{"publisher", "game", "game_publisher", "genre"}},
		{"a junction past the depth leads nowhere",
			"Which games has the publisher 10TACLE Studios?",
			[]string{"game", "genre", "platform", "game_platform", "region_sales", "game_publisher", "publisher"}, 5, nil,
			[]string{"game", "genre", "platform", "game_platform", "region_sales", "game_publisher", "publisher"}},
		{"two junctions, two targets",
			"On which platforms did the games of each publisher come out?",
			[]string{"game_platform", "game_publisher", "game", "genre", "region_sales"}, 5, nil,
			[]string{"game_platform", "platform", "game_publisher", "publisher", "game", "genre", "region_sales"}},
		{"a target outside the schemas asked for is not added",
			"Which titles has the publisher Acme?",
			[]string{"video.game_publisher"}, 5, []string{"public"},
			[]string{"video.game_publisher"}},
		{"in its own schema it is",
			"Which titles has the publisher Acme?",
			[]string{"video.game_publisher"}, 5, []string{"video"},
			[]string{"video.game_publisher", "video.publisher"}},
		{"a junction that declares no key leads by its inferred joins",
			"Which category does the film Working Microcosmos belong to?",
			[]string{"rent.film_category", "rent.film"}, 5, nil,
			[]string{"rent.film_category", "rent.category", "rent.film"}},
		{"off",
			"Which games has the publisher 10TACLE Studios?",
			[]string{"game", "game_publisher", "genre"}, 0, nil,
			[]string{"game", "game_publisher", "genre"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranked := rankedTables(tt.ranked)
			var terms []Term
			for _, w := range text.QueryTerms(tt.question) {
				terms = append(terms, Term{Term: w, Why: FromQuestion})
			}
			items := r.namedTargets(cat, ranked, tt.depth, terms, tt.schemas)
			var got []string
			placed := 0
			for i, it := range items {
				if it.Bridge != "" {
					t.Errorf("%s is marked a bridge: a target counts among the k", it.Name)
				}
				if it.Placed != "" {
					placed++
					if want := "the question names it in " + items[i-1].Name; it.Placed != want {
						t.Errorf("%s placed %q, want %q", it.Name, it.Placed, want)
					}
				}
				if !slices.Contains(tt.ranked, strings.TrimPrefix(it.Name, "public.")) && len(it.Chunks) == 0 {
					t.Errorf("added target %s has no chunks", it.Name)
				}
				got = append(got, strings.TrimPrefix(it.Name, "public."))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
			// Each target says why it is there: as many as the tables
			// that moved or came in.
			if moved := movedUp(tt.ranked, got); placed != moved {
				t.Errorf("%d items say why they were placed, %d moved up or came in", placed, moved)
			}
		})
	}
}

// movedUp counts the tables of got that came in or are ranked higher
// than ranked put them, relative to the others.
func movedUp(ranked, got []string) int {
	n := 0
	rest := slices.Clone(ranked)
	for _, g := range got {
		at := slices.Index(rest, g)
		if at != 0 {
			n++
		}
		if at >= 0 {
			rest = slices.Delete(rest, at, at+1)
		}
	}
	return n
}
