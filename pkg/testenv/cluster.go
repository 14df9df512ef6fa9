package testenv

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// NATSCluster starts n JetStream servers clustered on loopback, each with
// its store in a temp dir, and waits until their JetStream cluster has a
// leader that counts every server as a current peer (before that, placing
// n replicas fails for want of peers). Servers are shut down when the test ends (a test may shut one
// down sooner: a node dying).
func NATSCluster(t testing.TB, n int, opts ...ClusterOption) []*server.Server {
	t.Helper()
	var servers []*server.Server
	var token string
	var err error
	// The route ports are chosen free and then given up before the servers
	// bind them: under a loaded CI another process can take one between,
	// and that server never listens. A fresh set of ports is tried then.
	for attempt := 1; ; attempt++ {
		servers, token, err = startCluster(t, n, opts)
		if err == nil {
			break
		}
		for _, ns := range servers {
			ns.Shutdown()
		}
		if attempt == 3 {
			t.Fatalf("cluster of %d: %v", n, err)
		}
		t.Logf("cluster of %d, attempt %d: %v; trying new ports", n, attempt, err)
	}
	for _, ns := range servers {
		t.Cleanup(ns.Shutdown)
	}
	Eventually(t, 30*time.Second, "a JetStream meta leader with every server as a current peer", func() bool {
		for _, ns := range servers {
			if ns.JetStreamIsLeader() && len(ns.JetStreamClusterPeers()) == n {
				return true
			}
		}
		return false
	})
	placeable(t, servers, n, token)
	return servers
}

// startCluster starts n servers routed to each other on ports free a
// moment ago and waits until each listens.
func startCluster(t testing.TB, n int, opts []ClusterOption) ([]*server.Server, string, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, "", err
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var servers []*server.Server
	var token string
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "schemaq-test", Host: "127.0.0.1", Port: ports[i]},
			Routes:     routes,
			NoLog:      true,
			NoSigs:     true,
		}
		for _, opt := range opts {
			opt(o)
		}
		token = o.Authorization
		ns, err := server.NewServer(o)
		if err != nil {
			return servers, "", err
		}
		go ns.Start()
		servers = append(servers, ns)
	}
	for _, ns := range servers {
		if !ns.ReadyForConnections(20 * time.Second) {
			return servers, "", fmt.Errorf("server %s did not start listening", ns.Name())
		}
	}
	return servers, token, nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("a free port: %w", err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	return ports, nil
}

// placeable waits until the cluster places a stream of n replicas: a
// leader can count every peer current before it counts every peer
// online for placement, and a test's first stream then fails with "no
// suitable peers for placement" (it did in CI).
func placeable(t testing.TB, servers []*server.Server, n int, token string) {
	t.Helper()
	var opts []nats.Option
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(ClusterURLs(servers), opts...)
	if err != nil {
		t.Fatalf("connect to place a probe stream: %v", err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	var last error
	Eventually(t, 30*time.Second, "a stream of every server's replica placed", func() bool {
		_, last = js.AddStream(&nats.StreamConfig{Name: "schemaq_placement_probe", Subjects: []string{"_schemaq.placement.probe"}, Replicas: n, Storage: nats.MemoryStorage})
		if last != nil {
			return false
		}
		last = js.DeleteStream("schemaq_placement_probe")
		return last == nil
	})
}

// ClusterURLs is the client URLs of servers, for a connection that fails
// over between them.
func ClusterURLs(servers []*server.Server) string {
	var urls []string
	for _, ns := range servers {
		if ns.Running() {
			urls = append(urls, ns.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// ClusterOption sets an option of every server of a NATSCluster.
type ClusterOption func(*server.Options)

// ClusterToken makes the servers' clients present token.
func ClusterToken(token string) ClusterOption {
	return func(o *server.Options) { o.Authorization = token }
}

// ClusterSyncAlways has JetStream flush every write before it
// acknowledges it (sync_interval: always).
func ClusterSyncAlways() ClusterOption {
	return func(o *server.Options) { o.SyncAlways = true }
}

// ClusterConnect connects to servers, moving to another of them at once
// when the one it uses dies (a test kills nodes under it); the connection
// closes with the test.
func ClusterConnect(t testing.TB, servers []*server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(ClusterURLs(servers), nats.Name(t.Name()), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Kill shuts down the server named name (a leader, as a stream's or a
// consumer's info names it): to its clients and peers, a node that
// vanished.
func Kill(t testing.TB, servers []*server.Server, name string) {
	t.Helper()
	for _, ns := range servers {
		if ns.Name() == name {
			ns.Shutdown()
			return
		}
	}
	t.Fatalf("no server is named %q", name)
}
