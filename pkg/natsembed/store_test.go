package natsembed_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestStoreLimitGrowsWithTheDisk fills a small tmpfs with a stream, then
// grows the tmpfs: JetStream takes writes again without a restart. With
// nats-server's own limit (derived once, at start) every write went on
// failing with "insufficient resources" until the process restarted.
// Mounting needs root.
func TestStoreLimitGrowsWithTheDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "8m")
	ns, err := natsembed.Start(natsembed.Options{Port: -1, StoreDir: dir, GrowStoreEvery: 100 * time.Millisecond, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill"}}); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 512<<10)
	_, _ = rand.Read(payload)
	full := false
	for range 40 {
		if _, err := js.Publish(ctx, "fill", payload); err != nil {
			if !strings.Contains(err.Error(), "insufficient resources") {
				t.Fatalf("publish on a full disk: %v", err)
			}
			full = true
			break
		}
	}
	if !full {
		t.Fatal("the 8 MiB tmpfs never filled")
	}
	testenv.GrowTmpfs(t, dir, "200m")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := js.Publish(ctx, "fill", payload)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused 10 s after the disk grew: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
