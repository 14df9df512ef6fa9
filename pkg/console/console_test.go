package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler()
	tests := []struct {
		method, path string
		status       int
		contentType  string
		body         string // a part of it
	}{
		{"GET", "/", 200, "text/html", `<script type="module" src="/assets/app.js">`},
		{"GET", "/db/shop/tables/public.orders", 200, "text/html", `<main id="view"`},
		{"HEAD", "/db/shop/search?q=x", 200, "text/html", ""},
		{"GET", "/assets/app.js", 200, "text/javascript", "function h(tag"},
		{"GET", "/assets/app.css", 200, "text/css", ":root"},
		{"GET", "/assets/nope.js", 404, "", ""},
		{"GET", "/assets/../console.go", 404, "", ""}, // the embedded files only, never the source
		{"POST", "/", 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if !strings.HasPrefix(w.Header().Get("Content-Type"), tt.contentType) {
				t.Errorf("Content-Type %q, want %s", w.Header().Get("Content-Type"), tt.contentType)
			}
			if tt.method == "GET" && !strings.Contains(w.Body.String(), tt.body) {
				t.Errorf("body lacks %q", tt.body)
			}
			if strings.Contains(w.Body.String(), "package console") {
				t.Error("served the source")
			}
			if tt.status == http.StatusOK {
				for k, v := range securityHeaders {
					if w.Header().Get(k) != v {
						t.Errorf("%s: %q, want %q", k, w.Header().Get(k), v)
					}
				}
			}
		})
	}
}

// TestNoInlineScriptOrStyle: the policy allows the page's own files
// only, so the page must not need inline script, inline style or
// handlers in markup to work.
func TestNoInlineScriptOrStyle(t *testing.T) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("index.html has %q, which the Content-Security-Policy blocks", bad)
		}
	}
	js, _ := assets.ReadFile("assets/app.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s: what users wrote must reach the page as text", bad)
		}
	}
}
