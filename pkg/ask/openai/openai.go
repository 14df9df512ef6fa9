// Package openai is the ask.Gateway for any OpenAI-compatible chat
// completions endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, LiteLLM),
// through github.com/sashabaranov/go-openai.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/redact"
)

// Config of the gateway. APIKey is a secret: never logged, scrubbed from
// errors.
type Config struct {
	BaseURL     string
	APIKey      string
	Model       string
	MaxTokens   int
	Temperature float32
	Timeout     time.Duration
	Retry       httpretry.Config
}

// Gateway calls the chat completions endpoint. Safe for concurrent use.
type Gateway struct {
	cfg    Config
	client *goopenai.Client
	// noJSONMode is set once the gateway has refused response_format, so
	// later calls do not ask again.
	noJSONMode atomic.Bool
}

var _ ask.Gateway = (*Gateway)(nil)

// New validates cfg and builds the gateway; it does not dial out.
func New(cfg Config) (*Gateway, error) {
	var errs []error
	if cfg.BaseURL == "" {
		errs = append(errs, errors.New("LLM base URL is required (SCHEMAQ_LLM_BASE_URL)"))
	}
	if cfg.Model == "" {
		errs = append(errs, errors.New("LLM model is required (SCHEMAQ_LLM_MODEL)"))
	}
	if cfg.MaxTokens < 0 || cfg.Temperature < 0 || cfg.Temperature > 2 {
		errs = append(errs, fmt.Errorf("LLM max tokens must be ≥ 0 and temperature within 0–2, got %d and %v", cfg.MaxTokens, cfg.Temperature))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 1024
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	oc := goopenai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = &http.Client{Timeout: cfg.Timeout, Transport: temperatureTransport{base: httpretry.New(nil, cfg.Retry), temperature: cfg.Temperature}}
	return &Gateway{cfg: cfg, client: goopenai.NewClientWithConfig(oc)}, nil
}

// Model is the configured model.
func (g *Gateway) Model() string { return g.cfg.Model }

// Complete implements ask.Gateway.
func (g *Gateway) Complete(ctx context.Context, c ask.Completion) (*ask.Reply, error) {
	// max_tokens, not max_completion_tokens: every OpenAI-compatible
	// server (vLLM, Ollama, LiteLLM, Azure) accepts it; the newer field is
	// OpenAI's own.
	//lint:ignore SA1019 deliberate, see above
	req := goopenai.ChatCompletionRequest{Model: g.cfg.Model, MaxTokens: g.cfg.MaxTokens, Temperature: g.cfg.Temperature}
	for _, m := range c.Messages {
		req.Messages = append(req.Messages, goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	useJSON := c.JSON && !g.noJSONMode.Load()
	if useJSON {
		req.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	resp, err := g.client.CreateChatCompletion(ctx, req)
	if err != nil && useJSON && refusedJSONMode(err) {
		// Not every OpenAI-compatible server has JSON mode; the prompt
		// asks for JSON anyway and parsing tolerates prose.
		g.noJSONMode.Store(true)
		req.ResponseFormat = nil
		resp, err = g.client.CreateChatCompletion(ctx, req)
	}
	if err != nil {
		return nil, g.gatewayError(ctx, err)
	}
	if len(resp.Choices) == 0 {
		return nil, &ask.GatewayError{Msg: "the completion has no choices"}
	}
	out := &ask.Reply{Content: resp.Choices[0].Message.Content,
		Usage: ask.Usage{Prompt: resp.Usage.PromptTokens, Completion: resp.Usage.CompletionTokens}}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		out.Usage.Cached = d.CachedTokens
	}
	return out, nil
}

// refusedJSONMode reports whether the gateway refused the request for its
// response_format: a 400 naming that parameter (OpenAI, vLLM, LiteLLM and
// Ollama all name it), not any 400 that mentions JSON, which would switch
// JSON mode off for good on an unrelated mistake.
func refusedJSONMode(err error) bool {
	var apiErr *goopenai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(apiErr.Message)
	if apiErr.Param != nil && *apiErr.Param == "response_format" {
		return true
	}
	return strings.Contains(msg, "response_format") || strings.Contains(msg, "json_object") || strings.Contains(msg, "json mode")
}

func (g *Gateway) gatewayError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The key as sent, and any secret in the URL Go's HTTP errors quote
	// (a key in the query string, a password in the user info).
	msg := redact.Text(err.Error())
	if g.cfg.APIKey != "" {
		msg = strings.ReplaceAll(msg, g.cfg.APIKey, "[redacted]")
	}
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	var later *httpretry.RetryAfterError
	switch {
	case errors.As(err, &later):
		return &ask.GatewayError{Status: later.Status, Msg: redact.Text(later.Error()), RetryAfter: later.After}
	case errors.As(err, &apiErr):
		return &ask.GatewayError{Status: apiErr.HTTPStatusCode, Msg: msg}
	case errors.As(err, &reqErr):
		return &ask.GatewayError{Status: reqErr.HTTPStatusCode, Msg: msg}
	}
	return &ask.GatewayError{Msg: msg}
}

// temperatureTransport writes the configured temperature into every chat
// completion request that lacks one. go-openai leaves a temperature of 0,
// the default here, out of the body (omitempty), and the server then
// samples at its own default (often 0.7 to 1): answers would not be
// deterministic.
type temperatureTransport struct {
	base        http.RoundTripper
	temperature float32
}

func (t temperatureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return t.base.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(b, &body) == nil {
		if _, set := body["temperature"]; !set {
			body["temperature"], _ = json.Marshal(t.temperature)
			if nb, err := json.Marshal(body); err == nil {
				b = nb
			}
		}
	}
	out := r.Clone(r.Context())
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return t.base.RoundTrip(out)
}
