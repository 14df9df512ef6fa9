package main

import (
	"fmt"
	"os"
	"strings"
)

// secretVars are the variables that hold secrets. Each has a _FILE twin
// naming a file to read it from, as Kubernetes mounts a Secret: the value
// then appears in no process listing or `kubectl describe`.
var secretVars = []string{
	"SCHEMAQ_LLM_API_KEY", "SCHEMAQ_EMBED_API_KEY", "SCHEMAQ_RERANK_API_KEY", "OPENAI_API_KEY",
	"SCHEMAQ_REDIS_URL", "SCHEMAQ_REDIS_PASSWORD",
	"SCHEMAQ_NATS_URL", "SCHEMAQ_NATS_PASSWORD", "SCHEMAQ_NATS_TOKEN",
	"SCHEMAQ_MCP_TOKEN", "SCHEMAQ_VERIFY_DSN", "SCHEMAQ_HTTP_TOKEN",
}

// withSecretFiles returns e with every secret variable whose _FILE twin
// is set read from that file (one trailing newline dropped). Setting both
// a variable and its twin is an error, as is a file that cannot be read:
// a secret that silently went missing would start a process without auth.
func withSecretFiles(e *env) (*env, error) {
	values := map[string]string{}
	for _, name := range secretVars {
		path := e.getenv(name + "_FILE")
		if path == "" {
			continue
		}
		if e.getenv(name) != "" {
			return nil, usagef("%s and %s_FILE are both set; set one", name, name)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s_FILE: %w", name, err)
		}
		values[name] = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	if len(values) == 0 {
		return e, nil
	}
	get := e.getenv
	out := *e
	out.getenv = func(k string) string {
		if v, ok := values[k]; ok {
			return v
		}
		return get(k)
	}
	return &out, nil
}
