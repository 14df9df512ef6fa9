package status

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/schemaq/schemaq/events"
)

// Daemon is one replica of the query service, as it announces
// itself on $SRV.INFO.
type Daemon struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	// Gateway is "configured" or "none"; AllowSystemCatalogs "true" or
	// "false"; empty from a daemon older than the announcement.
	Gateway             string `json:"gateway,omitempty"`
	AllowSystemCatalogs string `json:"allow_system_catalogs,omitempty"`
	// Store is "sqlite" (an index of its own) or "redis" (shared).
	Store string `json:"store,omitempty"`
}

// daemonsQuiet is how long status waits after the last replica answered:
// replicas answer within milliseconds; the request context bounds it all.
const daemonsQuiet = 300 * time.Millisecond

// ListDaemons asks every replica of the service for its info. A
// connection not allowed to ask (its role has no $SRV.INFO) finds none.
func ListDaemons(ctx context.Context, nc *nats.Conn) ([]Daemon, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("list daemons: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest("$SRV.INFO."+events.ServiceName, inbox, nil); err != nil {
		return nil, fmt.Errorf("list daemons: %w", err)
	}
	out := []Daemon{}
	for {
		wait := daemonsQuiet
		if len(out) == 0 {
			wait = 3 * daemonsQuiet // the first answer may take a round trip more
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			wait = time.Until(dl)
		}
		if wait <= 0 {
			break
		}
		msg, err := sub.NextMsg(wait)
		if err != nil {
			break // quiet: every replica that will answer has
		}
		var info struct {
			ID       string            `json:"id"`
			Version  string            `json:"version"`
			Metadata map[string]string `json:"metadata"`
		}
		if json.Unmarshal(msg.Data, &info) != nil || info.ID == "" {
			continue // not a micro info reply
		}
		out = append(out, Daemon{ID: info.ID, Version: info.Version,
			Gateway: info.Metadata[events.CapabilityGateway], AllowSystemCatalogs: info.Metadata[events.CapabilityAllowSystemCatalogs],
			Store: info.Metadata[events.CapabilityStore]})
		if len(out) >= 1000 {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DaemonWarnings says where replicas of the one queue group would answer
// the same request differently: NATS spreads requests over them at
// random, so an ask gets SQL from one and retrieval only from another.
func DaemonWarnings(ds []Daemon) []string {
	var out []string
	differ := func(what string, get func(Daemon) string, describe func(string) string) {
		counts := map[string]int{}
		for _, d := range ds {
			counts[get(d)]++
		}
		if len(counts) < 2 {
			return
		}
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], describe(v)))
		}
		out = append(out, fmt.Sprintf("the %d daemons of the %s queue group differ in %s: %s; requests go to any of them, so the same request gets different answers: configure them alike",
			len(ds), events.ServiceName, what, strings.Join(parts, ", ")))
	}
	differ("their LLM gateway", func(d Daemon) string { return d.Gateway }, func(v string) string {
		switch v {
		case "configured":
			return "with a gateway (ask writes SQL)"
		case "none":
			return "without (ask answers with retrieval only)"
		}
		return "that do not say (older than this schemaq)"
	})
	differ("--allow-system-catalogs", func(d Daemon) string { return d.AllowSystemCatalogs }, func(v string) string {
		switch v {
		case "true":
			return "allowing the system catalogs"
		case "false":
			return "refusing them"
		}
		return "that do not say (older than this schemaq)"
	})
	differ("their index", func(d Daemon) string { return d.Store }, func(v string) string {
		switch v {
		case "sqlite":
			return "with an index of their own"
		case "redis":
			return "on the shared Redis index"
		}
		return "that do not say (older than this schemaq)"
	})
	differ("version", func(d Daemon) string { return d.Version }, func(v string) string { return "at " + v })
	return out
}
