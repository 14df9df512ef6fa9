package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// grantedOneDatabase is a NATS server whose user asker may ask about
// database shop only, on its per-database subjects, as docs/deploy.md
// grants askers; daemon may do anything.
func grantedOneDatabase(t *testing.T) (asker, daemon *nats.Conn) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(`authorization {
  users: [
    { user: asker, password: asker_pass, permissions: {
        publish: { allow: ["schemaq.tables.shop", "schemaq.search.shop"] }
        subscribe: { allow: ["_INBOX.>"] } } }
    { user: daemon, password: daemon_pass }
  ]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := testenv.NATSWith(t, natsembed.Options{ConfigFile: conf})
	conn := func(user string) *nats.Conn {
		// The refused publishes are the point: they are not printed.
		nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo(user, user+"_pass"),
			nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	return conn("asker"), conn("daemon")
}

// A caller granted only its database's subjects learns at once that no
// daemon answers. Asking the catch-all subject instead, which it may not
// use, would get no reply at all: the caller would wait out its deadline
// and be told of a timeout.
func TestNoDaemonIsSaidNotWaitedFor(t *testing.T) {
	asker, _ := grantedOneDatabase(t)
	cli, err := client.New(asker)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"tables", func() error {
			_, err := cli.Tables(ctx, &events.TablesRequest{Database: "shop", History: true})
			return err
		}},
		{"search", func() error {
			_, err := cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
			return err
		}},
	} {
		err := call.do()
		var e *events.Error
		if !errors.As(err, &e) || e.Code != events.CodeNoDaemon {
			t.Errorf("%s with no daemon: %v, want %s", call.name, err, events.CodeNoDaemon)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s waited out the deadline", call.name)
		}
	}
}

// A daemon that joins the queue group a moment after the request was
// first sent (a replica between a failed store check and the next one)
// still answers it.
func TestRequestWaitsForADaemonRejoining(t *testing.T) {
	asker, daemon := grantedOneDatabase(t)
	cli, err := client.New(asker)
	if err != nil {
		t.Fatal(err)
	}
	joined := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_, err := daemon.QueueSubscribe("schemaq.tables.*", "schemaq", func(m *nats.Msg) {
			data, _ := json.Marshal(events.TablesReply{Database: "shop", Version: 7})
			_ = m.Respond(data)
		})
		if err == nil {
			err = daemon.Flush()
		}
		joined <- err
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rep, err := cli.Tables(ctx, &events.TablesRequest{Database: "shop"})
	if err := <-joined; err != nil {
		t.Fatal(err)
	}
	if err != nil || rep.Version != 7 {
		t.Fatalf("tables while the daemon joins: %+v, %v", rep, err)
	}
}
