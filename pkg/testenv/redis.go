package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is one redis-server process.
type Redis struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	// password is required of clients when set.
	password string
	// extra are more redis-server arguments (--replicaof, say).
	extra []string
}

// StartRedisWithPassword starts a redis-server that requires password
// (requirepass), as a deployment's should.
func StartRedisWithPassword(tb testing.TB, password string) *Redis {
	tb.Helper()
	return startRedis(tb, password)
}

// StartRedis starts a redis-server and stops it when tb ends.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	return startRedis(tb, "")
}

func startRedis(tb testing.TB, password string, extra ...string) *Redis {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("SCHEMAQ_REQUIRE_REDIS") == "1" {
			tb.Fatalf("redis-server is required (SCHEMAQ_REQUIRE_REDIS=1) but not on PATH: %v", err)
		}
		tb.Skip("redis-server not installed (apt-get install -y redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Redis{tb: tb, bin: bin, dir: tb.TempDir(), port: port, password: password, extra: extra}
	s.Start()
	tb.Cleanup(s.Stop)
	return s
}

// Addr is host:port.
func (s *Redis) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the redis:// URL of the server.
func (s *Redis) URL() string { return "redis://" + s.Addr() + "/0" }

// Client returns a client of the server, closed when the test ends.
func (s *Redis) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, DisableIdentity: true, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	s.tb.Cleanup(func() { c.Close() })
	return c
}

// Start (re)starts the process on the same port and waits until it
// answers PING.
func (s *Redis) Start() {
	s.tb.Helper()
	// A replica's first sync starts at once, not after the default
	// five seconds' wait for others to join it.
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log"),
		"--repl-diskless-sync-delay", "0"}
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
	args = append(args, s.extra...)
	s.cmd = exec.Command(s.bin, args...)
	if err := s.cmd.Start(); err != nil {
		s.tb.Fatalf("start redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.password, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.tb.Fatalf("redis-server on %s did not answer: %v\n%s", s.Addr(), err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the process and waits for it; the data is gone with it.
func (s *Redis) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// String names the server in test output.
func (s *Redis) String() string { return fmt.Sprintf("redis-server %s", s.Addr()) }

// StartRedisReplica starts a redis-server replicating primary.
// It returns once writes to the primary reach the replica: a primary
// streams them only after the replica's first acknowledgement, which
// comes up to a second after the initial sync.
func StartRedisReplica(tb testing.TB, primary *Redis) *Redis {
	tb.Helper()
	r := startRedis(tb, "", "--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	c, p := r.Client(), primary.Client()
	marker := "testenv:replica:" + strconv.Itoa(r.port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := p.Set(context.Background(), marker, "1", 0).Err()
		if err == nil {
			err = c.Get(context.Background(), marker).Err()
		}
		if err == nil {
			p.Del(context.Background(), marker)
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("replica %s does not receive %s's writes: %v\n%s", r.Addr(), primary.Addr(), err, r.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartSentinels starts n Redis Sentinels (redis-server --sentinel)
// monitoring primary as master, quorum two, that call it down after a
// second; it returns their host:port addresses.
func StartSentinels(tb testing.TB, primary *Redis, master string, n int) []string {
	tb.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		dir := tb.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
			port, dir, filepath.Join(dir, "sentinel.log"), master, primary.port, master, master, master)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(primary.bin, conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start redis sentinel: %v", err)
		}
		tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		c := redis.NewSentinelClient(&redis.Options{Addr: addr})
		deadline := time.Now().Add(10 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			_, err := c.GetMasterAddrByName(ctx, master).Result()
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("sentinel on %s does not know master %s: %v", addr, master, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Close()
		addrs = append(addrs, addr)
	}
	return addrs
}

// Port is the server's port.
func (s *Redis) Port() int { return s.port }

// Log is the server's log so far, for a failing test to show.
func (s *Redis) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// StartRedisCluster starts n redis-server primaries as one Redis Cluster
// (no replicas), the slots split evenly between them, and returns once
// every node reports the cluster ok.
func StartRedisCluster(tb testing.TB, n int) []*Redis {
	tb.Helper()
	nodes := make([]*Redis, n)
	for i := range nodes {
		nodes[i] = startRedis(tb, "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000")
	}
	ctx := context.Background()
	for i, node := range nodes {
		c := node.Client()
		from, to := i*16384/n, (i+1)*16384/n-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err(); err != nil {
			tb.Fatalf("cluster: assign slots %d-%d to %s: %v", from, to, node, err)
		}
		if i > 0 {
			if err := nodes[0].Client().ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(node.port)).Err(); err != nil {
				tb.Fatalf("cluster: meet %s: %v", node, err)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, node := range nodes {
		c := node.Client()
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)+"\r") {
				break
			}
			if time.Now().After(deadline) {
				tb.Fatalf("cluster: %s is not ok: %v\n%s", node, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nodes
}

// ClusterClient is a Redis Cluster client seeded with nodes, closed when
// the test ends.
func ClusterClient(tb testing.TB, nodes []*Redis) *redis.ClusterClient {
	tb.Helper()
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr()
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	tb.Cleanup(func() { c.Close() })
	return c
}
