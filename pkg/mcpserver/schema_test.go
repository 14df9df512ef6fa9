package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/schemaq/schemaq/pkg/impact"
	"github.com/schemaq/schemaq/pkg/mcpserver"
)

// TestToolSchemasAreObjects holds every tool's input and output schema to
// what MCP clients built on the TypeScript SDK check when they list tools:
// a schema of type object whose property (and item) schemas are objects.
// A boolean schema such as `true` (what an untyped field gives) is valid
// JSON Schema but makes such a client refuse the whole tool list, so no
// tool can be called. Each schema must also be well-formed JSON Schema.
func TestToolSchemasAreObjects(t *testing.T) {
	for _, tl := range listTools(t) {
		// Every tool reads, but submit_feedback, which adds an example:
		// an agent must see that it writes, and that it destroys nothing.
		switch a := tl.Annotations; {
		case tl.Name == "submit_feedback" && (a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint || !a.IdempotentHint):
			t.Errorf("%s: annotations %+v, want writing, not destructive, idempotent", tl.Name, a)
		case tl.Name != "submit_feedback" && (a == nil || !a.ReadOnlyHint):
			t.Errorf("%s: not annotated read-only", tl.Name)
		}
		for kind, schema := range map[string]any{"inputSchema": tl.InputSchema, "outputSchema": tl.OutputSchema} {
			if schema == nil {
				if kind == "inputSchema" {
					t.Errorf("%s: no input schema", tl.Name)
				}
				continue
			}
			// Check the wire form, as a client sees it.
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var raw any
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			top, ok := raw.(map[string]any)
			if !ok || top["type"] != "object" {
				t.Errorf("%s %s: not a schema of type object: %s", tl.Name, kind, b)
				continue
			}
			for _, problem := range nonObjectSchemas(top, tl.Name+"."+kind) {
				t.Error(problem)
			}
			// And well-formed JSON Schema: every keyword of its type
			// (decoding checks that), references resolved, and type
			// names the ones JSON Schema has (which decoding does not).
			for _, problem := range badTypes(top, tl.Name+"."+kind) {
				t.Error(problem)
			}
			var js jsonschema.Schema
			if err := json.Unmarshal(b, &js); err != nil {
				t.Errorf("%s %s: %v", tl.Name, kind, err)
			} else if _, err := js.Resolve(nil); err != nil {
				t.Errorf("%s %s does not resolve as JSON Schema: %v", tl.Name, kind, err)
			}
		}
	}
}

// nonObjectSchemas lists the places under s where a property or item
// schema is not a JSON object.
func nonObjectSchemas(s map[string]any, path string) []string {
	var out []string
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			ps, ok := p.(map[string]any)
			if !ok {
				out = append(out, fmt.Sprintf("%s.properties.%s: schema %v is not an object", path, name, p))
				continue
			}
			out = append(out, nonObjectSchemas(ps, path+".properties."+name)...)
		}
	}
	if items, ok := s["items"]; ok {
		is, ok := items.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s.items: schema %v is not an object", path, items))
		}
		out = append(out, nonObjectSchemas(is, path+".items")...)
	}
	return out
}

var jsonTypes = map[string]bool{"object": true, "array": true, "string": true, "number": true, "integer": true, "boolean": true, "null": true}

// badTypes lists the "type" keywords under s that name no JSON type.
func badTypes(s map[string]any, path string) []string {
	var out []string
	switch ty := s["type"].(type) {
	case string:
		if !jsonTypes[ty] {
			out = append(out, fmt.Sprintf("%s: type %q is not a JSON Schema type", path, ty))
		}
	case []any:
		for _, one := range ty {
			if name, _ := one.(string); !jsonTypes[name] {
				out = append(out, fmt.Sprintf("%s: type %v is not a JSON Schema type", path, one))
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				out = append(out, badTypes(ps, path+".properties."+name)...)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, badTypes(items, path+".items")...)
	}
	return out
}

// listTools lists the server's tools through an MCP client, as a client
// receives them.
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := mcpserver.New(nil, "0.0.0-test", mcpserver.WithChecker(listingOnly{})).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "schema-check", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) == 0 {
		t.Fatal("no tools")
	}
	return tools.Tools
}

// TestInputPropertiesHaveOneType: clients that build arguments from the
// input schema, as the MCP Inspector's --tool-arg does, convert a value
// by its property's type only when that is one name: a list typed
// ["null", "array"] went out as a string and was refused.
func TestInputPropertiesHaveOneType(t *testing.T) {
	for _, tl := range listTools(t) {
		b, err := json.Marshal(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var top struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatal(err)
		}
		for name, p := range top.Properties {
			if _, ok := p["type"].(string); !ok {
				t.Errorf("%s.%s: type %v, want one type name", tl.Name, name, p["type"])
			}
		}
	}
}

// listingOnly is a Checker for a server whose tools are listed, never
// called.
type listingOnly struct{}

func (listingOnly) Check(context.Context, string, []mcpserver.Migration) (*impact.Report, error) {
	return nil, errors.New("listing only")
}
