// Package indextest is the conformance suite every index.Store passes, in
// the style of watermill's pubsub tests: one set of behaviours, run
// against each implementation.
package indextest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/text"
)

// Dimensions of the vectors the suite writes.
const Dimensions = 64

// Open returns a fresh, empty store for one test; the suite closes it.
type Open func(t *testing.T) index.Store

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s index.Store)
	}{
		{"UpsertAndCount", testUpsertAndCount},
		{"BM25RanksByField", testBM25RanksByField},
		{"BM25MatchesInflections", testBM25Inflections},
		{"BM25TakesAnalysedTermsAsTheyAre", testStemsEndingInS},
		{"KNNOrdersByCosine", testKNN},
		{"FiltersByKindAndTags", testFilters},
		{"IsolatesDatabases", testIsolation},
		{"QueryTextIsNeverSyntax", testHostileQueries},
		{"VersionGuard", testVersionGuard},
		{"ObjectMarksOutlastDeletes", testObjectMarks},
		{"Deletes", testDeletes},
		{"ReplacesOnUpsert", testReplace},
		{"RejectsBadInput", testBadInput},
		{"ProjectedVersion", testProjected},
		{"ReplaceSchemaRemovesOnlyWhatItNames", testReplaceSchema},
		{"ReplaceSchemaLandsWhole", testReplaceSchemaWhole},
		{"PinnedViewHoldsItsState", testPinned},
		{"CompoundsOfAdjacentTermsAndTheirExclusion", testCompounds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

var local = embed.NewLocal(Dimensions)

func rec(db, kind, name, title string, cols []string, body string, version int64, tags map[string]string) index.Record {
	c := chunk.Chunk{Database: db, Kind: kind, Name: name, Title: title, Columns: cols, Text: body,
		Version: version, Tags: tags, ID: chunk.ID(db, kind, name, 0), Hash: fmt.Sprintf("h-%s-%d-%s", name, version, body)}
	return index.Record{Chunk: c, Vector: local.Vector(title + " " + body)}
}

func shopRecords() []index.Record {
	return []index.Record{
		rec("shop", chunk.KindTable, "public.orders", "orders", []string{"id", "customer_id", "status"},
			"CREATE TABLE public.orders (id bigint, customer_id bigint, status text)", 1, nil),
		rec("shop", chunk.KindTable, "public.customers", "customers", []string{"id", "email", "country"},
			"CREATE TABLE public.customers (id bigint, email text, country text)", 1, nil),
		rec("shop", chunk.KindTable, "public.shipments", "shipments", []string{"id", "order_ref", "carrier"},
			"CREATE TABLE public.shipments (id bigint, order_ref bigint, carrier text) -- one row per parcel of an order", 1, nil),
		rec("shop", chunk.KindTable, "public.audit_log", "audit_log", []string{"id", "note"},
			"CREATE TABLE public.audit_log (id bigint, note text) -- free text mentioning orders orders orders", 1, nil),
		rec("shop", chunk.KindDoc, "refunds.md", "Refunds > Partial refunds", nil,
			"Sum payments per order to get the net amount refunded.", 1, map[string]string{"product": "checkout", "version": "2"}),
		rec("shop", chunk.KindDoc, "legacy.md", "Legacy refunds", nil,
			"Refunds before 2020 were kept in a spreadsheet.", 1, map[string]string{"product": "checkout", "version": "1"}),
		rec("shop", chunk.KindExample, "q1", "How many orders per customer?", nil,
			"Question: How many orders per customer?\nSQL: SELECT customer_id, count(*) FROM orders GROUP BY 1", 1, nil),
	}
}

func mustUpsert(t *testing.T, s index.Store, recs []index.Record) int {
	t.Helper()
	n, err := s.Upsert(context.Background(), recs)
	if err != nil {
		t.Fatalf("upsert: %v", err)
	}
	return n
}

func names(hits []index.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk.Name
	}
	return out
}

func textQuery(db, q string, kinds ...string) index.TextQuery {
	return index.TextQuery{Filter: index.Filter{Database: db, Kinds: kinds}, Terms: text.Terms(q),
		Weights: index.DefaultWeights, Limit: 10}
}

func testUpsertAndCount(t *testing.T, s index.Store) {
	ctx := context.Background()
	if n := mustUpsert(t, s, shopRecords()); n != 7 {
		t.Errorf("wrote %d, want 7", n)
	}
	for _, tc := range []struct {
		f    index.Filter
		want int
	}{
		{index.Filter{Database: "shop"}, 7},
		{index.Filter{Database: "shop", Kinds: []string{chunk.KindTable}}, 4},
		{index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc, chunk.KindExample}}, 3},
		{index.Filter{Database: "shop", Tags: map[string]string{"version": "2"}}, 1},
		{index.Filter{Database: "other"}, 0},
	} {
		if n, err := s.Count(ctx, tc.f); err != nil || n != tc.want {
			t.Errorf("Count(%+v) = %d, %v; want %d", tc.f, n, err, tc.want)
		}
	}
	metas, err := s.Metas(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindTable}})
	if err != nil || len(metas) != 4 || metas["shop:table:public.orders"].Version != 1 || metas["shop:table:public.orders"].Hash == "" {
		t.Errorf("Metas = %v, %v", metas, err)
	}
	hits, err := s.SearchText(ctx, textQuery("shop", "carrier"))
	if err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %v", hits, err)
	}
	got := hits[0].Chunk
	want := shopRecords()[2].Chunk
	if got.ID != want.ID || got.Text != want.Text || got.Title != want.Title || !slices.Equal(got.Columns, want.Columns) || got.Hash != want.Hash || got.Version != 1 {
		t.Errorf("stored chunk does not round-trip:\n got %+v\nwant %+v", got, want)
	}
}

// A question word naming a table outranks the same word in a column name,
// which outranks it in free text, even when the text repeats it.
func testBM25RanksByField(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	hits, err := s.SearchText(context.Background(), textQuery("shop", "orders", chunk.KindTable))
	if err != nil {
		t.Fatal(err)
	}
	got := names(hits)
	if len(got) < 3 || got[0] != "public.orders" {
		t.Fatalf("got %v, want public.orders first", got)
	}
	si, ai := slices.Index(got, "public.shipments"), slices.Index(got, "public.audit_log")
	if si < 0 || ai < 0 || si > ai {
		t.Errorf("got %v: a column match (shipments.order_ref) should beat free text, even repeated (audit_log)", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("scores not descending: %v", hits)
		}
	}
}

func testBM25Inflections(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	for _, q := range []string{"order", "Orders", "ORDERED"} {
		hits, err := s.SearchText(context.Background(), textQuery("shop", q, chunk.KindTable))
		if err != nil || len(hits) == 0 || hits[0].Chunk.Name != "public.orders" {
			t.Errorf("%q: got %v %v, want public.orders first", q, names(hits), err)
		}
	}
}

// testStemsEndingInS: analysed terms reach the store as they are. Words
// whose stem ends in s (courses → cours, purchases → purchas) are where a
// store that analysed them again would lose them.
func testStemsEndingInS(t *testing.T, s index.Store) {
	mustUpsert(t, s, []index.Record{
		rec("school", chunk.KindTable, "public.courses", "courses", []string{"course_id", "course_description"}, "CREATE TABLE public.courses (course_id int, course_description text)", 1, nil),
		rec("school", chunk.KindTable, "public.purchases", "purchases", []string{"id", "amount"}, "CREATE TABLE public.purchases (id int, amount numeric)", 1, nil),
		rec("school", chunk.KindTable, "public.notes", "notes", []string{"id", "description"}, "CREATE TABLE public.notes (id int, description text)", 1, nil),
	})
	for q, want := range map[string]string{"courses": "public.courses", "Which course descriptions?": "public.courses",
		"purchase amounts": "public.purchases"} {
		hits, err := s.SearchText(context.Background(), textQuery("school", q))
		if err != nil || len(hits) == 0 || hits[0].Chunk.Name != want {
			t.Errorf("%q: got %v %v, want %s first", q, names(hits), err, want)
		}
	}
}

// testCompounds: adjacent query terms also search their compound, which
// finds a run-together identifier (countrylanguage for "country
// language"); NoCompounds leaves one out.
func testCompounds(t *testing.T, s index.Store) {
	mustUpsert(t, s, []index.Record{
		rec("geo", chunk.KindTable, "public.spoken", "spoken", []string{"id", "countrylanguage"}, "CREATE TABLE public.spoken (id int, countrylanguage text)", 1, nil),
		rec("geo", chunk.KindTable, "public.notes", "notes", []string{"id", "body"}, "CREATE TABLE public.notes (id int, body text)", 1, nil),
	})
	ctx := context.Background()
	q := textQuery("geo", "country language")
	hits, err := s.SearchText(ctx, q)
	if err != nil || len(hits) != 1 || hits[0].Chunk.Name != "public.spoken" {
		t.Fatalf("country language: got %v %v, want public.spoken through the compound", names(hits), err)
	}
	q.NoCompounds = index.MatchTerms(q.Terms)[2:] // the one compound
	if hits, err = s.SearchText(ctx, q); err != nil || len(hits) != 0 {
		t.Errorf("country language without %v: got %v %v, want nothing", q.NoCompounds, names(hits), err)
	}
}

func testKNN(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	q := local.Vector("customers email country")
	hits, err := s.SearchVector(context.Background(), index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: q, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 3 || hits[0].Chunk.Name != "public.customers" {
		t.Fatalf("got %v, want public.customers first of 3", names(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("scores not descending: %v", hits)
		}
	}
	want := embed.Cosine(q, shopRecords()[1].Vector)
	if d := hits[0].Score - float64(want); d > 1e-4 || d < -1e-4 {
		t.Errorf("score %f, want the cosine %f", hits[0].Score, want)
	}
}

func testFilters(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	ctx := context.Background()
	q := textQuery("shop", "refunds", chunk.KindDoc)
	q.Tags = map[string]string{"product": "checkout", "version": "2"}
	hits, err := s.SearchText(ctx, q)
	if err != nil || len(hits) != 1 || hits[0].Chunk.Name != "refunds.md" {
		t.Errorf("tag-filtered text search: %v %v", names(hits), err)
	}
	vq := index.VectorQuery{Filter: index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc},
		Tags: map[string]string{"version": "1"}}, Vector: local.Vector("refunds"), Limit: 10}
	hits, err = s.SearchVector(ctx, vq)
	if err != nil || len(hits) != 1 || hits[0].Chunk.Name != "legacy.md" {
		t.Errorf("tag-filtered vector search: %v %v", names(hits), err)
	}
	hits, err = s.SearchText(ctx, textQuery("shop", "orders customer", chunk.KindExample))
	if err != nil || len(hits) != 1 || hits[0].Chunk.Kind != chunk.KindExample {
		t.Errorf("kind-filtered search: %v %v", names(hits), err)
	}
	// Schema filter: only tables and views of those schemas.
	other := rec("shop", chunk.KindTable, "archive.orders", "orders", []string{"id"}, "CREATE TABLE archive.orders (id bigint)", 1, nil)
	other.Schema = "archive"
	mustUpsert(t, s, []index.Record{other})
	sq := textQuery("shop", "orders")
	sq.Schemas = []string{"archive"}
	hits, err = s.SearchText(ctx, sq)
	if err != nil || len(hits) != 1 || hits[0].Chunk.Name != "archive.orders" {
		t.Errorf("schema-filtered text search: %v %v", names(hits), err)
	}
	vh, err := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "shop", Schemas: []string{"archive"}}, Vector: local.Vector("orders"), Limit: 10})
	if err != nil || len(vh) != 1 || vh[0].Chunk.Name != "archive.orders" {
		t.Errorf("schema-filtered vector search: %v %v", names(vh), err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop", Schemas: []string{"archive"}}); n != 1 {
		t.Errorf("schema-filtered count %d", n)
	}
}

// A search scoped to one database never returns another database's
// chunks, whatever the query text.
func testIsolation(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	mustUpsert(t, s, []index.Record{
		rec("hr", chunk.KindTable, "public.orders", "orders", []string{"id"}, "CREATE TABLE public.orders (id int) -- shop orders", 1, nil),
		rec("hr", chunk.KindTable, "public.staff", "staff", []string{"id", "name"}, "CREATE TABLE public.staff (id int, name text)", 1, nil),
	})
	ctx := context.Background()
	for _, q := range []string{"orders", "staff", "hr", "shop", `database:"hr" OR staff`, "db:hr", "*", "staff NOT orders"} {
		for _, db := range []string{"shop", "hr"} {
			tq := textQuery(db, q)
			tq.Terms = append(tq.Terms, "hr", "shop", "staff") // even raw extra terms stay scoped
			hits, err := s.SearchText(ctx, tq)
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			vh, err := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: db}, Vector: local.Vector(q), Limit: 50})
			if err != nil {
				t.Fatalf("%q: %v", q, err)
			}
			for _, h := range append(hits, vh...) {
				if h.Chunk.Database != db {
					t.Errorf("query %q scoped to %s returned %s", q, db, h.Chunk.ID)
				}
			}
		}
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "hr"}); n != 2 {
		t.Errorf("hr has %d chunks, want 2", n)
	}
}

// Terms come from users: quotes, operators, column filters and wildcards
// must be matched as text or ignored, never parsed.
func testHostileQueries(t *testing.T, s index.Store) {
	mustUpsert(t, s, shopRecords())
	ctx := context.Background()
	for _, terms := range [][]string{
		{`"`}, {`orders"`, `OR`, `"x`}, {"NEAR(orders customers)"}, {"*"}, {"orders*"}, {"-orders"},
		{"^orders"}, {"title:orders"}, {"{name schema}:orders"}, {"AND"}, {"NOT"}, {"()"}, {"'; DROP TABLE chunks; --"},
		{""}, {}, {"ordérs", "日本語"},
	} {
		hits, err := s.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: "shop"}, Terms: terms, Weights: index.DefaultWeights, Limit: 5})
		if err != nil {
			t.Errorf("terms %q: %v", terms, err)
		}
		for _, h := range hits {
			if h.Chunk.Database != "shop" {
				t.Errorf("terms %q leaked %s", terms, h.Chunk.ID)
			}
		}
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 7 {
		t.Errorf("store lost chunks to a hostile query: %d left", n)
	}
}

// Upsert never replaces a chunk derived from a newer catalog version, and
// DeleteStale removes only what a newer version no longer produces.
func testVersionGuard(t *testing.T, s index.Store) {
	ctx := context.Background()
	v2 := rec("shop", chunk.KindTable, "public.orders", "orders", []string{"id", "total"}, "CREATE TABLE public.orders (id bigint, total numeric)", 2, nil)
	v1 := rec("shop", chunk.KindTable, "public.orders", "orders", []string{"id"}, "CREATE TABLE public.orders (id bigint)", 1, nil)
	if n := mustUpsert(t, s, []index.Record{v2}); n != 1 {
		t.Fatalf("wrote %d", n)
	}
	if n := mustUpsert(t, s, []index.Record{v1}); n != 0 {
		t.Errorf("an older version was written (%d)", n)
	}
	metas, _ := s.Metas(ctx, index.Filter{Database: "shop"})
	if metas[v2.ID].Version != 2 || metas[v2.ID].Hash != v2.Hash {
		t.Errorf("stored %+v, want version 2", metas[v2.ID])
	}
	v2again := v2
	v2again.Text += " -- same version, rewritten"
	if n := mustUpsert(t, s, []index.Record{v2again}); n != 1 {
		t.Errorf("the same version should be rewritable (idempotent redelivery), wrote %d", n)
	}
	// Touch raises versions without rewriting, and never lowers them.
	if n, err := s.Touch(ctx, "shop", []string{v2.ID, "shop:table:nope"}, 3); err != nil || n != 1 {
		t.Errorf("Touch raised %d, %v; want 1", n, err)
	}
	if n, _ := s.Touch(ctx, "shop", []string{v2.ID}, 2); n != 0 {
		t.Errorf("Touch lowered a version")
	}
	if metas, _ := s.Metas(ctx, index.Filter{Database: "shop"}); metas[v2.ID].Version != 3 || metas[v2.ID].Hash != v2.Hash {
		t.Errorf("after Touch: %+v", metas[v2.ID])
	}
	if n, _ := s.Touch(ctx, "hr", []string{v2.ID}, 9); n != 0 {
		t.Error("Touch crossed databases")
	}
	old := rec("shop", chunk.KindTable, "public.gone", "gone", nil, "CREATE TABLE public.gone ()", 1, nil)
	doc := rec("shop", chunk.KindDoc, "d.md", "D", nil, "doc text", 0, nil)
	mustUpsert(t, s, []index.Record{old, doc})
	n, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindTable, chunk.KindView}, Below: 3})
	if err != nil || n != 1 {
		t.Errorf("DeleteStale removed %d, %v; want 1 (public.gone)", n, err)
	}
	if c, _ := s.Count(ctx, index.Filter{Database: "shop"}); c != 2 {
		t.Errorf("%d chunks left, want orders v2 and the doc", c)
	}
	// Scoped to one object: only that doc's older sections go.
	d1 := rec("shop", chunk.KindDoc, "e.md", "E", nil, "old section", 5, nil)
	d1.ID = "shop:doc:e.md:2"
	mustUpsert(t, s, []index.Record{d1, rec("shop", chunk.KindDoc, "e.md", "E", nil, "new", 6, nil)})
	if n, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindDoc}, Name: "e.md", Below: 6}); err != nil || n != 1 {
		t.Errorf("scoped DeleteStale removed %d, %v; want 1", n, err)
	}
	if c, _ := s.Count(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}}); c != 2 {
		t.Errorf("%d docs left, want d.md and e.md's new section", c)
	}
	// Named objects, each below its own version: a run of docs. f.md's
	// section of version 7 goes (its edit is 9), g.md's of 8 stays (its
	// edit is 8), and e.md, not named, keeps its section of 6.
	f1 := rec("shop", chunk.KindDoc, "f.md", "F", nil, "old tail", 7, nil)
	f1.ID = "shop:doc:f.md:2"
	mustUpsert(t, s, []index.Record{f1, rec("shop", chunk.KindDoc, "f.md", "F", nil, "new", 9, nil), rec("shop", chunk.KindDoc, "g.md", "G", nil, "g", 8, nil)})
	if n, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindDoc}, Names: map[string]int64{"f.md": 9, "g.md": 8, "e.md": 6}}); err != nil || n != 1 {
		t.Errorf("named DeleteStale removed %d, %v; want 1 (f.md's old tail)", n, err)
	}
	metas, _ = s.Metas(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindDoc}})
	if _, gone := metas[f1.ID]; gone || len(metas) != 4 {
		t.Errorf("after the named DeleteStale: %v; want d.md, e.md, f.md's new section and g.md", metas)
	}
}

// A doc or example is ordered as one object: once a delete or an edit
// of it at some version is applied, no write of an older version lands,
// not even of a section the newer version does not have. Workers apply
// one database's events on several processes at once, so an older edit
// can arrive after a newer one, or after the delete that followed it.
func testObjectMarks(t *testing.T, s index.Store) {
	ctx := context.Background()
	sectionOf := func(db, kind, name string, part int, version int64) index.Record {
		r := rec(db, kind, name, name, nil, fmt.Sprintf("%s section %d", name, part), version, nil)
		r.ID, r.Part = chunk.ID(db, kind, name, part), part
		return r
	}
	section := func(kind, name string, part int, version int64) index.Record {
		return sectionOf("shop", kind, name, part, version)
	}
	count := func(db, kind, name string) int {
		t.Helper()
		metas, err := s.Metas(ctx, index.Filter{Database: db, Kinds: []string{kind}})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for id := range metas {
			if strings.HasPrefix(id, chunk.ID(db, kind, name, 0)) {
				n++
			}
		}
		return n
	}
	steps := []struct {
		name  string
		db    string // shop unless set
		kind  string
		doc   string
		apply func()
		want  int   // the object's chunks after the step
		mark  int64 // and its mark (0: none)
	}{
		{"a delete applied before the edit it follows", "", chunk.KindDoc, "gone.md", func() {
			if _, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindDoc}, Name: "gone.md", Below: 10}); err != nil {
				t.Fatal(err)
			}
			if n := mustUpsert(t, s, []index.Record{section(chunk.KindDoc, "gone.md", 0, 7), section(chunk.KindDoc, "gone.md", 1, 7)}); n != 0 {
				t.Errorf("an edit older than the delete wrote %d sections", n)
			}
		}, 0, 10},
		{"an edit after the delete", "", chunk.KindDoc, "gone.md", func() {
			if n := mustUpsert(t, s, []index.Record{section(chunk.KindDoc, "gone.md", 0, 11)}); n != 1 {
				t.Errorf("an edit newer than the delete wrote %d sections, want 1", n)
			}
		}, 1, 11},
		{"an older, longer edit after a shorter one", "", chunk.KindDoc, "shrunk.md", func() {
			mustUpsert(t, s, []index.Record{section(chunk.KindDoc, "shrunk.md", 0, 20)})
			if _, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindDoc}, Names: map[string]int64{"shrunk.md": 20}}); err != nil {
				t.Fatal(err)
			}
			var old []index.Record
			for part := range 4 {
				old = append(old, section(chunk.KindDoc, "shrunk.md", part, 15))
			}
			if n := mustUpsert(t, s, old); n != 0 {
				t.Errorf("the older edit wrote %d sections, want none", n)
			}
		}, 1, 20},
		{"an example deleted before its older publish", "", chunk.KindExample, "q9", func() {
			if _, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindExample}, Names: map[string]int64{"q9": 30}}); err != nil {
				t.Fatal(err)
			}
			mustUpsert(t, s, []index.Record{section(chunk.KindExample, "q9", 0, 25)})
		}, 0, 30},
		{"the example published again", "", chunk.KindExample, "q9", func() {
			mustUpsert(t, s, []index.Record{section(chunk.KindExample, "q9", 0, 31)})
		}, 1, 31},
		{"a table is the catalog's to order, not marked", "", chunk.KindTable, "public.t", func() {
			if _, err := s.DeleteStale(ctx, index.Stale{Database: "shop", Kinds: []string{chunk.KindTable}, Name: "public.t", Below: 9}); err != nil {
				t.Fatal(err)
			}
			mustUpsert(t, s, []index.Record{section(chunk.KindTable, "public.t", 0, 3)})
		}, 1, 0},
		{"another database's doc of the same name", "hr", chunk.KindDoc, "gone.md", func() {
			mustUpsert(t, s, []index.Record{sectionOf("hr", chunk.KindDoc, "gone.md", 0, 1), section(chunk.KindDoc, "gone.md", 0, 1)})
		}, 1, 1},
		{"a database dropped forgets its marks", "", chunk.KindDoc, "gone.md", func() {
			if err := s.DeleteDatabase(ctx, "shop"); err != nil {
				t.Fatal(err)
			}
			mustUpsert(t, s, []index.Record{section(chunk.KindDoc, "gone.md", 0, 1)})
		}, 1, 1},
	}
	for _, st := range steps {
		st.apply()
		db := cmp.Or(st.db, "shop")
		if got := count(db, st.kind, st.doc); got != st.want {
			t.Errorf("%s: %s of %s has %d chunks, want %d", st.name, st.doc, db, got, st.want)
		}
		marks, err := s.Marks(ctx, db, st.kind, []string{st.doc, "never-written.md"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{st.doc: st.mark}; st.mark == 0 && len(marks) != 0 || st.mark != 0 && !maps.Equal(marks, want) {
			t.Errorf("%s: marks %v, want %s at %d", st.name, marks, st.doc, st.mark)
		}
	}
	testManyMarks(t, s)
}

// testManyMarks reads marks of more objects than one statement or
// command takes, most of them without one.
func testManyMarks(t *testing.T, s index.Store) {
	ctx := context.Background()
	names := make(map[string]int64)
	var all []string
	for i := range 450 {
		n := fmt.Sprintf("bulk/%03d.md", i)
		all = append(all, n)
		if i%7 == 0 {
			names[n] = int64(100 + i)
		}
	}
	if _, err := s.DeleteStale(ctx, index.Stale{Database: "bulk", Kinds: []string{chunk.KindDoc}, Names: names}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Marks(ctx, "bulk", chunk.KindDoc, all)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, names) {
		t.Errorf("marks of 450 docs: got %d, want %d (%v…)", len(got), len(names), got["bulk/007.md"])
	}
	if got, err := s.Marks(ctx, "bulk", chunk.KindExample, all); err != nil || len(got) != 0 {
		t.Errorf("another kind's marks: %v %v", got, err)
	}
}

func testProjected(t *testing.T, s index.Store) {
	ctx := context.Background()
	if v, err := s.Projected(ctx, "shop"); err != nil || v != 0 {
		t.Errorf("fresh store: %d %v", v, err)
	}
	for _, v := range []int64{3, 7, 5} {
		if err := s.SetProjected(ctx, "shop", v); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := s.Projected(ctx, "shop"); v != 7 {
		t.Errorf("projected %d, want 7: it never goes down", v)
	}
	if v, _ := s.Projected(ctx, "hr"); v != 0 {
		t.Errorf("another database: %d", v)
	}
}

func testDeletes(t *testing.T, s index.Store) {
	ctx := context.Background()
	mustUpsert(t, s, shopRecords())
	mustUpsert(t, s, []index.Record{rec("hr", chunk.KindTable, "public.staff", "staff", nil, "staff", 1, nil)})
	if err := s.Delete(ctx, "shop", []string{"shop:table:public.orders", "shop:table:nope"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteName(ctx, "shop", chunk.KindDoc, "refunds.md"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 5 {
		t.Errorf("%d left after deletes, want 5", n)
	}
	hits, _ := s.SearchText(ctx, textQuery("shop", "orders", chunk.KindTable))
	if slices.Contains(names(hits), "public.orders") {
		t.Error("a deleted chunk is still found by BM25")
	}
	vh, _ := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: local.Vector("orders"), Limit: 50})
	if slices.Contains(names(vh), "public.orders") {
		t.Error("a deleted chunk is still found by KNN")
	}
	if err := s.DeleteDatabase(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 0 {
		t.Errorf("%d left after DeleteDatabase", n)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "hr"}); n != 1 {
		t.Error("DeleteDatabase touched another database")
	}
}

func testReplace(t *testing.T, s index.Store) {
	ctx := context.Background()
	mustUpsert(t, s, shopRecords())
	r := rec("shop", chunk.KindTable, "public.orders", "orders", []string{"id", "placed_at"}, "CREATE TABLE public.orders (id bigint, placed_at timestamptz)", 2, nil)
	mustUpsert(t, s, []index.Record{r})
	if n, _ := s.Count(ctx, index.Filter{Database: "shop"}); n != 7 {
		t.Errorf("replace changed the count to %d", n)
	}
	hits, _ := s.SearchText(ctx, textQuery("shop", "placed", chunk.KindTable))
	if len(hits) != 1 || hits[0].Chunk.Name != "public.orders" {
		t.Errorf("new text not searchable: %v", names(hits))
	}
	hits, _ = s.SearchText(ctx, textQuery("shop", "status", chunk.KindTable))
	if slices.Contains(names(hits), "public.orders") {
		t.Error("old text still matches after replace")
	}
}

// testReplaceSchema: a projection removes exactly the schema chunks it
// lists, never a doc, an example or another database's chunk named by
// mistake, and only when no other projection landed since its read.
func testReplaceSchema(t *testing.T, s index.Store) {
	r, ok := s.(index.Replacer)
	if !ok {
		t.Skip("the store projects through Touch and DeleteStale")
	}
	ctx := context.Background()
	recs := shopRecords()
	other := rec("hr", chunk.KindTable, "public.orders", "orders", []string{"id"}, "CREATE TABLE public.orders (id bigint)", 1, nil)
	mustUpsert(t, s, append(recs, other))
	if err := s.SetProjected(ctx, "shop", 1); err != nil {
		t.Fatal(err)
	}
	kinds := []string{chunk.KindTable, chunk.KindView}
	placed := rec("shop", chunk.KindTable, "public.orders", "orders", []string{"id", "placed_at"}, "CREATE TABLE public.orders (id bigint, placed_at timestamptz)", 2, nil)
	res, err := r.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 2, Since: 1, Kinds: kinds, Upserts: []index.Record{placed},
		Remove: []string{recs[1].ID, recs[2].ID, recs[4].ID, recs[6].ID, other.ID, "shop:table:public.never_stored"}})
	if err != nil || res.Skipped || res.Written != 1 || res.Deleted != 2 {
		t.Fatalf("replace: %+v, %v (want 1 written, 2 deleted)", res, err)
	}
	metas, err := s.Metas(ctx, index.Filter{Database: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false, true, true, true, true} {
		if _, ok := metas[recs[i].ID]; ok != want {
			t.Errorf("%s present %v after the replace, want %v", recs[i].ID, ok, want)
		}
	}
	if metas[recs[3].ID].Version != 1 {
		t.Errorf("a chunk not named was rewritten: %+v", metas[recs[3].ID])
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "hr"}); n != 1 {
		t.Error("a replace in shop removed a chunk of hr")
	}
	if hits, _ := s.SearchText(ctx, textQuery("shop", "carrier", chunk.KindTable)); len(hits) != 0 {
		t.Errorf("a removed table is still found: %v", names(hits))
	}
	if p, _ := s.Projected(ctx, "shop"); p != 2 {
		t.Errorf("projected %d, want 2", p)
	}
	// Read at an older projection: refused, to be read again.
	if _, err := r.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 3, Since: 1, Kinds: kinds, Remove: []string{recs[0].ID}}); !errors.Is(err, index.ErrMoved) {
		t.Errorf("a replace read at an old projection: %v, want ErrMoved", err)
	}
	if n, _ := s.Count(ctx, index.Filter{Database: "shop", Kinds: []string{chunk.KindTable}}); n != 2 {
		t.Errorf("a refused replace changed the tables: %d left, want 2", n)
	}
	// An older catalog than the index reflects changes nothing.
	if res, err := r.ReplaceSchema(ctx, index.SchemaReplace{Database: "shop", Version: 1, Since: 2, Kinds: kinds, Remove: []string{recs[0].ID}}); err != nil || !res.Skipped {
		t.Errorf("an older catalog: %+v, %v", res, err)
	}
}

// testReplaceSchemaWhole: a search running while projections land sees
// each projection whole or not at all, never one table at the new
// version beside another at the old, or a table the projection removed
// beside ones it rewrote.
func testReplaceSchemaWhole(t *testing.T, s index.Store) {
	r, ok := s.(index.Replacer)
	if !ok {
		t.Skip("the store projects through Touch and DeleteStale")
	}
	ctx := context.Background()
	const tables, projections = 60, 24
	kinds := []string{chunk.KindTable, chunk.KindView}
	// Version v rewrites every table; the odd versions have one more,
	// which the even ones remove.
	extra := func(v int64) index.Record {
		return rec("shop", chunk.KindTable, "public.extra", "extra", []string{"id"}, "CREATE TABLE public.extra (id bigint) -- ledger", v, nil)
	}
	at := func(v int64) []index.Record {
		out := make([]index.Record, 0, tables+1)
		for i := range tables {
			name := fmt.Sprintf("t%02d", i)
			out = append(out, rec("shop", chunk.KindTable, "public."+name, name, []string{"id", "amount"},
				fmt.Sprintf("CREATE TABLE public.%s (id bigint, amount numeric) -- ledger, version %d", name, v), v, nil))
		}
		if v%2 == 1 {
			out = append(out, extra(v))
		}
		return out
	}
	mustUpsert(t, s, at(1))
	if err := s.SetProjected(ctx, "shop", 1); err != nil {
		t.Fatal(err)
	}
	q := index.TextQuery{Filter: index.Filter{Database: "shop", Kinds: kinds}, Terms: text.Terms("ledger"), Weights: index.DefaultWeights, Limit: 2 * tables}
	done := make(chan struct{})
	seen := make(chan string, 1)
	searches := make(chan int, 1)
	go func() {
		n := 0
		defer func() { searches <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			hits, err := s.SearchText(ctx, q)
			if err != nil {
				seen <- fmt.Sprintf("search: %v", err)
				return
			}
			n++
			if bad := mixed(hits, tables); bad != "" {
				seen <- bad
				return
			}
		}
	}()
	for v := int64(2); v <= projections; v++ {
		rep := index.SchemaReplace{Database: "shop", Version: v, Since: v - 1, Kinds: kinds, Upserts: at(v)}
		if v%2 == 0 {
			rep.Remove = []string{extra(v).ID}
		}
		if _, err := r.ReplaceSchema(ctx, rep); err != nil {
			close(done)
			t.Fatalf("projection %d: %v", v, err)
		}
	}
	close(done)
	if n := <-searches; n == 0 {
		t.Fatal("no search ran while the projections landed")
	}
	select {
	case bad := <-seen:
		t.Fatalf("a search saw a projection half landed: %s", bad)
	default:
	}
	hits, err := s.SearchText(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if bad := mixed(hits, tables); bad != "" || len(hits) != tables || hits[0].Chunk.Version != projections {
		t.Fatalf("after the last projection: %d tables at version %d (%s), want %d at %d", len(hits), hits[0].Chunk.Version, bad, tables, projections)
	}
}

// mixed describes what is wrong with hits as one projection of
// testReplaceSchemaWhole, or returns "".
func mixed(hits []index.Hit, tables int) string {
	if len(hits) == 0 {
		return "no table at all"
	}
	v := hits[0].Chunk.Version
	hasExtra := false
	for _, h := range hits {
		if h.Chunk.Version != v {
			return fmt.Sprintf("%s at version %d beside %s at %d", h.Chunk.Name, h.Chunk.Version, hits[0].Chunk.Name, v)
		}
		hasExtra = hasExtra || h.Chunk.Name == "public.extra"
	}
	want := tables
	if v%2 == 1 {
		want++
	}
	if len(hits) != want || hasExtra != (v%2 == 1) {
		return fmt.Sprintf("%d tables at version %d (extra table: %v), want %d", len(hits), v, hasExtra, want)
	}
	return ""
}

func testBadInput(t *testing.T, s index.Store) {
	ctx := context.Background()
	r := shopRecords()[0]
	r.Vector = make([]float32, Dimensions+1)
	mustUpsert(t, s, shopRecords()[1:2])
	if _, err := s.Upsert(ctx, []index.Record{r}); !errors.Is(err, index.ErrDimension) {
		t.Errorf("upsert with a wrong dimension: %v", err)
	}
	if _, err := s.SearchVector(ctx, index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: make([]float32, 3), Limit: 1}); !errors.Is(err, index.ErrDimension) {
		t.Errorf("query with a wrong dimension: %v", err)
	}
	if _, err := s.SearchText(ctx, index.TextQuery{Terms: []string{"x"}, Limit: 1}); !errors.Is(err, index.ErrNoDatabase) {
		t.Errorf("query without database: %v", err)
	}
	noDB := shopRecords()[0]
	noDB.Database = ""
	if _, err := s.Upsert(ctx, []index.Record{noDB}); !errors.Is(err, index.ErrNoDatabase) {
		t.Errorf("upsert without database: %v", err)
	}
}

// testPinned holds a store that pins views (index.Pinner): a view answers
// as the store did when it was pinned, keeps doing so after a write, a
// new pin sees the write, and a view refuses another database's queries.
func testPinned(t *testing.T, s index.Store) {
	p, ok := s.(index.Pinner)
	if !ok {
		t.Skip("the store does not pin views")
	}
	ctx := context.Background()
	mustUpsert(t, s, shopRecords())
	tq := textQuery("shop", "orders shipments")
	vq := index.VectorQuery{Filter: index.Filter{Database: "shop"}, Vector: local.Vector("customers email"), Limit: 3}
	view, err := p.Pin(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	search := func(from index.Searcher) ([]string, []string) {
		t.Helper()
		th, err := from.SearchText(ctx, tq)
		if err != nil {
			t.Fatal(err)
		}
		vh, err := from.SearchVector(ctx, vq)
		if err != nil {
			t.Fatal(err)
		}
		return names(th), names(vh)
	}
	wantT, wantV := search(s)
	if gotT, gotV := search(view); !slices.Equal(gotT, wantT) || !slices.Equal(gotV, wantV) {
		t.Fatalf("pinned view: %v / %v, store: %v / %v", gotT, gotV, wantT, wantV)
	}
	if same, ok := view.(index.Store); ok && same == s {
		return // a store searching on its server pins nothing
	}
	if err := s.Delete(ctx, "shop", []string{chunk.ID("shop", chunk.KindTable, "public.orders", 0)}); err != nil {
		t.Fatal(err)
	}
	if gotT, _ := search(view); !slices.Equal(gotT, wantT) {
		t.Errorf("the view changed under a write: %v, pinned %v", gotT, wantT)
	}
	fresh, err := p.Pin(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if gotT, _ := search(fresh); slices.Contains(gotT, "public.orders") {
		t.Errorf("a view pinned after a delete still finds it: %v", gotT)
	}
	if _, err := view.SearchText(ctx, textQuery("hr", "staff")); err == nil {
		t.Error("a view pinned to shop answered a query about hr")
	}
	if _, err := p.Pin(ctx, ""); !errors.Is(err, index.ErrNoDatabase) {
		t.Errorf("pin without a database: %v, want ErrNoDatabase", err)
	}
}
