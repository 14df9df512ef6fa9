package main

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileHistory is one migration per attack that took the whole process
// down, or stalled it, before the interpreter ran on budgets.
var hostileHistory = []string{
	// EXECUTE of a DO block that calls its caller: a stack overflow.
	`CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DO $x$ BEGIN PERFORM f(); END $x$'; END $$;
SELECT f();`,
	// LIKE over 16M characters: a recursion per character.
	`DO $$ DECLARE s text := 'a'; BEGIN FOR i IN 1..24 LOOP s := s || s; END LOOP; IF s LIKE '%b%' THEN CREATE TABLE x1 (); END IF; END $$;`,
	// A string doubled 31 times, an array doubled, 32M separators: out of memory.
	`DO $$ DECLARE s text := 'abcdefgh'; BEGIN FOR i IN 1..31 LOOP s := s || s; END LOOP; END $$;
DO $$ DECLARE a text[] := ARRAY['x']; BEGIN FOR i IN 1..40 LOOP a := a || a; END LOOP; END $$;
DO $$ DECLARE s text := ','; a text[]; BEGIN FOR i IN 1..25 LOOP s := s || s; END LOOP; a := string_to_array(s, ','); END $$;`,
	// An exception block in a loop: quadratic, minutes.
	`DO $$ BEGIN FOR i IN 1..30000 LOOP BEGIN EXECUTE 'COMMENT ON TABLE t IS ''' || i || ''''; EXCEPTION WHEN others THEN NULL; END; END LOOP; END $$;`,
	// A hundred thousand tables from 120 bytes.
	`DO $$ BEGIN FOR i IN 1..100000 LOOP EXECUTE 'CREATE TABLE x' || i || ' (id int)'; END LOOP; END $$;`,
}

// TestUpSurvivesHostileMigrations publishes each attack to one database
// of a running `up` while another database's history is published: the
// process stays up, the other database applies, every attack ends as
// drift naming its budget, and the heap stays far under a gigabyte.
func TestUpSurvivesHostileMigrations(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ten thousand tables indexed")
	}
	dir := t.TempDir()
	attacks := filepath.Join(dir, "attacks")
	if err := os.MkdirAll(attacks, 0o755); err != nil {
		t.Fatal(err)
	}
	base := "CREATE TABLE t (id int PRIMARY KEY);\n"
	if err := os.WriteFile(filepath.Join(attacks, "0000_base.sql"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, sql := range hostileHistory {
		if err := os.WriteFile(filepath.Join(attacks, fmt.Sprintf("%04d_attack.sql", i+1)), []byte(sql), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		var m goruntime.MemStats
		for {
			goruntime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	defer stop()

	var wg sync.WaitGroup
	wg.Add(1)
	var attackOut string
	var attackCode int
	go func() {
		defer wg.Done()
		out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "attack", "--wait", "5m", attacks)
		attackOut, attackCode = out+errOut, code
	}()
	time.Sleep(200 * time.Millisecond) // the attacks are in the workers' slots
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	started := time.Now()
	out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "2m", shop)
	if code != exitOK || !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("shop while the attacks ran (exit %d): %s %s", code, out, errOut)
	}
	t.Logf("shop applied in %v while the attacks ran", time.Since(started).Round(time.Millisecond))
	wg.Wait()
	if attackCode != exitOK || !strings.Contains(attackOut, fmt.Sprintf("catalog attack is at version %d", len(hostileHistory)+1)) {
		t.Fatalf("the attacks' history (exit %d): %s", attackCode, attackOut)
	}
	out, errOut, _ = runAt(t, url, "tables", "--db", "attack")
	out += errOut
	for _, budget := range []string{"the depth budget", "the byte budget", "the object budget"} {
		if !strings.Contains(out, budget) {
			t.Errorf("the attack's drift names nothing stopped at %s:\n%s", budget, out[max(0, len(out)-3000):])
		}
	}
	if n := strings.Count(out, "public.x"); n < 9000 {
		t.Errorf("%d tables of the loop's: want the object budget's 10,000", n)
	}
	close(stopSampling)
	sampled.Wait()
	if p := peak.Load(); p > 1<<30 {
		t.Errorf("the heap reached %d MiB", p>>20)
	} else {
		t.Logf("peak heap in use: %d MiB", p>>20)
	}
}
