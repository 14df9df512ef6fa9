package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Postgres is a throwaway PostgreSQL cluster for tests that hold the
// catalog against the real thing. It listens on a Unix socket only.
type Postgres struct {
	bin    string
	sock   string
	dir    string
	cred   *syscall.Credential // who the server runs as, when we are root
	server *exec.Cmd
	err    error // why there is no server; the tests skip with it
}

// The cluster is shared by the package's tests: started by the first
// that needs it, stopped by TestMain.
var (
	pgOnce   sync.Once
	pgShared *Postgres
)

// Main runs a package's tests and stops the cluster they shared. Use it
// from TestMain: os.Exit(testenv.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if pgShared != nil {
		pgShared.stop()
	}
	return code
}

// StartPostgres returns the package's cluster, started from the
// PostgreSQL binaries in SCHEMAQ_TEST_POSTGRES_BIN, on PATH or under
// /usr/lib/postgresql, or skips the test when there are none.
// PostgreSQL refuses to run as root, so as root it runs as the postgres
// user the Debian package creates. SCHEMAQ_REQUIRE_POSTGRES=1 (CI) makes
// a missing server a failure.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	pgOnce.Do(func() { pgShared = newPostgres() })
	if pgShared.err != nil {
		if pgShared.server == nil && pgShared.bin == "" && os.Getenv("SCHEMAQ_REQUIRE_POSTGRES") == "" {
			t.Skip(pgShared.err)
		}
		t.Fatal(pgShared.err)
	}
	return pgShared
}

func newPostgres() *Postgres {
	bin := findPostgres()
	if bin == "" {
		return &Postgres{err: errors.New("PostgreSQL is not installed (apt-get install postgresql); set SCHEMAQ_TEST_POSTGRES_BIN to its bin directory")}
	}
	p := &Postgres{bin: bin}
	dir, err := os.MkdirTemp("", "schemaq-pg-")
	if err != nil {
		p.err = err
		return p
	}
	p.dir, p.sock = dir, dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return &Postgres{dir: dir, err: errors.New("running as root and there is no postgres user to run PostgreSQL as")}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			p.err = err
			return p
		}
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	data := filepath.Join(dir, "data")
	if out, err := p.command(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		p.err = fmt.Errorf("initdb: %v\n%s", err, out)
		return p
	}
	var log bytes.Buffer
	p.server = p.command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off", "-p", "5432")
	p.server.Stdout, p.server.Stderr = &log, &log
	if err := p.server.Start(); err != nil {
		p.err = fmt.Errorf("start postgres: %v", err)
		return p
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := p.Query("postgres", "SELECT 1"); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			p.err = fmt.Errorf("postgres did not start:\n%s", log.String())
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *Postgres) stop() {
	if p.server != nil && p.server.Process != nil {
		_ = p.server.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { _ = p.server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.server.Process.Kill()
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

func findPostgres() string {
	if d := os.Getenv("SCHEMAQ_TEST_POSTGRES_BIN"); d != "" {
		return d
	}
	if p, err := exec.LookPath("initdb"); err == nil && exists(filepath.Join(filepath.Dir(p), "postgres")) {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Sort(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if exists(filepath.Join(dirs[i], "initdb")) && exists(filepath.Join(dirs[i], "postgres")) {
			return dirs[i]
		}
	}
	return ""
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		cmd.Env = append(os.Environ(), "HOME="+p.dir)
		cmd.Dir = p.dir
	}
	return cmd
}

func (p *Postgres) psqlPath() string {
	if exists(filepath.Join(p.bin, "psql")) {
		return filepath.Join(p.bin, "psql")
	}
	return "psql"
}

// Query runs SQL in db and returns its rows, fields separated by \x1f and
// rows by \x1e, so that values may hold newlines and tabs.
func (p *Postgres) Query(db, sql string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.psqlPath(), "-h", p.sock, "-U", "postgres", "-d", db, "-X", "-q", "-A", "-t",
		"-v", "ON_ERROR_STOP=1", "-F", "\x1f", "-R", "\x1e", "-f", "-")
	cmd.Stdin = strings.NewReader(sql)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("psql: %v: %s", err, errb.String())
	}
	var rows [][]string
	for _, r := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\x1e") {
		if r = strings.TrimPrefix(r, "\n"); r != "" {
			rows = append(rows, strings.Split(r, "\x1f"))
		}
	}
	return rows, nil
}

// DSN is a connection string for db as user, over the cluster's socket
// (authentication is trust: no password).
func (p *Postgres) DSN(db, user string) string {
	return fmt.Sprintf("host=%s port=5432 user=%s dbname=%s sslmode=disable", p.sock, user, db)
}

func (p *Postgres) CreateDB(t testing.TB, name string) {
	t.Helper()
	if _, err := p.Query("postgres", "CREATE DATABASE "+`"`+strings.ReplaceAll(name, `"`, `""`)+`"`); err != nil {
		t.Fatal(err)
	}
}

// Major is the server's major version.
func (p *Postgres) Major(t testing.TB) int {
	rows, err := p.Query("postgres", "SHOW server_version_num")
	if err != nil || len(rows) == 0 {
		t.Fatalf("server version: %v", err)
	}
	v, _ := strconv.Atoi(rows[0][0])
	return v / 10000
}

// DumpSchema is pg_dump's schema-only script of db.
func (p *Postgres) DumpSchema(db string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dump := "pg_dump"
	if exists(filepath.Join(p.bin, "pg_dump")) {
		dump = filepath.Join(p.bin, "pg_dump")
	}
	cmd := exec.CommandContext(ctx, dump, "-h", p.sock, "-U", "postgres", "-s", db)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pg_dump: %v: %s", err, errb.String())
	}
	return out.String(), nil
}
