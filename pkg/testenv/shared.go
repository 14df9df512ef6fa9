package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedDir returns the shared directory: $SCHEMAQ_SHARED when set, else the
// "shared" directory beside the module root. It skips tb when there is none.
func SharedDir(tb testing.TB) string {
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

// SharedPath joins elems under Dir and skips tb when the file is missing.
func SharedPath(tb testing.TB, elems ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{SharedDir(tb)}, elems...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared file %s not found; skipping", p)
	}
	return p
}

// ReadShared returns the contents of a shared file, skipping when it is missing.
func ReadShared(tb testing.TB, elems ...string) string {
	tb.Helper()
	b, err := os.ReadFile(SharedPath(tb, elems...))
	if err != nil {
		tb.Fatalf("read shared file: %v", err)
	}
	return string(b)
}
