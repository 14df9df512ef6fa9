package text

import (
	"slices"
	"strings"
	"testing"
)

func TestWords(t *testing.T) {
	tests := map[string]string{
		"customer_id":             "customer id",
		"OrderLines":              "order lines",
		"orderID":                 "order id",
		"HTTPServerURL":           "http server url",
		"addr2line":               "addr 2 line",
		"Perpetrator_ID":          "perpetrator id",
		`"hyphen-table".x`:        "hyphen table x",
		"How many singers?":       "how many singers",
		"public.payment_p2022_01": "public payment p 2022 01",
		"Straße Café":             "straße café",
		"":                        "",
	}
	for in, want := range tests {
		if got := strings.Join(Words(in), " "); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStemFoldsInflections(t *testing.T) {
	same := [][]string{
		{"order", "orders", "ordered", "ordering"},
		{"category", "categories"},
		{"city", "cities"},
		{"person", "people", "persons"},
		{"release", "released", "releasing", "releases"},
		{"ship", "shipped", "shipping", "ships"},
		{"address", "addresses"},
		{"box", "boxes"},
		{"match", "matches"},
		{"status", "statuses"},
		{"country", "countries"},
		{"employee", "employees"},
		{"class", "classes"},
		{"movie", "movies"},
		{"name", "names"},
		{"age", "ages"},
	}
	for _, group := range same {
		want := Stem(group[0])
		for _, w := range group[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, but Stem(%q) = %q", w, got, group[0], want)
			}
		}
	}
	apart := [][2]string{{"singer", "sing"}, {"status", "stat"}, {"news", "new"}, {"id", "ids"}, {"bus", "bu"}}
	for _, p := range apart[:3] {
		if Stem(p[0]) == Stem(p[1]) {
			t.Errorf("Stem merges %q and %q", p[0], p[1])
		}
	}
}

func TestTermsSpellOutAbbreviations(t *testing.T) {
	for _, tc := range []struct{ identifier, question string }{
		{"order_qty", "What quantity was ordered?"},
		{"DeptID", "department id"},
		{"cust_addr", "customer addresses"},
		{"total_amts", "total amount"},
		{"EmpNum", "employee number"},
		{"dob", "birth"},
	} {
		got, want := Terms(tc.identifier), Terms(tc.question)
		for _, term := range got {
			if !slices.Contains(want, term) {
				t.Errorf("Terms(%q) = %q: %q is not among the question %q's terms %q", tc.identifier, got, term, tc.question, want)
			}
		}
	}
	// Words that are words stay themselves.
	if got := strings.Join(Terms("ship cat hr no prod"), " "); got != "ship cat hr prod" {
		t.Errorf("Terms = %q", got)
	}
}

// Command words are verbs at the head of a question and nouns after a
// determiner or preposition; identifiers keep them.
func TestQueryTermsKeepCommandWordsAsNouns(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Show the average attendance of shows.", "average attendance show"},
		{"List all items and show their prices", "item price"},
		{"Which returns were late? Find the return date.", "return late return date"},
		{"What is on the list?", "list"},
	} {
		if got, want := strings.Join(QueryTerms(tc.in), " "), strings.Join(Terms(tc.want), " "); got != want {
			t.Errorf("QueryTerms(%q) = %q, want %q", tc.in, got, want)
		}
	}
	if got := strings.Join(Terms("show_id list_name"), " "); got != "show id list name" {
		t.Errorf("identifiers lost command words: %q", got)
	}
}

func TestTermsDropStopWordsButKeepSchemaWords(t *testing.T) {
	got := strings.Join(QueryTerms("Show the names and ages of all singers, ordered by their id and date!"), " ")
	want := "name age singer id date"
	if got != want {
		t.Errorf("QueryTerms = %q, want %q", got, want)
	}
	if got := AppendTerms([]string{"x"}, "Orders"); strings.Join(got, " ") != "x order" {
		t.Errorf("AppendTerms = %v", got)
	}
}

// A sort instruction asks for an ORDER BY, not for a table of orders;
// "order" elsewhere is a noun.
func TestQueryTermsDropSortInstructions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Sort employee names by their age in ascending order.", "employee name age"},
		{"List the names ordered by age, descending.", "name age"},
		{"Names in descending alphabetical order", "name"},
		{"the details of students in reverse lexicographical order", "detail student"},
		{"Show the cities in order of population.", "city population"},
		{"Which customers placed an order sorted by date?", "customer placed order date"},
		{"What is the order date of the largest order?", "order date largest order"},
		{"Sort the products by price.", "product price"},
		{"Order details of customer 5", "order detail customer 5"},
		{"order", "order"},
	} {
		if got, want := strings.Join(QueryTerms(tc.in), " "), strings.Join(Terms(tc.want), " "); got != want {
			t.Errorf("QueryTerms(%q) = %q, want %q", tc.in, got, want)
		}
	}
}

// The embedder's analysis keeps sort words: in a document they are
// content, and a question and a document must be embedded alike.
func TestTextTermsKeepSortWords(t *testing.T) {
	in := "Show the orders sorted by date, descending"
	if got, want := strings.Join(TextTerms(in), " "), strings.Join(Terms("orders sorted date descending"), " "); got != want {
		t.Errorf("TextTerms(%q) = %q, want %q", in, got, want)
	}
	if got, want := strings.Join(QueryTerms(in), " "), "order date"; got != want {
		t.Errorf("QueryTerms(%q) = %q, want %q", in, got, want)
	}
}

func TestIdentifiers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"released in 1945 refers to movie_release_year = 1945", "movie_release_year"},
		{"the directorName of customerID", "directorname|customerid"},
		{"HTTPServer and OrderLines", "orderlines"}, // one opening with an acronym is not caught
		{"rate = `Free Meal Count (K-12)` / `Enrollment (K-12)`", "free meal count (k-12)|enrollment (k-12)"},
		{`the "Order Date" column, then "order date" again`, "order date"},
		{"orders.total and public.orders", "orders.total|public.orders"},
		{"How many movies were released in 1945?", ""},
		{"Customers in Paris and the iPhone", "iphone"}, // capitalised words are words
		{"where code = 'store_1'", "store_1"},           // a value written like a name: the catalog decides
		{"3.14 and 1_000 are numbers", ""},
		{"e.g. the total, i.e. orders.total.", "orders.total"},
		{"_private_name_ and name_", "private_name"},
		{"a.b.c is not a name; `unclosed", ""},
		{"\"Order\nDate\" spans a line", ""},
		{"price_usd$ or Åke_Sandgren, not Åke Sandgren", "price_usd$|åke_sandgren"},
	} {
		if got := strings.Join(Identifiers(tc.in), "|"); got != tc.want {
			t.Errorf("Identifiers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzIdentifiers(f *testing.F) {
	for _, s := range []string{"movie_release_year = 1945", "`Free Meal Count (K-12)`", `"a" "b`, "orders.total.", "a.b.c", "ÅkeSandgren", "\"\n\"", "`"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := Identifiers(s)
		for i, id := range ids {
			if id == "" || len(id) > 63 || id != strings.ToLower(id) || slices.Contains(ids[:i], id) {
				t.Fatalf("Identifiers(%q) = %q", s, ids)
			}
		}
	})
}

func BenchmarkIdentifiers(b *testing.B) {
	q := "Please list the full names of all the male clients born after the year 1990; movie_release_year refers to `Release Year`."
	b.ReportAllocs()
	for range b.N {
		Identifiers(q)
	}
}

func TestValueClasses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"How many female actors played in Japanese films on Sundays?", "gender<female sex<female country<japanese day<sundays"},
		{"Shipments to Texas in March", "stat<texas month<march"}, // analysed, as the index holds "state"
		{"-", ""},
		{"Which orders were placed by customers?", ""},
		{"Women of Europe", "gender<women sex<women continent<europe"},
	} {
		classes, from := ValueClasses(tc.in)
		var got []string
		for i := range classes {
			got = append(got, classes[i]+"<"+from[i])
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("ValueClasses(%q) = %q, want %q", tc.in, g, tc.want)
		}
	}
}

func TestProperNames(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"How many movies were directed by Michael Bay?", "Michael Bay"},
		{"Which movies have the participation of actor Harrison Ford?", "Harrison Ford"},
		{"When did Mrs. Ira Deckow have the test?", "Ira Deckow"}, // "Mrs." ends at its dot
		{"List the books of John Ronald Reuel Tolkien and Jane Austen.", "John Ronald Reuel Tolkien|Jane Austen"},
		{"Dawn of the Planet of the Apes", ""}, // the first word, then one at a time
		{"Orders from New York, Boston or Los Angeles", "New York|Los Angeles"},
		{"How many orders were placed?", ""},
		{"Sales of 'Life Without Fear' in Massachusetts", "Life Without Fear"}, // a quotation is its own run
		{"ABC Corp and X", ""}, // "ABC" is the first word, "Corp" alone
	} {
		names, classes := ProperNames(tc.in)
		var got []string
		for _, n := range names {
			got = append(got, strings.Join(n, " "))
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("ProperNames(%q) = %q, want %q", tc.in, g, tc.want)
		}
		if (len(names) > 0) != (len(classes) == 2) {
			t.Errorf("ProperNames(%q): classes %v", tc.in, classes)
		}
	}
}

func TestQueryTermsDropDatesAndTimes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"complaints filed on 2017/3/27 by Rachel", "complaint fil rachel"},
		{"movies between 1/2/1990 and 12/30/2003", "movi"},
		{"From 5/30/2005 at 3:43:54 AM to 10:08 PM", "pm"},
		{"orders in 2011 over 5000", "order 2011 5000"}, // years and amounts stay
		{"model 3-2 and ratio 4/5, version 1.2.3", "model 3 2 ratio 4 5 version 1 2 3"},
		{"address_1 and A_VAR12/3/4", "address 1 var 12 3 4"},
	} {
		if got := strings.Join(QueryTerms(StripDates(tc.in)), " "); got != tc.want {
			t.Errorf("QueryTerms(StripDates(%q)) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzStripDates(f *testing.F) {
	for _, s := range []string{"2017/3/27", "1/2/1990 and 12/30/2003", "3:43:54 AM", "12-30-", "9:5", "x1/2/3", "1/2/3x", "::", "1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := StripDates(s)
		if len(got) != len(s) {
			t.Fatalf("StripDates(%q) = %q: length changed", s, got)
		}
		for i := range len(s) {
			if got[i] != s[i] && (got[i] != ' ' || !strings.ContainsRune("0123456789/-:", rune(s[i]))) {
				t.Fatalf("StripDates(%q) = %q: changed byte %d", s, got, i)
			}
		}
	})
}

func TestSingular(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"categories", "category"}, {"addresses", "address"}, {"courses", "course"}, {"purchases", "purchase"},
		{"boxes", "box"}, {"status", "status"}, {"movies", "movie"}, {"orders", "order"}, {"bus", "bus"}, {"ordered", "ordered"},
	} {
		if got := Singular(tc.in); got != tc.want {
			t.Errorf("Singular(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
