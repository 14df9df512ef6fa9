package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/schemaq/schemaq/pkg/safefile"
)

// endpointsFile is where `up` says where it listens, in its data
// directory, as `nats context` keeps a server's address for the NATS
// CLI: commands run beside it need no SCHEMAQ_NATS_URL.
const endpointsFile = "endpoints.json"

// endpoints are the addresses a running `up` serves on; an empty one is
// not served.
type endpoints struct {
	NATS    string `json:"nats_url"`
	Metrics string `json:"metrics_url,omitempty"`
	HTTP    string `json:"http_url,omitempty"`
	PID     int    `json:"pid"`
}

// writeEndpoints records ep in dir, readable by the owner only (the data
// directory is too); the returned func removes it.
func writeEndpoints(dir string, ep endpoints) (remove func(), err error) {
	b, err := json.MarshalIndent(ep, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, endpointsFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return func() { _ = os.Remove(path) }, nil
}

// localEndpoints reads the endpoints of the `up` running on dir, or nil:
// a file left by an `up` that is gone (its lock is free) is not read.
func localEndpoints(dir string) *endpoints {
	if _, held := dataDirWriter(dir); !held {
		return nil
	}
	b, err := safefile.Read(dir, filepath.Join(dir, endpointsFile), 64<<10)
	if err != nil {
		return nil
	}
	var ep endpoints
	if json.Unmarshal(b, &ep) != nil {
		return nil
	}
	return &ep
}

// free reports whether addr can be listened on now. Up's default
// addresses are optional; one taken is left unserved, and so unrecorded,
// so that healthcheck never probes another process.
func free(addr string) bool {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
