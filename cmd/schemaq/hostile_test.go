package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestHostileInput is the hostile producer's part of issue #38, from
// outside, against a real `schemaq up` and a `serve` replica: a migration and an example
// deep enough to overflow libpg_query's C stack, a forged dead letter
// retried, and a damaged catalog entry. The process must stay up, refuse
// each with its reason, and go on.
func TestHostileInput(t *testing.T) {
	t.Run("up", func(t *testing.T) {
		addr := freePort(t)
		stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr)
		defer stop()
		hostileProducer(t, "nats://"+addr)
	})
	// A worker and a daemon in one replica, against a NATS server of
	// their own. (Separate worker and daemon processes share a
	// RediSearch index, which CI does not have.)
	t.Run("serve on its own NATS", func(t *testing.T) {
		url := testenv.NATS(t).ClientURL()
		stop := startServe(t, url, filepath.Join(t.TempDir(), "data"), "r1")
		defer stop()
		hostileProducer(t, url)
	})
}

func hostileProducer(t *testing.T, url string) {
	dir := t.TempDir()
	shop := filepath.Join("..", "..", "examples", "shop")
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}

	// A migration of 25,000 terms: it killed the process on every
	// redelivery; now a refused letter naming file, line and column.
	mig := filepath.Join(dir, "poison")
	if err := os.CopyFS(mig, os.DirFS(filepath.Join(shop, "migrations"))); err != nil {
		t.Fatal(err)
	}
	poison := "CREATE TABLE poison (c int DEFAULT 1" + strings.Repeat("+1", 25000) + ");\n"
	if err := os.WriteFile(filepath.Join(mig, "0007_poison.sql"), []byte(poison), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", mig)
	if code == exitOK || !strings.Contains(errOut, "0007_poison.sql: statement 1 (line 1, column 2035): expression nested more than 1000 levels deep") {
		t.Errorf("poison migration (exit %d): %s", code, errOut)
	}

	// An example as deep: refused, and searches go on.
	ex := filepath.Join(dir, "examples.jsonl")
	line := `{"question":"poison","sql":"SELECT 1` + strings.Repeat("+1", 25000) + `"}` + "\n"
	if err := os.WriteFile(ex, []byte(`{"question":"How many orders?","sql":"SELECT count(*) FROM orders"}`+"\n"+line), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAt(t, url, "publish", "examples", "--db", "shop", ex); code != exitOK {
		t.Fatalf("publish examples: %s", errOut)
	}
	if out, errOut, code := runAt(t, url, "search", "--db", "shop", "poison orders"); code != exitOK || !strings.Contains(out, "public.orders") {
		t.Errorf("search after the poison (exit %d): %s %s", code, out, errOut)
	}
	waitLetter(t, url, "shop", "field data.examples[1].sql: expression nested more than 1000 levels deep")

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	// Requests as large as a message can be, in a field an error names:
	// each one answered.
	for _, endpoint := range []string{events.EndpointSearch, events.EndpointAsk, events.EndpointTables} {
		body := `{"database":"` + strings.Repeat("d", int(nc.MaxPayload())-40) + `","question":"q"}`
		msg, err := nc.Request(events.EndpointSubject(endpoint), []byte(body), 10*time.Second)
		if err != nil || !strings.Contains(string(msg.Data), `"code":"bad_request"`) || len(msg.Data) > 2048 {
			t.Errorf("%s with a %d-byte database name: %v", endpoint, len(body), err)
		}
	}

	// A forged letter: dlq retry refuses it and publishes nothing.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "VICTIM", Subjects: []string{"victim.>"}}); err != nil {
		t.Fatal(err)
	}
	forged := nats.NewMsg(events.DeadLetterSubject("shop"))
	forged.Header.Set(events.HeaderDLQSubject, "$JS.API.STREAM.DELETE.VICTIM")
	forged.Header.Set(events.HeaderDLQKind, events.DLQKindRefused)
	ack, err := js.PublishMsg(ctx, forged)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runAt(t, url, "dlq", "retry", strconv.FormatUint(ack.Sequence, 10))
	if code == exitOK || !strings.Contains(errOut, "malformed dead letter: its event does not decode") {
		t.Errorf("dlq retry of a forged letter (exit %d): %s", code, errOut)
	}
	if _, err := js.Stream(ctx, "VICTIM"); err != nil {
		t.Errorf("stream VICTIM after the retry: %v", err)
	}

	// A damaged catalog entry: status reports it and the others.
	publishSnapshot(t, url, "stores", "CREATE TABLE store (id int);")
	kv, err := js.KeyValue(ctx, events.CatalogBucket)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, "stores")
	if err != nil {
		t.Fatal(err)
	}
	b := slices.Clone(entry.Value())
	if i := bytes.Index(b, []byte{0x1f, 0x8b}); i >= 0 {
		b[i] = 'x'
	}
	if _, err := kv.Put(ctx, "stores", b); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runAt(t, url, "status")
	if code != exitOK || !strings.Contains(out, "stores") || !strings.Contains(out, "UNREADABLE") || !strings.Contains(out, "shop                           version 6") {
		t.Errorf("status with a damaged entry (exit %d): %s %s", code, out, errOut)
	}
	// The worker rebuilds it from the stream at the next event.
	publishSnapshot(t, url, "stores", "CREATE TABLE store (id int); CREATE TABLE till (id int);")
	if out, _, code := runAt(t, url, "status"); code != exitOK || strings.Contains(out, "UNREADABLE") {
		t.Errorf("status after the next snapshot: %s", out)
	}
}

// waitLetter waits until db has a dead letter whose reason holds want.
func waitLetter(t *testing.T, url, db, want string) {
	t.Helper()
	for range 200 {
		for _, l := range letters(t, url, db) {
			if strings.Contains(l.Reason, want) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no dead letter of %s says %q: %+v", db, want, letters(t, url, db))
}

// TestNewReplicasAfterAFix: a migration refused, fixed and published
// again leaves no letter; three serve replicas started afterwards replay
// the stream, meet the broken version first, and still leave none. Each
// new replica (a StatefulSet pod) used to re-create a conflict letter
// that stayed until a person acted.
func TestNewReplicasAfterAFix(t *testing.T) {
	ns := testenv.NATS(t)
	url := ns.ClientURL()
	dir := t.TempDir()
	startServe(t, url, filepath.Join(dir, "r0"), "r0")
	mig := filepath.Join(dir, "migrations")
	if err := os.CopyFS(mig, os.DirFS(filepath.Join("..", "..", "examples", "shop", "migrations"))); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(mig, "0007_notes.sql")
	if err := os.WriteFile(broken, []byte("CREATE TABLE notes (id int, body text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", mig); code == exitOK || !strings.Contains(errOut, "0007_notes.sql") {
		t.Fatalf("the broken migration was not refused: %s", errOut)
	}
	if err := os.WriteFile(broken, []byte("CREATE TABLE notes (id int, body text);"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", mig); code != exitOK {
		t.Fatalf("the fixed migration: %s", errOut)
	}
	testenv.Eventually(t, 10*time.Second, "the refused letter swept", func() bool { return len(letters(t, url, "shop")) == 0 })

	// Replicas come long after the letters' duplicate window, which would
	// otherwise drop theirs as copies.
	nc := testenv.Connect(t, ns)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	s, err := js.Stream(ctx, events.DeadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = 100 * time.Millisecond
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	for _, id := range []string{"r1", "r2", "r3"} {
		startServe(t, url, filepath.Join(dir, id), id)
	}
	testenv.Eventually(t, 30*time.Second, "three replicas caught up", func() bool {
		caught := 0
		for _, id := range []string{"r1", "r2", "r3"} {
			c, err := js.Consumer(ctx, events.Stream, "schemaq-replica-"+id)
			if err != nil {
				return false
			}
			if ci, err := c.Info(ctx); err == nil && ci.NumPending == 0 && ci.NumAckPending == 0 {
				caught++
			}
		}
		return caught == 3
	})
	if l := letters(t, url, "shop"); len(l) != 0 {
		t.Errorf("replicas left %d letter(s), the first: %+v", len(l), l[0])
	}
}

// TestMCPStdioRawLines talks to the real binary, `schemaq mcp
// --embedded`, on stdin as a careless host would: a stray line between
// two requests gets -32700 and the next request is still answered. The
// SDK's transport made the server exit 1 with nothing answered.
func TestMCPStdioRawLines(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "schemaq")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build schemaq: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "--embedded", "--data-dir", t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`,
		`hello`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := io.WriteString(stdin, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 4<<20)
	got := map[string]string{}
	for range 3 {
		if !sc.Scan() {
			t.Fatalf("the session ended: %v\n%s", sc.Err(), stderr.String())
		}
		var m struct {
			ID     any                 `json:"id"`
			Error  *struct{ Code int } `json:"error"`
			Result json.RawMessage     `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Bytes())
		}
		switch {
		case m.Error != nil:
			got[fmt.Sprint(m.ID)] = fmt.Sprint(m.Error.Code)
		default:
			got[fmt.Sprint(m.ID)] = string(m.Result)
		}
	}
	if got["<nil>"] != "-32700" || !strings.Contains(got["1"], "protocolVersion") || !strings.Contains(got["2"], "search_schema") {
		t.Errorf("answers by id: %v", got)
	}
	stdin.Close() // end of input ends the session cleanly
	if err := cmd.Wait(); err != nil {
		t.Errorf("schemaq mcp exited with %v\n%s", err, stderr.String())
	}
}

// TestSystemCatalogsBelongToTheOperator: through a real gateway round, a
// model's reg* cast or current_user is refused, and a request cannot
// allow them for itself; only a daemon started with
// --allow-system-catalogs lets such a request through (with warnings).
func TestSystemCatalogsBelongToTheOperator(t *testing.T) {
	llm := fakeLLM(t)
	shop := filepath.Join("..", "..", "examples", "shop", "migrations")
	for _, operator := range []string{"", "1"} {
		t.Run("operator allows: "+operator, func(t *testing.T) {
			addr := freePort(t)
			url := "nats://" + addr
			stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m",
				"SCHEMAQ_LLM_RETRIES", "0", "SCHEMAQ_ALLOW_SYSTEM_CATALOGS", operator)
			defer stop()
			if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", shop); code != exitOK {
				t.Fatalf("publish: %s", errOut)
			}
			for _, sql := range []string{"SELECT 10::regrole::text", "SELECT current_user"} {
				out, errOut, code := runAt(t, url, "ask", "--db", "shop", "--json", "--allow-system-catalogs", "who am I? answer["+sql+"]")
				var reply events.AskReply
				_ = json.Unmarshal([]byte(out), &reply)
				switch operator {
				case "":
					if code == exitOK || reply.Error == nil || reply.Error.Code != events.CodeUnsafeSQL ||
						!strings.Contains(strings.Join(reply.Warnings, " "), "this daemon does not (its operator starts it with --allow-system-catalogs)") {
						t.Errorf("%s without the operator's leave (exit %d): %s %s", sql, code, out, errOut)
					}
				default:
					if code != exitOK || reply.SQL != sql || len(reply.Warnings) == 0 {
						t.Errorf("%s with the operator's leave (exit %d): %s %s", sql, code, out, errOut)
					}
				}
			}
		})
	}
}

// TestNoSecretInLogsOrReplies: a gateway URL with a password and a key in
// its query string, and an API key, appear in no log line and no reply,
// even when the gateway cannot be reached and the error quotes the URL.
func TestNoSecretInLogsOrReplies(t *testing.T) {
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr,
		"SCHEMAQ_LLM_BASE_URL", "http://admin:hunter2@127.0.0.1:1/v1?api-key=sk-in-the-url", "SCHEMAQ_LLM_MODEL", "m",
		"SCHEMAQ_LLM_API_KEY", "sk-the-api-key", "SCHEMAQ_LLM_RETRIES", "0")
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	out, errOut, code := runAt(t, url, "ask", "--db", "shop", "--json", "How many orders?")
	if code == exitOK || !strings.Contains(out, "gateway_error") {
		t.Fatalf("ask through an unreachable gateway (exit %d): %s %s", code, out, errOut)
	}
	logs := stop()
	for _, secret := range []string{"hunter2", "sk-in-the-url", "sk-the-api-key"} {
		for what, text := range map[string]string{"the reply": out + errOut, "the logs": logs} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q", what, secret)
			}
		}
	}
	if !strings.Contains(logs, "127.0.0.1:1/v1") {
		t.Errorf("the logs do not name the gateway at all: redaction went too far")
	}
}

// TestSecretFiles: every secret variable can be read from a file named by
// its _FILE twin, as a Kubernetes Secret is mounted; both set, or a file
// that cannot be read, is refused at start.
func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("sk-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := &env{getenv: func(k string) string {
		return map[string]string{"SCHEMAQ_LLM_API_KEY_FILE": key, "SCHEMAQ_MODEL": "m"}[k]
	}}
	e, err := withSecretFiles(base)
	if err != nil || e.getenv("SCHEMAQ_LLM_API_KEY") != "sk-from-a-file" || e.getenv("SCHEMAQ_MODEL") != "m" {
		t.Errorf("from a file: %q, %v", e.getenv("SCHEMAQ_LLM_API_KEY"), err)
	}
	for name, vars := range map[string]map[string]string{
		"both set":         {"SCHEMAQ_NATS_TOKEN": "t", "SCHEMAQ_NATS_TOKEN_FILE": key},
		"file not there":   {"SCHEMAQ_MCP_TOKEN_FILE": filepath.Join(dir, "missing")},
		"redis URL absent": {"SCHEMAQ_REDIS_URL_FILE": filepath.Join(dir, "nope")},
	} {
		_, err := withSecretFiles(&env{getenv: func(k string) string { return vars[k] }})
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Through the command line: a NATS URL read from a file is used.
	ns := testenv.NATS(t)
	urlFile := filepath.Join(dir, "nats-url")
	if err := os.WriteFile(urlFile, []byte(ns.ClientURL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = runEnv(context.Background(), []string{"dlq", "list"}, &env{stdout: &out, stderr: &errOut,
		getenv: func(k string) string { return map[string]string{"SCHEMAQ_NATS_URL_FILE": urlFile}[k] }})
	// No stream yet: the error says so, so the server named in the file
	// was reached (the default URL has no server).
	if err == nil || !strings.Contains(err.Error(), "stream not found") {
		t.Errorf("dlq list with the URL from a file: %v %s", err, errOut.String())
	}
}

// TestDataDirectoryIsPrivate: after `up` has indexed something, nothing
// under its data directory can be read by other users.
func TestDataDirectoryIsPrivate(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	stop := startUp(t, data, addr)
	if _, errOut, code := runAt(t, "nats://"+addr, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	stop()
	files := 0
	err := filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		if info.Mode().Perm()&0o007 != 0 || (d.IsDir() && path == data && info.Mode().Perm() != 0o700) {
			t.Errorf("%s is %v", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Fatalf("walked %d entries: %v", files, err)
	}
}

// TestUpAuthorization: `up` does not serve NATS beyond loopback without
// authorization; with a token, or a configuration of users and
// permissions, its own clients authenticate and others are held to it.
func TestUpAuthorization(t *testing.T) {
	t.Run("open beyond loopback is refused", func(t *testing.T) {
		_, errOut, code := runAt(t, "", "up", "--data-dir", t.TempDir(), "--listen", "0.0.0.0:"+portOf(freePort(t)))
		if code != exitUsage || !strings.Contains(errOut, "would listen beyond loopback with no authorization") || !strings.Contains(errOut, "SCHEMAQ_NATS_TOKEN") {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
	t.Run("token", func(t *testing.T) {
		addr := freePort(t)
		stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, "SCHEMAQ_NATS_TOKEN", "s3cret")
		defer stop()
		if _, errOut, code := runAt(t, "nats://"+addr, "status"); code == exitOK || !strings.Contains(strings.ToLower(errOut), "authorization") {
			t.Errorf("status without the token (exit %d): %s", code, errOut)
		}
		out, errOut, code := runVars2(t, []string{"publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")},
			map[string]string{"SCHEMAQ_NATS_URL": "nats://" + addr, "SCHEMAQ_NATS_TOKEN": "s3cret"})
		if code != exitOK {
			t.Errorf("publish with the token (exit %d): %s %s", code, out, errOut)
		}
	})
	t.Run("configuration with permissions", func(t *testing.T) {
		addr, admin := upWithUser(t, "app", "apppw", "schemaq.search.*", "schemaq.ask.*", "schemaq.tables.*")
		if _, errOut, code := runVars2(t, []string{"publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")}, admin); code != exitOK {
			t.Fatalf("publish as the in-process user: %s", errOut)
		}
		app := map[string]string{"SCHEMAQ_NATS_URL": "nats://" + addr, "SCHEMAQ_NATS_USER": "app", "SCHEMAQ_NATS_PASSWORD": "apppw"}
		if out, errOut, code := runVars2(t, []string{"search", "--db", "shop", "orders per customer"}, app); code != exitOK || !strings.Contains(out, "public.orders") {
			t.Errorf("search as app (exit %d): %s %s", code, out, errOut)
		}
		if _, errOut, code := runVars2(t, []string{"publish", "migrations", "--db", "shop", "--timeout", "2s", filepath.Join("..", "..", "examples", "shop", "migrations")}, app); code == exitOK {
			t.Errorf("app may publish events: %s", errOut)
		}
		if _, errOut, code := runVars2(t, []string{"dlq", "purge", "--timeout", "2s"}, app); code == exitOK {
			t.Errorf("app may purge dead letters: %s", errOut)
		}
	})
	// The per-database subjects let a user be granted one database: the
	// CLI (through the Go client) asks on schemaq.<endpoint>.<db>.
	t.Run("one database", func(t *testing.T) {
		addr, admin := upWithUser(t, "shopper", "shoppw", "schemaq.search.shop", "schemaq.ask.shop", "schemaq.tables.shop")
		for _, db := range []string{"shop", "other"} {
			if _, errOut, code := runVars2(t, []string{"publish", "migrations", "--db", db, "--wait", "20s", filepath.Join("..", "..", "examples", "shop", "migrations")}, admin); code != exitOK {
				t.Fatalf("publish %s: %s", db, errOut)
			}
		}
		shopper := map[string]string{"SCHEMAQ_NATS_URL": "nats://" + addr, "SCHEMAQ_NATS_USER": "shopper", "SCHEMAQ_NATS_PASSWORD": "shoppw"}
		if out, errOut, code := runVars2(t, []string{"search", "--db", "shop", "orders per customer"}, shopper); code != exitOK || !strings.Contains(out, "public.orders") {
			t.Errorf("search shop as shopper (exit %d): %s %s", code, out, errOut)
		}
		if out, _, code := runVars2(t, []string{"tables", "--db", "shop"}, shopper); code != exitOK || !strings.Contains(out, "public.orders") {
			t.Errorf("tables shop as shopper (exit %d): %s", code, out)
		}
		for _, args := range [][]string{{"search", "--db", "other", "--timeout", "2s", "orders"}, {"tables", "--db", "other", "--timeout", "2s"},
			{"publish", "migrations", "--db", "shop", "--timeout", "2s", filepath.Join("..", "..", "examples", "shop", "migrations")}, {"dlq", "list", "--timeout", "2s"}} {
			if out, errOut, code := runVars2(t, args, shopper); code == exitOK {
				t.Errorf("%v as shopper succeeded: %s %s", args, out, errOut)
			}
		}
	})
}

// upWithUser runs up with a nats-server configuration of two users: the
// in-process one, allowed everything (whose environment it returns), and
// user, allowed to publish on allow and to read its replies. up stops
// with the test.
func upWithUser(t *testing.T, user, password string, allow ...string) (addr string, admin map[string]string) {
	t.Helper()
	quoted := make([]string, len(allow))
	for i, a := range allow {
		quoted[i] = strconv.Quote(a)
	}
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := fmt.Sprintf(`authorization {
  users = [
    { user: schemaq, password: inproc }
    { user: %s, password: %s, permissions: {
        publish: { allow: [%s] }
        subscribe: { allow: ["_INBOX.>"] } } }
  ]
}
`, user, password, strings.Join(quoted, ", "))
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	addr = freePort(t)
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, "SCHEMAQ_NATS_CONFIG", conf, "SCHEMAQ_NATS_USER", "schemaq", "SCHEMAQ_NATS_PASSWORD", "inproc")
	t.Cleanup(func() { stop() })
	return addr, map[string]string{"SCHEMAQ_NATS_URL": "nats://" + addr, "SCHEMAQ_NATS_USER": "schemaq", "SCHEMAQ_NATS_PASSWORD": "inproc"}
}

func portOf(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return port
}

// runVars2 runs one command with vars as its environment and reports its
// output, error output and exit code.
func runVars2(t *testing.T, args []string, vars map[string]string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runEnv(context.Background(), args, &env{stdout: &out, stderr: &errOut, getenv: func(k string) string { return vars[k] }})
	if err != nil && !errors.Is(err, errSilent) {
		errOut.WriteString("schemaq: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exitCode(err)
}

// TestVerifyAgainstADatabase: with SCHEMAQ_VERIFY_DSN, every answer the
// guard passes is EXPLAINed as a reader role on a real PostgreSQL; one
// it cannot plan gets the repair round with PostgreSQL's message and,
// still wrong, comes back refused; one that plans is returned.
func TestVerifyAgainstADatabase(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "cmdverify_shop")
	migrations := filepath.Join("..", "..", "examples", "shop", "migrations")
	files, err := filepath.Glob(filepath.Join(migrations, "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Query("cmdverify_shop", string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, err := p.Query("cmdverify_shop", `DO $$ BEGIN CREATE ROLE cmd_reader LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
GRANT USAGE ON SCHEMA public TO cmd_reader; GRANT SELECT ON ALL TABLES IN SCHEMA public TO cmd_reader;`); err != nil {
		t.Fatal(err)
	}
	llm := fakeLLM(t)
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m",
		"SCHEMAQ_LLM_RETRIES", "0", "SCHEMAQ_VERIFY_DSN", p.DSN("cmdverify_{database}", "cmd_reader"))
	defer stop()
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", migrations); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	out, errOut, code := runAt(t, url, "ask", "--db", "shop", "--json", "How many orders? answer[SELECT count(*) + 'x'::text FROM orders]")
	if code == exitOK || !strings.Contains(out, "invalid_sql") || !strings.Contains(out, "PostgreSQL cannot plan it: operator does not exist") {
		t.Errorf("SQL PostgreSQL cannot plan (exit %d): %s %s", code, out, errOut)
	}
	out, errOut, code = runAt(t, url, "ask", "--db", "shop", "--json", "How many orders?")
	if code != exitOK || !strings.Contains(out, `"sql":"SELECT count(*) FROM orders"`) {
		t.Errorf("SQL that plans (exit %d): %s %s", code, out, errOut)
	}
}
