package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestObjectSweep: leftovers in the object store (the SQL of an event
// that was never published, a catalog replaced when its delete failed)
// are deleted by the sweep `up` runs on its own, counted on /metrics, and
// by `schemaq sweep`; the catalog in use stays, and a dry run deletes
// nothing.
func TestObjectSweep(t *testing.T) {
	dir := t.TempDir()
	addr, metrics := freePort(t), freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_METRICS_ADDR", metrics,
		"SCHEMAQ_SWEEP_EVERY", "200ms", "SCHEMAQ_SWEEP_GRACE", "3s")
	defer stop()
	publishSnapshot(t, url, "shop", "CREATE TABLE orders (id int PRIMARY KEY);")

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	put := func(name string) {
		t.Helper()
		if _, err := obj.PutString(ctx, name, "CREATE TABLE leftover (id int);"); err != nil {
			t.Fatal(err)
		}
	}
	there := func(name string) bool {
		_, err := obj.GetInfo(ctx, name)
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	put("events/shop/never-published")
	put("catalogs/shop/0-replaced")
	var st struct {
		ObjectBytes uint64 `json:"object_bytes"`
	}
	if out, errOut, code := runAt(t, url, "status", "--json"); code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.ObjectBytes == 0 {
		t.Errorf("status with two objects stored (exit %d): %s %s", code, out, errOut)
	}

	// Younger than the workers' grace, so only the command can see them.
	time.Sleep(10 * time.Millisecond)
	out, errOut, code := runAt(t, url, "sweep", "--dry-run", "--grace", "1ms", "--json")
	var rep struct {
		Objects int `json:"objects"`
		Removed []struct {
			Name string `json:"name"`
			Why  string `json:"why"`
		} `json:"removed"`
		DryRun bool `json:"dry_run"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.DryRun || len(rep.Removed) != 2 {
		t.Fatalf("sweep --dry-run (exit %d): %s %s", code, out, errOut)
	}
	if !there("events/shop/never-published") || !there("catalogs/shop/0-replaced") {
		t.Fatal("a dry run deleted objects")
	}

	// The workers' own sweep takes them once they pass its grace.
	body := scrapeUntil(t, metrics, 20*time.Second, func(body string) bool {
		return strings.Contains(body, `schemaq_objects_swept_total{kind="event"} 1`) &&
			strings.Contains(body, `schemaq_objects_swept_total{kind="catalog"} 1`)
	})
	if !strings.Contains(body, `schemaq_objects_swept_total{kind="event"} 1`) || !strings.Contains(body, `schemaq_object_sweeps_total{result="ok"}`) {
		t.Fatalf("metrics after the workers' sweep:\n%s", grepLines(body, "schemaq_object"))
	}
	if there("events/shop/never-published") || there("catalogs/shop/0-replaced") {
		t.Error("the workers' sweep counted objects it did not delete")
	}
	// The worker took its turns in the bucket other replicas would read.
	turns, err := streams.Sweeps(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if e, err := turns.Get(ctx, "last"); err != nil || !strings.Contains(string(e.Value()), `"owner":"`+host+"-") {
		t.Errorf("the last turn in %s: %v", events.SweepBucket, err)
	}

	put("events/shop/another")
	time.Sleep(10 * time.Millisecond)
	out, errOut, code = runAt(t, url, "sweep", "--grace", "1ms")
	if code != exitOK || !strings.Contains(out, "removed 1 object(s)") || !strings.Contains(out, "events/shop/another") ||
		!strings.Contains(out, "no event in the stream or the dead letters names it") {
		t.Errorf("sweep (exit %d): %s %s", code, out, errOut)
	}
	if there("events/shop/another") {
		t.Error("sweep left the object it reported")
	}
	if _, errOut, code := runAt(t, url, "sweep", "--grace", "0"); code != exitUsage || !strings.Contains(errOut, "--grace") {
		t.Errorf("sweep --grace 0: exit %d %s", code, errOut)
	}
	// The catalog still reads.
	if out, errOut, code := runAt(t, url, "tables", "--db", "shop"); code != exitOK || !strings.Contains(out, "orders") {
		t.Errorf("tables after the sweeps (exit %d): %s %s", code, out, errOut)
	}
}

// TestSweepKeepsHeldMigrations: a history of 300 migrations whose SQL is
// in the object store waits behind its missing first migration for longer
// than the sweep's grace, while the sweep runs every 20 ms. None of their
// objects may go: once the first is published, all of them apply, no
// dead letter says an object is missing, and every object is gone after.
func TestSweepKeepsHeldMigrations(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_SWEEP_EVERY", "20ms", "SCHEMAQ_SWEEP_GRACE", "500ms")
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cli, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	publish := func(seq int) {
		t.Helper()
		sql := fmt.Sprintf("CREATE TABLE held_%03d (id bigint PRIMARY KEY, note text);", seq)
		name := events.EventObject("hist", fmt.Sprintf("m%03d", seq))
		info, err := obj.PutBytes(ctx, name, events.GzipSQL(sql))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := events.New(fmt.Sprintf("m%03d", seq), "hist", time.Now(), &events.Migration{Seq: int64(seq), Source: fmt.Sprintf("%03d.sql", seq),
			SQLObject: &events.ObjectRef{Name: name, Size: info.Size, Gzip: true, Checksum: events.Checksum(sql)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	for seq := 2; seq <= n; seq++ {
		publish(seq)
	}
	time.Sleep(1500 * time.Millisecond) // three graces of sweeps every 20 ms
	if list, _ := obj.List(ctx); len(list) != n-1 {
		t.Fatalf("%d objects after the held migrations aged, want %d", len(list), n-1)
	}
	publish(1)
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("hist at version %d", n), func() bool {
		out, _, _ := runAt(t, url, "status", "--json")
		var st struct {
			Catalogs map[string]int64 `json:"catalogs"`
		}
		return json.Unmarshal([]byte(out), &st) == nil && st.Catalogs["hist"] == n
	})
	if l := letters(t, url, "hist"); len(l) != 0 {
		t.Fatalf("dead letters: %+v", l)
	}
	testenv.Eventually(t, 10*time.Second, "no objects left", func() bool {
		list, _ := obj.List(ctx)
		return len(list) == 0
	})
}

func grepLines(body, sub string) string {
	var keep []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
