package bearer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func tokenFile(name, token string) string {
	return fmt.Sprintf(`{"tokens": [{"name": %q, "token": %q, "databases": ["shop"], "access": "read"}]}`, name, token)
}

// TestWatchFollowsTheSecret: a token revoked in the file stops working
// and a new one works, without a restart; a file that does not load
// leaves the tokens as they were, and says why once.
func TestWatchFollowsTheSecret(t *testing.T) {
	vol := testenv.NewSecretVolume(t)
	write := func(content string) string {
		return vol.Write(t, map[string][]byte{"tokens.json": []byte(content)})["tokens.json"]
	}
	path := write(tokenFile("old", "old-token-0123456789"))
	tokens, err := bearer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ring := bearer.NewKeyring("global-token-0123456789", tokens)
	var mu sync.Mutex
	var reports []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go bearer.Watch(ctx, ring, path, "global-token-0123456789", 5*time.Millisecond, func(n int, err error) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, fmt.Sprint(n, err))
	})
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10 s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	write(tokenFile("new", "new-token-0123456789"))
	eventually("the new token works", func() bool { return ring.Find("new-token-0123456789") != nil })
	if ring.Find("old-token-0123456789") != nil {
		t.Error("the revoked token still works")
	}
	if ring.Find("global-token-0123456789") == nil {
		t.Error("the global token was lost in the reload")
	}

	write(`{"tokens": [{"name": "bad", "token": "short", "databases": ["shop"], "access": "read"}]}`)
	eventually("the bad file is reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reports) > 0 && reports[len(reports)-1] != "1 <nil>"
	})
	time.Sleep(50 * time.Millisecond) // ten more looks at the same bad file
	if ring.Find("new-token-0123456789") == nil {
		t.Error("a file that does not load replaced the tokens")
	}
	mu.Lock()
	got := append([]string(nil), reports...)
	mu.Unlock()
	// The first look may read the file it started with again.
	if n := len(got); n < 2 || n > 3 || got[n-2] != "1 <nil>" || got[n-1] == "0 <nil>" || (n == 3 && got[0] != "1 <nil>") {
		t.Errorf("reports %q, want reloads and then one refusal", got)
	}
}
