// Package redact hides the secrets URLs carry (a password in the user
// info, an API key in the query string) before a URL, or a message that
// quotes one, reaches a log line or a reply.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask stands for a hidden secret.
const Mask = "xxxxx"

// URL returns u with its password and query-string values masked
// (redis://user:xxxxx@host, https://gw/v1?api-key=xxxxx). Text that is
// not an absolute URL is returned as it is.
func URL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok || scheme == "" {
		return u
	}
	// The user info by hand: a password may hold characters url.Parse
	// refuses, and it must go whatever they are.
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		user, _, _ := strings.Cut(rest[:at], ":")
		rest = user + ":" + Mask + "@" + rest[at+1:]
	}
	out := scheme + "://" + rest
	base, query, ok := strings.Cut(out, "?")
	if !ok {
		return out
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	var parts []string
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if k, err := url.QueryUnescape(k); err == nil && k != "" {
			parts = append(parts, url.QueryEscape(k)+"="+Mask)
		}
	}
	out = base + "?" + strings.Join(parts, "&")
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// urlInText finds absolute URLs in free text, as Go's HTTP errors quote
// them (Post "https://…": …).
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// Text masks the secrets of every URL s quotes.
func Text(s string) string {
	return urlInText.ReplaceAllStringFunc(s, URL)
}
