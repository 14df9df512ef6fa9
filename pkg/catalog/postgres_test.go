package catalog

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

	"github.com/schemaq/schemaq/pkg/sharedtest"
)

// postgres is a throwaway PostgreSQL cluster for tests that hold the
// catalog against the real thing. It listens on a Unix socket only.
type postgres struct {
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
	pgShared *postgres
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgShared != nil {
		pgShared.stop()
	}
	os.Exit(code)
}

// startPostgres returns the package's cluster, started from the
// PostgreSQL binaries in SCHEMAQ_TEST_POSTGRES_BIN, on PATH or under
// /usr/lib/postgresql, or skips the test when there are none.
// PostgreSQL refuses to run as root, so as root it runs as the postgres
// user the Debian package creates. SCHEMAQ_REQUIRE_POSTGRES=1 (CI) makes
// a missing server a failure.
func startPostgres(t *testing.T) *postgres {
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

func newPostgres() *postgres {
	bin := findPostgres()
	if bin == "" {
		return &postgres{err: errors.New("PostgreSQL is not installed (apt-get install postgresql); set SCHEMAQ_TEST_POSTGRES_BIN to its bin directory")}
	}
	p := &postgres{bin: bin}
	dir, err := os.MkdirTemp("", "schemaq-pg-")
	if err != nil {
		p.err = err
		return p
	}
	p.dir, p.sock = dir, dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return &postgres{dir: dir, err: errors.New("running as root and there is no postgres user to run PostgreSQL as")}
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
		if _, err := p.psql("postgres", "SELECT 1"); err == nil {
			return p
		}
		if time.Now().After(deadline) {
			p.err = fmt.Errorf("postgres did not start:\n%s", log.String())
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *postgres) stop() {
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

func (p *postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
		cmd.Env = append(os.Environ(), "HOME="+p.dir)
		cmd.Dir = p.dir
	}
	return cmd
}

func (p *postgres) psqlPath() string {
	if exists(filepath.Join(p.bin, "psql")) {
		return filepath.Join(p.bin, "psql")
	}
	return "psql"
}

// psql runs SQL in db and returns its rows, fields separated by \x1f and
// rows by \x1e, so that values may hold newlines and tabs.
func (p *postgres) psql(db, sql string) ([][]string, error) {
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

func (p *postgres) createDB(t *testing.T, name string) {
	t.Helper()
	if _, err := p.psql("postgres", "CREATE DATABASE "+QuoteIdent(name)); err != nil {
		t.Fatal(err)
	}
}

// pgColumn is what PostgreSQL reports for one column of a table or view.
type pgColumn struct {
	typ, def string
	notNull  bool
	view     bool
}

// describe reads every user column of every table and view in db, keyed
// "schema.relation.column", and every key as "schema.relation key name:
// columns".
func (p *postgres) describe(t *testing.T, db string) (map[string]pgColumn, []string) {
	t.Helper()
	// A database may set its own search_path (tbls' does); the catalog
	// prints names as the default one sees them.
	rows, err := p.psql(db, `SET search_path = "$user", public;
SELECT n.nspname, c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       CASE WHEN a.attgenerated = '' THEN coalesce(pg_get_expr(d.adbin, d.adrelid), '') ELSE '' END
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend e WHERE e.objid = c.oid AND e.deptype = 'e')
ORDER BY 1, 2, a.attnum`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]pgColumn{}
	for _, r := range rows {
		view := r[2] == "v" || r[2] == "m"
		cols[r[0]+"."+r[1]+"."+r[3]] = pgColumn{typ: r[4], notNull: r[5] == "t" && !view, def: r[6], view: view}
	}
	rows, err = p.psql(db, `
SELECT n.nspname, c.relname, con.contype, con.conname,
       array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(num, ord)
                             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.num ORDER BY k.ord), ',')
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE con.contype IN ('p', 'u', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
ORDER BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rows {
		keys = append(keys, fmt.Sprintf("%s.%s %s %s: %s", r[0], r[1], r[2], r[3], r[4]))
	}
	return cols, keys
}

// catalogColumns is describe's view of a catalog.
func catalogColumns(c *Catalog) (map[string]pgColumn, []string) {
	cols := map[string]pgColumn{}
	var keys []string
	for _, tb := range c.Tables() {
		for _, col := range tb.Columns {
			cols[tb.Schema+"."+tb.Name+"."+col.Name] = pgColumn{typ: col.Type, notNull: col.NotNull, def: col.Default}
		}
		if pk := tb.PrimaryKey; pk != nil {
			keys = append(keys, fmt.Sprintf("%s.%s p %s: %s", tb.Schema, tb.Name, pk.Name, strings.Join(pk.Columns, ",")))
		}
		for _, k := range tb.Unique {
			keys = append(keys, fmt.Sprintf("%s.%s u %s: %s", tb.Schema, tb.Name, k.Name, strings.Join(k.Columns, ",")))
		}
		for _, fk := range tb.ForeignKeys {
			keys = append(keys, fmt.Sprintf("%s.%s f %s: %s", tb.Schema, tb.Name, fk.Name, strings.Join(fk.Columns, ",")))
		}
	}
	for _, v := range c.Views() {
		for _, col := range v.Columns {
			cols[v.Schema+"."+v.Name+"."+col.Name] = pgColumn{typ: col.Type, view: true}
		}
	}
	slices.Sort(keys)
	return cols, keys
}

// diffCatalog lists every difference between what PostgreSQL reports and
// the catalog, one line each, sorted.
func diffCatalog(pgCols map[string]pgColumn, pgKeys []string, c *Catalog) []string {
	ours, ourKeys := catalogColumns(c)
	var diffs []string
	for k, want := range pgCols {
		got, ok := ours[k]
		switch {
		case !ok:
			diffs = append(diffs, k+": missing from the catalog")
		case got.typ != want.typ:
			diffs = append(diffs, fmt.Sprintf("%s: type %q, PostgreSQL %q", k, got.typ, want.typ))
		case got.notNull != want.notNull:
			diffs = append(diffs, fmt.Sprintf("%s: not null %v, PostgreSQL %v", k, got.notNull, want.notNull))
		case got.def != want.def:
			diffs = append(diffs, fmt.Sprintf("%s: default %q, PostgreSQL %q", k, got.def, want.def))
		}
	}
	for k := range ours {
		if _, ok := pgCols[k]; !ok {
			diffs = append(diffs, k+": not in PostgreSQL")
		}
	}
	for _, k := range pgKeys {
		if !slices.Contains(ourKeys, k) {
			diffs = append(diffs, "key "+k+": missing from the catalog")
		}
	}
	for _, k := range ourKeys {
		if !slices.Contains(pgKeys, k) {
			diffs = append(diffs, "key "+k+": not in PostgreSQL")
		}
	}
	slices.Sort(diffs)
	return diffs
}

// TestPostgresCorpus loads real-world schemas into PostgreSQL and holds
// the catalog built from the same SQL against what PostgreSQL reports for
// every table and view column (type, nullability, default) and every
// primary, unique and foreign key.
func TestPostgresCorpus(t *testing.T) {
	corpus := sharedtest.Path(t, "corpus")
	p := startPostgres(t)
	type input struct {
		name  string
		files []string // applied in order, each as one migration
	}
	inputs := []input{
		{"pagila", []string{"pagila/pagila-schema.sql"}},
		{"gisia", []string{"gisia/db/structure.sql"}},
		// The trailing ALTER ROLE names the database testdb.
		{"testdb", []string{"tbls-sample/testdata/ddl/postgres.sql"}},
	}
	order, err := os.ReadFile(filepath.Join(corpus, "lemmy", "ORDER.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL 15 applies Lemmy's history up to migration 247; the next
	// one needs PostgreSQL 16 syntax (see the corpus README).
	lemmy := input{name: "lemmy"}
	for _, f := range strings.Fields(string(order)) {
		if len(lemmy.files) == 247 && p.major(t) < 16 {
			break
		}
		lemmy.files = append(lemmy.files, filepath.Join("lemmy", f))
	}
	inputs = append(inputs, lemmy)
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			p.createDB(t, in.name)
			c := New(in.name)
			for i, f := range in.files {
				b, err := os.ReadFile(filepath.Join(corpus, f))
				if err != nil {
					t.Fatal(err)
				}
				sql := string(b)
				if len(in.files) > 1 {
					sql = "BEGIN;\n" + sql + "\n;\nCOMMIT;\n"
				}
				if _, err := p.psql(in.name, sql); err != nil {
					t.Fatalf("PostgreSQL refuses %s: %v", f, err)
				}
				next, err := c.Apply(f, string(b), Tolerant())
				if err != nil {
					t.Fatal(err)
				}
				c = next.Record(Applied{Seq: int64(i + 1), ID: f})
			}
			for _, d := range c.Drift() {
				t.Errorf("drift on a history PostgreSQL replays in full: %s", d)
			}
			cols, keys := p.describe(t, in.name)
			diffs := diffCatalog(cols, keys, c)
			for _, d := range diffs {
				t.Error(d)
			}
			t.Logf("%d columns, %d keys compared; %d differ", len(cols), len(keys), len(diffs))
		})
	}
}

func (p *postgres) major(t *testing.T) int {
	rows, err := p.psql("postgres", "SHOW server_version_num")
	if err != nil || len(rows) == 0 {
		t.Fatalf("server version: %v", err)
	}
	v, _ := strconv.Atoi(rows[0][0])
	return v / 10000
}

// TestPostgresDrift replays the helper-function fixture, whose DDL a
// static replay cannot see, in PostgreSQL and in a tolerant catalog:
// every column PostgreSQL has is in the catalog, and the only differences
// are the types of the columns the catalog had to infer.
func TestPostgresDrift(t *testing.T) {
	p := startPostgres(t)
	p.createDB(t, "tenant")
	c := replayFixture(t, Tolerant())
	files, _ := filepath.Glob(filepath.Join("testdata", "tenant-helper", "*.sql"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.psql("tenant", "BEGIN;\n"+string(b)+"\n;\nCOMMIT;\n"); err != nil {
			t.Fatalf("PostgreSQL refuses %s: %v", f, err)
		}
	}
	cols, keys := p.describe(t, "tenant")
	inferred := 0
	for _, d := range diffCatalog(cols, keys, c) {
		name, _, _ := strings.Cut(d, ":")
		parts := strings.SplitN(name, ".", 3)
		tb := c.Table(QualName{parts[0], parts[1]})
		if tb == nil || len(parts) < 3 || tb.Column(parts[2]) == nil || !tb.Column(parts[2]).Inferred || !strings.Contains(d, `type ""`) {
			t.Error(d)
			continue
		}
		inferred++
	}
	if inferred != 3 {
		t.Errorf("%d inferred columns differ from PostgreSQL only by their type, want the 3 tenant_id columns", inferred)
	}
}
