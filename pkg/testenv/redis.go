package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

func startRedis(tb testing.TB, password string) *Redis {
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
	s := &Redis{tb: tb, bin: bin, dir: tb.TempDir(), port: port, password: password}
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
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log")}
	if s.password != "" {
		args = append(args, "--requirepass", s.password)
	}
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
