package benchmark

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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
