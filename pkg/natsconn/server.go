package natsconn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// MinServerVersion is the oldest nats-server the workers and daemons run
// against. 2.10 brought what they rely on: consumers with several filter
// subjects (the replay of docs and examples into a rebuilt index, the
// dead-letter reads) and termination with a reason (a dead-lettered
// event leaves the pending count at once). Older servers refuse the
// first and ignore the second, so an index would be rebuilt without its
// docs; the processes refuse to start instead.
const MinServerVersion = "2.10.0"

// Server is what CheckServer needs of a connection.
type Server interface {
	ConnectedServerVersion() string
	ConnectedUrlRedacted() string
}

// JetStreamWait bounds how long CheckServer asks a JetStream that does
// not answer yet. A cluster starting with its processes has no meta
// leader for a while, and a loaded server can miss the client's 5 s: a
// process that gave up at the first unanswered request was restarted
// by its orchestrator, or failed a test run (a replica started beside
// another on a busy CI machine).
const JetStreamWait = 30 * time.Second

// attemptTimeout is one request's, the client's own default.
const attemptTimeout = 5 * time.Second

// CheckServer refuses a server older than MinServerVersion, or one
// without JetStream for this account, naming the server and what it
// lacks. A JetStream that does not answer is asked again, with backoff,
// for JetStreamWait or until ctx ends.
func CheckServer(ctx context.Context, nc Server, js jetstream.JetStream) error {
	v := nc.ConnectedServerVersion()
	if err := CheckServerVersion(v); err != nil {
		return fmt.Errorf("nats server at %s: %w", nc.ConnectedUrlRedacted(), err)
	}
	start, wait := time.Now(), 250*time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		_, err := js.AccountInfo(actx)
		cancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return fmt.Errorf("nats server at %s (%s): JetStream is not enabled for this account; start nats-server with -js (or jetstream {} in its config): %w",
				nc.ConnectedUrlRedacted(), v, err)
		case ctx.Err() != nil || time.Since(start)+wait > JetStreamWait:
			return fmt.Errorf("nats server at %s (%s): JetStream account info, %d attempts in %s: %w",
				nc.ConnectedUrlRedacted(), v, attempt, time.Since(start).Round(time.Millisecond), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// CheckServerVersion compares a server's version (e.g. "2.9.10",
// "2.11.0-RC.2") with MinServerVersion. A pre-release counts as its
// release: release candidates of 2.10 already had what is needed.
func CheckServerVersion(v string) error {
	have, ok := parseVersion(v)
	if !ok {
		return fmt.Errorf("cannot read the server's version %q; schemaq needs nats-server %s or newer", v, MinServerVersion)
	}
	want, _ := parseVersion(MinServerVersion)
	for i := range want {
		if have[i] != want[i] {
			if have[i] < want[i] {
				return fmt.Errorf("nats-server %s is too old: schemaq needs %s or newer (consumers with several filter subjects, termination with a reason)", v, MinServerVersion)
			}
			break
		}
	}
	return nil
}

func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
