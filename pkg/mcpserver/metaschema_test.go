package mcpserver_test

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// metaSchemaDir finds the JSON Schema 2020-12 meta-schema documents that
// the jsonschema-go module we depend on ships (its own tests use them),
// in the module cache, so that nothing of theirs is copied here.
func metaSchemaDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/jsonschema-go").Output()
	if err != nil {
		t.Skipf("cannot find the jsonschema-go module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "jsonschema", "meta-schemas", "draft2020-12")
	if _, err := os.Stat(filepath.Join(dir, "schema.json")); err != nil {
		t.Skipf("the 2020-12 meta-schema is not in the module: %v", err)
	}
	return dir
}

// TestToolSchemasValidateAgainstTheMetaSchema validates every tool's
// input and output schema, as a client receives it, against the JSON
// Schema 2020-12 meta-schema (with its vocabularies): valid JSON Schema,
// not only well-formed JSON.
func TestToolSchemasValidateAgainstTheMetaSchema(t *testing.T) {
	dir := metaSchemaDir(t)
	load := func(name string) (*jsonschema.Schema, error) {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)+".json"))
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		return &s, json.Unmarshal(b, &s)
	}
	meta, err := load("schema")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "https://json-schema.org/draft/2020-12/"
	resolved, err := meta.Resolve(&jsonschema.ResolveOptions{Loader: func(u *url.URL) (*jsonschema.Schema, error) {
		name, ok := strings.CutPrefix(u.String(), prefix)
		if !ok {
			t.Fatalf("the meta-schema refers to %s", u)
		}
		return load(name)
	}})
	if err != nil {
		t.Fatalf("resolve the meta-schema: %v", err)
	}
	// The meta-schema must be able to fail: a schema with a wrong type.
	var bad any
	_ = json.Unmarshal([]byte(`{"type": "object", "properties": {"k": {"type": 5}}}`), &bad)
	if err := resolved.Validate(bad); err == nil {
		t.Fatal("the meta-schema accepts a schema whose type is 5")
	}

	tools := listTools(t)
	checked := 0
	for _, tl := range tools {
		for kind, schema := range map[string]any{"inputSchema": tl.InputSchema, "outputSchema": tl.OutputSchema} {
			if schema == nil {
				continue
			}
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var inst any
			if err := json.Unmarshal(b, &inst); err != nil {
				t.Fatal(err)
			}
			if err := resolved.Validate(inst); err != nil {
				t.Errorf("%s %s is not valid JSON Schema 2020-12: %v\n%s", tl.Name, kind, err, b)
			}
			checked++
		}
	}
	if checked < len(tools) {
		t.Errorf("checked %d schemas of %d tools", checked, len(tools))
	}
}
