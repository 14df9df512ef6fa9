package daemon

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go/micro"

	"github.com/schemaq/schemaq/events"
)

// Who gave a request, for the record feedback keeps: an example stored
// from feedback names its author, so that one that misleads can be traced
// and its author's others found.

type callerKey struct{}

// requestInfoHeader is set by the NATS server on a request that crossed
// a service import (the account-per-team deployment), replacing whatever
// the client sent: it names the caller's account, and with `share: true`
// on the import, its user. A request within one account carries whatever
// its sender wrote, so it is read only as far as the docs promise.
const requestInfoHeader = "Nats-Request-Info"

// callerOf names who sent r: "http:<token name>" (or "http" without
// tokens), "nats:<account>[/<user>]" through an import, or "nats".
func callerOf(r micro.Request) string {
	if h, ok := r.(*httpRequest); ok {
		return h.caller
	}
	var info struct {
		Account string `json:"acc"`
		User    string `json:"user"`
	}
	if raw := r.Headers().Get(requestInfoHeader); raw != "" && json.Unmarshal([]byte(raw), &info) == nil && info.Account != "" {
		who := "nats:" + info.Account
		if info.User != "" {
			who += "/" + info.User
		}
		// An author is an id, stored with every example.
		return events.AsID(who, 128)
	}
	return "nats"
}

func callerFrom(ctx context.Context) string {
	if s, ok := ctx.Value(callerKey{}).(string); ok {
		return s
	}
	return ""
}
