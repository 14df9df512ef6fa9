package natsconn

import (
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" means valid
	}{
		{"one url", Config{URLs: []string{"nats://a:4222"}}, ""},
		{"many urls and tls", Config{URLs: []string{"tls://a:4222", "tls://b:4222"}, CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}, ""},
		{"no url", Config{}, "at least one server URL"},
		{"no scheme", Config{URLs: []string{"localhost:4222"}}, `"localhost:4222" needs a scheme`},
		{"two auth methods", Config{URLs: []string{"nats://a"}, Creds: "x.creds", Token: "t"}, "use one of"},
		{"cert without key", Config{URLs: []string{"nats://a"}, CertFile: "c.pem"}, "both the certificate and the key"},
		{"password without user", Config{URLs: []string{"nats://a"}, Password: "p"}, "a password needs a user"},
		{"an inbox prefix", Config{URLs: []string{"nats://a"}, InboxPrefix: "_INBOX_shop.app"}, ""},
		{"a wildcard inbox prefix", Config{URLs: []string{"nats://a"}, InboxPrefix: "_INBOX.>"}, "literal tokens"},
		{"an inbox prefix ending in a dot", Config{URLs: []string{"nats://a"}, InboxPrefix: "_INBOX_shop."}, "literal tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil {
				t.Fatalf("unexpected: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := (Config{URLs: []string{"nats://a"}, NKeySeed: "/nonexistent.nk"}).Options(zap.NewNop()); err == nil || !strings.Contains(err.Error(), "/nonexistent.nk") {
		t.Errorf("a missing nkey seed file should be named: %v", err)
	}
}

func TestRedactHidesPasswords(t *testing.T) {
	got := redact([]string{"nats://alice:s3cret@host:4222", "nats://host2"})
	if strings.Contains(got, "s3cret") || !strings.Contains(got, "alice:[redacted]@host:4222") {
		t.Errorf("redact = %q", got)
	}
}
