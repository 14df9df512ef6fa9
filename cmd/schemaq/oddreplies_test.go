package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestOddDaemonRepliesAreErrors: the commands read daemons' replies from
// the bus, and a reply no daemon of ours sends (a table request answered
// with no table or two, a history with a base but no version or
// migrations) is an error or is planned from, never a crash. The
// responder below answers on the tables subject in a team's account
// without JetStream, where publish migrations asks a daemon for the
// history.
func TestOddDaemonRepliesAreErrors(t *testing.T) {
	// A team's account without JetStream, as docs/deploy.md sets up a
	// producer: its commands ask a daemon for the catalog's history.
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("accounts { TEAM { users [{user: team, password: team_pass}] } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NATSWith(t, natsembed.Options{ConfigFile: conf})
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo("team", "team_pass"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	vars := map[string]string{"SCHEMAQ_NATS_URL": ns.ClientURL(), "SCHEMAQ_NATS_USER": "team", "SCHEMAQ_NATS_PASSWORD": "team_pass"}
	replies := map[string]string{
		"none":    `{"database":"shop","version":3,"tables":[]}`,
		"two":     `{"database":"shop","version":3,"tables":[{"name":"public.a","ddl":"CREATE TABLE a ();"},{"name":"public.b","ddl":"CREATE TABLE b ();"}]}`,
		"history": `{"database":"shop","tables":[],"history":{"database":"shop","base":{"seq":3,"source":"dump.sql"}}}`,
	}
	var current string
	if _, err := nc.Subscribe(events.DatabaseSubject(events.EndpointTables, "shop"), func(m *nats.Msg) {
		_ = m.Respond([]byte(replies[current]))
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"none", "two"} {
		current = kind
		out, stderr, code := runVars2(t, []string{"tables", "--db", "shop", "public.a"}, vars)
		if code != exitFailure || !strings.Contains(stderr, "describes") || out != "" {
			t.Errorf("a reply with %s tables: exit %d, stdout %q, stderr %q", kind, code, out, stderr)
		}
	}
	current = "history"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "0001_a.sql"), []byte("CREATE TABLE a (id int);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Planned from the odd history, the publish then fails for want of
	// JetStream: an error naming it, not a panic.
	_, stderr, code := runVars2(t, []string{"publish", "migrations", "--db", "shop", dir}, vars)
	if code == exitOK || strings.Contains(stderr, "panic") || stderr == "" {
		t.Errorf("publish against an odd history: exit %d, stderr %q", code, stderr)
	}
	t.Logf("publish against an odd history: %s", strings.TrimSpace(stderr))
}
