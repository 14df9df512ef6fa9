package main

import (
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/schemaq/schemaq/pkg/ask"
	askopenai "github.com/schemaq/schemaq/pkg/ask/openai"
	"github.com/schemaq/schemaq/pkg/embed"
	embedopenai "github.com/schemaq/schemaq/pkg/embed/openai"
	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/natsconn"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/rerank/httprerank"
	"github.com/schemaq/schemaq/pkg/verify"
)

// Flags read their default from the environment, so the precedence is
// built-in default < SCHEMAQ_* variable < flag. Only this package reads
// the environment.

func envString(e *env, key, def string) string {
	if v := e.getenv(key); v != "" {
		return v
	}
	return def
}

func envInt(e *env, key string, def int) (int, error) {
	v := e.getenv(key)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, usagef("%s: %q is not a whole number", key, v)
	}
	return n, nil
}

func envDuration(e *env, key string, def time.Duration) (time.Duration, error) {
	v := e.getenv(key)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, usagef("%s: %v", key, err)
	}
	return d, nil
}

func envFloat(e *env, key string, def float64) (float64, error) {
	v := e.getenv(key)
	if v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return 0, usagef("%s: %q is not a number of zero or more", key, v)
	}
	return f, nil
}

// natsFlags are the connection settings of every command that talks to a
// running schemaq.
type natsFlags struct {
	url, creds, nkey, user, password, token, ca, cert, key, name string
	timeout                                                      time.Duration
}

func (n *natsFlags) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&n.url, "nats-url", envString(e, "SCHEMAQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URLs, comma-separated [SCHEMAQ_NATS_URL]")
	fs.StringVar(&n.creds, "nats-creds", envString(e, "SCHEMAQ_NATS_CREDS", ""), "NATS credentials file [SCHEMAQ_NATS_CREDS]")
	fs.StringVar(&n.nkey, "nats-nkey", envString(e, "SCHEMAQ_NATS_NKEY", ""), "NATS nkey seed file [SCHEMAQ_NATS_NKEY]")
	fs.StringVar(&n.user, "nats-user", envString(e, "SCHEMAQ_NATS_USER", ""), "NATS user [SCHEMAQ_NATS_USER]")
	n.password = e.getenv("SCHEMAQ_NATS_PASSWORD") // secrets only from the environment, never on a command line
	n.token = e.getenv("SCHEMAQ_NATS_TOKEN")
	fs.StringVar(&n.ca, "nats-ca", envString(e, "SCHEMAQ_NATS_CA", ""), "CA file for NATS TLS [SCHEMAQ_NATS_CA]")
	fs.StringVar(&n.cert, "nats-cert", envString(e, "SCHEMAQ_NATS_CERT", ""), "client certificate for NATS TLS [SCHEMAQ_NATS_CERT]")
	fs.StringVar(&n.key, "nats-key", envString(e, "SCHEMAQ_NATS_KEY", ""), "client key for NATS TLS [SCHEMAQ_NATS_KEY]")
	fs.StringVar(&n.name, "nats-name", envString(e, "SCHEMAQ_NATS_NAME", "schemaq"), "connection name shown by the server [SCHEMAQ_NATS_NAME]")
	fs.DurationVar(&n.timeout, "nats-timeout", 5*time.Second, "timeout of the first connection")
}

func (n *natsFlags) config() natsconn.Config {
	var urls []string
	for _, u := range strings.Split(n.url, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return natsconn.Config{URLs: urls, Name: n.name, Creds: n.creds, NKeySeed: n.nkey, User: n.user,
		Password: n.password, Token: n.token, CAFile: n.ca, CertFile: n.cert, KeyFile: n.key, ConnectTimeout: n.timeout}
}

// credentials are the options that authenticate a connection as these
// flags say, for connections made without natsconn (in-process ones).
func (n *natsFlags) credentials() []nats.Option {
	var opts []nats.Option
	switch {
	case n.creds != "":
		opts = append(opts, nats.UserCredentials(n.creds))
	case n.token != "":
		opts = append(opts, nats.Token(n.token))
	case n.user != "":
		opts = append(opts, nats.UserInfo(n.user, n.password))
	}
	return opts
}

func (n *natsFlags) connect(log *zap.Logger, extra ...nats.Option) (*nats.Conn, error) {
	cfg := n.config()
	if err := cfg.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return natsconn.Connect(cfg, log, extra...)
}

// embedFlags choose the embedder: the local one unless a gateway is set.
type embedFlags struct {
	baseURL, model, apiKey string
	dims                   int
}

func (f *embedFlags) register(fs *flag.FlagSet, e *env) error {
	dims, err := envInt(e, "SCHEMAQ_EMBED_DIMENSIONS", 0)
	if err != nil {
		return err
	}
	fs.StringVar(&f.baseURL, "embed-base-url", envString(e, "SCHEMAQ_EMBED_BASE_URL", ""), "OpenAI-compatible embeddings endpoint; empty uses the local embedder [SCHEMAQ_EMBED_BASE_URL]")
	fs.StringVar(&f.model, "embed-model", envString(e, "SCHEMAQ_EMBED_MODEL", ""), "embedding model [SCHEMAQ_EMBED_MODEL]")
	fs.IntVar(&f.dims, "embed-dimensions", dims, "embedding dimensions (local default 512) [SCHEMAQ_EMBED_DIMENSIONS]")
	f.apiKey = envString(e, "SCHEMAQ_EMBED_API_KEY", e.getenv("OPENAI_API_KEY"))
	return nil
}

func (f *embedFlags) build() (embed.Embedder, error) {
	if f.baseURL == "" {
		return embed.NewLocal(f.dims), nil
	}
	e, err := embedopenai.New(embedopenai.Config{BaseURL: f.baseURL, APIKey: f.apiKey, Model: f.model,
		Dimensions: f.dims, Retry: httpretry.DefaultConfig})
	if err != nil {
		return nil, usagef("embedder (--embed-*, SCHEMAQ_EMBED_*): %v", err)
	}
	return e, nil
}

// llmFlags configure the chat gateway that writes SQL and the optional
// gateway reranker. Keys come from the environment only.
type llmFlags struct {
	baseURL, model, apiKey       string
	maxTokens, retries           int
	temperature                  float64
	timeout                      time.Duration
	rerankURL, rerankModel, rkey string
	verify                       verify.Config
}

func (l *llmFlags) register(fs *flag.FlagSet, e *env) error {
	maxTokens, err := envInt(e, "SCHEMAQ_LLM_MAX_TOKENS", 1024)
	if err != nil {
		return err
	}
	retries, err := envInt(e, "SCHEMAQ_LLM_RETRIES", 3)
	if err != nil {
		return err
	}
	temp := 0.0
	if v := e.getenv("SCHEMAQ_LLM_TEMPERATURE"); v != "" {
		if temp, err = strconv.ParseFloat(v, 64); err != nil {
			return usagef("SCHEMAQ_LLM_TEMPERATURE: %q is not a number", v)
		}
	}
	timeout, err := envDuration(e, "SCHEMAQ_LLM_TIMEOUT", 60*time.Second)
	if err != nil {
		return err
	}
	fs.StringVar(&l.baseURL, "llm-base-url", envString(e, "SCHEMAQ_LLM_BASE_URL", ""), "OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, Ollama, LiteLLM); empty: ask is retrieval only [SCHEMAQ_LLM_BASE_URL]")
	fs.StringVar(&l.model, "llm-model", envString(e, "SCHEMAQ_LLM_MODEL", ""), "chat model [SCHEMAQ_LLM_MODEL]")
	fs.IntVar(&l.maxTokens, "llm-max-tokens", maxTokens, "completion token limit [SCHEMAQ_LLM_MAX_TOKENS]")
	fs.Float64Var(&l.temperature, "llm-temperature", temp, "sampling temperature [SCHEMAQ_LLM_TEMPERATURE]")
	fs.DurationVar(&l.timeout, "llm-timeout", timeout, "timeout of one gateway call [SCHEMAQ_LLM_TIMEOUT]")
	fs.IntVar(&l.retries, "llm-retries", retries, "retries on 429 and 5xx, honouring Retry-After [SCHEMAQ_LLM_RETRIES]")
	l.apiKey = envString(e, "SCHEMAQ_LLM_API_KEY", e.getenv("OPENAI_API_KEY"))
	fs.StringVar(&l.rerankURL, "rerank-base-url", envString(e, "SCHEMAQ_RERANK_BASE_URL", ""), "optional /rerank endpoint (Cohere, Jina, TEI shape) [SCHEMAQ_RERANK_BASE_URL]")
	fs.StringVar(&l.rerankModel, "rerank-model", envString(e, "SCHEMAQ_RERANK_MODEL", ""), "reranker model [SCHEMAQ_RERANK_MODEL]")
	l.rkey = envString(e, "SCHEMAQ_RERANK_API_KEY", l.apiKey)
	vmaxCost, err := envFloat(e, "SCHEMAQ_VERIFY_MAX_COST", 0)
	if err != nil {
		return err
	}
	vmaxRows, err := envFloat(e, "SCHEMAQ_VERIFY_MAX_ROWS", 0)
	if err != nil {
		return err
	}
	vtimeout, err := envDuration(e, "SCHEMAQ_VERIFY_TIMEOUT", 2*time.Second)
	if err != nil {
		return err
	}
	// The DSN may hold a password: from the environment (or its _FILE
	// twin) only, never on a command line.
	l.verify.DSN = e.getenv("SCHEMAQ_VERIFY_DSN")
	fs.Float64Var(&l.verify.MaxCost, "verify-max-cost", vmaxCost, "with SCHEMAQ_VERIFY_DSN: refuse SQL whose estimated cost passes this (0: no limit) [SCHEMAQ_VERIFY_MAX_COST]")
	fs.Float64Var(&l.verify.MaxRows, "verify-max-rows", vmaxRows, "with SCHEMAQ_VERIFY_DSN: refuse SQL whose estimated rows pass this (0: no limit) [SCHEMAQ_VERIFY_MAX_ROWS]")
	fs.DurationVar(&l.verify.Timeout, "verify-timeout", vtimeout, "with SCHEMAQ_VERIFY_DSN: the statement_timeout of one EXPLAIN [SCHEMAQ_VERIFY_TIMEOUT]")
	return nil
}

func (l *llmFlags) retry() httpretry.Config {
	c := httpretry.DefaultConfig
	c.MaxRetries = l.retries
	return c
}

// asker is nil when no gateway is configured.
func (l *llmFlags) asker() (*ask.Asker, error) {
	if l.baseURL == "" {
		return nil, nil
	}
	gw, err := askopenai.New(askopenai.Config{BaseURL: l.baseURL, APIKey: l.apiKey, Model: l.model,
		MaxTokens: l.maxTokens, Temperature: float32(l.temperature), Timeout: l.timeout, Retry: l.retry()})
	if err != nil {
		return nil, usagef("LLM gateway (--llm-*, SCHEMAQ_LLM_*): %v", err)
	}
	var opts []ask.Option
	if l.verify.DSN != "" {
		v, err := verify.New(l.verify)
		if err != nil {
			return nil, usagef("SCHEMAQ_VERIFY_DSN: %v", err)
		}
		opts = append(opts, ask.WithVerifier(v))
	}
	return ask.New(gw, opts...)
}

func (l *llmFlags) reranker() (rerank.Reranker, error) {
	if l.rerankURL == "" {
		return nil, nil
	}
	r, err := httprerank.New(httprerank.Config{BaseURL: l.rerankURL, APIKey: l.rkey, Model: l.rerankModel, Retry: l.retry()})
	if err != nil {
		return nil, usagef("reranker (--rerank-*, SCHEMAQ_RERANK_*): %v", err)
	}
	return r, nil
}

type logFlags struct{ format, level string }

func (l *logFlags) register(fs *flag.FlagSet, e *env, defFormat string) {
	fs.StringVar(&l.format, "log-format", envString(e, "SCHEMAQ_LOG_FORMAT", defFormat), "json or console [SCHEMAQ_LOG_FORMAT]")
	fs.StringVar(&l.level, "log-level", envString(e, "SCHEMAQ_LOG_LEVEL", "info"), "debug, info, warn or error [SCHEMAQ_LOG_LEVEL]")
}

func (l *logFlags) build(e *env) (*zap.Logger, error) {
	if err := oneOf("log-format", l.format, "json", "console"); err != nil {
		return nil, err
	}
	lvl, err := zapcore.ParseLevel(l.level)
	if err != nil {
		return nil, usagef("--log-level: %v", err)
	}
	var cfg zap.Config
	if l.format == "console" {
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	} else {
		cfg = zap.NewProductionConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	if e.stderr != os.Stderr {
		// Tests capture logs through e.stderr.
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		if l.format == "console" {
			enc = zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
		}
		return zap.New(zapcore.NewCore(enc, zapcore.AddSync(e.stderr), lvl)), nil
	}
	return cfg.Build()
}

// requestCtx bounds a one-shot command.
func requestCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func dataDirFlag(fs *flag.FlagSet, e *env) *string {
	return fs.String("data-dir", envString(e, "SCHEMAQ_DATA_DIR", ".schemaq"), "where the index (and, for up, NATS) keeps its data [SCHEMAQ_DATA_DIR]")
}
