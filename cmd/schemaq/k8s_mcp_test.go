package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// checkMCPDeployment runs the MCP component's container as its pod
// would: its args, its environment, and its tokens Secret mounted the
// way the kubelet mounts one (tokens.json a symlink into ..data, itself
// a symlink to a timestamped directory). It must pass its readiness
// probe, and its tokens must reach their database and no other.
func checkMCPDeployment(t *testing.T, objs []kruntime.Object, spec *corev1.PodSpec, cms map[string]*corev1.ConfigMap, natsURL string) {
	t.Helper()
	c := spec.Containers[0]
	if len(c.Args) < 3 || c.Args[0] != "mcp" || c.Args[1] != "--http" || c.Args[2] != fmt.Sprintf(":%d", containerPort(c, "http")) {
		t.Fatalf("the MCP container does not serve HTTP on its http port: %v", c.Args)
	}
	vars := podEnv(t, c, "mcp-0", cms)
	read := envRead(t, "mcp")
	for k := range vars {
		if !read[k] && !strings.HasPrefix(k, "OTEL_") {
			t.Errorf("the MCP container sets %s, which `schemaq mcp` does not read", k)
		}
	}
	if vars["SCHEMAQ_METRICS_ADDR"] != fmt.Sprintf(":%d", containerPort(c, "metrics")) {
		t.Errorf("the MCP container's SCHEMAQ_METRICS_ADDR %q is not its metrics port", vars["SCHEMAQ_METRICS_ADDR"])
	}
	vol, file := mountSecretFile(t, objs, spec, c, vars["SCHEMAQ_MCP_TOKENS_FILE"])
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tokens struct{ Tokens []bearer.Token }
	if err := json.Unmarshal(raw, &tokens); err != nil || len(tokens.Tokens) == 0 || tokens.Tokens[0].Token == "" {
		t.Fatalf("the tokens Secret holds no token the test can use: %v", err)
	}
	tok := tokens.Tokens[0]

	vars["SCHEMAQ_MCP_TOKENS_FILE"] = file
	vars["SCHEMAQ_NATS_URL"] = natsURL
	vars["SCHEMAQ_METRICS_ADDR"] = freePort(t)
	addr := freePort(t)
	args := append([]string{"mcp", "--http", addr}, c.Args[3:]...)
	startService(t, "mcp", args, vars)
	testenv.Eventually(t, 30*time.Second, "mcp passes its readiness probe", func() bool {
		_, err := runVars(context.Background(), []string{"healthcheck", "--path", "/readyz"}, vars)
		return err == nil
	})

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "k8s-agent", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: &http.Client{Transport: bearerAuth{tok.Token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with the Secret's token %s: %v", tok.Name, err)
	}
	defer cs.Close()
	for _, db := range tok.Databases {
		if out, isErr := call(t, cs, "list_tables", map[string]any{"database": db}); isErr || !strings.Contains(out, "public.") {
			t.Errorf("list_tables %s with token %s: %s", db, tok.Name, out)
		}
	}
	if out, isErr := call(t, cs, "list_tables", map[string]any{"database": "not-" + tok.Databases[0]}); !isErr || !strings.Contains(out, "forbidden") {
		t.Errorf("another database with token %s: %s", tok.Name, out)
	}

	// The Secret updated as kubectl apply would: the token replaced is
	// refused and the new one answers, without a restart.
	rotated := tok
	rotated.Token = "rotated-" + tok.Token
	b, _ := json.Marshal(map[string]any{"tokens": []bearer.Token{rotated}})
	vol.Write(t, map[string][]byte{filepath.Base(file): b})
	status := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testenv.Eventually(t, 3*bearer.WatchEvery, "the rotated token answers", func() bool { return status(rotated.Token) == http.StatusOK })
	if got := status(tok.Token); got != http.StatusUnauthorized {
		t.Errorf("the token the Secret no longer holds: %d, want 401", got)
	}
}

// mountSecretFile lays the file at path out as the kubelet mounts the
// Secret volume the container has over its directory, and returns the
// volume and where the file is in it.
func mountSecretFile(t *testing.T, objs []kruntime.Object, spec *corev1.PodSpec, c corev1.Container, path string) (*testenv.SecretVolume, string) {
	t.Helper()
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == filepath.Dir(path) && m.ReadOnly {
			volume = m.Name
		}
	}
	var secretName string
	for _, v := range spec.Volumes {
		if v.Name == volume && v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	var data []byte
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && s.Name == secretName {
			data = s.Data[filepath.Base(path)]
		}
	}
	if secretName == "" || data == nil {
		t.Fatalf("%s: no read-only Secret volume over its directory holds it (volume %q, Secret %q)", path, volume, secretName)
	}
	vol := testenv.NewSecretVolume(t)
	return vol, vol.Write(t, map[string][]byte{filepath.Base(path): data})[filepath.Base(path)]
}
