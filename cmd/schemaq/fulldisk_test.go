package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestFullDiskOnTmpfs runs `up` on a real filesystem that fills up: a
// tmpfs too small for the index a snapshot needs. The event must stay
// pending (no letter, nothing lost) while the disk is full, and be
// applied and searchable once the filesystem grows, without a restart.
// It needs root (to mount); elsewhere the workers' tests inject ENOSPC at
// the store seam instead (TestFullDiskPausesAndLosesNothing).
func TestFullDiskOnTmpfs(t *testing.T) {
	dir := testenv.Tmpfs(t, "12m")
	var ddl strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&ddl, "CREATE TABLE t%05d (id bigint PRIMARY KEY, customer_id bigint, name text NOT NULL, amount numeric(12,2), status text, note text);\n"+
			"COMMENT ON TABLE t%05d IS 'orders, payments and refunds of region %d';\n", i, i, i%50)
	}
	file := filepath.Join(t.TempDir(), "big.sql")
	if err := os.WriteFile(file, []byte(ddl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	url := "nats://" + addr
	stopUp := startUp(t, filepath.Join(dir, "data"), addr)
	var logs string
	stop := sync.OnceFunc(func() { logs = stopUp() })
	defer stop()
	if _, errOut, code := runAt(t, url, "publish", "snapshot", "--db", "big", file); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	// Full: the event is held, not naked away.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var fs syscall.Statfs_t
		if err := syscall.Statfs(dir, &fs); err != nil {
			t.Fatal(err)
		}
		out, _, _ := runAt(t, url, "status")
		if fs.Bavail*uint64(fs.Bsize) < 256<<10 && strings.Contains(out, "1 in flight") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot never filled the disk (%d bytes free): %s", fs.Bavail*uint64(fs.Bsize), out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // many retries' worth
	out, _, _ := runAt(t, url, "status")
	if !strings.Contains(out, "1 in flight") || !strings.Contains(out, "dead letters: 0") {
		t.Fatalf("with the disk full: %s", out)
	}
	testenv.GrowTmpfs(t, dir, "400m")
	deadline = time.Now().Add(90 * time.Second)
	for {
		out, _, code := runAt(t, url, "search", "--db", "big", "refunds of region 7")
		if code == exitOK && strings.Contains(out, "public.t00007") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not searchable 90 s after space returned: %s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if out, _, _ := runAt(t, url, "status"); !strings.Contains(out, "0 in flight") || !strings.Contains(out, "dead letters: 0") {
		t.Errorf("status after space returned: %s", out)
	}
	stop()
	if !strings.Contains(logs, "database paused") || !strings.Contains(logs, "database resumed") {
		t.Errorf("the pause was not logged: %s", logs[max(0, len(logs)-4000):])
	}
}
