package bearer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/bearer"
)

// TestLoadNamesEveryProblem: a tokens file that is wrong is
// refused at start, each problem named.
func TestLoadNamesEveryProblem(t *testing.T) {
	cases := []struct{ name, file, want string }{
		{"not JSON", `tokens`, "invalid character"},
		{"unknown key", `{"tokens": [], "admin": true}`, `unknown field "admin"`},
		{"no tokens", `{"tokens": []}`, "no tokens"},
		{"short token", `{"tokens": [{"name": "a", "token": "short", "databases": ["shop"], "access": "read"}]}`, "at least 16 bytes"},
		{"token and hash", `{"tokens": [{"name": "a", "token": "0123456789abcdef", "sha256": "00", "databases": ["shop"], "access": "read"}]}`, "one of them"},
		{"bad hash", `{"tokens": [{"name": "a", "sha256": "xyz", "databases": ["shop"], "access": "read"}]}`, "64 hex digits"},
		{"no databases", `{"tokens": [{"name": "a", "token": "0123456789abcdef", "access": "read"}]}`, "list its databases"},
		{"bad database", `{"tokens": [{"name": "a", "token": "0123456789abcdef", "databases": ["shop.>"], "access": "read"}]}`, "not a database name"},
		{"bad access", `{"tokens": [{"name": "a", "token": "0123456789abcdef", "databases": ["shop"], "access": "root"}]}`, `access is "read", "write" or "admin"`},
		{"a name twice", `{"tokens": [{"name": "a", "token": "0123456789abcdef", "databases": ["shop"], "access": "read"}, {"name": "a", "token": "0123456789abcdeg", "databases": ["shop"], "access": "read"}]}`, "used twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "tokens.json")
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := bearer.Load(file); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestKeyringFindsItsHolders: each token, given itself or as its hash,
// finds its grant; anything else finds none.
func TestKeyringFindsItsHolders(t *testing.T) {
	ring := bearer.NewKeyring("global-token-0123456789", []bearer.Token{
		{Name: "shop-app", Token: "shop-app-token-0123", Databases: []string{"shop"}, Access: bearer.AccessRead},
		// sha256("hashed-token-0123456789")
		{Name: "ci", SHA256: "b22fd458dbe2426bebe59cfafe4c46e013df3efd439e4d91cda767ac3052ddd0", Databases: []string{"*"}, Access: bearer.AccessWrite},
	})
	cases := []struct {
		header, name string
		shop, other  bool
	}{
		{"Bearer global-token-0123456789", "token", true, true},
		{"Bearer shop-app-token-0123", "shop-app", true, false},
		{"bearer shop-app-token-0123", "shop-app", true, false},
		{"BEARER shop-app-token-0123", "shop-app", true, false},
		{"Basic shop-app-token-0123", "", false, false},
		{"Bearer hashed-token-0123456789", "ci", true, true},
		{"shop-app-token-0123", "", false, false},
		{"Bearer shop-app-token-012", "", false, false},
		{"Bearer ", "", false, false},
		{"", "", false, false},
	}
	for _, tc := range cases {
		g := ring.FromHeader(tc.header)
		if tc.name == "" {
			if g != nil {
				t.Errorf("%q found %q", tc.header, g.Name)
			}
			continue
		}
		if g == nil || g.Name != tc.name || g.MayUse("shop") != tc.shop || g.MayUse("other") != tc.other {
			t.Errorf("%q: %+v, want %s (shop %v, other %v)", tc.header, g, tc.name, tc.shop, tc.other)
		}
	}
	if bearer.NewKeyring("", nil).Empty() != true || ring.Empty() {
		t.Error("Empty")
	}
}
