// Package sharedtest finds the team's shared data (../shared beside the
// repository: the DDL corpus and the retrieval benchmark) for tests and
// benchmarks, which skip when it is absent so that the project builds and
// tests on its own.
package sharedtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared directory: $SCHEMAQ_SHARED when set, else the
// "shared" directory beside the module root. It skips tb when there is none.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("SCHEMAQ_SHARED"); d != "" {
		return mustDir(tb, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Skipf("shared data: %v", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return mustDir(tb, filepath.Join(filepath.Dir(d), "shared"))
		}
		if filepath.Dir(d) == d {
			tb.Skip("shared data: no go.mod above the working directory")
		}
	}
}

func mustDir(tb testing.TB, d string) string {
	tb.Helper()
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		tb.Skipf("shared data not found at %s; skipping", d)
	}
	return d
}

// Path joins elems under Dir and skips tb when the file is missing.
func Path(tb testing.TB, elems ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elems...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared file %s not found; skipping", p)
	}
	return p
}

// Read returns the contents of a shared file, skipping when it is missing.
func Read(tb testing.TB, elems ...string) string {
	tb.Helper()
	b, err := os.ReadFile(Path(tb, elems...))
	if err != nil {
		tb.Fatalf("read shared file: %v", err)
	}
	return string(b)
}
