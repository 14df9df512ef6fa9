package natsconn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestCheckServerVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    string // "" passes; else a part of the error
	}{
		{"2.10.0", ""},
		{"2.10.0-RC.1", ""},
		{"2.12.1", ""},
		{"v2.15.2", ""},
		{"3.0.0", ""},
		{"2.9.10", "nats-server 2.9.10 is too old: schemaq needs 2.10.0 or newer"},
		{"2.9.25", "too old"},
		{"1.11.0", "too old"},
		{"", "cannot read the server's version"},
		{"2.10", "cannot read"},
		{"two.ten.zero", "cannot read"},
	} {
		err := CheckServerVersion(tc.version)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", tc.version, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error containing %q", tc.version, err, tc.want)
		}
	}
}

// A real server without JetStream is refused with the fix named.
func TestCheckServerNeedsJetStream(t *testing.T) {
	for _, js := range []bool{true, false} {
		opts := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: js, StoreDir: t.TempDir()}
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		if !ns.ReadyForConnections(5e9) {
			t.Fatal("nats server did not start")
		}
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		jsc, _ := jetstream.New(nc)
		err = CheckServer(context.Background(), nc, jsc)
		if js && err != nil {
			t.Errorf("with JetStream: %v", err)
		}
		if !js && (err == nil || !strings.Contains(err.Error(), "JetStream is not enabled")) {
			t.Errorf("without JetStream: %v", err)
		}
		nc.Close()
		ns.Shutdown()
	}
}

// TestCheckServerWaitsForJetStream: a cluster that lost its JetStream
// quorum does not answer; CheckServer asks again until its context ends
// and says how often it asked, where it gave up at the first timeout.
func TestCheckServerWaitsForJetStream(t *testing.T) {
	servers := testenv.NATSCluster(t, 3)
	nc, err := nats.Connect(servers[0].ClientURL(), nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	testenv.Kill(t, servers, servers[1].Name())
	testenv.Kill(t, servers, servers[2].Name())
	jsc, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A leader left alone answers until it notices it lost its quorum.
	testenv.Eventually(t, 60*time.Second, "JetStream stops answering", func() bool {
		actx, acancel := context.WithTimeout(context.Background(), time.Second)
		defer acancel()
		_, err := jsc.AccountInfo(actx)
		return err != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	err = CheckServer(ctx, nc, jsc)
	if err == nil {
		t.Fatal("a JetStream without quorum passed the check")
	}
	var attempts int
	if _, scanErr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "account info, ")+len("account info, "):], "%d attempts", &attempts); scanErr != nil || attempts < 2 {
		t.Errorf("%v: want several attempts named", err)
	}
}
