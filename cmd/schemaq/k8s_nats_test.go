package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// TestKubernetesNATSCluster: k8s/nats-cluster is three JetStream
// servers that flush every write before acknowledging it, routed to each
// other by pod name, one per node, drained one at a time; its config is
// read by nats-server's own parser.
func TestKubernetesNATSCluster(t *testing.T) {
	objs := decodeManifests(t, "nats-cluster", kustomizeBuild(t, filepath.Join(k8sDir, "nats-cluster")))
	var ss *appsv1.StatefulSet
	var conf string
	services := map[string]*corev1.Service{}
	var pdb *policyv1.PodDisruptionBudget
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.StatefulSet:
			ss = v
		case *corev1.ConfigMap:
			conf = v.Data["nats.conf"]
		case *corev1.Service:
			services[v.Name] = v
		case *policyv1.PodDisruptionBudget:
			pdb = v
		}
	}
	if ss == nil || ss.Spec.Replicas == nil || *ss.Spec.Replicas != 3 {
		t.Fatalf("want a StatefulSet of three servers, have %+v", ss)
	}
	checkPodSpec(t, "StatefulSet nats", &ss.Spec.Template.Spec, true)
	if a := ss.Spec.Template.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Error("the servers must be spread one per node")
	}
	if h := services[ss.Spec.ServiceName]; h == nil || h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		t.Errorf("the routes' Service %q must be headless and publish pods before they are ready", ss.Spec.ServiceName)
	}
	if services["nats"] == nil {
		t.Error("no Service nats for clients (SCHEMAQ_NATS_URL: nats://nats:4222)")
	}
	if pdb == nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Error("a PodDisruptionBudget must keep two of three servers, the quorum")
	}
	if len(ss.Spec.VolumeClaimTemplates) == 0 {
		t.Error("JetStream's store must be a persistent volume")
	}

	// nats-server reads the config as the pods do.
	t.Setenv("POD_NAME", "nats-0")
	t.Setenv("NATS_TOKEN", "s3cret")
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses the config: %v", err)
	}
	if !opts.JetStream || !opts.SyncAlways || opts.StoreDir != "/data" {
		t.Errorf("jetstream %v, sync always %v, store %q: want JetStream on /data, every write flushed before its ack", opts.JetStream, opts.SyncAlways, opts.StoreDir)
	}
	if opts.ServerName != "nats-0" || opts.Authorization != "s3cret" || opts.Cluster.Name != "schemaq" || len(opts.Routes) != 3 {
		t.Errorf("server %q, token set %v, cluster %q, %d routes", opts.ServerName, opts.Authorization != "", opts.Cluster.Name, len(opts.Routes))
	}
	for i, r := range opts.Routes {
		if want := "nats-" + string(rune('0'+i)) + "." + ss.Spec.ServiceName + ":6222"; r.Host != want {
			t.Errorf("route %d is %s, want %s", i, r.Host, want)
		}
	}
	if !strings.Contains(conf, "Jepsen") {
		t.Error("the config must say why it flushes every write")
	}
}
