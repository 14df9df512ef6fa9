package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// lockDataDir takes the data directory for this process, so that a second
// `up` or `serve` on it fails at once with a clear error instead of two
// processes sharing one index file and one NATS store. The lock is the
// operating system's (released when the process ends, however it ends);
// the file only tells the second process who holds it.
func lockDataDir(dir string) (release func(), err error) {
	// Owner only: it holds the index and the NATS store, every schema,
	// doc and example published.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // one made by an older schemaq
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := flock(f); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		who := strings.TrimSpace(string(holder))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("data directory %s is in use by %s: stop it, or give this process its own --data-dir", dir, who)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("schemaq pid "+strconv.Itoa(os.Getpid())+" since "+time.Now().UTC().Format(time.RFC3339)+"\n"), 0)
	return func() { _ = funlock(f); f.Close() }, nil
}

// dataDirWriter reports whether a process holds dir's lock, as a worker
// writing its index does, and who.
func dataDirWriter(dir string) (holder string, held bool) {
	if !locksTell {
		return "", true // cannot tell: assume the documented setup
	}
	path := filepath.Join(dir, "LOCK")
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if err := flock(f); err != nil {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b)), true
	}
	_ = funlock(f)
	return "", false
}
