package pgtree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// The shapes that overflow libpg_query's C stack at 25,000 terms (each
// one killed the process with SIGSEGV before the bound), and the shapes
// the grammar's own stack refuses. If the bound lets one through, this
// test process dies, which fails the test as surely as an assertion.
func TestParseRefusesDeepInputBeforeC(t *testing.T) {
	r := strings.Repeat
	const n = 25_000
	cases := []struct {
		name, sql string
	}{
		{"plus in a default", "CREATE TABLE poison (c int DEFAULT 1" + r("+1", n) + ")"},
		{"concatenation", "SELECT 'a'" + r("||'a'", n)},
		{"casts", "SELECT 1" + r("::int", n)},
		{"collations", "SELECT x" + r(` COLLATE "C"`, n)},
		{"time zones", "SELECT x" + r(` AT TIME ZONE 'a'`, n)},
		{"chains inside brackets", "SELECT " + r("(1"+r("+1", 400)+"+", 60) + "1" + r(")", 60)},
		{"parentheses", "SELECT " + r("(", n) + "1" + r(")", n)},
		{"calls", "SELECT " + r("f(", n) + "1" + r(")", n)},
		{"arrays", "SELECT " + r("ARRAY[", n) + "1" + r("]", n)},
		{"second statement", "SELECT 1; SELECT 1" + r("-1", n)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.sql)
			var de *DepthError
			if !errors.As(err, &de) {
				t.Fatalf("Parse = %v, want a *DepthError", err)
			}
			if de.Offset <= 0 || de.Offset >= len(tc.sql) || de.Limit != MaxDepth {
				t.Errorf("DepthError = %+v, want an offset inside the input and limit %d", de, MaxDepth)
			}
		})
	}
}

// What looks deep to a naive count but is flat, or is opaque text, must
// parse: long lists, flattened AND/OR, CASE arms, strings, comments,
// dollar-quoted bodies.
func TestParseAcceptsWideAndQuotedInput(t *testing.T) {
	r := strings.Repeat
	const n = 5_000
	cases := []struct {
		name, sql string
	}{
		{"IN list", "SELECT x IN (1" + r(",1", n) + ")"},
		{"OR chain", "SELECT 1 FROM t WHERE x = 1" + r(" OR x = 1", n)},
		{"AND chain", "SELECT 1 FROM t WHERE x + 1 > 2" + r(" AND x + 1 > 2", n)},
		{"CASE arms", "SELECT CASE" + r(" WHEN x = 1 THEN 'a' || 'b'", n) + " ELSE 'c' END"},
		{"VALUES rows", "INSERT INTO t VALUES (1+1)" + r(",(1+1)", n)},
		{"wide table", "CREATE TABLE t (c0 int DEFAULT 1+1" + r(", c int DEFAULT 1+1", n) + ")"},
		{"many statements", r("SELECT 1+1;", n)},
		{"string", "SELECT '" + r("+", 4*n) + "'"},
		{"escape string", `SELECT E'\'` + r("+", 4*n) + "'"},
		{"quoted identifier", `SELECT "` + r("+", 4*n) + `"`},
		{"line comment", "SELECT 1 -- " + r("+", 4*n) + "\n"},
		{"nested block comment", "SELECT 1 /* /* */ " + r("+", 4*n) + " */"},
		{"function body", "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1" + r("+1", 4*n) + " $body$"},
		{"parameter then body", "PREPARE p AS SELECT $1 + 1; DO $$ BEGIN PERFORM 1" + r("+1", 4*n) + "; END $$"},
		{"chain at the bound", "SELECT 1" + r("+1", MaxDepth-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckDepth(tc.sql, MaxDepth); err != nil {
				t.Fatalf("CheckDepth = %v, want nil", err)
			}
			if _, err := Parse(tc.sql); err != nil {
				t.Fatalf("Parse = %v", err)
			}
		})
	}
}

func TestCheckDepthEdges(t *testing.T) {
	cases := []struct {
		name  string
		sql   string
		limit int
		want  int // offset of the refusal, -1 for none
	}{
		{"chain one past", "SELECT 1+2+3", 1, 10},
		{"brackets one past", "SELECT ((1))", 1, 8},
		{"separator resets", "SELECT 1+2, 3+4", 1, -1},
		{"closing resets", "SELECT (1+2)+3", 2, -1},
		{"unbalanced closers", ")))) SELECT 1+2+3", 1, 15},
		{"unterminated string", "SELECT 'a+b+c", 1, -1},
		{"unterminated dollar", "SELECT $x$ 1+2+3", 1, -1},
		{"identifier dollar", "SELECT a$b+1+1", 1, 12},
		{"keyword operators", "SELECT a IS NOT NULL", 1, 12},
		{"double colon", "SELECT 1::int::int", 1, 13},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDepth(tc.sql, tc.limit)
			var de *DepthError
			switch {
			case tc.want < 0 && err != nil:
				t.Fatalf("CheckDepth = %v, want nil", err)
			case tc.want >= 0 && !errors.As(err, &de):
				t.Fatalf("CheckDepth = %v, want a refusal at %d", err, tc.want)
			case tc.want >= 0 && de.Offset != tc.want:
				t.Fatalf("refused at %d (%q), want %d", de.Offset, tc.sql[de.Offset:], tc.want)
			}
		})
	}
}

// Real schemas and histories stay far below the bound: every SQL file of
// the shared corpus passes at a tenth of it.
func TestCheckDepthOnCorpus(t *testing.T) {
	root := filepath.Join(testenv.SharedDir(t), "corpus")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if err := CheckDepth(string(b), MaxDepth/10); err != nil {
			t.Errorf("%s: %v at %q", path, err, excerptAt(string(b), err.(*DepthError).Offset))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no .sql file under the corpus")
	}
	t.Logf("%d corpus files within %d", files, MaxDepth/10)
}

func excerptAt(s string, off int) string {
	lo, hi := max(0, off-60), min(len(s), off+20)
	return s[lo:hi]
}

func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{"SELECT 1+1", "$a$ x $a$", "E'\\''", "/* /* */", "'--'", `"a""b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		// Any input terminates, and a refusal points into the input.
		var de *DepthError
		if err := CheckDepth(sql, 3); errors.As(err, &de) && (de.Offset < 0 || de.Offset >= len(sql)) {
			t.Fatalf("offset %d outside %d bytes", de.Offset, len(sql))
		}
	})
}

func BenchmarkCheckDepth(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		sb.WriteString("CREATE TABLE t (id bigint PRIMARY KEY, name text NOT NULL DEFAULT 'x', total numeric(12,2) CHECK (total >= 0), created_at timestamptz DEFAULT now());\n")
	}
	sql := sb.String()
	b.SetBytes(int64(len(sql)))
	for b.Loop() {
		if err := CheckDepth(sql, MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse is the parse CheckDepth protects, on the same input, for
// scale: the scan must cost a small share of it.
func BenchmarkParse(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 2000; i++ {
		sb.WriteString("CREATE TABLE t (id bigint PRIMARY KEY, name text NOT NULL DEFAULT 'x', total numeric(12,2) CHECK (total >= 0), created_at timestamptz DEFAULT now());\n")
	}
	sql := sb.String()
	b.SetBytes(int64(len(sql)))
	for b.Loop() {
		if _, err := Parse(sql); err != nil {
			b.Fatal(err)
		}
	}
}
