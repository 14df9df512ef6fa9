package daemon_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/daemon"
)

// TestHTTPRefusesWhatABrowserCouldForge runs the attacks a web page can
// make on a token-less API on loopback, as `up` serves it: a page whose
// domain was rebound to 127.0.0.1 (its Host header names that domain),
// and a cross-origin POST without a preflight (no Content-Type, or a
// form's). Each is refused before any handler runs; the same request
// from a local client is answered.
func TestHTTPRefusesWhatABrowserCouldForge(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	search := `{"database":"shop","question":"customers"}`
	cases := []struct {
		name        string
		cfg         daemon.HTTPConfig
		host        string
		contentType string
		want        int
	}{
		{"a local client", daemon.HTTPConfig{}, "", "application/json", http.StatusOK},
		{"localhost by name", daemon.HTTPConfig{}, "localhost:8080", "application/json; charset=utf-8", http.StatusOK},
		{"IPv6 loopback", daemon.HTTPConfig{}, "[::1]:8080", "application/json", http.StatusOK},
		{"a rebound domain", daemon.HTTPConfig{}, "attacker.example:8080", "application/json", http.StatusMisdirectedRequest},
		{"a rebound domain without a port", daemon.HTTPConfig{}, "attacker.example", "application/json", http.StatusMisdirectedRequest},
		{"a host the operator allowed", daemon.HTTPConfig{AllowedHosts: []string{"schemaq.internal"}}, "schemaq.internal:8080", "application/json", http.StatusOK},
		{"loopback once hosts are given", daemon.HTTPConfig{AllowedHosts: []string{"schemaq.internal"}}, "127.0.0.1:8080", "application/json", http.StatusMisdirectedRequest},
		{"any host, as configured", daemon.HTTPConfig{AllowedHosts: []string{"*"}}, "attacker.example", "application/json", http.StatusOK},
		{"beyond loopback (a token guards it)", daemon.HTTPConfig{Addr: "0.0.0.0:8080", Token: "t"}, "schemaq.shop.svc", "application/json", http.StatusOK},
		{"no Content-Type", daemon.HTTPConfig{}, "", "", http.StatusUnsupportedMediaType},
		{"a form's Content-Type", daemon.HTTPConfig{}, "", "text/plain", http.StatusUnsupportedMediaType},
		{"a form's urlencoded Content-Type", daemon.HTTPConfig{}, "", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(r.d.HTTPHandler(tc.cfg))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/search", strings.NewReader(search))
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			if tc.cfg.Token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.cfg.Token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want != http.StatusOK && strings.Contains(string(body), "results") {
				t.Errorf("a refused request carried results: %s", body)
			}
		})
	}
}
