package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
)

// TestFoldOrdersTheStream: a rebuild folds the schema events in stream
// order, applying a migration that came early once its predecessor has,
// skipping what was refused when it came, and naming a gap it cannot
// cross.
func TestFoldOrdersTheStream(t *testing.T) {
	mig := func(seq int64, name, sql string) schemaEvent {
		ev, err := events.New(name, "shop", time.Now(), &events.Migration{Seq: seq, Source: name + ".sql", SQL: sql})
		if err != nil {
			t.Fatal(err)
		}
		return schemaEvent{ev: ev}
	}
	table := func(seq int64) schemaEvent {
		return mig(seq, fmt.Sprintf("m%d", seq), fmt.Sprintf("CREATE TABLE t%d (id int);", seq))
	}
	snapshot := func(seq int64, sql string) schemaEvent {
		ev, err := events.New(fmt.Sprintf("snap%d", seq), "shop", time.Now(), &events.Snapshot{Seq: seq, Source: "dump.sql", SQL: sql})
		if err != nil {
			t.Fatal(err)
		}
		return schemaEvent{ev: ev}
	}
	tests := []struct {
		name    string
		evs     []schemaEvent
		want    int64 // the version asked for; -1: all
		version int64
		tables  string // the tables the catalog ends with, sorted
		gap     string // the error, when the fold cannot get there
	}{
		{name: "in order", evs: []schemaEvent{table(1), table(2), table(3)}, want: -1, version: 3, tables: "t1 t2 t3"},
		{name: "one came early", evs: []schemaEvent{table(1), table(3), table(2)}, want: -1, version: 3, tables: "t1 t2 t3"},
		{name: "a chain came early", evs: []schemaEvent{table(4), table(3), table(2), table(1)}, want: -1, version: 4, tables: "t1 t2 t3 t4"},
		{name: "redelivered", evs: []schemaEvent{table(1), table(1), table(2), table(2)}, want: -1, version: 2, tables: "t1 t2"},
		{name: "refused, then the one that applied", evs: []schemaEvent{table(1), mig(2, "bad", "CREATE TABLE (;"), table(2)}, want: -1, version: 2, tables: "t1 t2"},
		{name: "early, refused, then the one that applied", evs: []schemaEvent{table(1), mig(3, "bad", "CREATE TABLE (;"), table(3), table(2)}, want: -1, version: 3, tables: "t1 t2 t3"},
		{name: "up to the version asked for", evs: []schemaEvent{table(1), table(2), table(3)}, want: 2, version: 2, tables: "t1 t2"},
		{name: "early ones stop at the version asked for", evs: []schemaEvent{table(1), table(3), table(4), table(2)}, want: 3, version: 3, tables: "t1 t2 t3"},
		{name: "a snapshot resets", evs: []schemaEvent{table(1), snapshot(5, "CREATE TABLE s (id int);"), table(6)}, want: -1, version: 6, tables: "s t6"},
		{name: "a gap", evs: []schemaEvent{table(1), table(3), table(4)}, want: -1, version: 1, tables: "t1", gap: "migrations from 3 on wait for 2, which the stream does not hold"},
		{name: "a gap past the version asked for", evs: []schemaEvent{table(1), table(2), table(4)}, want: 2, version: 2, tables: "t1 t2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &Worker{}
			cat, err := w.fold(context.Background(), "shop", tc.evs, tc.want)
			switch {
			case tc.gap == "" && err != nil:
				t.Fatalf("fold: %v", err)
			case tc.gap != "" && (err == nil || err.Error() != tc.gap):
				t.Fatalf("fold: %v, want %q", err, tc.gap)
			}
			var names []string
			for _, tb := range cat.Tables() {
				names = append(names, tb.Name)
			}
			if cat.Version != tc.version || strings.Join(names, " ") != tc.tables {
				t.Errorf("version %d with %v, want %d with %s", cat.Version, names, tc.version, tc.tables)
			}
		})
	}
}

// fold replays evs as foldStream would read them from the stream.
func (w *Worker) fold(ctx context.Context, db string, evs []schemaEvent, want int64) (*catalog.Catalog, error) {
	f := w.newFold(db, want)
	for _, e := range evs {
		if err := f.take(ctx, e); err != nil {
			if errors.Is(err, errFolded) {
				break
			}
			return nil, err
		}
	}
	return f.result()
}
