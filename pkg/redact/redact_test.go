package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://127.0.0.1:6379/0":                           "redis://127.0.0.1:6379/0",
		"redis://:pw@host:6379":                              "redis://:xxxxx@host:6379",
		"rediss://user:p@ss@host:6380/2":                     "rediss://user:xxxxx@host:6380/2",
		"redis://user@host":                                  "redis://user:xxxxx@host",
		"https://gw.example/v1?api-key=sk-123&api-version=2": "https://gw.example/v1?api-key=xxxxx&api-version=xxxxx",
		"https://u:p@gw/v1/chat?key=s#frag":                  "https://u:xxxxx@gw/v1/chat?key=xxxxx#frag",
		"https://gw/a@b/path":                                "https://gw/a@b/path", // an @ in the path is no user info
		"not a url":                                          "not a url",
		"":                                                   "",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	in := `Post "https://admin:hunter2@gw.example/v1/chat/completions?api-key=sk-live-123": dial tcp: connection refused`
	got := Text(in)
	for _, secret := range []string{"hunter2", "sk-live-123"} {
		if strings.Contains(got, secret) {
			t.Errorf("Text kept %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "gw.example/v1/chat/completions") || !strings.Contains(got, "connection refused") {
		t.Errorf("Text lost what is not secret: %s", got)
	}
}
