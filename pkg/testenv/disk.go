package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Tmpfs mounts a tmpfs of size (as mount takes it: "12m") on a new
// directory and returns it; it is unmounted when the test ends.
func Tmpfs(tb testing.TB, size string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("mounting a tmpfs needs root")
	}
	dir := tb.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		tb.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	tb.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// GrowTmpfs resizes the tmpfs at dir, as freeing space would.
func GrowTmpfs(tb testing.TB, dir, size string) {
	tb.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
		tb.Fatalf("grow the tmpfs at %s: %v %s", dir, err, out)
	}
}
