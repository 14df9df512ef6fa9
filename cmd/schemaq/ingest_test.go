package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// writeFiles writes name → content under dir, creating it.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// storedCatalog reads db's catalog from the bucket of the server at url.
func storedCatalog(t *testing.T, url, db string) *catalog.Catalog {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), events.CatalogBucket)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := catalogkv.New(kv).Get(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type letterView struct {
	Seq    uint64 `json:"seq"`
	Kind   string `json:"kind"`
	Source string `json:"source"`
	Reason string `json:"reason"`
}

func letters(t *testing.T, url, db string) []letterView {
	t.Helper()
	out, errOut, code := runAt(t, url, "dlq", "list", "--db", db, "--json")
	var l []letterView
	if code != exitOK || json.Unmarshal([]byte(out), &l) != nil {
		t.Fatalf("dlq list (exit %d): %s %s", code, out, errOut)
	}
	return l
}

// TestPublishFollowsTheAppliedHistory walks a team's history through the
// cases migration tools know: an empty file, a back-dated file, a refused
// file fixed and published again, an applied file changed.
func TestPublishFollowsTheAppliedHistory(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	t.Cleanup(func() { stop() }) // before the data directory is removed
	mig := filepath.Join(dir, "migrations")
	tableNames := func() []string {
		var names []string
		for _, tb := range storedCatalog(t, url, "app").Tables() {
			names = append(names, tb.Name)
		}
		return names
	}
	publish := func(args ...string) (string, string, int) {
		return runAt(t, url, append([]string{"publish", "migrations", "--db", "app", "--wait", "30s"}, append(args, mig)...)...)
	}

	// An empty file is a no-op that takes its place, in catalog and
	// publish alike.
	writeFiles(t, mig, map[string]string{
		"20240101000000_a.up.sql":    "CREATE TABLE a (id int PRIMARY KEY);",
		"20240103000000_c.up.sql":    "CREATE TABLE c (id int PRIMARY KEY);",
		"20240104000000_noop.up.sql": "-- nothing yet\n",
	})
	if out, errOut, code := runAt(t, url, "catalog", "--format", "tables", mig); code != exitOK || !strings.Contains(out, "public.c") {
		t.Errorf("catalog with an empty file (exit %d): %s %s", code, out, errOut)
	}
	if out, errOut, code := publish(); code != exitOK || !strings.Contains(out, "catalog app is at version 3 and searchable") {
		t.Fatalf("publish with an empty file (exit %d): %s %s", code, out, errOut)
	}

	// A branch merged with an older timestamp: applied next, with a
	// warning, and the table appears.
	writeFiles(t, mig, map[string]string{
		"20240102000000_b.up.sql": "CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a);",
		"20240105000000_d.up.sql": "ALTER TABLE b ADD COLUMN note text;",
	})
	out, errOut, code := publish()
	if code != exitOK || !strings.Contains(errOut, "20240102000000_b.up.sql sorts before 20240104000000_noop.up.sql, which is applied: it is back-dated") ||
		!strings.Contains(out, "4 20240102000000_b.up.sql: ok") || !strings.Contains(out, "5 20240105000000_d.up.sql: ok") {
		t.Fatalf("back-dated publish (exit %d): %s %s", code, out, errOut)
	}
	if got := strings.Join(tableNames(), " "); got != "a b c" {
		t.Errorf("tables after the back-dated migration: %s", got)
	}
	if b := storedCatalog(t, url, "app").Table(catalog.QualName{Schema: "public", Name: "b"}); b == nil || b.Column("note") == nil {
		t.Error("the migration after the back-dated one did not apply to it")
	}

	// A refused migration holds back those after it, which become gap
	// letters at once; fixing it and publishing again applies all three,
	// and the letters are swept.
	writeFiles(t, mig, map[string]string{
		"20240106000000_e.up.sql": "CREATE TABLE a (id int);",
		"20240107000000_f.up.sql": "CREATE TABLE f (id int);",
		"20240108000000_g.up.sql": "CREATE TABLE g (id int);",
	})
	_, errOut, code = publish()
	if code != exitFailure || !strings.Contains(errOut, "relation public.a already exists") {
		t.Fatalf("publish of a refused migration (exit %d): %s", code, errOut)
	}
	testenv.Eventually(t, 10*time.Second, "the refused migration and two gap letters", func() bool { return len(letters(t, url, "app")) == 3 })
	kinds := map[string]int{}
	for _, l := range letters(t, url, "app") {
		kinds[l.Kind]++
		if l.Kind == "gap" && !strings.Contains(l.Reason, "which was refused") {
			t.Errorf("gap letter without the refused migration's reason: %+v", l)
		}
	}
	if kinds["refused"] != 1 || kinds["gap"] != 2 {
		t.Errorf("letter kinds %v", kinds)
	}
	writeFiles(t, mig, map[string]string{"20240106000000_e.up.sql": "ALTER TABLE a ADD COLUMN x int;"})
	if out, errOut, code := publish(); code != exitOK || !strings.Contains(out, "catalog app is at version 8 and searchable") {
		t.Fatalf("publish after the fix (exit %d): %s %s", code, out, errOut)
	}
	if got := strings.Join(tableNames(), " "); got != "a b c f g" {
		t.Errorf("tables after the fix: %s", got)
	}
	testenv.Eventually(t, 10*time.Second, "obsolete letters swept", func() bool { return len(letters(t, url, "app")) == 0 })

	// An applied migration that changed is refused, naming it, unless the
	// user accepts it.
	writeFiles(t, mig, map[string]string{"20240103000000_c.up.sql": "CREATE TABLE c (id bigint PRIMARY KEY);"})
	if _, errOut, code := publish(); code != exitFailure || !strings.Contains(errOut, "migration 20240103000000_c.up.sql was applied as seq 2") {
		t.Errorf("a changed applied migration (exit %d): %s", code, errOut)
	}
	out, errOut, code = publish("--accept-changed")
	if code != exitOK || !strings.Contains(out, "nothing to publish") || !strings.Contains(errOut, "kept as applied (--accept-changed)") {
		t.Errorf("--accept-changed (exit %d): %s %s", code, out, errOut)
	}
	h := storedCatalog(t, url, "app").History()
	if len(h) != 8 || h[3].Source != "20240102000000_b.up.sql" || h[3].ID != "20240102000000" {
		t.Errorf("history: %+v", h)
	}
}

// TestDeadLetterCommands: delete, purge and a letter that is not there.
func TestDeadLetterCommands(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	t.Cleanup(func() { stop() }) // before the data directory is removed
	for _, db := range []string{"one", "two"} {
		mig := filepath.Join(dir, db)
		writeFiles(t, mig, map[string]string{"1_bad.sql": "CREATE TABLE t (x int GENERATED ALWAYS AS (1) VIRTUAL);", "2_next.sql": "CREATE TABLE u ();"})
		runAt(t, url, "publish", "migrations", "--db", db, mig)
	}
	testenv.Eventually(t, 10*time.Second, "letters", func() bool { return len(letters(t, url, "one")) == 2 && len(letters(t, url, "two")) == 2 })
	first := letters(t, url, "one")[0]
	// A refused migration's letter takes its event: a replica replaying
	// the stream will not letter it again.
	if out, _, code := runAt(t, url, "dlq", "delete", strconv.FormatUint(first.Seq, 10)); code != exitOK || !strings.Contains(out, "deleted, and its event from the stream") {
		t.Errorf("dlq delete: %s", out)
	}
	if _, errOut, code := runAt(t, url, "dlq", "retry", strconv.FormatUint(first.Seq, 10)); code != exitFailure || !strings.Contains(errOut, "there is no such dead letter") {
		t.Errorf("retry of a deleted letter (exit %d): %s", code, errOut)
	}
	if out, _, code := runAt(t, url, "dlq", "purge", "--db", "two"); code != exitOK || !strings.Contains(out, "purged 2 dead letter(s) of two") {
		t.Errorf("dlq purge --db: %s", out)
	}
	if n := len(letters(t, url, "one")); n != 1 {
		t.Errorf("purging two touched one: %d left", n)
	}
	if out, _, code := runAt(t, url, "dlq", "purge"); code != exitOK || !strings.Contains(out, "purged 1 dead letter(s) of every database") {
		t.Errorf("dlq purge: %s", out)
	}
}

// TestOneProcessPerDataDir: a second up on a data directory in use fails
// at once, naming the holder; two serve replicas on one host without ids
// get consumers of their own.
func TestOneProcessPerDataDir(t *testing.T) {
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	data := filepath.Join(dir, "data")
	stop := startUp(t, data, addr)
	t.Cleanup(func() { stop() }) // before the data directory is removed
	_, errOut, code := runAt(t, url, "up", "--data-dir", data, "--listen", freePort(t))
	if code != exitFailure || !strings.Contains(errOut, "data directory "+data+" is in use by schemaq pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second up on one data dir (exit %d): %s", code, errOut)
	}
	_, errOut, code = runAt(t, url, "serve", "--data-dir", data)
	if code != exitFailure || !strings.Contains(errOut, "is in use") {
		t.Errorf("serve on a data dir in use (exit %d): %s", code, errOut)
	}

	a, b := defaultReplicaID(filepath.Join(dir, "a")), defaultReplicaID(filepath.Join(dir, "b"))
	host, _ := os.Hostname()
	if a == b || !strings.HasPrefix(a, host+"-") || a != defaultReplicaID(filepath.Join(dir, "a")) {
		t.Errorf("default replica ids: %q and %q", a, b)
	}
	stopA := startService(t, "serve a", []string{"serve", "--data-dir", filepath.Join(dir, "a"), "--log-format", "json"}, map[string]string{"SCHEMAQ_NATS_URL": url})
	stopB := startService(t, "serve b", []string{"serve", "--data-dir", filepath.Join(dir, "b"), "--log-format", "json"}, map[string]string{"SCHEMAQ_NATS_URL": url})
	shop := filepath.Join("..", "..", "examples", "shop")
	if out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish (exit %d): %s %s", code, out, errOut)
	}
	time.Sleep(500 * time.Millisecond)
	logsA, logsB := stopA(), stopB()
	for name, logs := range map[string]string{a: logsA, b: logsB} {
		if !strings.Contains(logs, `"consumer":"schemaq-replica-`+name+`"`) {
			t.Errorf("replica %s did not consume on its own durable: %s", name, logs)
		}
	}
}

// TestLemmyWithDefaults publishes Lemmy's 342 migrations with default
// settings: all apply, none is dead-lettered, and the catalog is the one
// a local replay gives.
func TestLemmyWithDefaults(t *testing.T) {
	lemmy := testenv.SharedPath(t, "corpus", "lemmy", "migrations")
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr)
	t.Cleanup(func() { stop() }) // before the data directory is removed
	out, errOut, code := runAt(t, url, "publish", "migrations", "--db", "lemmy", "--wait", "120s", lemmy)
	if code != exitOK || !strings.Contains(out, "published 342 event(s)") || !strings.Contains(out, "catalog lemmy is at version 342 and searchable") {
		t.Fatalf("publish lemmy (exit %d): %s %s", code, out[max(0, len(out)-500):], errOut)
	}
	if l := letters(t, url, "lemmy"); len(l) != 0 {
		t.Fatalf("%d dead letters, the first: %+v", len(l), l[0])
	}
	files, err := migrate.Discover(lemmy)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := migrate.Read(files)
	if err != nil {
		t.Fatal(err)
	}
	want := catalog.New("lemmy")
	for i, st := range steps {
		next, err := want.Apply(st.Name, st.SQL)
		if err != nil {
			t.Fatal(err)
		}
		want = next.Record(catalog.Applied{Seq: int64(i + 1), ID: st.ID(), Source: st.Name, Checksum: st.Checksum})
	}
	got := unplaced(storedCatalog(t, url, "lemmy"))
	if w := unplaced(want); string(got) != string(w) {
		t.Errorf("the published catalog (history included) differs from the local replay")
	}
	// `schemaq catalog` replays to the same catalog.
	out, errOut, code = runAt(t, url, "catalog", "--db", "lemmy", "--format", "json", lemmy)
	var replay catalog.Catalog
	if code != exitOK || json.Unmarshal([]byte(out), &replay) != nil {
		t.Fatalf("schemaq catalog (exit %d): %s", code, errOut)
	}
	if r := unplaced(&replay); string(r) != string(got) {
		t.Errorf("schemaq catalog's replay differs from the published catalog")
	}
}

// unplaced is c as JSON without the stream positions its history records:
// a worker knows where each migration sat in the stream, a local replay
// does not.
func unplaced(c *catalog.Catalog) []byte {
	var m map[string]any
	b, _ := json.Marshal(c)
	_ = json.Unmarshal(b, &m)
	if h, ok := m["history"].([]any); ok {
		for _, a := range h {
			delete(a.(map[string]any), "stream_seq")
		}
	}
	b, _ = json.Marshal(m)
	return b
}
