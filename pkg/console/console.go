// Package console serves schemaq's web console: a page and its script,
// embedded in the binary, that drive the HTTP API from a browser. It has
// no server state of its own: every view is a URL, and every datum comes
// from /v1 with the caller's token.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// securityHeaders keep the page to its own script and style: no inline
// script can run (a doc section carrying <script> is text anyway), no
// other origin can frame it, and it talks to its own origin only.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-cache",
}

// Handler serves the console: /assets/* are the files, and every other
// path is the page, whose script reads the path to pick its view, so a
// table's page, a search with its question or a check report can be
// shared as a link and reloaded.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	page, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the console is read with GET", http.StatusMethodNotAllowed)
			return
		}
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		if rest, ok := strings.CutPrefix(r.URL.Path, "/assets/"); ok && rest != "" && rest != "index.html" {
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + path.Clean(rest)
			files.ServeHTTP(w, r2)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
}
