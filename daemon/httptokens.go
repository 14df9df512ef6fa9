package daemon

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/bearer"
)

// principal is who a request authenticated as: a token's grant, with
// the daemon's rules for its endpoints.
type principal bearer.Grant

// nameOr is the token's name, or def without tokens.
func (p *principal) nameOr(def string) string {
	if p == nil {
		return def
	}
	return p.Name
}

// useOf is forbidden when p may not use db.
func (p *principal) useOf(db string) *events.Error {
	if !p.mayUse(db) {
		return events.Errorf(events.CodeForbidden, "token %q may not use database %s", p.Name, events.Quote(db))
	}
	return nil
}

func (p *principal) mayUse(db string) bool { return (*bearer.Grant)(p).MayUse(db) }

type principalKey struct{}

func principalOf(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	return p
}

// mayAsk checks a principal's right to one endpoint's request about db:
// the database, and write access for feedback. No principal (NATS, or an
// API without tokens) may ask anything its transport let through.
func (p *principal) mayAsk(endpoint, db string) *events.Error {
	if p == nil {
		return nil
	}
	if e := p.useOf(db); e != nil {
		return e
	}
	if endpoint == events.EndpointFeedback && !p.Write {
		return events.Errorf(events.CodeForbidden, "token %q may read database %s, not give feedback to it", p.Name, events.Quote(db))
	}
	return nil
}

// principalOfRequest is the token holder of a request that came over
// HTTP, nil for one over NATS.
func principalOfRequest(r micro.Request) *principal {
	if h, ok := r.(*httpRequest); ok {
		return h.who
	}
	return nil
}

// authorized requires a known bearer token when any is configured, and
// carries its holder in the request's context.
func authorized(ring *bearer.Keyring, next http.Handler) http.Handler {
	if ring.Empty() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := (*principal)(ring.FromHeader(r.Header.Get("Authorization")))
		if p == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="schemaq"`)
			writeJSONError(w, http.StatusUnauthorized, "", &events.Error{Code: "unauthorized", Message: "a bearer token is required: Authorization: Bearer <token> (the server's SCHEMAQ_HTTP_TOKEN, or one of its tokens file)"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}
