package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestMCPInspector drives `schemaq mcp` with the MCP Inspector CLI, the
// reference client built on the TypeScript SDK, over stdio and streamable
// HTTP (with sessions on loopback, and without sessions behind tokens): it
// lists the tools (which that SDK validates, schemas included) and calls
// every one. The Go SDK's client is more lenient, so it cannot
// stand in for this. .ci/run installs the Inspector from npm and names it
// in SCHEMAQ_MCP_INSPECTOR.
func TestMCPInspector(t *testing.T) {
	inspector := os.Getenv("SCHEMAQ_MCP_INSPECTOR")
	if inspector == "" {
		t.Skip("SCHEMAQ_MCP_INSPECTOR is not set (.ci/run installs @modelcontextprotocol/inspector from npm and sets it)")
	}
	bin := filepath.Join(t.TempDir(), "schemaq")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build schemaq: %v\n%s", err, out)
	}
	llm := fakeLLM(t)
	dir := t.TempDir()
	addr := freePort(t)
	url := "nats://" + addr
	stop := startUp(t, filepath.Join(dir, "data"), addr, "SCHEMAQ_LLM_BASE_URL", llm.URL+"/v1", "SCHEMAQ_LLM_MODEL", "m", "SCHEMAQ_LLM_RETRIES", "0")
	defer stop()
	shop := filepath.Join("..", "..", "examples", "shop")
	if _, errOut, code := runAt(t, url, "publish", "migrations", "--db", "shop", "--wait", "20s", filepath.Join(shop, "migrations")); code != exitOK {
		t.Fatalf("publish: %s", errOut)
	}
	publishVideo(t, url)
	publishSnapshot(t, url, "stores", storesDDL)

	inspect := func(target []string, args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmdArgs := append([]string{"--cli"}, target...)
		cmd := exec.CommandContext(ctx, inspector, append(cmdArgs, args...)...)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s%s", args, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector %v: not JSON: %s", args, out)
		}
		return v
	}
	calls := []struct {
		tool string
		args []string
		want string
	}{
		{"list_databases", nil, `"shop"`},
		{"list_tables", []string{"database=shop"}, "public.orders"},
		{"describe_table", []string{"database=shop", "table=order_totals"}, "CREATE VIEW public.order_totals"},
		{"search_schema", []string{"database=shop", "question=which customers placed orders", "k=3"}, "public.orders"},
		{"ask_sql", []string{"database=shop", "question=How many orders are there?"}, "SELECT count(*) FROM orders"},
		{"explain_retrieval", []string{"database=shop", "question=payments per order", "k=2"}, "fused_rank"},
		// The inferred joins of a schema without keys, in both tools'
		// structured output.
		{"search_schema", []string{"database=video", "question=How many comedy films are there?"}, "public.film_category.category_id = public.category.category_id"},
		{"describe_table", []string{"database=video", "table=film_category"}, "public.film_category.film_id = public.film.film_id"},
		// A question two schemas fit says so, and an array argument
		// names the one meant.
		{"search_schema", []string{"database=stores", "question=How many orders did each customer place?"}, `"ambiguous":true`},
		{"search_schema", []string{"database=stores", "question=How many orders did each customer place?", `schemas=["store_west"]`}, `"name":"store_west.orders"`},
		{"search_schema", []string{"database=shop", "question=order totals", `kinds=["view"]`, "k=1"}, `"name":"public.order_totals"`},
		// Writing: confirmed SQL is stored; a proposed migration is
		// checked, not published.
		{"submit_feedback", []string{"database=shop", "question=Orders per customer", "sql=SELECT customer_id, count(*) FROM orders GROUP BY 1"}, `"tables":["public.orders"]`},
		{"check_migration", []string{"database=shop", `migrations=[{"name":"0007_drop_payments.sql","sql":"DROP TABLE payments;"}]`}, `"dropped":["public.payments"]`},
	}
	check := func(transport string, target []string) {
		tools := inspect(target, "--method", "tools/list")
		list, _ := tools["tools"].([]any)
		if len(list) != 8 {
			t.Errorf("%s: tools/list gave %d tools, want 8", transport, len(list))
		}
		for _, c := range calls {
			args := []string{"--method", "tools/call", "--tool-name", c.tool}
			if len(c.args) > 0 {
				args = append(args, append([]string{"--tool-arg"}, c.args...)...)
			}
			res := inspect(target, args...)
			b, _ := json.Marshal(res)
			if isErr, _ := res["isError"].(bool); isErr || !strings.Contains(string(b), strings.ReplaceAll(c.want, `"`, `\"`)) && !strings.Contains(string(b), c.want) {
				t.Errorf("%s: %s: %s", transport, c.tool, b)
			}
		}
	}
	// stdio: the Inspector starts `schemaq mcp` itself.
	check("stdio", []string{"-e", "SCHEMAQ_NATS_URL=" + url, bin, "mcp"})
	// Streamable HTTP on loopback (no token needed there).
	httpAddr := freePort(t)
	startService(t, "mcp http", []string{"mcp", "--http", httpAddr}, map[string]string{"SCHEMAQ_NATS_URL": url})
	testenv.Eventually(t, 10*time.Second, "mcp listening", func() bool {
		c, err := net.Dial("tcp", httpAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	check("http", []string{"http://" + httpAddr + "/mcp", "--transport", "http"})

	// Streamable HTTP without sessions and with tokens, as
	// k8s/components/mcp runs it: the Inspector sends the token as a
	// header, and a token of one database is refused another.
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"tokens": [
		{"name": "all", "token": "inspector-all-token-0123", "databases": ["*"], "access": "write"},
		{"name": "shop-only", "token": "inspector-shop-token-0123", "databases": ["shop"], "access": "read"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokAddr := freePort(t)
	startService(t, "mcp http tokens", []string{"mcp", "--http", tokAddr, "--stateless", "--tokens-file", tokens}, map[string]string{"SCHEMAQ_NATS_URL": url})
	testenv.Eventually(t, 10*time.Second, "mcp with tokens listening", func() bool {
		c, err := net.Dial("tcp", tokAddr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	as := func(token string) []string {
		return []string{"http://" + tokAddr + "/mcp", "--transport", "http", "--header", "Authorization: Bearer " + token}
	}
	check("http, stateless, a token of every database", as("inspector-all-token-0123"))
	// A tool error is the Inspector's exit status 5, its result on stdout.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, inspector, append(append([]string{"--cli"}, as("inspector-shop-token-0123")...),
		"--method", "tools/call", "--tool-name", "list_tables", "--tool-arg", "database=video")...).Output()
	if err == nil || !strings.Contains(string(out), `forbidden: token \"shop-only\" may not use database \"video\"`) {
		t.Errorf("another database with the shop's token (%v): %s", err, out)
	}
}
