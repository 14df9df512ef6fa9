package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	askopenai "github.com/schemaq/schemaq/pkg/ask/openai"
	"github.com/schemaq/schemaq/pkg/bearer"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/embed"
	embedopenai "github.com/schemaq/schemaq/pkg/embed/openai"
	"github.com/schemaq/schemaq/pkg/httpretry"
	"github.com/schemaq/schemaq/pkg/natsconn"
	"github.com/schemaq/schemaq/pkg/objectgc"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/rerank/httprerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/verify"
	"github.com/schemaq/schemaq/workers"
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

// durationVar, floatVar and intVar declare a flag whose default comes from the
// environment variable key, named in its usage, so that a ConfigMap can
// set every flag.
func durationVar(fs *flag.FlagSet, e *env, p *time.Duration, name, key string, def time.Duration, usage string) error {
	v, err := envDuration(e, key, def)
	if err != nil {
		return err
	}
	fs.DurationVar(p, name, v, usage+" ["+key+"]")
	return nil
}

func floatVar(fs *flag.FlagSet, e *env, p *float64, name, key string, def float64, usage string) error {
	v, err := envFloat(e, key, def)
	if err != nil {
		return err
	}
	fs.Float64Var(p, name, v, usage+" ["+key+"]")
	return nil
}

func intVar(fs *flag.FlagSet, e *env, p *int, name, key string, def int, usage string) error {
	v, err := envInt(e, key, def)
	if err != nil {
		return err
	}
	fs.IntVar(p, name, v, usage+" ["+key+"]")
	return nil
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
	url, creds, nkey, user, password, token, ca, cert, key, name, inbox string
	timeout                                                             time.Duration
	envErr                                                              error // an unreadable SCHEMAQ_NATS_TIMEOUT, reported on connect
	// local is the data directory whose running `up` a connection
	// without a URL given goes to (see localEndpoints).
	local string
}

// defaultNATSURL is where a connection goes when nothing says where.
const defaultNATSURL = "nats://127.0.0.1:4222"

func (n *natsFlags) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&n.url, "nats-url", envString(e, "SCHEMAQ_NATS_URL", defaultNATSURL), "NATS server URLs, comma-separated; when neither this nor SCHEMAQ_NATS_URL is given, the `schemaq up` running on SCHEMAQ_DATA_DIR (.schemaq) is used, else the default [SCHEMAQ_NATS_URL]")
	if e.getenv("SCHEMAQ_NATS_URL") == "" {
		n.local = envString(e, "SCHEMAQ_DATA_DIR", ".schemaq")
	}
	fs.StringVar(&n.creds, "nats-creds", envString(e, "SCHEMAQ_NATS_CREDS", ""), "NATS credentials file [SCHEMAQ_NATS_CREDS]")
	fs.StringVar(&n.nkey, "nats-nkey", envString(e, "SCHEMAQ_NATS_NKEY", ""), "NATS nkey seed file [SCHEMAQ_NATS_NKEY]")
	fs.StringVar(&n.user, "nats-user", envString(e, "SCHEMAQ_NATS_USER", ""), "NATS user [SCHEMAQ_NATS_USER]")
	n.password = e.getenv("SCHEMAQ_NATS_PASSWORD") // secrets only from the environment, never on a command line
	n.token = e.getenv("SCHEMAQ_NATS_TOKEN")
	fs.StringVar(&n.ca, "nats-ca", envString(e, "SCHEMAQ_NATS_CA", ""), "CA file for NATS TLS [SCHEMAQ_NATS_CA]")
	fs.StringVar(&n.cert, "nats-cert", envString(e, "SCHEMAQ_NATS_CERT", ""), "client certificate for NATS TLS [SCHEMAQ_NATS_CERT]")
	fs.StringVar(&n.key, "nats-key", envString(e, "SCHEMAQ_NATS_KEY", ""), "client key for NATS TLS [SCHEMAQ_NATS_KEY]")
	fs.StringVar(&n.name, "nats-name", envString(e, "SCHEMAQ_NATS_NAME", "schemaq"), "connection name shown by the server [SCHEMAQ_NATS_NAME]")
	fs.StringVar(&n.inbox, "nats-inbox-prefix", envString(e, "SCHEMAQ_NATS_INBOX_PREFIX", ""), "subject prefix of this user's reply inboxes instead of _INBOX, so that its permissions can grant it only its own [SCHEMAQ_NATS_INBOX_PREFIX]")
	timeout, err := envDuration(e, "SCHEMAQ_NATS_TIMEOUT", 5*time.Second)
	n.envErr = err
	fs.DurationVar(&n.timeout, "nats-timeout", timeout, "timeout of the first connection [SCHEMAQ_NATS_TIMEOUT]")
}

func (n *natsFlags) config() natsconn.Config {
	url := n.url
	if url == defaultNATSURL && n.local != "" {
		if ep := localEndpoints(n.local); ep != nil && ep.NATS != "" {
			url = ep.NATS
		}
	}
	return natsconn.Config{URLs: commaList(url), Name: n.name, Creds: n.creds, NKeySeed: n.nkey, User: n.user,
		Password: n.password, Token: n.token, CAFile: n.ca, CertFile: n.cert, KeyFile: n.key, ConnectTimeout: n.timeout, InboxPrefix: n.inbox}
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
	if n.inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(n.inbox))
	}
	return opts
}

func (n *natsFlags) connect(log *zap.Logger, extra ...nats.Option) (*nats.Conn, error) {
	if n.envErr != nil {
		return nil, n.envErr
	}
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

// clientFlags are shared by the commands that talk to a running schemaq.
type clientFlags struct {
	nats    natsFlags
	db      *string
	asJSON  *bool
	timeout *time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet, e *env) {
	c.nats.register(fs, e)
	c.db = fs.String("db", envString(e, "SCHEMAQ_DB", ""), "database name [SCHEMAQ_DB]")
	c.asJSON = fs.Bool("json", false, "print JSON")
	c.timeout = fs.Duration("timeout", 30*time.Second, "how long to wait for replies")
}

// jsonFailure reports err as JSON on stdout when --json was given, as
// {"error":{"code","message"}}, so that a script reads one format
// whatever happened; the exit code is err's. Use it deferred:
// defer func() { err = c.jsonFailure(e, err) }().
func (c *clientFlags) jsonFailure(e *env, err error) error {
	if err == nil || c.asJSON == nil || !*c.asJSON || errors.Is(err, errSilent) {
		return err
	}
	_ = json.NewEncoder(e.stdout).Encode(struct {
		Error events.Error `json:"error"`
	}{jsonError(err)})
	return &reportedError{err}
}

// codeDatabaseFull is a publish --json failure the stream refused for
// its database's bound, which a CI job may want to tell from others.
const codeDatabaseFull = "database_full"

// jsonError is err as --json prints it: a wire error as it came, a
// command line's as usage, a publish past the database's bound as
// database_full, anything else as failed.
func jsonError(err error) events.Error {
	var we *events.Error
	var ue *usageError
	var full *streams.FullError
	switch {
	case errors.As(err, &we):
		return *we
	case errors.As(err, &ue):
		return events.Error{Code: "usage", Message: err.Error()}
	case errors.As(err, &full):
		return events.Error{Code: codeDatabaseFull, Message: err.Error()}
	}
	return events.Error{Code: "failed", Message: err.Error()}
}

// replyFailure is a wire error for a reply: printed as text now, or left
// to jsonFailure under --json.
func (c *clientFlags) replyFailure(e *env, err error) error {
	if c.asJSON != nil && *c.asJSON {
		return err
	}
	return replyError(e, err)
}

func (c *clientFlags) requireDB() error {
	if *c.db == "" {
		return usagef("--db is required")
	}
	if err := events.ValidateDatabase(*c.db); err != nil {
		return usagef("--db: %v", err)
	}
	return nil
}

func (c *clientFlags) client() (*client.Client, func(), error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return nil, nil, err
	}
	cli, err := client.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return cli, nc.Close, nil
}

// roleFlags are the settings of the long-running roles.
type roleFlags struct {
	nats    natsFlags
	embed   embedFlags
	store   storeFlags
	llm     llmFlags
	log     logFlags
	dataDir *string
	// natsConfig is up's embedded server configuration file.
	natsConfig string
	worker     workers.Config
	daemon     daemon.Config
	shutdown   time.Duration
	metrics    string
	// metricsOptional: metrics is up's default address, which another
	// process may hold; then the role runs without them.
	metricsOptional bool
	// streamReplicas is --stream-replicas (0: keep).
	streamReplicas int
	// maxEvents is --max-events-per-database (0: keep, -1: none).
	maxEvents int
	// http is the HTTP API's address ("" none) and httpToken its bearer
	// token; httpOptional is as metricsOptional.
	http, httpToken string
	httpOptional    bool
	// httpHosts are the Host headers the HTTP API answers;
	// httpTokensFile grants tokens databases (bearer.Load).
	httpHosts      []string
	httpTokensFile string
	httpTokens     []bearer.Token
	httpNoConsole  bool
	// replica: the daemon opens only once the worker has caught up, as
	// its index is its own.
	replica bool
	// workers is how many workers the process runs on its consumer (0
	// means 1): `bench ingest --workers` stands them in for worker
	// processes sharing one index.
	workers int
	// heldMiB is the worker's MaxHeldBytes in MiB, as the flag takes it.
	heldMiB int
	// indexYield is how long indexing rests, as a multiple of each step,
	// while a daemon in the same process answers requests.
	indexYield float64
	// tokenBudget bounds the context a reply carries and a prompt shows.
	tokenBudget int
	// exampleWeight and docWeight say how much a team's worked examples
	// and docs count for the tables they name: a wiki about neighbouring
	// systems can mislead (docs/retrieval.md), and only its team knows.
	exampleWeight, docWeight float64
	// sweep tidies the object store where a worker runs.
	sweep objectgc.Config
}

// roleSet says which roles a process runs: its flags are theirs only.
type roleSet struct{ worker, serve bool }

// register declares the flags of the roles in set; connect adds the NATS
// client flags, which `up` does not need (it runs its own server). What
// a role does not run keeps its default: a worker has no gateway flags,
// a daemon no consumer flags.
func (r *roleFlags) register(fs *flag.FlagSet, e *env, defLog string, connect bool, set roleSet) error {
	r.dataDir = dataDirFlag(fs, e)
	if connect {
		r.nats.register(fs, e)
	}
	// Both embed: the worker its chunks, the daemon its questions.
	if err := r.embed.register(fs, e); err != nil {
		return err
	}
	if err := r.store.register(fs, e); err != nil {
		return err
	}
	r.log.register(fs, e, defLog)
	r.worker, r.daemon, r.sweep = workers.DefaultConfig, daemon.DefaultConfig, objectgc.DefaultConfig
	r.daemon.Version = buildInfo().Version
	r.indexYield = 2
	r.exampleWeight, r.docWeight = retrieve.DefaultConfig.Fuse.ExampleWeight, retrieve.DefaultConfig.Fuse.DocWeight
	if set.worker {
		if err := r.registerWorker(fs, e); err != nil {
			return err
		}
	}
	if set.serve {
		if err := r.registerDaemon(fs, e); err != nil {
			return err
		}
	}
	if set.worker && set.serve {
		if err := floatVar(fs, e, &r.indexYield, "index-yield", "SCHEMAQ_INDEX_YIELD", r.indexYield, "while requests are in flight, indexing rests this many times as long as each step took (at most 100 ms), so searches keep most of the CPU while migrations land; 0 turns it off"); err != nil {
			return err
		}
	}
	if err := durationVar(fs, e, &r.shutdown, "shutdown-timeout", "SCHEMAQ_SHUTDOWN_TIMEOUT", 25*time.Second, "grace period after SIGTERM"); err != nil {
		return err
	}
	if err := intVar(fs, e, &r.streamReplicas, "stream-replicas", "SCHEMAQ_STREAM_REPLICAS", 0, "copies a JetStream cluster keeps of schemaq's streams, buckets and object store (at most the servers running JetStream); existing ones are scaled in place. 0 keeps what exists and creates what is missing with one"); err != nil {
		return err
	}
	if err := intVar(fs, e, &r.maxEvents, "max-events-per-database", "SCHEMAQ_MAX_EVENTS_PER_DATABASE", 0, "events the stream keeps of one database of each kind (schema, docs, examples); past it the server refuses that database's publishes of that kind, and nobody else's. 0 keeps the stream's bound (a new stream gets 100000); -1 removes it"); err != nil {
		return err
	}
	fs.StringVar(&r.metrics, "metrics-addr", envString(e, "SCHEMAQ_METRICS_ADDR", ""), "serve /metrics, /healthz and /readyz on this address, e.g. :9090 [SCHEMAQ_METRICS_ADDR]")
	return nil
}

// registerWorker declares the indexing worker's flags.
func (r *roleFlags) registerWorker(fs *flag.FlagSet, e *env) error {
	w := &r.worker
	for _, err := range []error{
		intVar(fs, e, &w.Concurrency, "worker-concurrency", "SCHEMAQ_WORKER_CONCURRENCY", w.Concurrency, "databases one worker applies events of at once (each database's events apply one at a time, in order)"),
		durationVar(fs, e, &w.GapTimeout, "gap-timeout", "SCHEMAQ_GAP_TIMEOUT", w.GapTimeout, "how long a migration waits for a missing predecessor before it is dead-lettered (re-sent by itself once the predecessor applies); must exceed --ack-wait"),
		durationVar(fs, e, &w.Consumer.AckWait, "ack-wait", "SCHEMAQ_ACK_WAIT", w.Consumer.AckWait, "JetStream ack wait"),
		intVar(fs, e, &w.Consumer.MaxDeliver, "max-deliver", "SCHEMAQ_MAX_DELIVER", w.Consumer.MaxDeliver, "deliveries before an event is dead-lettered"),
		durationVar(fs, e, &w.MessageTimeout, "message-timeout", "SCHEMAQ_MESSAGE_TIMEOUT", w.MessageTimeout, "time limit of one event (must be below --ack-wait)"),
		intVar(fs, e, &w.LaneAt, "lane-at", "SCHEMAQ_LANE_AT", w.LaneAt, "events one database's queue holds on a worker before its later events of that kind move to a lane of their own, out of other databases' way; 0: never"),
		intVar(fs, e, &w.MaxLanes, "max-lanes", "SCHEMAQ_MAX_LANES", w.MaxLanes, "lanes at most beside each worker consumer (schema, docs); past that a flooding database's events stay in line"),
		durationVar(fs, e, &w.LaneQuiet, "lane-quiet", "SCHEMAQ_LANE_QUIET", w.LaneQuiet, "how long a lane has nothing pending before it is retired"),
		intVar(fs, e, &r.heldMiB, "max-held-mib", "SCHEMAQ_MAX_HELD_MIB", int(w.MaxHeldBytes>>20), "MiB of events a worker holds at most, as delivered (about twice that in memory): a database holding an eighth moves to a lane, lanes take no more past half, the worker consumers none past all; 0: no bound"),
		intVar(fs, e, &w.MaxWordsPerDatabase, "max-words-per-database", "SCHEMAQ_MAX_WORDS_PER_DATABASE", w.MaxWordsPerDatabase, "distinct words in the names of one database's tables, views and columns; a migration or snapshot past it is refused to the dead-letter subject, since every daemon's memory grows with them; 0: no bound"),
		durationVar(fs, e, &w.AuditInterval, "audit-interval", "SCHEMAQ_AUDIT_INTERVAL", w.AuditInterval, "how often to compare every database's index with its catalog and re-project those that lag (a store that lost acknowledged writes, as a Redis failover can); 0: only at start"),
		durationVar(fs, e, &r.sweep.Every, "sweep-every", "SCHEMAQ_SWEEP_EVERY", r.sweep.Every, "how often to delete from the object store what nothing will read again (the SQL of big events the catalog is past, replaced catalogs); 0: never"),
		durationVar(fs, e, &r.sweep.Grace, "sweep-grace", "SCHEMAQ_SWEEP_GRACE", r.sweep.Grace, "how old an object must be before a sweep may delete it; it must exceed the longest publish"),
	} {
		if err != nil {
			return err
		}
	}
	fs.BoolVar(&w.StrictCatalog, "strict-catalog", envString(e, "SCHEMAQ_STRICT_CATALOG", "") == "1", "dead-letter a migration with a statement naming an object the catalog does not know, instead of skipping the statement as drift [SCHEMAQ_STRICT_CATALOG=1]")
	fs.BoolVar(&w.KeepSuperseded, "keep-superseded", envString(e, "SCHEMAQ_KEEP_SUPERSEDED", "") == "1", "keep every event in the stream; by default an event whose every doc or example a newer event replaced or deleted, or a schema event a snapshot replaced, is deleted once that one is applied [SCHEMAQ_KEEP_SUPERSEDED=1]")
	return nil
}

// registerDaemon declares the query daemon's flags: retrieval, the
// gateway and its guard.
func (r *roleFlags) registerDaemon(fs *flag.FlagSet, e *env) error {
	if err := r.llm.register(fs, e); err != nil {
		return err
	}
	fs.StringVar(&r.http, "http-addr", envString(e, "SCHEMAQ_HTTP_ADDR", ""), "serve the HTTP API (POST /v1/search, /v1/ask, /v1/tables, GET /v1/databases, /openapi.json) on this address; beyond loopback it requires SCHEMAQ_HTTP_TOKEN [SCHEMAQ_HTTP_ADDR]")
	fs.Func("http-allowed-hosts", "comma-separated Host headers the HTTP API answers (* any); default: the loopback names on a loopback address, any host beyond it (where a token is required) [SCHEMAQ_HTTP_ALLOWED_HOSTS]", func(v string) error {
		r.httpHosts = commaList(v)
		return nil
	})
	r.httpHosts = commaList(e.getenv("SCHEMAQ_HTTP_ALLOWED_HOSTS"))
	r.httpToken = e.getenv("SCHEMAQ_HTTP_TOKEN")
	fs.BoolVar(&r.httpNoConsole, "http-no-console", envString(e, "SCHEMAQ_HTTP_NO_CONSOLE", "") == "1", "serve the HTTP API without the web console at / [SCHEMAQ_HTTP_NO_CONSOLE=1]")
	fs.StringVar(&r.httpTokensFile, "http-tokens-file", envString(e, "SCHEMAQ_HTTP_TOKENS_FILE", ""), "a JSON file of HTTP API tokens, each with its databases and read or write access (docs/api.md); read again when it changes [SCHEMAQ_HTTP_TOKENS_FILE]")
	fs.BoolVar(&r.daemon.AllowSystemCatalogs, "allow-system-catalogs", envString(e, "SCHEMAQ_ALLOW_SYSTEM_CATALOGS", "") == "1", "let an ask that asks for it (allow_system_catalogs) have SQL that reads pg_catalog, information_schema, reg* casts and the session's identity; off, such requests are narrowed to the database's own tables [SCHEMAQ_ALLOW_SYSTEM_CATALOGS=1]")
	d := &r.daemon
	for _, err := range []error{
		intVar(fs, e, &r.tokenBudget, "token-budget", "SCHEMAQ_TOKEN_BUDGET", 0, "bound on the context of a search or ask, in estimated tokens (4 bytes each): results are kept in rank order, then the inferred joins, while they fit, and a warning says what was cut; 0: no bound. Set it to what the model's context leaves after the instructions, question and answer"),
		floatVar(fs, e, &r.exampleWeight, "example-weight", "SCHEMAQ_EXAMPLE_WEIGHT", r.exampleWeight, "how much the worked examples most like a question count for the tables their SQL reads, as a fused list's weight (BM25's is 1); 0: examples are context only"),
		floatVar(fs, e, &r.docWeight, "doc-weight", "SCHEMAQ_DOC_WEIGHT", r.docWeight, "how much the doc sections most like a question count for the tables they name (1: a section as strong as BM25's first table counts as that table); lower it when the docs describe other systems too; 0: docs are context only"),
		intVar(fs, e, &d.MaxConcurrent, "max-concurrent", "SCHEMAQ_MAX_CONCURRENT", d.MaxConcurrent, "requests one daemon serves at once before replying busy"),
		intVar(fs, e, &d.MaxConcurrentPerDatabase, "max-concurrent-per-database", "SCHEMAQ_MAX_CONCURRENT_PER_DATABASE", d.MaxConcurrentPerDatabase, "each database's share of those: past it, a database's requests are taken only while more than a share stays free, so that one team's flood of asks leaves the others room; 0: a quarter of --max-concurrent; --max-concurrent or more: no share"),
		durationVar(fs, e, &d.RequestTimeout, "request-timeout", "SCHEMAQ_REQUEST_TIMEOUT", d.RequestTimeout, "deadline of one search or tables request"),
		durationVar(fs, e, &d.AskTimeout, "ask-timeout", "SCHEMAQ_ASK_TIMEOUT", 0, "deadline of one ask (default: with a gateway, two --llm-timeout for a call and its repair round, plus --request-timeout)"),
		intVar(fs, e, &d.Feedback.PerCaller, "feedback-per-caller", "SCHEMAQ_FEEDBACK_PER_CALLER", d.Feedback.PerCaller, "feedback one caller (token, NATS account) may give a minute, on each daemon; 0: no limit"),
		intVar(fs, e, &d.Feedback.PerDatabase, "feedback-per-database", "SCHEMAQ_FEEDBACK_PER_DATABASE", d.Feedback.PerDatabase, "feedback one database may take a minute, on each daemon; 0: no limit"),
		intVar(fs, e, &d.Feedback.MaxExamples, "feedback-max-examples", "SCHEMAQ_FEEDBACK_MAX_EXAMPLES", d.Feedback.MaxExamples, "feedback examples a database keeps; past it feedback is refused until some are deleted; 0: no bound"),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// check refuses role settings no flag parser catches, before anything
// connects.
func (r *roleFlags) check() error {
	if r.streamReplicas < 0 {
		return usagef("--stream-replicas must be zero (keep what exists) or more, got %d", r.streamReplicas)
	}
	if r.maxEvents < streams.NoEventLimit {
		return usagef("--max-events-per-database must be -1 (no bound), 0 (keep the stream's) or more, got %d", r.maxEvents)
	}
	if r.httpTokensFile != "" {
		tokens, err := bearer.Load(r.httpTokensFile)
		if err != nil {
			return usagef("%v", err)
		}
		r.httpTokens = tokens
	}
	if r.http != "" {
		if err := daemon.CheckHTTP(r.http, r.httpToken != "" || len(r.httpTokens) > 0); err != nil {
			return usagef("%v", err)
		}
	}
	if r.indexYield < 0 {
		return usagef("--index-yield must be zero or more, got %v", r.indexYield)
	}
	if r.tokenBudget < 0 {
		return usagef("--token-budget must be zero or more, got %d", r.tokenBudget)
	}
	if r.exampleWeight < 0 {
		return usagef("--example-weight must be zero or more, got %v", r.exampleWeight)
	}
	if r.docWeight < 0 {
		return usagef("--doc-weight must be zero or more, got %v", r.docWeight)
	}
	if r.sweep.Every < 0 {
		return usagef("--sweep-every must be zero (never) or more, got %v", r.sweep.Every)
	}
	if r.heldMiB < 0 {
		return usagef("--max-held-mib must be zero (no bound) or more, got %d", r.heldMiB)
	}
	r.worker.MaxHeldBytes = int64(r.heldMiB) << 20
	if r.worker.MaxWordsPerDatabase < 0 {
		return usagef("--max-words-per-database must be zero (no bound) or more, got %d", r.worker.MaxWordsPerDatabase)
	}
	if r.worker.AuditInterval < 0 {
		return usagef("--audit-interval must be zero (only at start) or more, got %v", r.worker.AuditInterval)
	}
	if r.sweep.Grace <= 0 {
		return usagef("--sweep-grace must be more than zero, got %v", r.sweep.Grace)
	}
	return nil
}

// jetStreamSession is session for commands that read the streams
// directly: a JetStream handle, the request context and one cleanup.
func (c *clientFlags) jetStreamSession(ctx context.Context) (jetstream.JetStream, context.Context, func(), error) {
	nc, err := c.nats.connect(zap.NewNop())
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, nil, err
	}
	rctx, cancel := requestCtx(ctx, *c.timeout)
	return js, rctx, func() { cancel(); nc.Close() }, nil
}

// question parses a query command's flags and returns the question its
// positional arguments spell.
func (c *clientFlags) question(e *env, fs *flag.FlagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if err := c.requireDB(); err != nil {
		return "", err
	}
	q := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if q == "-" {
		// The question from stdin, for one a shell would mangle.
		if e.stdin == nil {
			return "", usagef("%s: - reads the question from stdin, and there is none", fs.Name())
		}
		b, err := io.ReadAll(io.LimitReader(e.stdin, events.MaxQuestionBytes+1))
		if err != nil {
			return "", fmt.Errorf("%s: read the question from stdin: %w", fs.Name(), err)
		}
		if len(b) > events.MaxQuestionBytes {
			return "", usagef("%s: the question on stdin is over %d bytes", fs.Name(), events.MaxQuestionBytes)
		}
		q = strings.TrimSpace(string(b))
	}
	if q == "" {
		return "", usagef("%s: give a question", fs.Name())
	}
	return q, nil
}

// session connects a one-shot command and bounds it by --timeout; done
// releases both.
func (c *clientFlags) session(ctx context.Context) (*client.Client, context.Context, func(), error) {
	cli, closeConn, err := c.client()
	if err != nil {
		return nil, nil, nil, err
	}
	rctx, cancel := requestCtx(ctx, *c.timeout)
	return cli, rctx, func() { cancel(); closeConn() }, nil
}
