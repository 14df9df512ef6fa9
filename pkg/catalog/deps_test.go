package catalog

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsArePure keeps the catalog free of I/O and infrastructure: it
// may import the standard library (minus os, net and the like) and
// libpg_query's bindings only.
func TestImportsArePure(t *testing.T) {
	allowed := map[string]bool{
		"github.com/pganalyze/pg_query_go/v5":             true,
		"github.com/pganalyze/pg_query_go/v5/parser":      true,
		"google.golang.org/protobuf/reflect/protoreflect": true,
		"github.com/schemaq/schemaq/pkg/pgtree":           true,
		// Word forms (singulars) for the joins names imply: pure
		// functions of strings.
		"github.com/schemaq/schemaq/pkg/text": true,
		// The wire forms of what the catalog records (its history).
		"github.com/schemaq/schemaq/events": true,
	}
	banned := map[string]bool{"os": true, "net": true, "net/http": true, "os/exec": true, "log": true}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pf.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first, _, _ := strings.Cut(path, "/")
			if (strings.Contains(first, ".") && !allowed[path]) || banned[path] {
				t.Errorf("%s imports %s: package catalog is pure (stdlib and pg_query only, no I/O or clock)", f, path)
			}
		}
		// time is for the interpreter's Limits, a duration its context
		// bounds; the package reads no clock of its own.
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, clock := range []string{"time.Now", "time.Since", "time.Until", "time.Sleep", "time.After"} {
			if strings.Contains(string(src), clock+"(") {
				t.Errorf("%s calls %s: package catalog reads no clock", f, clock)
			}
		}
	}
}
