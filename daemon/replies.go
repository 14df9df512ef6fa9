package daemon

import (
	"strings"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
)

// A request's reply subject is the caller's to choose, and the daemon
// publishes there with its own permissions, which reach further than a
// caller's: a request for database shop with the reply subject
// $KV.schemaq_catalogs.other had the daemon write its answer over
// another team's catalog, and one replying to schemaq.examples.other
// stored a garbage event there. NATS accounts keep a caller from naming
// such a subject at all (docs/deploy.md); the daemon refuses them too.

// replyRefused says why a reply subject is not an inbox the daemon
// answers on, or "" when it is one. A missing reply (a plain publish,
// or an HTTP request, answered on its response) is no subject at all.
func replyRefused(reply string) string {
	switch {
	case reply == "":
		return ""
	case strings.HasPrefix(reply, "$"):
		return "a system subject ($JS, $KV, $O, $SRV, …)"
	case strings.HasPrefix(reply, events.ServiceName+"."):
		return "a schemaq subject"
	case strings.ContainsAny(reply, "*> \t\r\n"):
		return "not a subject one can publish to"
	}
	return ""
}

// refuseReply drops a request whose reply subject is refused, counted
// and logged (the subject quoted and cut: it is input). No work is done
// for it and nothing is published.
func (d *Daemon) refuseReply(endpoint, reply, why string) {
	if d.m != nil {
		d.m.refusedReplies.WithLabelValues(endpoint).Inc()
	}
	d.log.Warn("request dropped: its reply subject is not an inbox",
		zap.String("endpoint", endpoint), zap.String("reply", events.OneLine(reply, 200)), zap.String("why", why))
}
