package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/schemaq/schemaq/pkg/bearer"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// post sends one JSON-RPC body as a streamable-HTTP client does, in
// session id when it is not empty, and returns the status and the
// session the reply names.
func post(t *testing.T, url, id, body string) (int, string) {
	t.Helper()
	return postAs(t, url, "", id, body)
}

// postAs is post with a bearer token, when not empty.
func postAs(t *testing.T, url, token, id, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set(sessionHeader, id)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	return resp.StatusCode, resp.Header.Get(sessionHeader)
}

func ping(t *testing.T, url, id string) int {
	t.Helper()
	code, _ := post(t, url, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	return code
}

// open initializes a session and returns its id.
func open(t *testing.T, url string) string {
	t.Helper()
	code, id := post(t, url, "", initializeBody)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", code, id)
	}
	if code, _ := post(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("initialized: %d", code)
	}
	return id
}

func remembered(b *sessionBound) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.used)
}

func liveSessions(s *mcp.Server) int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// TestHTTPSessionsAreBounded runs the attack that grew `schemaq mcp
// --http` without bound (initialize after initialize, none closed) and
// checks that the least recently used session is the one that gives way,
// that ids a client makes up take no room, and that a client whose
// session was closed can open another.
func TestHTTPSessionsAreBounded(t *testing.T) {
	server := New(nil, "0.0.0-test")
	h := HTTPHandler(server, HTTPConfig{MaxSessions: 5})
	srv := httptest.NewServer(h)
	defer srv.Close()
	bound := h.(*sessionBound)
	clock := time.Unix(0, 0)
	bound.now = func() time.Time { clock = clock.Add(time.Second); return clock }

	// A real client, then four raw sessions: the bound is reached.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = open(t, srv.URL)
	}
	// The client and the first raw session are used again: the second
	// raw one is now the least recently used.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if code := ping(t, srv.URL, ids[0]); code != http.StatusOK {
		t.Fatalf("ping in session 0: %d", code)
	}
	// Made-up ids are refused and not remembered.
	for i := range 100 {
		if code := ping(t, srv.URL, fmt.Sprintf("made-up-%d", i)); code != http.StatusNotFound {
			t.Fatalf("a made-up session: %d, want 404", code)
		}
	}
	if n := remembered(bound); n != 5 {
		t.Errorf("%d session ids remembered after 100 made up, want the 5 opened", n)
	}
	newest := open(t, srv.URL)
	for _, tc := range []struct {
		name string
		id   string
		want int
	}{
		{"used again", ids[0], http.StatusOK},
		{"least recently used", ids[1], http.StatusNotFound},
		{"next", ids[2], http.StatusOK},
		{"newest", newest, http.StatusOK},
	} {
		if got := ping(t, srv.URL, tc.id); got != tc.want {
			t.Errorf("%s session: ping %d, want %d", tc.name, got, tc.want)
		}
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Errorf("the client used after the raw sessions lost its session: %v", err)
	}

	// The flood: a thousand sessions opened and left.
	for range 1000 {
		if code, _ := post(t, srv.URL, "", initializeBody); code != http.StatusOK {
			t.Fatalf("initialize in the flood: %d", code)
		}
	}
	if n := liveSessions(server); n > 5 {
		t.Errorf("%d sessions live after the flood, want at most 5", n)
	}
	if n := remembered(bound); n > 6 {
		t.Errorf("%d session ids remembered, want at most 6", n)
	}
	// The client's session went with the flood; it opens another.
	if err := cs.Ping(context.Background(), nil); err == nil {
		t.Error("the client's session outlived a flood of 1,000 with room for 5")
	}
	again, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("a new session after the flood: %v", err)
	}
	defer again.Close()
	if err := again.Ping(context.Background(), nil); err != nil {
		t.Error(err)
	}
}

// TestHTTPIdleSessionsClose: a session nothing uses is closed after
// SessionIdle, and its id is then refused.
func TestHTTPIdleSessionsClose(t *testing.T) {
	server := New(nil, "0.0.0-test")
	srv := httptest.NewServer(HTTPHandler(server, HTTPConfig{SessionIdle: 100 * time.Millisecond}))
	defer srv.Close()
	id := open(t, srv.URL)
	if code := ping(t, srv.URL, id); code != http.StatusOK {
		t.Fatalf("ping: %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for liveSessions(server) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("an idle session was not closed in 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := ping(t, srv.URL, id); code != http.StatusNotFound {
		t.Errorf("ping in a closed session: %d, want 404", code)
	}
}

// TestHTTPRefusesRebinding: a page whose name resolves to this host
// (DNS rebinding) reaches a loopback listener with its own name in
// Host; it is refused before any session or tool. So is a body beyond
// 4 MiB.
func TestHTTPRefusesRebinding(t *testing.T) {
	server := New(nil, "0.0.0-test")
	srv := httptest.NewServer(HTTPHandler(server, HTTPConfig{}))
	defer srv.Close()
	for host, want := range map[string]int{"attacker.example:8080": http.StatusForbidden, srv.Listener.Addr().String(): http.StatusOK} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initializeBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if n := liveSessions(server); n != 1 {
		t.Errorf("%d sessions, want the one the right Host opened", n)
	}
	big := `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}`
	if code, _ := post(t, srv.URL, "", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of 5 MiB: %d, want 413", code)
	}
}

// TestHTTPStateless: without sessions every request is answered on its
// own (no initialize first, any replica), a real client works as it is,
// and a flood of initialize leaves nothing behind.
func TestHTTPStateless(t *testing.T) {
	server := New(nil, "0.0.0-test")
	srv := httptest.NewServer(HTTPHandler(server, HTTPConfig{Stateless: true}))
	t.Cleanup(srv.Close)
	if code, id := post(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusOK || id != "" {
		t.Errorf("tools/list without initialize: %d, session %q", code, id)
	}
	for range 200 {
		if code, id := post(t, srv.URL, "", initializeBody); code != http.StatusOK || id != "" {
			t.Fatalf("initialize: %d, session %q", code, id)
		}
	}
	if n := liveSessions(server); n != 0 {
		t.Errorf("%d sessions live after 200 initialize, want none", n)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Errorf("tools/list through a client: %v %v", tools, err)
	}
}

// TestHTTPTokensKeepTheirShare: with tokens, a team that floods the
// server with sessions closes its own, once it holds its share, and not
// another team's; the other team's next sessions take from the flood.
func TestHTTPTokensKeepTheirShare(t *testing.T) {
	server := New(nil, "0.0.0-test")
	const quiet, loud = "quiet-team-token-0123", "loud-team-token-01234"
	ring := bearer.NewKeyring("", []bearer.Token{
		{Name: "quiet", Token: quiet, Databases: []string{"*"}, Access: bearer.AccessRead},
		{Name: "loud", Token: loud, Databases: []string{"*"}, Access: bearer.AccessRead},
	})
	srv := httptest.NewServer(RequireToken(ring, HTTPHandler(server, HTTPConfig{MaxSessions: 10})))
	t.Cleanup(srv.Close)
	openAs := func(token string) string {
		t.Helper()
		code, id := postAs(t, srv.URL, token, "", initializeBody)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d, session %q", code, id)
		}
		return id
	}
	var mine []string
	for range 4 {
		mine = append(mine, openAs(quiet))
	}
	for range 200 {
		openAs(loud)
	}
	for i, id := range mine {
		if code, _ := postAs(t, srv.URL, quiet, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusOK {
			t.Errorf("the quiet team's session %d after the loud team's flood: %d", i, code)
		}
	}
	if n := liveSessions(server); n > 10 {
		t.Errorf("%d sessions live, want at most 10", n)
	}
	// The quiet team's share is half: its sixth session closes its own
	// first one, the seventh its second.
	mine = append(mine, openAs(quiet), openAs(quiet), openAs(quiet))
	alive := 0
	for _, id := range mine {
		if code, _ := postAs(t, srv.URL, quiet, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code == http.StatusOK {
			alive++
		}
	}
	if alive != 5 {
		t.Errorf("the quiet team keeps %d of its 7 sessions, want its share of 5", alive)
	}
}
