package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"go.yaml.in/yaml/v3"

	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/status"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// runVars runs one command with vars as its whole environment.
func runVars(ctx context.Context, args []string, vars map[string]string) (string, error) {
	var out syncBuffer
	err := runEnv(ctx, args, &env{stdout: &out, stderr: &out, getenv: func(k string) string { return vars[k] }})
	return out.String(), err
}

// sharedRedis is the Redis a test runs shared-index services against:
// the one SCHEMAQ_TEST_REDISEARCH_URL names (live: true, with the query
// engine), or else a plain redis-server, on which the services search in
// memory as they do by default.
func sharedRedis(t *testing.T, password ...string) (url string, live bool) {
	t.Helper()
	if u := os.Getenv("SCHEMAQ_TEST_REDISEARCH_URL"); u != "" {
		return u, true
	}
	if len(password) > 0 {
		return testenv.StartRedisWithPassword(t, password[0]).URL(), false
	}
	return testenv.StartRedis(t).URL(), false
}

// startService runs a long-lived command (a container's) until stop,
// which the test's cleanup also calls; stop may be called again and
// returns the command's output.
func startService(t *testing.T, name string, args []string, vars map[string]string) (stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		logs string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		logs, err := runVars(ctx, args, vars)
		done <- result{logs, err}
	}()
	var once sync.Once
	var logs string
	stop = func() string {
		once.Do(func() {
			cancel()
			select {
			case r := <-done:
				logs = r.logs
				if r.err != nil {
					t.Errorf("service %s: %v\n%s", name, r.err, logs)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("service %s did not stop within 30s", name)
			}
		})
		return logs
	}
	t.Cleanup(func() {
		// A failure elsewhere in the test is often explained by what the
		// service logged (a store check that failed, a refused connection).
		if logs := stop(); t.Failed() {
			t.Logf("service %s logged:\n%s", name, logs)
		}
	})
	return stop
}

// composeFile is the part of the Compose specification deploy/compose.yaml
// uses; unknown fields are rejected, so a misspelt key fails the test.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Build     *struct{ Context, Dockerfile string } `yaml:"build"`
	Image     string                                `yaml:"image"`
	Command   []string                              `yaml:"command"`
	Env       map[string]string                     `yaml:"environment"`
	Ports     []string                              `yaml:"ports"`
	Volumes   []string                              `yaml:"volumes"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
	Deploy *struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	Restart         string   `yaml:"restart"`
	Profiles        []string `yaml:"profiles"`
}

// interpolation is Compose's ${VAR:-default}; the test runs with every
// variable unset.
var interpolation = regexp.MustCompile(`\$\{[A-Z0-9_]+:-([^}]*)\}`)

// required is Compose's ${VAR:?message} (and plain ${VAR}): a variable the
// stack refuses to start without. The test gives each a value of its own.
var required = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:\?[^}]*)?\}`)

// composeSecrets are the values the test gives the required variables.
var composeSecrets = map[string]string{"SCHEMAQ_NATS_TOKEN": "composetest-token", "SCHEMAQ_REDIS_PASSWORD": "composetest-redis"}

// expand interpolates a compose value as the test runs the stack.
func expand(t *testing.T, v string) string {
	v = interpolation.ReplaceAllString(v, "$1")
	return required.ReplaceAllStringFunc(v, func(m string) string {
		name := required.FindStringSubmatch(m)[1]
		secret, ok := composeSecrets[name]
		if !ok {
			t.Errorf("compose.yaml requires %s, which the test does not know", name)
		}
		return secret
	})
}

// replicas is how many containers of s compose starts.
func (s composeService) replicas() int {
	if s.Deploy != nil && s.Deploy.Replicas > 0 {
		return s.Deploy.Replicas
	}
	return 1
}

// TestComposeStack checks deploy/compose.yaml and then runs what it
// declares: each schemaq service's command and environment, with the
// container's addresses and mounts mapped onto this machine, against a
// real NATS server and a real Redis, until its own health check passes;
// then the example publish job, and a search the replicas answer.
//
// The shared-index services need Redis with the query engine: with
// SCHEMAQ_TEST_REDISEARCH_URL they run against it like the rest; without
// it they run against a plain redis-server, which each must refuse at
// start, naming what it needs.
func TestComposeStack(t *testing.T) {
	deployDir := filepath.Join("..", "..", "deploy")
	raw, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var cf composeFile
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}

	natsSvc, ok := cf.Services["nats"]
	if !ok || !strings.Contains(strings.Join(natsSvc.Command, " "), "--jetstream") || natsSvc.Healthcheck == nil {
		t.Fatalf("compose.yaml: a nats service with JetStream and a health check is required: %+v", natsSvc)
	}
	redisSvc, ok := cf.Services["redis"]
	if !ok || !strings.HasPrefix(redisSvc.Image, "redis:8") || redisSvc.Healthcheck == nil {
		t.Fatalf("compose.yaml: a redis:8 service (query engine built in) with a health check is required: %+v", redisSvc)
	}
	// Secure by default: loopback ports only, NATS and Redis behind a
	// secret the stack refuses to start without.
	if !slices.Contains(natsSvc.Command, "--auth") || !strings.Contains(strings.Join(natsSvc.Command, " "), "${SCHEMAQ_NATS_TOKEN:?") {
		t.Errorf("compose.yaml: nats must require the token SCHEMAQ_NATS_TOKEN (--auth ${SCHEMAQ_NATS_TOKEN:?…}): %v", natsSvc.Command)
	}
	if !slices.Contains(redisSvc.Command, "--requirepass") || !strings.Contains(strings.Join(redisSvc.Command, " "), "${SCHEMAQ_REDIS_PASSWORD:?") {
		t.Errorf("compose.yaml: redis must require SCHEMAQ_REDIS_PASSWORD (--requirepass): %v", redisSvc.Command)
	}
	for name, s := range cf.Services {
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %q beyond loopback", name, p)
			}
		}
		if name != "nats" && name != "redis" && s.Env["SCHEMAQ_NATS_TOKEN"] == "" {
			t.Errorf("service %s does not present the NATS token", name)
		}
	}
	cmds := commands()
	var long, jobs []string
	count := map[string]int{} // containers per subcommand in the default profile
	natsNodes := checkComposeNATSCluster(t, deployDir, cf)
	for name, s := range cf.Services {
		if name == "nats" || name == "redis" || natsNodes[name] {
			continue
		}
		if !strings.HasPrefix(s.Image, "schemaq:") {
			t.Errorf("service %s: image %q is not schemaq's", name, s.Image)
		}
		if s.Build != nil && (s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Context != "..") {
			t.Errorf("service %s: build %+v is not deploy/Dockerfile from the repository root", name, s.Build)
		}
		if len(s.Command) == 0 {
			t.Errorf("service %s: no command", name)
			continue
		}
		if _, ok := cmds[s.Command[0]]; !ok {
			t.Errorf("service %s: %q is not a schemaq subcommand", name, s.Command[0])
		}
		if slices.Contains(s.Profiles, "cluster") {
			for node := range natsNodes {
				if s.DependsOn[node].Condition != "service_healthy" {
					t.Errorf("service %s: must wait for a healthy %s", name, node)
				}
			}
		} else if s.DependsOn["nats"].Condition != "service_healthy" {
			t.Errorf("service %s: must wait for a healthy nats", name)
		}
		if u := s.Env["SCHEMAQ_REDIS_URL"]; u != "" && (!strings.HasPrefix(u, "redis://redis:") || s.DependsOn["redis"].Condition != "service_healthy") {
			t.Errorf("service %s: the shared index must be the redis service, waited for healthy (%q)", name, u)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") {
				if _, ok := cf.Volumes[src]; !ok {
					t.Errorf("service %s: volume %q is not declared", name, src)
				}
			}
		}
		if slices.Contains(s.Profiles, "example") {
			jobs = append(jobs, name)
			continue
		}
		if len(s.Profiles) == 0 {
			count[s.Command[0]] += s.replicas()
		} else {
			count[strings.Join(s.Profiles, ",")+":"+s.Command[0]] += s.replicas()
		}
		long = append(long, name)
		hc := s.Healthcheck
		if hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[2] != "healthcheck" ||
			!bytes.Contains(dockerfile, []byte("/out/schemaq "+hc.Test[1]+"\n")) {
			t.Errorf("service %s: health check must run the image's binary: schemaq healthcheck: %+v", name, hc)
		}
		if s.Env["SCHEMAQ_METRICS_ADDR"] == "" {
			t.Errorf("service %s: the health check needs SCHEMAQ_METRICS_ADDR", name)
		}
	}
	if count["worker"] < 2 || count["daemon"] < 2 || count["replicas:serve"] < 2 || count["cluster:serve"] < 2 {
		t.Errorf("compose.yaml: want two workers and two daemons by default, and two serve replicas in the replicas and the cluster profiles, have %v", count)
	}
	if t.Failed() {
		return
	}
	slices.Sort(long)

	ns := testenv.NATSWith(t, natsembed.Options{Token: composeSecrets["SCHEMAQ_NATS_TOKEN"]})
	// The cluster profile's services run on three servers of their own.
	clusterURL := testenv.ClusterURLs(testenv.NATSCluster(t, len(natsNodes), testenv.ClusterToken(composeSecrets["SCHEMAQ_NATS_TOKEN"])))
	redisURL, live := sharedRedis(t, composeSecrets["SCHEMAQ_REDIS_PASSWORD"])
	dir := t.TempDir()
	// envFor maps a service's environment onto this machine: its NATS and
	// Redis are the test's, its data and metrics addresses private to it.
	envFor := func(name string, s composeService) map[string]string {
		vars := map[string]string{}
		for k, v := range s.Env {
			vars[k] = expand(t, v)
		}
		vars["SCHEMAQ_NATS_URL"] = ns.ClientURL()
		if slices.Contains(s.Profiles, "cluster") {
			vars["SCHEMAQ_NATS_URL"] = clusterURL
		}
		if _, ok := vars["SCHEMAQ_REDIS_URL"]; ok {
			vars["SCHEMAQ_REDIS_URL"] = redisURL
			vars["SCHEMAQ_REDIS_PREFIX"] = "composetest:"
			if live {
				delete(vars, "SCHEMAQ_REDIS_PASSWORD") // the live server's URL carries its own
			}
		}
		if _, ok := vars["SCHEMAQ_DATA_DIR"]; ok {
			vars["SCHEMAQ_DATA_DIR"] = filepath.Join(dir, name)
		}
		if _, ok := vars["SCHEMAQ_METRICS_ADDR"]; ok {
			vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
		}
		return vars
	}
	type running struct {
		name   string
		args   []string
		vars   map[string]string
		health []string
		stop   func() string
	}
	var services []running
	for _, name := range long {
		s := cf.Services[name]
		for i := range s.replicas() {
			id := fmt.Sprintf("%s-%d", name, i+1)
			vars := envFor(id, s)
			services = append(services, running{id, s.Command, vars, s.Healthcheck.Test[2:], startService(t, id, s.Command, vars)})
		}
	}
	for _, r := range services {
		var out string
		var err error
		testenv.Eventually(t, 30*time.Second, r.name+" passes its health check", func() bool {
			out, err = runVars(context.Background(), r.health, r.vars)
			return err == nil && strings.Contains(out, "/readyz")
		})
	}
	// A health check reaches a port, not a process: one a service was
	// given may have been taken by another before it bound it. Every
	// replica of the query service must have joined, counted on NATS.
	queriers := map[string]int{}
	for _, r := range services {
		if cmd := r.args[0]; cmd == "daemon" || cmd == "serve" {
			queriers[r.vars["SCHEMAQ_NATS_URL"]]++
		}
	}
	for url, want := range queriers {
		nc, err := nats.Connect(url, nats.Token(composeSecrets["SCHEMAQ_NATS_TOKEN"]))
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, fmt.Sprintf("%d query replicas answer on %s", want, url), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ds, err := status.ListDaemons(ctx, nc)
			return err == nil && len(ds) == want
		})
		nc.Close()
	}

	for _, name := range jobs {
		s := cf.Services[name]
		args := append([]string(nil), s.Command...)
		// Arguments under a mount point name the mounted host directory.
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 || !strings.HasPrefix(parts[0], ".") {
				continue
			}
			for i, a := range args {
				if rest, ok := strings.CutPrefix(a, parts[1]+"/"); ok {
					args[i] = filepath.Join(deployDir, parts[0], rest)
				}
			}
		}
		out, err := runVars(context.Background(), args, envFor(name, s))
		if err != nil || (name == "publish-shop" && !strings.Contains(out, "catalog shop is at version 6")) {
			t.Fatalf("job %s %v: %v\n%s", name, args, err, out)
		}
	}
	// The cluster's replicas answer what is published to the cluster.
	cluster := map[string]string{"SCHEMAQ_NATS_URL": clusterURL, "SCHEMAQ_NATS_TOKEN": composeSecrets["SCHEMAQ_NATS_TOKEN"]}
	if out, err := runVars(context.Background(), []string{"publish", "migrations", "--db", "shop", "--wait", "60s", filepath.Join("..", "..", "examples", "shop", "migrations")}, cluster); err != nil {
		t.Fatalf("publish to the cluster: %v\n%s", err, out)
	}
	for _, url := range []string{ns.ClientURL(), clusterURL} {
		testenv.Eventually(t, 20*time.Second, "the stack answers from the published schema", func() bool {
			out, _, code := runVars2(t, []string{"search", "--db", "shop", "orders per customer", "--kind", "table", "--k", "3"},
				map[string]string{"SCHEMAQ_NATS_URL": url, "SCHEMAQ_NATS_TOKEN": composeSecrets["SCHEMAQ_NATS_TOKEN"]})
			return code == exitOK && strings.Contains(out, "public.orders")
		})
	}
	// Without the token the stack's NATS takes no one.
	if _, errOut, code := runAt(t, ns.ClientURL(), "status"); code == exitOK {
		t.Errorf("status without the token: %s", errOut)
	}

	// The health check fails once its process is gone.
	services[0].stop()
	if out, err := runVars(context.Background(), services[0].health, services[0].vars); err == nil {
		t.Errorf("health check of a stopped %s passed: %s", services[0].name, out)
	}
}

// checkComposeNATSCluster checks the cluster profile's NATS servers: each
// reads deploy/nats-cluster.conf, which nats-server's own parser reads as
// a JetStream server of one cluster routed to all of them, flushing
// every write before its ack, requiring the token. It returns their
// names.
func checkComposeNATSCluster(t *testing.T, deployDir string, cf composeFile) map[string]bool {
	t.Helper()
	nodes := map[string]bool{}
	for name, s := range cf.Services {
		if strings.HasPrefix(s.Image, "nats:") && slices.Contains(s.Profiles, "cluster") {
			nodes[name] = true
		}
	}
	if len(nodes) != 3 {
		t.Fatalf("compose.yaml: want three NATS servers in the cluster profile, have %v", nodes)
	}
	names := map[string]bool{}
	for node := range nodes {
		s := cf.Services[node]
		if !slices.Contains(s.Volumes, "./nats-cluster.conf:/etc/nats/nats.conf:ro") || strings.Join(s.Command, " ") != "--config /etc/nats/nats.conf" {
			t.Errorf("%s: must run deploy/nats-cluster.conf: %v %v", node, s.Command, s.Volumes)
		}
		t.Setenv("NATS_SERVER_NAME", s.Env["NATS_SERVER_NAME"])
		t.Setenv("SCHEMAQ_NATS_TOKEN", expand(t, s.Env["SCHEMAQ_NATS_TOKEN"]))
		opts, err := server.ProcessConfigFile(filepath.Join(deployDir, "nats-cluster.conf"))
		if err != nil {
			t.Fatalf("nats-server refuses deploy/nats-cluster.conf: %v", err)
		}
		names[opts.ServerName] = true
		if !opts.JetStream || !opts.SyncAlways || opts.Authorization != composeSecrets["SCHEMAQ_NATS_TOKEN"] || opts.Cluster.Name == "" {
			t.Errorf("%s: jetstream %v, sync always %v, token %v, cluster %q", node, opts.JetStream, opts.SyncAlways, opts.Authorization != "", opts.Cluster.Name)
		}
		var routes []string
		for _, r := range opts.Routes {
			routes = append(routes, r.Hostname())
		}
		slices.Sort(routes)
		var want []string
		for n := range nodes {
			want = append(want, n)
		}
		slices.Sort(want)
		if !slices.Equal(routes, want) {
			t.Errorf("%s: routes to %v, want every server %v", node, routes, want)
		}
	}
	if len(names) != 3 {
		t.Errorf("the servers must have names of their own: %v", names)
	}
	return nodes
}
