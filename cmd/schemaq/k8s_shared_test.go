package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// scaledObject is the part of KEDA's ScaledObject (keda.sh/v1alpha1) the
// manifests use, decoded with unknown fields rejected. KEDA's Go types
// would pull its controller dependencies into go.sum for one test; the
// fields are KEDA's documented spec.
type scaledObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Name       string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		PollingInterval *int32 `yaml:"pollingInterval"`
		CooldownPeriod  *int32 `yaml:"cooldownPeriod"`
		MinReplicaCount *int32 `yaml:"minReplicaCount"`
		MaxReplicaCount *int32 `yaml:"maxReplicaCount"`
		Triggers        []struct {
			Type              string            `yaml:"type"`
			Metadata          map[string]string `yaml:"metadata"`
			AuthenticationRef *struct {
				Name string `yaml:"name"`
			} `yaml:"authenticationRef"`
		} `yaml:"triggers"`
	} `yaml:"spec"`
}

// The object interface lets a ScaledObject travel with the typed objects.
func (s *scaledObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (s *scaledObject) DeepCopyObject() kruntime.Object  { c := *s; return &c }

func decodeScaledObject(doc []byte) (*scaledObject, error) {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	var so scaledObject
	if err := dec.Decode(&so); err != nil {
		return nil, fmt.Errorf("ScaledObject: %w", err)
	}
	if so.APIVersion != "keda.sh/v1alpha1" || so.Kind != "ScaledObject" {
		return nil, fmt.Errorf("unsupported KEDA object %s %s", so.APIVersion, so.Kind)
	}
	return &so, nil
}

// natsJetStreamKeys are the nats-jetstream scaler's metadata keys (KEDA
// 2.8+ docs).
var natsJetStreamKeys = []string{"natsServerMonitoringEndpoint", "account", "stream", "consumer", "lagThreshold", "activationLagThreshold", "useHttps"}

// TestKubernetesSharedIndex builds the shared-index overlays, checks
// their invariants (workers on the shared consumer scaled by lag or CPU,
// at least two daemons under a budget, probes, settings the subcommands
// read), and runs the worker and daemon containers with their resolved
// environment against a real NATS and a real Redis: against Redis with
// the query engine when SCHEMAQ_TEST_REDISEARCH_URL names one, until their
// readiness probes pass; otherwise against a plain redis-server, which
// each must refuse at start, naming what it needs.
func TestKubernetesSharedIndex(t *testing.T) {
	overlays, err := filepath.Glob(filepath.Join(k8sDir, "overlays", "shared-*"))
	if err != nil || len(overlays) != 2 {
		t.Fatalf("want shared-dev and shared-prod, have %v (%v)", overlays, err)
	}
	for _, dir := range overlays {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			objs := decodeManifests(t, name, kustomizeBuild(t, dir))
			var namespace string
			cms := map[string]*corev1.ConfigMap{}
			deps := map[string]*appsv1.Deployment{}
			var pdbs []*policyv1.PodDisruptionBudget
			var hpas []*autoscalingv2.HorizontalPodAutoscaler
			var scaled []*scaledObject
			var services []*corev1.Service
			for _, o := range objs {
				switch v := o.(type) {
				case *corev1.Namespace:
					namespace = v.Name
				case *corev1.ConfigMap:
					cms[v.Name] = v
				case *appsv1.Deployment:
					deps[v.Name] = v
					checkPodSpec(t, "Deployment "+v.Name, &v.Spec.Template.Spec, true)
					sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
					if err != nil || sel.Empty() || !sel.Matches(labels.Set(v.Spec.Template.Labels)) {
						t.Errorf("Deployment %s: selector does not select its pods", v.Name)
					}
				case *policyv1.PodDisruptionBudget:
					pdbs = append(pdbs, v)
				case *autoscalingv2.HorizontalPodAutoscaler:
					hpas = append(hpas, v)
				case *scaledObject:
					scaled = append(scaled, v)
				case *corev1.Service:
					services = append(services, v)
				}
			}
			worker, daemon := deps["schemaq-worker"], deps["schemaq-daemon"]
			if worker == nil || daemon == nil {
				t.Fatalf("want Deployments schemaq-worker and schemaq-daemon, have %v", slices.Sorted(maps.Keys(deps)))
			}
			wc, dc := worker.Spec.Template.Spec.Containers[0], daemon.Spec.Template.Spec.Containers[0]
			if wc.Args[0] != "worker" || dc.Args[0] != "daemon" {
				t.Errorf("args: worker %v, daemon %v", wc.Args, dc.Args)
			}
			if worker.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Error("workers must be replaced, not rolled: an index rebuild needs the old ones gone (docs/redis.md)")
			}
			if daemon.Spec.Replicas == nil || *daemon.Spec.Replicas < 2 {
				t.Error("at least two daemons")
			}
			// The workers' autoscaler (KEDA or an HPA) owns their count: a
			// count here would reset it on every kubectl apply.
			if len(scaled)+len(hpas) == 0 {
				t.Error("the workers have no autoscaler")
			} else if worker.Spec.Replicas != nil {
				t.Errorf("Deployment schemaq-worker sets replicas: %d, which its autoscaler owns", *worker.Spec.Replicas)
			}
			covered := false
			for _, p := range pdbs {
				ps, _ := metav1.LabelSelectorAsSelector(p.Spec.Selector)
				if ps.Matches(labels.Set(daemon.Spec.Template.Labels)) && !ps.Matches(labels.Set(worker.Spec.Template.Labels)) {
					covered = true
				}
			}
			if !covered {
				t.Error("no PodDisruptionBudget selects the daemons (and only them)")
			}
			for _, s := range services {
				if s.Labels["app.kubernetes.io/component"] != "metrics" {
					continue
				}
				sel := labels.SelectorFromSet(s.Spec.Selector)
				if !sel.Matches(labels.Set(worker.Spec.Template.Labels)) && !sel.Matches(labels.Set(daemon.Spec.Template.Labels)) {
					t.Errorf("metrics Service %s selects neither workers nor daemons", s.Name)
				}
			}

			// Exactly one autoscaler for the workers: KEDA on consumer
			// lag, or the CPU alternative.
			if len(scaled)+len(hpas) != 1 {
				t.Fatalf("want one worker autoscaler, have %d ScaledObjects and %d HPAs", len(scaled), len(hpas))
			}
			for _, h := range hpas {
				if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != worker.Name {
					t.Errorf("HPA %s targets %+v", h.Name, h.Spec.ScaleTargetRef)
				}
			}
			for _, so := range scaled {
				if so.Spec.ScaleTargetRef.Name != worker.Name || (so.Spec.ScaleTargetRef.Kind != "" && so.Spec.ScaleTargetRef.Kind != "Deployment") {
					t.Errorf("ScaledObject targets %+v", so.Spec.ScaleTargetRef)
				}
				if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 1 || so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount <= *so.Spec.MinReplicaCount {
					t.Errorf("ScaledObject replica range %v–%v", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
				}
				// One trigger per consumer the workers read: schema
				// events, and docs with examples.
				var watched []string
				for _, tr := range so.Spec.Triggers {
					if tr.Type != "nats-jetstream" {
						t.Fatalf("want nats-jetstream triggers, have %+v", so.Spec.Triggers)
					}
					md := tr.Metadata
					for k := range md {
						if !slices.Contains(natsJetStreamKeys, k) {
							t.Errorf("trigger metadata %q is not a nats-jetstream scaler parameter", k)
						}
					}
					if md["stream"] != events.Stream {
						t.Errorf("trigger watches stream %s, the workers consume %s", md["stream"], events.Stream)
					}
					watched = append(watched, md["consumer"])
					if want := "nats." + namespace + ".svc.cluster.local:8222"; md["natsServerMonitoringEndpoint"] != want {
						t.Errorf("scaler endpoint %q, want %q (KEDA resolves it from its own namespace)", md["natsServerMonitoringEndpoint"], want)
					}
				}
				if want := []string{streams.DefaultConsumer.SchemaName(), streams.DefaultConsumer.DocsName()}; !slices.Equal(watched, want) {
					t.Errorf("triggers watch consumers %v, the workers consume %v", watched, want)
				}
			}

			// Settings: every variable is one the subcommand reads, the
			// store is the shared one, metrics are on the probed port.
			running := map[string]map[string]string{}
			for _, c := range []corev1.Container{wc, dc} {
				read := envRead(t, c.Args[0])
				vars := podEnv(t, c, c.Name+"-0", cms)
				for k := range vars {
					// OTEL_* are the OpenTelemetry SDK's own (pkg/tracing).
					if !read[k] && !strings.HasPrefix(k, "OTEL_") {
						t.Errorf("container %s sets %s, which `schemaq %s` does not read", c.Name, k, c.Args[0])
					}
				}
				if !strings.HasPrefix(vars["SCHEMAQ_REDIS_URL"], "redis") {
					t.Errorf("container %s: SCHEMAQ_REDIS_URL %q; the shared topology needs the shared index", c.Name, vars["SCHEMAQ_REDIS_URL"])
				}
				if vars["SCHEMAQ_METRICS_ADDR"] != fmt.Sprintf(":%d", c.Ports[0].ContainerPort) {
					t.Errorf("container %s: SCHEMAQ_METRICS_ADDR %q is not the metrics port", c.Name, vars["SCHEMAQ_METRICS_ADDR"])
				}
				running[c.Args[0]] = vars
			}
			if t.Failed() {
				return
			}

			natsURL := natsFor(t, running["worker"])
			redisURL, live := sharedRedis(t)
			prefix := "k8stest-" + name + ":"
			var aclUser string
			adminURL := redisURL
			if rules := aclRules(t, objs); rules != "" {
				// The overlay's own Redis user, on keys under this test's
				// prefix: every command the roles run must be granted. A
				// Redis without the query engine knows no FT.* command
				// to grant, and the roles send it none.
				if !live {
					rules = withoutSearchCommands(rules)
				}
				redisURL, aclUser = createRedisUser(t, rules, prefix, redisURL)
			}
			for _, role := range []string{"worker", "daemon"} {
				vars := running[role]
				vars["SCHEMAQ_NATS_URL"] = natsURL
				vars["SCHEMAQ_REDIS_URL"] = redisURL
				vars["SCHEMAQ_REDIS_PREFIX"] = prefix
				if aclUser == "" {
					delete(vars, "SCHEMAQ_REDIS_PASSWORD") // the test's server has its own, or none
				}
				vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
				vars["SCHEMAQ_DATA_DIR"] = t.TempDir()
				if role == "daemon" {
					if vars["SCHEMAQ_HTTP_ADDR"] != fmt.Sprintf(":%d", containerPort(dc, "http")) || vars["SCHEMAQ_HTTP_TOKEN"] != k8sTestHTTPToken {
						t.Fatalf("the daemon serves no HTTP API on its http port with the Secret schemaq-http's token: %q", vars["SCHEMAQ_HTTP_ADDR"])
					}
					vars["SCHEMAQ_HTTP_ADDR"] = freePort(t)
				}
				startService(t, role, []string{role}, vars)
				testenv.Eventually(t, 30*time.Second, role+" passes its readiness probe", func() bool {
					_, err := runVars(context.Background(), []string{"healthcheck", "--path", "/readyz"}, vars)
					return err == nil
				})
			}
			runExampleJob(t, natsURL)
			searchPublished(t, natsURL)
			checkHTTPAPI(t, running["daemon"]["SCHEMAQ_HTTP_ADDR"], k8sTestHTTPToken)
			if m := deps["schemaq-mcp"]; m != nil {
				checkMCPDeployment(t, objs, &m.Spec.Template.Spec, cms, natsURL)
			}
			if aclUser != "" {
				noDenials(t, adminURL, aclUser)
			}
		})
	}
}

// searchPublished publishes the example's docs and worked examples after
// its migrations and waits until a daemon's search finds each kind: the
// workers' every write path and the daemons' search ran.
func searchPublished(t *testing.T, natsURL string) {
	t.Helper()
	vars := map[string]string{"SCHEMAQ_NATS_URL": natsURL, "SCHEMAQ_NATS_TOKEN": k8sTestToken}
	shop := filepath.Join("..", "..", "examples", "shop")
	for _, args := range [][]string{
		{"publish", "docs", "--db", "shop", filepath.Join(shop, "docs")},
		{"publish", "examples", "--db", "shop", filepath.Join(shop, "examples.jsonl")},
	} {
		if out, errOut, code := runVars2(t, args, vars); code != exitOK {
			t.Fatalf("%v (exit %d): %s %s", args, code, out, errOut)
		}
	}
	for _, q := range []struct{ kind, question, want string }{
		{"table", "orders per customer", "public.orders"},
		{"doc", "partial refunds", "refunds.md"},
		{"example", "customers with the most orders", "example"},
	} {
		testenv.Eventually(t, 30*time.Second, "a search finds the "+q.kind, func() bool {
			out, _, code := runVars2(t, []string{"search", "--db", "shop", q.question, "--kind", q.kind, "--k", "3"}, vars)
			return code == exitOK && strings.Contains(out, q.want)
		})
	}
}
