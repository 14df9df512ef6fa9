package daemon

import (
	"net"
	"net/http"
	"strings"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/loopback"
)

// A token-less API on loopback is reachable from any page a local
// browser opens: through DNS rebinding (attacker.example resolving to
// 127.0.0.1) such a page reads the replies, since to the browser they
// are same-origin. The Host header still names the attacker's domain,
// so the API answers only the hosts it was configured for.

// allowedHosts decides which Host headers the API answers.
type allowedHosts struct {
	any   bool
	names map[string]bool
}

// loopbackHosts are the names a local client uses.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// newAllowedHosts is the hosts given (* for any), or, by default, the
// loopback names when the API listens on loopback only, and any host
// when it listens beyond (it then requires a token, which a rebinding
// page does not have, and a cluster's Service names are many).
func newAllowedHosts(configured []string, addr string) allowedHosts {
	if len(configured) == 0 {
		if addr != "" && !loopback.Addr(addr) {
			return allowedHosts{any: true}
		}
		configured = loopbackHosts
	}
	h := allowedHosts{names: map[string]bool{}}
	for _, c := range configured {
		c = strings.ToLower(strings.TrimSpace(c))
		if c == "*" {
			h.any = true
		}
		h.names[strings.Trim(c, "[]")] = true
	}
	return h
}

// allows reports whether a request's Host (with or without a port) is
// one the API answers.
func (h allowedHosts) allows(host string) bool {
	if h.any {
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	return h.names[strings.ToLower(strings.Trim(name, "[]"))]
}

// checkHost refuses a request for a host the API does not serve.
func (h allowedHosts) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.allows(r.Host) {
			writeJSONError(w, http.StatusMisdirectedRequest, r.Header.Get(HeaderRequestID), events.Errorf(events.CodeBadRequest,
				"host %s is not one this API answers: add it to --http-allowed-hosts (SCHEMAQ_HTTP_ALLOWED_HOSTS)", events.Quote(events.OneLine(r.Host, 200))))
			return
		}
		next.ServeHTTP(w, r)
	})
}
