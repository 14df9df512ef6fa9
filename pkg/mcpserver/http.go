package mcpserver

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The streamable-HTTP transport keeps a session for every initialize it
// answers until the client deletes it, and the SDK closes none by
// default: 20,000 initialize requests took `schemaq mcp --http` from
// 52 MB to 373 MB, and nothing gave it back. Clients that vanish
// without a DELETE (an agent killed, a laptop closed) leave theirs the
// same way. So the sessions are bounded twice: by idleness, and by
// count, the least recently used one giving way to a new one. A client
// whose session was closed gets 404 for it, which the protocol answers
// with a new initialize.

// HTTPConfig bounds the sessions the HTTP transport keeps.
type HTTPConfig struct {
	// MaxSessions is how many sessions are kept at once; a new one
	// closes the least recently used beyond it (0 or less: 1,000).
	MaxSessions int
	// SessionIdle closes a session no request has used for this long
	// (0: sessions are closed by count only).
	SessionIdle time.Duration
	// Stateless keeps no session at all: each request is answered on
	// its own, so replicas behind a load balancer need no affinity. A
	// client of a protocol before 2026-07-28 named itself only at
	// initialize, which is then forgotten; GET (the stream for requests
	// from the server, which no tool makes) is refused.
	Stateless bool
}

// DefaultMaxSessions is HTTPConfig.MaxSessions's default: each session
// holds about 16 KB, so the bound is about 16 MB.
const DefaultMaxSessions = 1000

// sessionHeader carries the session's id, both ways.
const sessionHeader = "Mcp-Session-Id"

// HTTPHandler serves server over streamable HTTP with cfg's bounds.
func HTTPHandler(server *mcp.Server, cfg HTTPConfig) http.Handler {
	if cfg.Stateless {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	return &sessionBound{
		next:   mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{SessionTimeout: cfg.SessionIdle}),
		server: server,
		max:    cfg.MaxSessions,
		used:   map[string]time.Time{},
		now:    time.Now,
	}
}

// sessionBound keeps at most max sessions of server open, closing the
// least recently used to make room for a new one.
type sessionBound struct {
	next   http.Handler
	server *mcp.Server
	max    int
	now    func() time.Time

	mu sync.Mutex
	// used is when each session a response named was last asked for;
	// it holds only sessions that were live at the last room made.
	used map[string]time.Time
}

func (b *sessionBound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	if id != "" {
		b.touch(id, false)
		b.next.ServeHTTP(w, r)
		return
	}
	if r.Method == http.MethodPost { // the one request that opens a session
		b.makeRoom()
	}
	b.next.ServeHTTP(w, r)
	if id := w.Header().Get(sessionHeader); id != "" {
		b.touch(id, true)
	}
}

// touch records a request for session id: a new one when opened, else
// only one already known, so that ids a client makes up take no room.
func (b *sessionBound) touch(id string, opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.used[id]; ok || opened {
		b.used[id] = b.now()
	}
}

// makeRoom closes the least recently used sessions until a new one fits.
// It counts the server's live sessions, not the ids it has seen, so a
// session closed by idleness or DELETE frees its place; one not seen yet
// is being opened, and counts as the newest.
func (b *sessionBound) makeRoom() {
	b.mu.Lock()
	defer b.mu.Unlock()
	live := map[string]*mcp.ServerSession{}
	for s := range b.server.Sessions() {
		if id := s.ID(); id != "" {
			live[id] = s
		}
	}
	for id := range b.used {
		if live[id] == nil {
			delete(b.used, id)
		}
	}
	for len(live) >= b.max {
		now := b.now()
		oldest, at := "", now
		for id := range live {
			t, ok := b.used[id]
			if !ok {
				t = now
			}
			if oldest == "" || t.Before(at) {
				oldest, at = id, t
			}
		}
		live[oldest].Close() //nolint:errcheck // closing frees it either way
		delete(live, oldest)
		delete(b.used, oldest)
	}
}
