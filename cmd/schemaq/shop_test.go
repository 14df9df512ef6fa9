package main

import (
	"os"
	"path/filepath"
	"testing"
)

// shopStack is `schemaq up` with the example shop published: its
// migrations, examples and docs, each waited for.
type shopStack struct {
	t    *testing.T
	url  string
	shop string // examples/shop
}

// upWithShop starts up (with vars, as startUp takes them) and publishes
// the shop.
func upWithShop(t *testing.T, vars ...string) *shopStack {
	t.Helper()
	addr := freePort(t)
	stop := startUp(t, filepath.Join(t.TempDir(), "data"), addr, vars...)
	t.Cleanup(func() { stop() })
	s := &shopStack{t: t, url: "nats://" + addr, shop: filepath.Join("..", "..", "examples", "shop")}
	s.run(exitOK, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(s.shop, "migrations"))
	s.run(exitOK, "publish", "examples", "--db", "shop", "--wait", "20s", filepath.Join(s.shop, "examples.jsonl"))
	s.run(exitOK, "publish", "docs", "--db", "shop", "--wait", "20s", filepath.Join(s.shop, "docs"))
	return s
}

// run runs a command against the stack and fails the test unless it
// exits with want; it returns stdout and stderr.
func (s *shopStack) run(want int, args ...string) (string, string) {
	s.t.Helper()
	out, errOut, code := runAt(s.t, s.url, args...)
	if code != want {
		s.t.Fatalf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, want, out, errOut)
	}
	return out, errOut
}

// migrationsWith is a pull request's migrations directory: the shop's
// six, and extra (file name → SQL).
func (s *shopStack) migrationsWith(extra map[string]string) string {
	s.t.Helper()
	d := s.t.TempDir()
	entries, err := os.ReadDir(filepath.Join(s.shop, "migrations"))
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(s.shop, "migrations", e.Name()))
		if err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, e.Name()), b, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	for name, sql := range extra {
		if err := os.WriteFile(filepath.Join(d, name), []byte(sql), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	return d
}
