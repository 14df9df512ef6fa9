// Package memlimit gives the Go runtime a soft memory limit below the
// container's, so that the garbage collector works harder as the process
// nears it instead of the kernel killing the process. Without one, the
// heap grows to twice what is live before a collection: a worker holding
// 130 MB of events used 370 MB. GOMEMLIMIT, when set, wins.
package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's limit given to the Go runtime:
// the rest is for what it does not count (libpg_query's and SQLite's
// C allocations, thread stacks, the kernel's page cache charged to the
// container).
const Share = 0.85

// unlimited is where cgroup v1 reports no limit (a page-rounded
// MaxInt64); anything above is no limit either.
const unlimited = 1 << 60

// Cgroup returns the memory limit of the cgroup whose membership
// procCgroup lists (the contents of /proc/self/cgroup), read under root
// (/sys/fs/cgroup): cgroup v2's memory.max, or v1's
// memory.limit_in_bytes, at the process's own path or, in a container
// with its own cgroup namespace, at the root. 0 when there is none.
func Cgroup(root string, procCgroup []byte) (int64, error) {
	var candidates []string
	sc := bufio.NewScanner(bytes.NewReader(procCgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || strings.Contains(parts[2], "..") {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			candidates = append(candidates, filepath.Join(root, parts[2], "memory.max"), filepath.Join(root, "memory.max"))
		case hasController(parts[1], "memory"):
			candidates = append(candidates, filepath.Join(root, "memory", parts[2], "memory.limit_in_bytes"),
				filepath.Join(root, "memory", "memory.limit_in_bytes"))
		}
	}
	for _, p := range candidates {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // not this hierarchy, or not mounted here
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("memory limit in %s: %q is not a number of bytes", p, v)
		}
		if n >= unlimited {
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// Apply sets the Go runtime's memory limit to Share of the container's
// when GOMEMLIMIT (getenv) does not set one and the container has one.
// It returns the limit set, 0 for none.
func Apply(getenv func(string) string, root string, procCgroup []byte) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	limit, err := Cgroup(root, procCgroup)
	if err != nil || limit == 0 {
		return 0, err
	}
	set := int64(float64(limit) * Share)
	debug.SetMemoryLimit(set)
	return set, nil
}
