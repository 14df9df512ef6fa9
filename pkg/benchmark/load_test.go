package benchmark

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// Every request issued is counted once, including those still waiting
// when the run ends and those that never get a reply.
func TestLoadCountsEveryRequest(t *testing.T) {
	errBusy := errors.New("busy")
	tests := []struct {
		name string
		call func(ctx context.Context, i int) error
		want func(t *testing.T, r LoadReport, issued int64)
	}{
		{"all answered", func(ctx context.Context, i int) error { time.Sleep(time.Millisecond); return nil },
			func(t *testing.T, r LoadReport, issued int64) {
				if r.Answered != int(issued) || r.Errors != 0 || r.Throughput <= 0 {
					t.Errorf("report %+v, %d issued", r, issued)
				}
			}},
		{"a lost replica: requests that never return time out", func(ctx context.Context, i int) error {
			if i%4 == 0 {
				<-ctx.Done() // a daemon killed with the request in flight
				return ctx.Err()
			}
			return nil
		}, func(t *testing.T, r LoadReport, issued int64) {
			if r.TimedOut == 0 || r.Answered == 0 || r.Requests != int(issued) || r.Errors != r.TimedOut {
				t.Errorf("report %+v, %d issued", r, issued)
			}
		}},
		{"error replies by code", func(ctx context.Context, i int) error {
			if i%2 == 0 {
				return errBusy
			}
			return nil
		}, func(t *testing.T, r LoadReport, issued int64) {
			if r.FailedBy["busy"] != r.Failed || r.Failed == 0 || r.Requests != int(issued) || r.FirstError != "busy" {
				t.Errorf("report %+v, %d issued", r, issued)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var issued atomic.Int64
			r := Load(context.Background(), LoadConfig{Concurrency: 4, Duration: 100 * time.Millisecond, Timeout: 30 * time.Millisecond,
				Code: func(err error) string { return err.Error() }},
				func(ctx context.Context, i int) error { issued.Add(1); return tc.call(ctx, i) })
			if r.Requests != r.Answered+r.Failed+r.TimedOut {
				t.Errorf("requests %d != answered %d + failed %d + timed out %d", r.Requests, r.Answered, r.Failed, r.TimedOut)
			}
			tc.want(t, r, issued.Load())
		})
	}
}

func TestReplicate(t *testing.T) {
	sql := `CREATE SCHEMA shop;
CREATE TYPE shop.status AS ENUM ('new', 'paid');
CREATE TABLE shop.customers (id int PRIMARY KEY, name text);
CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int REFERENCES shop.customers (id), status shop.status);
CREATE TABLE notes (id int, body text);`
	copies, err := Replicate(sql, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != 3 {
		t.Fatalf("%d copies for 7 tables of 3, want 3", len(copies))
	}
	third := copies[2]
	for _, want := range []string{"CREATE SCHEMA shop_3", "shop_3.customers", "REFERENCES shop_3.customers", "shop_3.status", "public_3.notes"} {
		if !strings.Contains(third, want) {
			t.Errorf("copy 3 lacks %q:\n%s", want, third)
		}
	}
	if strings.Contains(third, "shop.") {
		t.Errorf("copy 3 still names the original schema:\n%s", third)
	}
}

// TestLookAlike pools perturbed copies beside every database: as many
// tables again per copy, under schemas that clash with none of the
// originals (shop_2 is one already), the originals untouched, the keys
// and foreign keys of every copy kept, a share of the other columns
// gone, the same ones for the same seed.
func TestLookAlike(t *testing.T) {
	sql := `CREATE SCHEMA shop;
CREATE TABLE shop.customers (id int PRIMARY KEY, name text, email text, phone text, city text, country text);
CREATE TABLE shop.orders (id int PRIMARY KEY, customer_id int REFERENCES shop.customers (id), placed_at date, total numeric, note text, channel text);
CREATE SCHEMA shop_2;
CREATE TABLE shop_2.items (sku text PRIMARY KEY, title text, price numeric, weight numeric, colour text, size text);`
	cat, err := catalog.Snapshot("db", "s.sql", sql)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 3, Drop: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Tables()); n != 9 {
		t.Fatalf("%d tables, want 3 copies of 3", n)
	}
	dropped, kept := 0, 0
	for _, tb := range got.Tables() {
		orig := cat.Table(tb.QualName())
		if orig != nil {
			if len(tb.Columns) != len(orig.Columns) {
				t.Errorf("the original %s lost columns", tb.QualName())
			}
			continue
		}
		if !strings.Contains(tb.Schema, "_copy") {
			t.Errorf("copy schema %s could clash with an original (shop_2 exists)", tb.Schema)
		}
		if tb.PrimaryKey == nil {
			t.Errorf("%s lost its key", tb.QualName())
		}
		if tb.Name == "orders" && (len(tb.ForeignKeys) != 1 || tb.Column("customer_id") == nil) {
			t.Errorf("%s lost its foreign key", tb.QualName())
		}
		dropped += 6 - len(tb.Columns)
		kept += len(tb.Columns)
	}
	if dropped == 0 || kept <= 6 {
		t.Errorf("copies dropped %d columns and kept %d: want some of each", dropped, kept)
	}
	again, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 3, Drop: 0.5, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range got.Tables() {
		if a := again.Table(tb.QualName()); a == nil || len(a.Columns) != len(tb.Columns) {
			t.Errorf("%s differs between two runs of one seed", tb.QualName())
		}
	}
	if _, err := lookAlike(cat, "s.sql", sql, LookAlike{Copies: 2, Drop: 1}); err == nil {
		t.Error("dropping every column is refused")
	}
}
