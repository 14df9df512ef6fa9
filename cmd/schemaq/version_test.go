package main

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errOut, code := runCLI(t, args...)
		if code != exitOK || !strings.HasPrefix(out, "schemaq ") || !strings.Contains(out, goruntime.Version()) {
			t.Errorf("%v (exit %d): %q %q", args, code, out, errOut)
		}
	}
	if _, _, code := runCLI(t, "version", "extra"); code != exitUsage {
		t.Errorf("version with an argument: exit %d", code)
	}
	// The micro service takes SemVer only.
	if v := buildInfo().Version; !regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`).MatchString(v) {
		t.Errorf("version %q is not SemVer", v)
	}
}

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	buildInfoMetric(reg)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetName() != "schemaq_build_info" {
		t.Fatalf("gathered %v, %v", mfs, err)
	}
	m := mfs[0].GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if m.GetGauge().GetValue() != 1 || labels["version"] != buildInfo().Version || labels["goversion"] != goruntime.Version() {
		t.Errorf("schemaq_build_info %v = %v", labels, m.GetGauge().GetValue())
	}
}

// Every flag of a role names the variable that sets it, so that a
// ConfigMap can set any of them; and each variable takes.
func TestEveryRoleFlagHasItsVariable(t *testing.T) {
	for _, role := range []string{"worker", "daemon", "serve", "up", "mcp"} {
		_, help, _ := runCLI(t, role, "--help")
		var flag, text string
		check := func() {
			if flag != "" && !strings.Contains(text, "[SCHEMAQ_") && !strings.Contains(text, "[OPENAI_") {
				t.Errorf("%s --%s names no variable: %s", role, flag, strings.TrimSpace(text))
			}
		}
		for _, line := range strings.Split(help, "\n") {
			if m := regexp.MustCompile(`^\s+-([a-z0-9-]+)`).FindStringSubmatch(line); m != nil {
				check()
				flag, text = m[1], line
				continue
			}
			text += line
		}
		check()
	}
	vars := map[string]string{"SCHEMAQ_ACK_WAIT": "7s", "SCHEMAQ_MAX_DELIVER": "9", "SCHEMAQ_GAP_TIMEOUT": "1m", "SCHEMAQ_MESSAGE_TIMEOUT": "3s",
		"SCHEMAQ_WORKER_CONCURRENCY": "3", "SCHEMAQ_MAX_CONCURRENT": "11", "SCHEMAQ_REQUEST_TIMEOUT": "4s", "SCHEMAQ_ASK_TIMEOUT": "2m",
		"SCHEMAQ_SHUTDOWN_TIMEOUT": "9s", "SCHEMAQ_NATS_TIMEOUT": "6s"}
	var r roleFlags
	fs := newFlags(&env{getenv: func(k string) string { return vars[k] }}, "serve", "")
	if err := r.register(fs, &env{getenv: func(k string) string { return vars[k] }}, "json", true, roleSet{worker: true, serve: true}); err != nil {
		t.Fatal(err)
	}
	w, d := r.worker, r.daemon
	if w.Consumer.AckWait != 7*time.Second || w.Consumer.MaxDeliver != 9 || w.GapTimeout != time.Minute || w.MessageTimeout != 3*time.Second ||
		w.Concurrency != 3 || d.MaxConcurrent != 11 || d.RequestTimeout != 4*time.Second || d.AskTimeout != 2*time.Minute ||
		r.shutdown != 9*time.Second || r.nats.timeout != 6*time.Second {
		t.Errorf("the variables did not take: worker %+v daemon %+v shutdown %v nats %v", w, d, r.shutdown, r.nats.timeout)
	}
	vars["SCHEMAQ_ACK_WAIT"] = "soon"
	if err := (&roleFlags{}).register(newFlags(&env{getenv: func(k string) string { return vars[k] }}, "worker", ""),
		&env{getenv: func(k string) string { return vars[k] }}, "json", true, roleSet{worker: true}); err == nil || !strings.Contains(err.Error(), "SCHEMAQ_ACK_WAIT") {
		t.Errorf("an unreadable SCHEMAQ_ACK_WAIT: %v", err)
	}
}

// A list under --json is [] when empty, never null.
func TestJSONListsAreNeverNull(t *testing.T) {
	ns := testenv.NATS(t)
	js, err := jetstream.New(testenv.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.Ensure(context.Background(), js, streams.DefaultConfig); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := runAt(t, ns.ClientURL(), "dlq", "list", "--json"); code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("dlq list --json with no letters (exit %d): %q %s", code, out, errOut)
	}
}

// up serves health and metrics on loopback by default; when that port is
// taken (a second up, or anything else on 9090) it runs without them and
// says so, instead of failing, and does not announce them.
func TestUpMetricsByDefault(t *testing.T) {
	if l, err := net.Listen("tcp", upMetricsAddr); err == nil {
		defer l.Close() // hold the default port, whoever else might have
	}
	addr := freePort(t)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runEnv(ctx, []string{"up", "--data-dir", t.TempDir(), "--listen", addr, "--log-format", "json"},
			&env{stdout: &logs, stderr: &logs, getenv: func(string) string { return "" }})
	}()
	testenv.Eventually(t, 30*time.Second, "up is up", func() bool { return strings.Contains(logs.String(), "schemaq is up") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("up: %v\n%s", err, logs.String())
	}
	// What is taken is neither served nor announced: healthcheck, which
	// reads up's endpoints, must not probe whoever holds the port.
	if out := logs.String(); strings.Contains(out, "health and metrics on") || !strings.Contains(out, upMetricsAddr+" is taken") {
		t.Errorf("up with its metrics port taken: %s", out)
	}
}

// Under --json a failure is JSON too, on stdout, with the exit code of
// the failure: a wire error as it came, a command line's as usage.
func TestJSONFailures(t *testing.T) {
	ns := testenv.NATS(t)
	url := ns.ClientURL()
	for _, tc := range []struct {
		args []string
		code string
		exit int
	}{
		{[]string{"tables", "--db", "nope", "--json"}, events.CodeNoDaemon, exitFailure},
		{[]string{"search", "--db", "shop", "--json", "--k", "x", "q"}, "usage", exitUsage},
		{[]string{"search", "--db", "bad name", "--json", "q"}, "usage", exitUsage},
		{[]string{"dlq", "list", "--json"}, "failed", exitFailure}, // no dead-letter stream on this server
	} {
		out, errOut, code := runAt(t, url, tc.args...)
		var got struct {
			Error *events.Error `json:"error"`
		}
		if code != tc.exit || json.Unmarshal([]byte(out), &got) != nil || got.Error == nil || got.Error.Code != tc.code || got.Error.Message == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and error code %s", tc.args, code, out, errOut, tc.exit, tc.code)
		}
		if strings.Contains(errOut, "schemaq:") {
			t.Errorf("%v: the failure was also written as text: %q", tc.args, errOut)
		}
	}
}
