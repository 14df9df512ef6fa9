package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// version is set at build time with -ldflags "-X main.version=…" (task
// release); it must be SemVer because the NATS micro service rejects
// anything else. Unset, the module version `go install` records stands in.
var version = "0.0.0-dev"

// build is what the binary knows of itself.
type build struct {
	Version  string // SemVer, without a leading v
	Revision string // the VCS revision, "-dirty" when built from a modified tree
	Go       string
}

func buildInfo() build {
	b := build{Version: version, Go: goruntime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "0.0.0-dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = strings.TrimPrefix(info.Main.Version, "v")
	}
	var modified bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && b.Revision != "" {
		b.Revision += "-dirty"
	}
	return b
}

func (b build) String() string {
	s := "schemaq " + b.Version
	if b.Revision != "" {
		s += " (" + b.Revision + ")"
	}
	return s + " " + b.Go
}

func runVersion(_ context.Context, e *env, args []string) error {
	if len(args) > 0 && args[0] != "--help" && args[0] != "-h" {
		return usagef("version takes no arguments, got %q", args)
	}
	fmt.Fprintln(e.stdout, buildInfo())
	return nil
}

// buildInfoMetric is schemaq_build_info: 1, labelled with what the binary
// is, so that a dashboard can tell the versions of a fleet apart.
func buildInfoMetric(reg prometheus.Registerer) {
	b := buildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_build_info", Help: "Always 1; the labels say which schemaq this is.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.Go}})
	g.Set(1)
	reg.MustRegister(g)
}

// processRegistry is a registry with what every process reports of
// itself: the Go runtime, the process, and which schemaq it is.
func processRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	buildInfoMetric(reg)
	return reg
}
