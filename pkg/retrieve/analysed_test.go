package retrieve

import (
	"fmt"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
)

// tableCandidate is a table's candidate as the index returns it.
func tableCandidate(t *testing.T, ddl, table string) rerank.Candidate {
	t.Helper()
	cat, err := catalog.Snapshot("db", "s.sql", ddl)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunk.NewChunker(chunk.Options{}).Catalog(cat) {
		if c.Kind == chunk.KindTable && c.Title == table {
			return rerank.Candidate{Kind: c.Kind, Name: c.Name, Title: c.Title, Schema: c.Schema, Columns: c.Columns, Text: c.Text, Chunks: []chunk.Chunk{c}}
		}
	}
	t.Fatalf("no chunk of %s", table)
	return rerank.Candidate{}
}

// The rescoring's reading of a table is kept while its chunks are the
// same and read anew once a migration changes them: a daemon's
// retriever lives through every migration, and a kept reading of an old
// table would score the question against columns it no longer has.
func TestAnalysedFollowsTheChunks(t *testing.T) {
	c := newAnalysedCache()
	before := tableCandidate(t, "CREATE TABLE orders (id int PRIMARY KEY, total numeric);", "orders")
	first := c.get(&before)
	if again := c.get(&before); again != first {
		t.Error("the same chunks were read twice")
	}
	after := tableCandidate(t, "CREATE TABLE orders (id int PRIMARY KEY, total numeric, shipped_at date);", "orders")
	if after.Chunks[0].ID != before.Chunks[0].ID {
		t.Fatalf("the changed table's chunk has another id (%s, %s): the test would not test the hash", after.Chunks[0].ID, before.Chunks[0].ID)
	}
	read := c.get(&after)
	if read == first || !read.Columns["ship"] {
		t.Errorf("after the migration the reading is the old one (columns %v)", read.Columns)
	}
	if first.Columns["ship"] {
		t.Error("the old reading changed")
	}
	unsealed := before
	unsealed.Chunks = []chunk.Chunk{before.Chunks[0]}
	unsealed.Chunks[0].Hash = ""
	if c.get(&unsealed) == c.get(&unsealed) {
		t.Error("a chunk without a hash was kept: nothing says its content is the same next time")
	}
}

// The cache holds at most maxAnalysed readings.
func TestAnalysedIsBounded(t *testing.T) {
	c := newAnalysedCache()
	base := tableCandidate(t, "CREATE TABLE orders (id int PRIMARY KEY, total numeric);", "orders")
	for i := range maxAnalysed + 10 {
		cand := base
		cand.Chunks = []chunk.Chunk{base.Chunks[0]}
		cand.Chunks[0].Hash = fmt.Sprint(i)
		c.get(&cand)
		if n := c.kept.Len(); n > maxAnalysed {
			t.Fatalf("%d readings kept, at most %d", n, maxAnalysed)
		}
	}
}

// A graph renders a table once per catalog version and hands out the
// same chunks the Tabler does; a caller appending to them does not
// reach the kept slice.
func TestTableChunksAreRenderedOnce(t *testing.T) {
	cat, err := catalog.Snapshot("db", "s.sql", "CREATE TABLE orders (id int PRIMARY KEY, total numeric);\nCREATE TABLE items (order_id int REFERENCES orders, sku text);")
	if err != nil {
		t.Fatal(err)
	}
	g := buildGraph(cat, nil)
	tb := cat.Table(catalog.QualName{Schema: "public", Name: "orders"})
	first := g.tableChunks(tb)
	want := g.chunks.Table(tb)
	if len(first) != len(want) || first[0].Hash != want[0].Hash || first[0].Text != want[0].Text {
		t.Fatalf("rendered %+v, the Tabler renders %+v", first, want)
	}
	_ = append(first, chunk.Chunk{ID: "appended"})
	again := g.tableChunks(tb)
	if len(again) != len(want) || &again[0] != &first[0] {
		t.Errorf("the second call rendered again or saw an append: %d chunks", len(again))
	}
}
