package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRefusesWhatAPullRequestCanPlant: every hostile kind of file a
// migrations directory can hold, refused by name before a byte is read,
// and the ordinary ones read.
func TestReadRefusesWhatAPullRequestCanPlant(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "migrations")
	outside := filepath.Join(dir, "secret")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(outside, []byte("root:$6$hash"), 0o600))
	must(t, os.WriteFile(filepath.Join(root, "0001.sql"), []byte("CREATE TABLE a ();"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "sub", "shared.sql"), []byte("CREATE TABLE b ();"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "0002.sql")))
	must(t, os.Symlink("../secret", filepath.Join(root, "0003.sql")))
	must(t, os.Symlink("sub/shared.sql", filepath.Join(root, "0004.sql")))
	must(t, os.Symlink("nowhere.sql", filepath.Join(root, "0005.sql")))
	must(t, syscall.Mkfifo(filepath.Join(root, "0006.sql"), 0o644))
	big := filepath.Join(root, "0007.sql")
	f, err := os.Create(big)
	must(t, err)
	must(t, f.Truncate(500<<20)) // sparse: no disk, and never read
	f.Close()
	must(t, os.Mkdir(filepath.Join(root, "0008.sql"), 0o755))

	cases := []struct {
		file, want, refused string
	}{
		{file: "0001.sql", want: "CREATE TABLE a ();"},
		{file: "0002.sql", refused: "a symlink out of"},
		{file: "0003.sql", refused: "a symlink out of"},
		{file: "0004.sql", want: "CREATE TABLE b ();"},
		{file: "0005.sql", refused: "does not resolve"},
		{file: "0006.sql", refused: "not a regular file"},
		{file: "0007.sql", refused: "over the 1048576"},
		{file: "0008.sql", refused: "not a regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			done := make(chan struct{})
			var b []byte
			var err error
			go func() {
				defer close(done)
				b, err = Read(root, filepath.Join(root, tc.file), 1<<20)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the read blocked")
			}
			if tc.refused == "" {
				if err != nil || string(b) != tc.want {
					t.Fatalf("read %q, %v: want %q", b, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("error %v: want it refused as %q", err, tc.refused)
			}
			if !strings.Contains(err.Error(), `"`+filepath.Join(root, tc.file)+`"`) {
				t.Errorf("error %v does not quote the file's name", err)
			}
			if strings.Contains(err.Error(), "$6$") || len(b) > 0 {
				t.Errorf("the refused file's content leaked: %v %q", err, b)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
