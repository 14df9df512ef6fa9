package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

var k8sDir = filepath.Join("..", "..", "k8s")

// decodeManifests decodes a multi-document YAML stream into typed
// objects; unknown and duplicate fields are errors.
func decodeManifests(t *testing.T, what string, raw []byte) []kruntime.Object {
	t.Helper()
	scheme := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{appsv1.AddToScheme, corev1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, batchv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []kruntime.Object
	for i, doc := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if bytes.Contains(doc, []byte("apiVersion: keda.sh/")) {
			so, err := decodeScaledObject(doc)
			if err != nil {
				t.Errorf("%s: document %d: %v", what, i+1, err)
				continue
			}
			objs = append(objs, so)
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Errorf("%s: document %d: %v", what, i+1, err)
			continue
		}
		objs = append(objs, obj)
	}
	return objs
}

func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// envRead lists the environment variables a subcommand reads while it
// declares its flags, the ones a ConfigMap may set.
func envRead(t *testing.T, sub string) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	_ = runEnv(context.Background(), []string{sub, "--help"}, &env{stdout: io.Discard, stderr: io.Discard,
		getenv: func(k string) string { read[k] = true; return "" }})
	return read
}

// checkPodSpec holds every pod to the same rules: non-root, a read-only
// root, no privilege escalation, requests and limits, and for schemaq
// containers a real subcommand with flags it accepts.
func checkPodSpec(t *testing.T, where string, spec *corev1.PodSpec, longRunning bool) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("%s: pod must set runAsNonRoot", where)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: pods call no Kubernetes API; automountServiceAccountToken must be false", where)
	}
	cmds := commands()
	for _, c := range spec.Containers {
		at := where + " container " + c.Name
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) == 0 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("%s: securityContext must be read-only, without privilege escalation, all capabilities dropped", at)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[res]; !ok {
				t.Errorf("%s: no %s request", at, res)
			}
			if _, ok := c.Resources.Limits[res]; !ok {
				t.Errorf("%s: no %s limit", at, res)
			}
		}
		if longRunning && (c.LivenessProbe == nil || c.ReadinessProbe == nil) {
			t.Errorf("%s: liveness and readiness probes are required", at)
		}
		if !strings.Contains(c.Image, "schemaq") {
			continue
		}
		if len(c.Args) == 0 {
			t.Errorf("%s: no args; the image needs a subcommand", at)
			continue
		}
		if _, ok := cmds[c.Args[0]]; !ok {
			t.Errorf("%s: %q is not a schemaq subcommand", at, c.Args[0])
		}
		if longRunning {
			for _, p := range []struct {
				probe *corev1.Probe
				path  string
			}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.StrVal != "metrics" {
					t.Errorf("%s: probe must GET %s on the metrics port", at, p.path)
				}
			}
			if len(c.Ports) == 0 || c.Ports[0].Name != "metrics" {
				t.Errorf("%s: the first port must be metrics", at)
			}
		}
	}
}

// k8sTestToken stands for the Secret schemaq-nats's token in the tests.
const k8sTestToken = "k8stest-token"

// k8sTestHTTPToken stands for the Secret schemaq-http's token.
const k8sTestHTTPToken = "k8stest-http-token"

// k8sTestRedisPassword stands for the Secret schemaq-redis's password.
const k8sTestRedisPassword = "k8stest-redis-password"

// podEnv resolves a container's environment the way the kubelet would,
// from the built ConfigMaps and the downward API.
func podEnv(t *testing.T, c corev1.Container, podName string, cms map[string]*corev1.ConfigMap) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			cm, ok := cms[from.ConfigMapRef.Name]
			if !ok {
				t.Errorf("container %s: ConfigMap %s is not in the build", c.Name, from.ConfigMapRef.Name)
				continue
			}
			for k, v := range cm.Data {
				vars[k] = v
			}
		}
		if from.SecretRef != nil && (from.SecretRef.Optional == nil || !*from.SecretRef.Optional) {
			t.Errorf("container %s: Secret %s must be optional (ask works without a gateway)", c.Name, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			vars[e.Name] = podName
		case e.ValueFrom.SecretKeyRef != nil && strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "schemaq-nats") && e.ValueFrom.SecretKeyRef.Key == "token":
			// The test's own value; its NATS server requires the same.
			vars[e.Name] = k8sTestToken
		case e.ValueFrom.SecretKeyRef != nil && strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "schemaq-http") && e.ValueFrom.SecretKeyRef.Key == "token":
			vars[e.Name] = k8sTestHTTPToken
		case e.ValueFrom.SecretKeyRef != nil && strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "schemaq-redis") && e.ValueFrom.SecretKeyRef.Key == "password":
			// The test's own value too, for a Redis user it creates.
			vars[e.Name] = k8sTestRedisPassword
		default:
			t.Errorf("container %s: env %s: source not resolved by the test", c.Name, e.Name)
		}
	}
	return vars
}

// TestKubernetesManifests builds each overlay with kustomize, decodes
// every object strictly into its Kubernetes type, checks the invariants,
// and then runs the serving container as the pod would (its args, its
// environment from the built ConfigMap) against a real NATS until the
// readiness probe's endpoint answers, followed by the example Job.
func TestKubernetesManifests(t *testing.T) {
	overlays, err := filepath.Glob(filepath.Join(k8sDir, "overlays", "*"))
	if err != nil || len(overlays) < 4 {
		t.Fatalf("want dev, prod, shared-dev and shared-prod overlays, have %v (%v)", overlays, err)
	}
	serveEnv := envRead(t, "serve")
	for _, dir := range overlays {
		name := filepath.Base(dir)
		if strings.HasPrefix(name, "shared-") {
			continue // TestKubernetesSharedIndex
		}
		t.Run(name, func(t *testing.T) {
			objs := decodeManifests(t, name, kustomizeBuild(t, dir))
			namespaces := map[string]bool{}
			for _, o := range objs {
				if n, ok := o.(*corev1.Namespace); ok {
					namespaces[n.Name] = true
				}
			}
			for _, o := range objs {
				m, err := meta.Accessor(o)
				if _, isNS := o.(*corev1.Namespace); err != nil || isNS {
					continue
				}
				if !namespaces[m.GetNamespace()] {
					t.Errorf("%T %s: namespace %q is not created by the overlay", o, m.GetName(), m.GetNamespace())
				}
			}
			cms := map[string]*corev1.ConfigMap{}
			accounts := map[string]bool{}
			var sets []*appsv1.StatefulSet
			var pdbs []*policyv1.PodDisruptionBudget
			var hpas []*autoscalingv2.HorizontalPodAutoscaler
			var services []*corev1.Service
			for _, o := range objs {
				switch v := o.(type) {
				case *corev1.ConfigMap:
					cms[v.Name] = v
				case *corev1.ServiceAccount:
					accounts[v.Name] = true
				case *appsv1.StatefulSet:
					sets = append(sets, v)
				case *appsv1.Deployment:
					checkPodSpec(t, "Deployment "+v.Name, &v.Spec.Template.Spec, true)
				case *policyv1.PodDisruptionBudget:
					pdbs = append(pdbs, v)
				case *autoscalingv2.HorizontalPodAutoscaler:
					hpas = append(hpas, v)
				case *corev1.Service:
					services = append(services, v)
				}
			}
			if len(sets) != 1 {
				t.Fatalf("want one schemaq StatefulSet, have %d", len(sets))
			}
			ss := sets[0]
			spec := &ss.Spec.Template.Spec
			checkPodSpec(t, "StatefulSet "+ss.Name, spec, true)
			if !accounts[spec.ServiceAccountName] {
				t.Errorf("ServiceAccount %q is not in the build", spec.ServiceAccountName)
			}
			sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(ss.Spec.Template.Labels)) || sel.Empty() {
				t.Errorf("StatefulSet selector %v does not select its pods %v (%v)", ss.Spec.Selector, ss.Spec.Template.Labels, err)
			}
			governed := false
			for _, s := range services {
				if s.Name == ss.Spec.ServiceName && s.Spec.ClusterIP == corev1.ClusterIPNone {
					governed = true
				}
				if s.Labels["app.kubernetes.io/name"] == "schemaq" && !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(ss.Spec.Template.Labels)) {
					t.Errorf("Service %s selects no schemaq pod", s.Name)
				}
			}
			if !governed {
				t.Errorf("StatefulSet's serviceName %q is not a headless Service in the build", ss.Spec.ServiceName)
			}
			for _, p := range pdbs {
				ps, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
				if err != nil || ps.Empty() || !ps.Matches(labels.Set(ss.Spec.Template.Labels)) {
					t.Errorf("PodDisruptionBudget %s does not select the replicas", p.Name)
				}
			}
			if len(pdbs) == 0 {
				t.Error("no PodDisruptionBudget")
			}
			for _, h := range hpas {
				if h.Spec.ScaleTargetRef.Kind != "StatefulSet" || h.Spec.ScaleTargetRef.Name != ss.Name {
					t.Errorf("HorizontalPodAutoscaler %s targets %+v", h.Name, h.Spec.ScaleTargetRef)
				}
				if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
					t.Errorf("HorizontalPodAutoscaler %s: at least two replicas keep queries answered", h.Name)
				}
			}
			if name == "prod" && (len(hpas) == 0 || *hpas[0].Spec.MinReplicas < 3) {
				t.Error("prod: an autoscaler keeping at least three replicas")
			}
			// An autoscaled workload carries no count: one would reset the
			// autoscaler's on every kubectl apply.
			if len(hpas) > 0 && ss.Spec.Replicas != nil {
				t.Errorf("StatefulSet %s sets replicas: %d, which its HorizontalPodAutoscaler owns", ss.Name, *ss.Spec.Replicas)
			}

			c := spec.Containers[0]
			vars := podEnv(t, c, ss.Name+"-0", cms)
			for k := range vars {
				// OTEL_* are the OpenTelemetry SDK's own (pkg/tracing).
				if !serveEnv[k] && !strings.HasPrefix(k, "OTEL_") {
					t.Errorf("container %s sets %s, which `schemaq %s` does not read", c.Name, k, c.Args[0])
				}
			}
			mounts := map[string]bool{}
			for _, m := range c.VolumeMounts {
				mounts[m.MountPath] = true
			}
			if !mounts[vars["SCHEMAQ_DATA_DIR"]] || !mounts["/tmp"] {
				t.Errorf("the data dir %q and /tmp must be volumes (the root is read-only): %v", vars["SCHEMAQ_DATA_DIR"], mounts)
			}
			if vars["SCHEMAQ_METRICS_ADDR"] != fmt.Sprintf(":%d", c.Ports[0].ContainerPort) {
				t.Errorf("SCHEMAQ_METRICS_ADDR %q is not the metrics port %d", vars["SCHEMAQ_METRICS_ADDR"], c.Ports[0].ContainerPort)
			}
			if t.Failed() {
				return
			}

			// Run the pod's container against a real NATS that requires
			// the token.
			if vars["SCHEMAQ_NATS_TOKEN"] != k8sTestToken {
				t.Fatalf("the pod does not present the NATS token of the Secret schemaq-nats")
			}
			natsURL := natsFor(t, vars)
			vars["SCHEMAQ_NATS_URL"] = natsURL
			vars["SCHEMAQ_DATA_DIR"] = t.TempDir()
			vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
			if vars["SCHEMAQ_HTTP_ADDR"] != fmt.Sprintf(":%d", containerPort(c, "http")) || vars["SCHEMAQ_HTTP_TOKEN"] != k8sTestHTTPToken {
				t.Fatalf("the pod serves no HTTP API on its http port with the Secret schemaq-http's token: %q", vars["SCHEMAQ_HTTP_ADDR"])
			}
			httpAddr := freePort(t)
			vars["SCHEMAQ_HTTP_ADDR"] = httpAddr
			startService(t, ss.Name+"-0", c.Args, vars)
			probe := []string{"healthcheck", "--path", c.ReadinessProbe.HTTPGet.Path}
			testenv.Eventually(t, 30*time.Second, "the readiness probe passes", func() bool {
				_, err := runVars(context.Background(), probe, vars)
				return err == nil
			})
			runExampleJob(t, natsURL)
			checkHTTPAPI(t, httpAddr, k8sTestHTTPToken)
		})
	}
}

// natsFor is the NATS an overlay's pods run against in a test: requiring
// the token, and as many JetStream servers as its SCHEMAQ_STREAM_REPLICAS
// asks (the prod overlays keep three copies).
func natsFor(t *testing.T, vars map[string]string) string {
	t.Helper()
	if n, _ := strconv.Atoi(vars["SCHEMAQ_STREAM_REPLICAS"]); n > 1 {
		return testenv.ClusterURLs(testenv.NATSCluster(t, n, testenv.ClusterToken(k8sTestToken)))
	}
	return testenv.NATSWith(t, natsembed.Options{Token: k8sTestToken}).ClientURL()
}

// runExampleJob runs k8s/examples' Job with the shop migrations mounted.
func runExampleJob(t *testing.T, natsURL string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(k8sDir, "examples", "publish-migrations-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, "publish-migrations-job.yaml", raw)
	if len(objs) != 1 {
		t.Fatalf("want one Job, have %d objects", len(objs))
	}
	job, ok := objs[0].(*batchv1.Job)
	if !ok {
		t.Fatalf("want a Job, have %T", objs[0])
	}
	spec := &job.Spec.Template.Spec
	checkPodSpec(t, "Job "+job.Name, spec, false)
	c := spec.Containers[0]
	args := append([]string(nil), c.Args...)
	for _, m := range c.VolumeMounts {
		for i, a := range args {
			if a == m.MountPath {
				args[i] = filepath.Join("..", "..", "examples", "shop", "migrations")
			}
		}
	}
	vars := podEnv(t, c, job.Name, nil)
	vars["SCHEMAQ_NATS_URL"] = natsURL
	out, err := runVars(context.Background(), args, vars)
	if err != nil || !strings.Contains(out, "catalog shop is at version 6") {
		t.Fatalf("Job %s %v: %v\n%s", job.Name, args, err, out)
	}
	testenv.Eventually(t, 20*time.Second, "the replica answers from the published schema", func() bool {
		out, _, code := runVars2(t, []string{"search", "--db", "shop", "orders per customer", "--kind", "table", "--k", "3"},
			map[string]string{"SCHEMAQ_NATS_URL": natsURL, "SCHEMAQ_NATS_TOKEN": k8sTestToken})
		return code == exitOK && strings.Contains(out, "public.orders")
	})
}

// TestKubernetesTemplates decodes the files applied by hand: the Secret
// template strictly, the ServiceMonitor (a CRD, no Go type here) for the
// fields that must line up with the base.
func TestKubernetesTemplates(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(k8sDir, "base", "secret.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs := decodeManifests(t, "secret.example.yaml", raw)
	sec, ok := objs[0].(*corev1.Secret)
	if !ok {
		t.Fatalf("secret.example.yaml: want a Secret, have %T", objs[0])
	}
	read := envRead(t, "serve")
	for k := range sec.StringData {
		if !read[k] {
			t.Errorf("secret.example.yaml sets %s, which `schemaq serve` does not read", k)
		}
	}
	built := string(kustomizeBuild(t, filepath.Join(k8sDir, "base")))
	if !strings.Contains(built, "name: "+sec.Name+"\n") {
		t.Errorf("the base does not refer to the Secret %s", sec.Name)
	}
	sm, err := os.ReadFile(filepath.Join(k8sDir, "examples", "servicemonitor.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: ServiceMonitor", "- port: metrics", "app.kubernetes.io/component: metrics"} {
		if !bytes.Contains(sm, []byte(want)) {
			t.Errorf("servicemonitor.yaml lacks %q", want)
		}
	}
	if !strings.Contains(built, "app.kubernetes.io/component: metrics") {
		t.Error("no Service carries the label the ServiceMonitor selects")
	}
}

// TestKubernetesNetworkPolicies: in every overlay, each schemaq workload
// is selected by a NetworkPolicy that lets in only the metrics port, the
// development NATS and Redis take clients from schemaq's pods alone
// (which carry the label those policies name), and the development NATS
// requires the token of the Secret schemaq-nats.
func TestKubernetesNetworkPolicies(t *testing.T) {
	overlays, err := filepath.Glob(filepath.Join(k8sDir, "overlays", "*"))
	if err != nil || len(overlays) < 4 {
		t.Fatalf("overlays: %v %v", overlays, err)
	}
	for _, dir := range overlays {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs := decodeManifests(t, filepath.Base(dir), kustomizeBuild(t, dir))
			var policies []*networkingv1.NetworkPolicy
			type workload struct {
				name   string
				labels map[string]string
				image  string
			}
			var workloads []workload
			for _, o := range objs {
				switch v := o.(type) {
				case *networkingv1.NetworkPolicy:
					policies = append(policies, v)
				case *appsv1.Deployment:
					workloads = append(workloads, workload{"Deployment " + v.Name, v.Spec.Template.Labels, v.Spec.Template.Spec.Containers[0].Image})
				case *appsv1.StatefulSet:
					workloads = append(workloads, workload{"StatefulSet " + v.Name, v.Spec.Template.Labels, v.Spec.Template.Spec.Containers[0].Image})
				}
			}
			selecting := func(podLabels map[string]string) *networkingv1.NetworkPolicy {
				for _, p := range policies {
					sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
					if err == nil && !sel.Empty() && sel.Matches(labels.Set(podLabels)) {
						return p
					}
				}
				return nil
			}
			for _, o := range objs {
				if d, ok := o.(*appsv1.Deployment); ok && d.Name == "nats" {
					c := d.Spec.Template.Spec.Containers[0]
					if !slices.Contains(c.Args, "--auth") || len(c.Env) == 0 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.SecretKeyRef == nil ||
						!strings.HasPrefix(c.Env[0].ValueFrom.SecretKeyRef.Name, "schemaq-nats") {
						t.Errorf("the development NATS does not require the token of the Secret schemaq-nats: %v %+v", c.Args, c.Env)
					}
				}
			}
			for _, w := range workloads {
				p := selecting(w.labels)
				if p == nil {
					t.Errorf("%s: no NetworkPolicy selects its pods", w.name)
					continue
				}
				switch {
				case strings.Contains(w.image, "schemaq"):
					if w.labels["app.kubernetes.io/part-of"] != "schemaq" {
						t.Errorf("%s: pods lack app.kubernetes.io/part-of=schemaq, which NATS and Redis admit", w.name)
					}
					// Metrics, and the HTTP API where the pods serve it
					// (each request needs its token).
					for _, r := range p.Spec.Ingress {
						if len(r.Ports) != 1 || r.Ports[0].Port == nil || (r.Ports[0].Port.String() != "metrics" && r.Ports[0].Port.String() != "http") {
							t.Errorf("%s: NetworkPolicy %s lets in more than the metrics and HTTP ports: %+v", w.name, p.Name, r.Ports)
						}
						if r.Ports[0].Port != nil && r.Ports[0].Port.String() == "http" && !servesHTTP(objs, w.labels) {
							t.Errorf("%s: NetworkPolicy %s lets in an HTTP port its pods do not serve", w.name, p.Name)
						}
					}
				default: // the development NATS and Redis
					clients := false
					for _, r := range p.Spec.Ingress {
						for _, f := range r.From {
							if f.PodSelector != nil && f.PodSelector.MatchLabels["app.kubernetes.io/part-of"] == "schemaq" {
								clients = true
							}
						}
					}
					if !clients {
						t.Errorf("%s: NetworkPolicy %s does not limit its clients to schemaq's pods", w.name, p.Name)
					}
				}
			}
		})
	}
}

// containerPort is the number of a container's named port, or 0.
func containerPort(c corev1.Container, name string) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// checkHTTPAPI searches over a pod's HTTP API with its token, as a caller
// through the Service schemaq-http would, and is refused without it.
func checkHTTPAPI(t *testing.T, addr, token string) {
	t.Helper()
	search := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/search", strings.NewReader(`{"database":"shop","question":"payments"}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var status int
	var body string
	testenv.Eventually(t, 30*time.Second, "the HTTP API answers a search", func() bool {
		status, body = search(token)
		return status == http.StatusOK && strings.Contains(body, "public.payments")
	})
	if status, _ := search(""); status != http.StatusUnauthorized {
		t.Errorf("a search without the token: %d, want 401", status)
	}
}

// servesHTTP reports whether the workload whose pods carry podLabels has
// a port named http.
func servesHTTP(objs []kruntime.Object, podLabels map[string]string) bool {
	for _, o := range objs {
		var tpl *corev1.PodTemplateSpec
		switch v := o.(type) {
		case *appsv1.Deployment:
			tpl = &v.Spec.Template
		case *appsv1.StatefulSet:
			tpl = &v.Spec.Template
		default:
			continue
		}
		if !labels.SelectorFromSet(podLabels).Matches(labels.Set(tpl.Labels)) {
			continue
		}
		for _, c := range tpl.Spec.Containers {
			if containerPort(c, "http") != 0 {
				return true
			}
		}
	}
	return false
}
