package mcpserver

import (
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
		used:   map[string]sessionUse{},
		now:    time.Now,
	}
}

// sessionBound keeps at most max sessions of server open, closing the
// least recently used to make room for a new one. With tokens, each
// token's sessions are owned by it, and a token that holds its share
// (max over the tokens holding sessions) makes room from its own: one
// team's flood closes its own sessions, not another team's.
type sessionBound struct {
	next   http.Handler
	server *mcp.Server
	max    int
	now    func() time.Time

	mu sync.Mutex
	// used is when each session a response named was last asked for,
	// and by whose token; it holds only sessions that were live at the
	// last room made.
	used map[string]sessionUse
}

type sessionUse struct {
	at    time.Time
	owner string // the token's name; "" without tokens
}

func (b *sessionBound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	if id != "" {
		b.touch(id, "", false)
		b.next.ServeHTTP(w, r)
		return
	}
	owner := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		owner = ti.UserID
	}
	if r.Method == http.MethodPost { // the one request that opens a session
		b.makeRoom(owner)
	}
	b.next.ServeHTTP(w, r)
	if id := w.Header().Get(sessionHeader); id != "" {
		b.touch(id, owner, true)
	}
}

// touch records a request for session id: a new one when opened, else
// only one already known, so that ids a client makes up take no room.
func (b *sessionBound) touch(id, owner string, opened bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if u, ok := b.used[id]; ok {
		u.at = b.now()
		b.used[id] = u
	} else if opened {
		b.used[id] = sessionUse{at: b.now(), owner: owner}
	}
}

// makeRoom closes the least recently used sessions until a new one of
// owner fits: owner's own when it holds its share, else anyone's. It
// counts the server's live sessions, not the ids it has seen, so a
// session closed by idleness or DELETE frees its place; one not seen yet
// is being opened, and counts as the newest.
func (b *sessionBound) makeRoom(owner string) {
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
		victim := b.leastRecent(live, owner, b.atShare(live, owner))
		live[victim].Close() //nolint:errcheck // closing frees it either way
		delete(live, victim)
		delete(b.used, victim)
	}
}

// atShare reports whether owner's live sessions are at least its share of
// max among the owners that hold sessions (itself counted): its new
// session then takes the place of one of its own.
func (b *sessionBound) atShare(live map[string]*mcp.ServerSession, owner string) bool {
	held := map[string]int{owner: 0}
	for id := range live {
		if u, ok := b.used[id]; ok {
			held[u.owner]++
		}
	}
	return held[owner] >= max(1, b.max/len(held))
}

// leastRecent is the live session used longest ago, among owner's when
// only is set.
func (b *sessionBound) leastRecent(live map[string]*mcp.ServerSession, owner string, only bool) string {
	now := b.now()
	oldest, at := "", now
	for id := range live {
		u, ok := b.used[id]
		if !ok {
			u.at = now
		}
		if only && (!ok || u.owner != owner) {
			continue
		}
		if oldest == "" || u.at.Before(at) {
			oldest, at = id, u.at
		}
	}
	if oldest == "" && only { // none of owner's is known yet: anyone's
		return b.leastRecent(live, owner, false)
	}
	return oldest
}
