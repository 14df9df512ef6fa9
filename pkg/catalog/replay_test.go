package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// generatedHistory is a history of n migrations that does what real
// ones do, and what makes a replay go back to its checkpoint: migrations
// that fail, statements left out as drift, exception blocks that undo,
// and routines a budget stops.
func generatedHistory(n int, seed uint64) []string {
	rnd := rand.New(rand.NewPCG(seed, 1))
	var out []string
	tables := 0
	pick := func() int { return rnd.IntN(tables) }
	for i := 0; i < n; i++ {
		var sql string
		switch k := rnd.IntN(20); {
		case tables < 3 || k < 8:
			sql = fmt.Sprintf("CREATE TABLE t%d (id bigserial PRIMARY KEY, name text NOT NULL);", tables)
			if tables > 0 {
				sql += fmt.Sprintf("\nALTER TABLE t%d ADD COLUMN ref_%d bigint REFERENCES t%d (id);", tables, i, pick())
			}
			tables++
		case k < 11:
			sql = fmt.Sprintf("ALTER TABLE t%d ADD COLUMN c%d integer;\nCREATE INDEX ON t%d (c%d);", pick(), i, pick(), i)
		case k < 12:
			sql = fmt.Sprintf("ALTER TABLE t%d RENAME COLUMN name TO name_%d;", pick(), i)
		case k < 13:
			sql = fmt.Sprintf("ALTER TABLE nowhere_%d ADD COLUMN x int;", i) // drift, or a refusal when strict
		case k < 14:
			sql = fmt.Sprintf("CREATE TABLE t%d (id int);", pick()) // refused: it exists
		case k < 15:
			sql = fmt.Sprintf("CREATE TABLE ok_%d (id int);\nSELECT FROM;", i) // a syntax error
		case k < 16:
			sql = fmt.Sprintf(`DO $$ BEGIN
  BEGIN
    ALTER TABLE t%d ADD COLUMN undone_%d int;
    RAISE EXCEPTION 'undo';
  EXCEPTION WHEN others THEN NULL;
  END;
  ALTER TABLE t%d ADD COLUMN kept_%d int;
END $$;`, pick(), i, pick(), i)
		case k < 17:
			sql = fmt.Sprintf(`DO $$ DECLARE s text := 'x'; BEGIN
  FOR i IN 1..100000 LOOP s := s || 'x'; END LOOP;
  CREATE TABLE never_%d (id int);
END $$;`, i) // stopped by the step budget below
		case k < 18:
			sql = fmt.Sprintf("ALTER TABLE t%d ALTER COLUMN ghost_%d SET NOT NULL;", pick(), i) // an inferred column
		default:
			sql = fmt.Sprintf("COMMENT ON TABLE t%d IS 'migration %d';", pick(), i)
		}
		out = append(out, sql)
	}
	return out
}

// TestReplayIsApplyAndRecord replays generated histories both ways, one
// Apply and Record per migration and one Replay, and wants the same
// catalog after every migration, and the same errors.
func TestReplayIsApplyAndRecord(t *testing.T) {
	limits := WithLimits(Limits{Steps: 20_000})
	tests := []struct {
		name string
		opts []ApplyOption
	}{
		{"tolerant", []ApplyOption{Tolerant(), limits}},
		{"strict", []ApplyOption{limits}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			history := generatedHistory(3*checkpointEvery+17, 7)
			c := New("db")
			r := NewReplay(c, tt.opts...)
			var fails int
			for i, sql := range history {
				source := fmt.Sprintf("%04d.sql", i+1)
				a := Applied{Seq: c.Version + 1, ID: source, Source: source}
				next, err := c.Apply(source, sql, tt.opts...)
				if err == nil {
					c = next.Record(a)
				}
				rerr := r.Apply(context.Background(), source, sql, a)
				if fmt.Sprint(err) != fmt.Sprint(rerr) {
					t.Fatalf("migration %d: Apply says %v, Replay %v", i+1, err, rerr)
				}
				if err != nil {
					fails++
				}
				want, _ := c.MarshalJSON()
				got, _ := r.Catalog().MarshalJSON()
				if !bytes.Equal(got, want) {
					t.Fatalf("migration %d (%q): the replay's catalog differs:\n got  %.600s\n want %.600s", i+1, sql, got, want)
				}
			}
			if fails == 0 || len(c.Drift()) == 0 {
				t.Fatalf("%d failures, %d drift: the history does not test going back", fails, len(c.Drift()))
			}
		})
	}
}

// TestReplayLeavesItsStartAlone checks that the catalog a replay starts
// from, or is reset to, is never changed by it.
func TestReplayLeavesItsStartAlone(t *testing.T) {
	start, err := New("db").Apply("0.sql", "CREATE TABLE a (id int); CREATE TABLE b () INHERITS (a);")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := start.MarshalJSON()
	r := NewReplay(start, Tolerant())
	for i, sql := range generatedHistory(2*checkpointEvery, 3) {
		_ = r.Apply(context.Background(), "m.sql", sql, Applied{Seq: int64(i + 1)})
		if i == checkpointEvery {
			r.Reset(start)
		}
	}
	if after, _ := start.MarshalJSON(); !bytes.Equal(before, after) {
		t.Fatal("the replay changed the catalog it started from")
	}
}

// TestReplayLemmy replays Lemmy's real history both ways.
func TestReplayLemmy(t *testing.T) {
	want := replayLemmy(t)
	dir := testenv.SharedPath(t, "corpus", "lemmy")
	order, err := os.ReadFile(filepath.Join(dir, "ORDER.txt"))
	if err != nil {
		t.Fatal(err)
	}
	r := NewReplay(New("lemmy"))
	for i, rel := range strings.Fields(string(order)) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(context.Background(), rel, string(b), Applied{Seq: int64(i + 1)}); err != nil {
			t.Fatalf("migration %d: %v", i+1, err)
		}
	}
	got := r.Catalog()
	if len(got.Tables()) != len(want.Tables()) || got.DDL() != want.DDL() {
		t.Fatalf("the replay's DDL differs from Apply's (%d tables, want %d)", len(got.Tables()), len(want.Tables()))
	}
}

// BenchmarkReplay replays a history of ten thousand migrations, each
// creating a table and altering an earlier one.
func BenchmarkReplay(b *testing.B) {
	history := make([]string, 10_000)
	for i := range history {
		history[i] = fmt.Sprintf("CREATE TABLE t%d (id bigserial PRIMARY KEY, name text NOT NULL, ref_id bigint);\nALTER TABLE t%d ADD COLUMN c%d integer;", i, i/2, i)
	}
	b.ResetTimer()
	for range b.N {
		r := NewReplay(New("db"), Tolerant())
		for i, sql := range history {
			if err := r.Apply(context.Background(), "m.sql", sql, Applied{Seq: int64(i + 1)}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestReplayCutIsNotApplied checks that a migration whose context ends
// while it applies leaves the replay where it was.
func TestReplayCutIsNotApplied(t *testing.T) {
	r := NewReplay(New("db"), Tolerant())
	if err := r.Apply(context.Background(), "1.sql", "CREATE TABLE a (id int);", Applied{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := r.Apply(ctx, "2.sql", "CREATE TABLE b (id int);", Applied{Seq: 2})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the cut", err)
	}
	if c := r.Catalog(); c.Version != 1 || c.Table(QualName{"public", "b"}) != nil || len(c.History()) != 1 {
		t.Fatalf("the cut migration shows: version %d, tables %v", c.Version, c.Tables())
	}
}

// TestReplaySeesItsOwnChanges checks that a migration applied in place
// reads what it just did, not the sorted lists of the catalog before it.
func TestReplaySeesItsOwnChanges(t *testing.T) {
	r := NewReplay(New("db"))
	if err := r.Apply(context.Background(), "1.sql", "CREATE TYPE mood AS ENUM ('ok'); CREATE TABLE x (id int);", Applied{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Catalog().Tables()); n != 1 { // a caller reads the catalog between
		t.Fatalf("%d tables", n)
	}
	err := r.Apply(context.Background(), "2.sql", "CREATE TABLE y (m mood);\nDROP TYPE mood;", Applied{Seq: 2})
	if !errors.Is(err, ErrDependent) {
		t.Fatalf("got %v, want the type's new column to hold it", err)
	}
}
