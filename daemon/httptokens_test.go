package daemon_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestHTTPTokensPerDatabase: each token of the tokens file reaches its
// own databases only, writes only with write access, lists only its
// databases, and its name is the author of the feedback it gives. A
// token from the file of another team is refused, as is any other.
func TestHTTPTokensPerDatabase(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
	r.publishShop()
	ev, _ := events.New("other-1", "other", time.Now(), &events.Migration{Seq: 1, Source: "0001.sql",
		SQL: "CREATE TABLE payroll (id int PRIMARY KEY, salary numeric);"})
	if _, err := r.cli.Publish(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "other indexed", func() bool {
		p, _ := r.store.Projected(context.Background(), "other")
		return p == 1
	})

	writerHash := sha256.Sum256([]byte("other-writer-0123456789"))
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(file, []byte(`{"tokens": [
  {"name": "shop-reader", "token": "shop-reader-0123456789", "databases": ["shop"], "access": "read"},
  {"name": "other-writer", "sha256": "`+hex.EncodeToString(writerHash[:])+`", "databases": ["other"], "access": "write"}
]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := bearer.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Tokens: tokens, Token: "global-token-0123456789"}))
	defer srv.Close()

	search := func(db string) string { return `{"database":"` + db + `","question":"salary"}` }
	feedback := func(db, table string) string {
		return `{"database":"` + db + `","question":"every row","sql":"SELECT * FROM ` + table + `"}`
	}
	cases := []struct {
		name, token, path, body string
		want                    int
	}{
		{"reader searches its database", "shop-reader-0123456789", "/v1/search", search("shop"), http.StatusOK},
		{"reader searches another team's", "shop-reader-0123456789", "/v1/search", search("other"), http.StatusForbidden},
		{"reader asks another team's", "shop-reader-0123456789", "/v1/ask", search("other"), http.StatusForbidden},
		{"reader lists another team's tables", "shop-reader-0123456789", "/v1/tables", `{"database":"other"}`, http.StatusForbidden},
		{"reader gives feedback", "shop-reader-0123456789", "/v1/feedback", feedback("shop", "orders"), http.StatusForbidden},
		{"writer gives feedback to its database", "other-writer-0123456789", "/v1/feedback", feedback("other", "payroll"), http.StatusOK},
		{"writer gives feedback to another team's", "other-writer-0123456789", "/v1/feedback", feedback("shop", "orders"), http.StatusForbidden},
		{"the global token reads every database", "global-token-0123456789", "/v1/search", search("other"), http.StatusOK},
		{"the hash is no token", "other-writer", "/v1/search", search("other"), http.StatusUnauthorized},
		{"no token", "", "/v1/search", search("shop"), http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := httpPost(t, srv.URL+tc.path, tc.token, tc.body)
			if code != tc.want {
				t.Fatalf("status %d, want %d: %s", code, tc.want, body)
			}
			if code == http.StatusForbidden && (strings.Contains(body, "payroll") || !strings.Contains(body, `"forbidden"`)) {
				t.Errorf("a refusal: %s", body)
			}
		})
	}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/databases", nil)
	req.Header.Set("Authorization", "Bearer shop-reader-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Databases []struct{ Name string } }
	_ = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Databases) != 1 || list.Databases[0].Name != "shop" {
		t.Errorf("shop-reader lists %+v: want shop alone", list.Databases)
	}

	testenv.Eventually(t, 10*time.Second, "the feedback stored with its author", func() bool {
		exs, err := r.cli.Examples(context.Background(), "other")
		return err == nil && len(exs) == 1 && exs[0].Author == "http:other-writer"
	})
}

// TestHTTPTokensFileIsReloaded serves the API with a tokens file and
// changes the file under it: the token taken out is refused and the one
// put in answers, without a restart; a file that no longer loads leaves
// the tokens as they were.
func TestHTTPTokensFileIsReloaded(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.json")
	write := func(content string) {
		t.Helper()
		// As an editor or a config tool does: a new file renamed over.
		tmp := filepath.Join(dir, "tokens.tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	token := func(name, tok string) string {
		return `{"tokens": [{"name": "` + name + `", "token": "` + tok + `", "databases": ["shop"], "access": "read"}]}`
	}
	write(token("old", "old-token-0123456789"))
	tokens, err := bearer.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := daemon.HTTPConfig{Tokens: tokens, TokensFile: file}
	ln, err := daemon.BindHTTP("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.d.ServeHTTPOn(ctx, ln, cfg) }()
	t.Cleanup(func() { cancel(); <-done })
	status := func(tok string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/databases", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testenv.Eventually(t, 10*time.Second, "the API answers the old token", func() bool { return status("old-token-0123456789") == http.StatusOK })

	write(token("new", "new-token-0123456789"))
	testenv.Eventually(t, 3*bearer.WatchEvery, "the new token answers", func() bool { return status("new-token-0123456789") == http.StatusOK })
	if got := status("old-token-0123456789"); got != http.StatusUnauthorized {
		t.Errorf("the token taken out of the file: %d, want 401", got)
	}
	write(`{"tokens": []}`)
	time.Sleep(bearer.WatchEvery + time.Second)
	if got := status("new-token-0123456789"); got != http.StatusOK {
		t.Errorf("after a file that does not load: %d, want the tokens kept", got)
	}
}
