// Package ask turns a question and its retrieved context into checked SQL
// through an OpenAI-compatible chat model: a prompt with a stable prefix
// (so gateway prompt caching hits), output parsing tolerant of fences and
// prose, the SQL guard, and one repair round that shows the model the
// exact error. It never executes SQL.
package ask

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Message is one chat message.
type Message struct {
	Role    string // system, user or assistant
	Content string
}

// Completion is one chat completion request.
type Completion struct {
	Messages []Message
	// JSON asks for JSON output mode where the gateway supports it.
	JSON bool
}

// Usage counts tokens of one or more completions.
type Usage struct {
	Prompt, Completion, Cached int
	// Calls are the gateway calls an ask made, failed ones and the
	// repair round's included.
	Calls int
}

func (u *Usage) add(o Usage) {
	u.Prompt += o.Prompt
	u.Completion += o.Completion
	u.Cached += o.Cached
	u.Calls += o.Calls
}

// Reply is a completion's text and usage.
type Reply struct {
	Content string
	Usage   Usage
}

// Gateway completes chats. Implementations retry transient HTTP failures
// themselves and return *GatewayError for the rest.
type Gateway interface {
	Complete(ctx context.Context, c Completion) (*Reply, error)
}

// GatewayError is a failure of the model gateway: a status it answered
// with, a malformed answer, or none at all.
type GatewayError struct {
	Status int // HTTP status; 0 when there was no usable answer
	Msg    string
	// RetryAfter is when the gateway said to come back, when that was
	// later than the request could wait.
	RetryAfter time.Duration
}

func (e *GatewayError) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("gateway answered %d: %s", e.Status, e.Msg)
	}
	return "gateway: " + e.Msg
}

// ErrGateway matches every *GatewayError.
var ErrGateway = errors.New("gateway error")

func (e *GatewayError) Is(target error) bool { return target == ErrGateway }
