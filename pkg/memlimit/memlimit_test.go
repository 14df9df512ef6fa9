package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCgroup(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // under the cgroup root
		proc  string
		want  int64
		err   string
	}{
		{"v2 in its own namespace", map[string]string{"memory.max": "536870912\n"}, "0::/\n", 512 << 20, ""},
		{"v2 at the process's path", map[string]string{"kubepods/pod1/memory.max": "1073741824\n", "memory.max": "max\n"}, "0::/kubepods/pod1\n", 1 << 30, ""},
		{"v2 without a limit", map[string]string{"memory.max": "max\n"}, "0::/\n", 0, ""},
		{"v1 at the process's path", map[string]string{"memory/docker/abc/memory.limit_in_bytes": "268435456\n"},
			"4:memory:/docker/abc\n3:cpuset:/\n", 256 << 20, ""},
		{"v1 with memory among other controllers", map[string]string{"memory/memory.limit_in_bytes": "268435456\n"},
			"5:cpuacct,memory:/elsewhere\n", 256 << 20, ""},
		{"v1 without a limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, "4:memory:/\n", 0, ""},
		{"no cgroup file", nil, "0::/\n", 0, ""},
		{"a path that climbs out", map[string]string{"memory.max": "536870912\n"}, "0::/../../etc\n", 0, ""},
		{"a value that is not bytes", map[string]string{"memory.max": "lots\n"}, "0::/\n", 0, "is not a number of bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(root, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Cgroup(root, []byte(tc.proc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %d, %v; want an error mentioning %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	set, err := Apply(getenv, root, []byte("0::/\n"))
	if err != nil || set != 850_000_000 || debug.SetMemoryLimit(-1) != set {
		t.Errorf("Apply set %d (%v), the runtime has %d; want 850000000", set, err, debug.SetMemoryLimit(-1))
	}
	env["GOMEMLIMIT"] = "100MiB"
	if set, err := Apply(getenv, root, []byte("0::/\n")); set != 0 || err != nil {
		t.Errorf("with GOMEMLIMIT set, Apply set %d (%v)", set, err)
	}
}
