package status

import (
	"strings"
	"testing"
)

// Replicas of one queue group that would answer alike raise nothing;
// each way they differ is named once, with the counts on each side.
func TestDaemonWarnings(t *testing.T) {
	same := Daemon{Version: "1.0", Gateway: "configured", AllowSystemCatalogs: "false", Store: "redis"}
	with := func(f func(*Daemon)) Daemon { d := same; f(&d); return d }
	for _, tc := range []struct {
		name    string
		daemons []Daemon
		want    []string
	}{
		{"none", nil, nil},
		{"one", []Daemon{same}, nil},
		{"alike", []Daemon{same, same, same}, nil},
		{"a gateway missing", []Daemon{same, with(func(d *Daemon) { d.Gateway = "none" })},
			[]string{"differ in their LLM gateway: 1 with a gateway (ask writes SQL), 1 without (ask answers with retrieval only)"}},
		{"an index of its own", []Daemon{same, same, with(func(d *Daemon) { d.Store = "sqlite" })},
			[]string{"differ in their index: 2 on the shared Redis index, 1 with an index of their own"}},
		{"versions and system catalogs", []Daemon{same, with(func(d *Daemon) { d.Version = "1.1"; d.AllowSystemCatalogs = "true" })},
			[]string{"--allow-system-catalogs: 1 refusing them, 1 allowing the system catalogs", "version: 1 at 1.0, 1 at 1.1"}},
		{"an older daemon", []Daemon{same, {Version: "1.0"}},
			[]string{"that do not say (older than this schemaq)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DaemonWarnings(tc.daemons)
			all := strings.Join(got, "\n")
			if len(tc.want) == 0 && len(got) > 0 {
				t.Fatalf("warnings for daemons that answer alike: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no warning says %q:\n%s", w, all)
				}
			}
		})
	}
}
