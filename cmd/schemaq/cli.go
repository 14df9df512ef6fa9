package main

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/schemaq/schemaq/pkg/tracing"

	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// Exit codes scripts can rely on.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (bad DDL, unreachable server, …)
	exitUsage   = 2 // the command line is wrong
	// exitBreaks (3): check found that the migrations would break something.
)

// usageError marks a bad command line; it exits with exitUsage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// errSilent reports failure after the command has already said why.
var errSilent = errors.New("failed")

// reportedError is a failure the command has already reported (as JSON):
// it is errSilent, and exits with its cause's code.
type reportedError struct{ cause error }

func (e *reportedError) Error() string        { return e.cause.Error() }
func (e *reportedError) Unwrap() error        { return e.cause }
func (e *reportedError) Is(target error) bool { return target == errSilent }

func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, errBreaks):
		return exitBreaks
	}
	return exitFailure
}

// env is what a command gets: its arguments and where to write.
type env struct {
	stdin          io.Reader // nil: none (tests)
	stdout, stderr io.Writer
	getenv         func(string) string
	// flagSet and verbs, when set, hear what a command declares: shell
	// completion runs commands with --help to learn their flags and verbs.
	flagSet func(*flag.FlagSet)
	verbs   func([]string)
}

type command struct {
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() map[string]command {
	return map[string]command{
		"catalog":     {"apply migrations or a schema dump locally and print the catalog", runCatalog},
		"bench":       {"measure retrieval quality, load, freshness and ingest (bench retrieval|search|ask|freshness|ingest)", runBench},
		"up":          {"run everything in one process: embedded NATS, worker, daemon, SQLite index", runUp},
		"worker":      {"run the indexing worker against SCHEMAQ_NATS_URL", runWorker},
		"daemon":      {"run the query daemon against SCHEMAQ_NATS_URL", runDaemon},
		"serve":       {"run a replica with its own index (worker + daemon) against SCHEMAQ_NATS_URL", runServe},
		"publish":     {"publish migrations, a snapshot, docs or examples", runPublish},
		"ask":         {"ask a question; prints checked SQL (or the context, without a gateway)", runAsk},
		"search":      {"retrieve the context for a question", runSearch},
		"examples":    {"list, show, approve or delete a database's worked examples (examples list|show|approve|delete; --stale)", runExamples},
		"databases":   {"list the databases, or retire one: its catalog, index, events, dead letters and objects (databases list|retire)", runDatabases},
		"docs":        {"list or delete a database's docs (docs list|delete)", runDocs},
		"check":       {"replay pending migrations on the running catalog and report what they would break, publishing nothing (exit 3 when something breaks)", runCheck},
		"feedback":    {"hand back SQL that answers a question; stored as a worked example once the guard passes it", runFeedback},
		"tables":      {"list a database's tables, or print one's DDL", runTables},
		"status":      {"stream, worker, catalog and dead-letter state", runStatus},
		"dlq":         {"list, show, retry, delete or purge dead-lettered events", runDLQ},
		"sweep":       {"delete from the object store what nothing will read again (workers also do it hourly)", runSweep},
		"healthcheck": {"probe a running process's /readyz; exits non-zero unless ready (container health checks)", runHealthcheck},
		"mcp":         {"serve schemaq's tools to AI agents (Model Context Protocol, stdio or HTTP)", runMCP},
		"version":     {"print the version, the revision it was built from and the Go release (also --version)", runVersion},
		"completion":  {"print a shell completion script (completion bash|zsh; source <(schemaq completion bash))", runCompletion},
	}
}

// run is the whole CLI; main only adds the process around it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runEnv(ctx, args, &env{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: osGetenv})
}

func runEnv(ctx context.Context, args []string, e *env) error {
	cmds := commands()
	if len(args) > 0 && args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, ok := cmds[args[1]]; ok {
				return helped(c.run(ctx, e, []string{"--help"}))
			}
		}
		printUsage(e.stdout, cmds)
		if len(args) == 0 {
			return usagef("no command given")
		}
		return nil
	}
	if args[0] == completeCommand {
		return runComplete(ctx, e, args[1:])
	}
	c, ok := cmds[args[0]]
	if !ok {
		printUsage(e.stderr, cmds)
		return usagef("unknown command %q", args[0])
	}
	e, err := withSecretFiles(e)
	if err != nil {
		return err
	}
	ctx, end, err := startTracing(ctx, e, args[0])
	if err != nil {
		return err
	}
	defer end()
	return helped(c.run(ctx, e, args[1:]))
}

// tracedCommands start a trace of their own: what they publish or ask
// carries it to the workers and daemons (traceparent). Long-running roles
// do not: each event and request is a trace of its own there.
var tracedCommands = map[string]bool{"publish": true, "search": true, "ask": true, "tables": true}

// startTracing sets up OTLP export when the OTEL_* variables name an
// endpoint (docs/deploy.md), and for a client command its root span.
// end flushes the spans; without an endpoint it does nothing.
func startTracing(ctx context.Context, e *env, cmd string) (context.Context, func(), error) {
	shutdown, enabled, err := tracing.Setup(ctx, e.getenv, cmd)
	if err != nil {
		return ctx, nil, usagef("%v", err)
	}
	if !enabled {
		return ctx, func() {}, nil
	}
	span := trace.SpanFromContext(ctx)
	if tracedCommands[cmd] {
		ctx, span = tracing.Tracer().Start(ctx, "schemaq "+cmd, trace.WithSpanKind(trace.SpanKindClient))
	}
	return ctx, func() {
		span.End()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(sctx)
		// The provider is process-wide; one shut down must not linger.
		otel.SetTracerProvider(noop.NewTracerProvider())
	}, nil
}

// helped turns a help request, which printed the usage, into success:
// asking for help is not a mistake.
func helped(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func printUsage(w io.Writer, cmds map[string]command) {
	names := slices.Sorted(maps.Keys(cmds))
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	fmt.Fprintln(w, "Usage: schemaq <command> [flags] [args]\n\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'schemaq <command> --help' for a command's flags.")
}

// newFlags builds a command's flag set that reports errors instead of
// exiting, and prints help with the usage line given.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if e.flagSet != nil {
		e.flagSet(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: schemaq %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args allowing flags before, between and after
// positional arguments (`schemaq search "refunds" --kind doc`), as people
// type them; "--" ends the flags. --help prints usage and returns
// flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	// Leave fs.Args() holding the positional arguments.
	return fs.Parse(append([]string{"--"}, positional...))
}

func oneOf(flagName, value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return usagef("--%s: %q is not one of %s", flagName, value, strings.Join(allowed, ", "))
}

// verbOf reads the verb of a command that has them (dlq list, examples
// show): its first argument, one of verbs. --help prints the usage and
// ends the command (done).
func verbOf(e *env, name string, args, verbs []string, usage string) (verb string, done bool, err error) {
	e.declareVerbs(verbs)
	if len(args) > 0 && slices.Contains(verbs, args[0]) {
		return args[0], false, nil
	}
	fmt.Fprintln(e.stderr, "Usage: schemaq "+name+" "+usage)
	if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
		return "", true, nil
	}
	said := strings.Join(verbs[:len(verbs)-1], ", ") + " or " + verbs[len(verbs)-1]
	return "", false, usagef("%s: say %s", name, said)
}
