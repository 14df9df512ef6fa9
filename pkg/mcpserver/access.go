package mcpserver

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
)

// Tokens per database over HTTP. One MCP server answered every database
// its NATS identity reached to whoever held its one token. With a tokens
// file (the HTTP API's format) each request carries a token whose grant
// names its databases, and every tool and resource checks the database
// it was asked about, as the tool reads it, before it calls anything.
// Over stdio, or over HTTP without tokens (loopback only), there is no
// grant and the transport's own bound (the user's NATS credentials)
// holds.

// grantKey is where RequireToken leaves a token's grant in the SDK's
// token info, which the SDK hands to every request of the session.
const grantKey = "schemaq.grant"

// RequireToken lets through the requests that carry one of ring's
// tokens, with its grant for the tools; the others get 401. The SDK
// also binds each session to the token that opened it: another token
// gets 403 for it.
func RequireToken(ring *bearer.Keyring, next http.Handler) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		g := ring.Find(token)
		if g == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: g.Name, Extra: map[string]any{grantKey: g}}, nil
	}
	withInfo := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ring.FromHeader(r.Header.Get("Authorization")) == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="schemaq"`)
			http.Error(w, "a bearer token is required (Authorization: Bearer <token>: SCHEMAQ_MCP_TOKEN, or one of the tokens file)", http.StatusUnauthorized)
			return
		}
		withInfo.ServeHTTP(w, r)
	})
}

// grantOf is the grant a request came with: nil and true without a
// token; false when token info came without a grant, which allows
// nothing.
func grantOf(extra *mcp.RequestExtra) (*bearer.Grant, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return nil, true
	}
	g, ok := extra.TokenInfo.Extra[grantKey].(*bearer.Grant)
	return g, ok
}

// mayUse refuses db unless the request's token grants it.
func mayUse(extra *mcp.RequestExtra, db string) error {
	g, ok := grantOf(extra)
	switch {
	case !ok:
		return fmt.Errorf("%s: the request's token grants nothing", events.CodeForbidden)
	case g != nil && !g.MayUse(db):
		return fmt.Errorf("%s: token %q may not use database %s", events.CodeForbidden, g.Name, events.Quote(db))
	}
	return nil
}

// mayWrite refuses feedback to db unless the request's token may write
// to it.
func mayWrite(extra *mcp.RequestExtra, db string) error {
	if err := mayUse(extra, db); err != nil {
		return err
	}
	if g, _ := grantOf(extra); g != nil && !g.Write {
		return fmt.Errorf("%s: token %q may read database %s, not give feedback to it", events.CodeForbidden, g.Name, events.Quote(db))
	}
	return nil
}
