package catalog

import (
	"fmt"
	"slices"
	"testing"
)

// TestTableHistory: each table records the migrations that created,
// altered or renamed it, with their versions; a migration that leaves it
// alone adds nothing, the list stays bounded, and it survives encoding.
func TestTableHistory(t *testing.T) {
	cat := New("shop")
	apply := func(seq int64, source, sql string) {
		t.Helper()
		next, err := cat.Apply(source, sql)
		if err != nil {
			t.Fatal(err)
		}
		cat = next.Record(Applied{Seq: seq, ID: source, Source: source})
	}
	apply(1, "0001.sql", "CREATE TABLE categories (id int, title text); CREATE TABLE notes (id int);")
	apply(2, "0002.sql", "ALTER TABLE categories ADD COLUMN slug text;")
	apply(3, "0003.sql", "ALTER TABLE categories RENAME TO genres; COMMENT ON TABLE notes IS 'n';")
	apply(4, "0004.sql", "ALTER TABLE genres RENAME COLUMN title TO label; ALTER TABLE genres RENAME TO kinds; ALTER TABLE kinds ALTER COLUMN slug SET NOT NULL;")
	apply(5, "0005.sql", "CREATE INDEX ON kinds (slug); INSERT INTO notes VALUES (1);")
	got := func(name string) []string {
		var out []string
		for _, c := range cat.Table(QualName{DefaultSchema, name}).History {
			out = append(out, c.String())
		}
		return out
	}
	if want := []string{"created by 0001.sql (version 1)", "altered by 0002.sql (version 2)", "renamed by 0003.sql (version 3)", "renamed, altered by 0004.sql (version 4)"}; !slices.Equal(got("kinds"), want) {
		t.Errorf("kinds: %q, want %q", got("kinds"), want)
	}
	if want := []string{"created by 0001.sql (version 1)", "altered by 0003.sql (version 3)"}; !slices.Equal(got("notes"), want) {
		t.Errorf("notes: %q, want %q", got("notes"), want)
	}
	for seq := int64(6); seq < 60; seq++ {
		apply(seq, fmt.Sprintf("%04d.sql", seq), fmt.Sprintf("ALTER TABLE notes ADD COLUMN c%d int;", seq))
	}
	h := got("notes")
	if len(h) != maxChanges || h[0] != "created by 0001.sql (version 1)" || h[len(h)-1] != "altered by 0059.sql (version 59)" {
		t.Errorf("a long history: %d entries, %q … %q", len(h), h[0], h[len(h)-1])
	}
	b, err := cat.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Catalog
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Table(QualName{DefaultSchema, "kinds"}).History, cat.Table(QualName{DefaultSchema, "kinds"}).History) {
		t.Error("the history does not survive encoding")
	}

	snap, err := Snapshot("shop", "dump.sql", "CREATE TABLE a (id int);")
	if err != nil {
		t.Fatal(err)
	}
	snap.Rebase(Base{Seq: 40, Source: "dump.sql"})
	if h := snap.Table(QualName{DefaultSchema, "a"}).History; len(h) != 1 || h[0].String() != "created by dump.sql (version 40)" {
		t.Errorf("a snapshot's tables: %v", h)
	}
}
