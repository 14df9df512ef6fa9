package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Shell completion asks the binary itself, so it never drifts from the
// commands: the script calls `schemaq __complete WORD...`, which runs
// the command named with --help and collects what it declares, its flag
// set and its verbs, through two hooks of env. A command parses its
// flags before it does anything, so that run opens nothing.

// completeCommand is the hidden command the scripts call.
const completeCommand = "__complete"

const bashCompletion = `# schemaq completion for bash: source <(schemaq completion bash)
_schemaq() {
	local IFS=$'\n'
	COMPREPLY=($(schemaq __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _schemaq schemaq
`

// zsh runs the bash function through its bashcompinit.
const zshCompletion = `# schemaq completion for zsh: source <(schemaq completion zsh)
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion

func runCompletion(_ context.Context, e *env, args []string) error {
	fs := newFlags(e, "completion", "bash|zsh")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "bash":
		_, err := io.WriteString(e.stdout, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(e.stdout, zshCompletion)
		return err
	}
	fs.Usage()
	return usagef("completion: say bash or zsh, e.g. source <(schemaq completion bash)")
}

// declared is what a command declares when run with --help.
type declared struct {
	flags *flag.FlagSet
	verbs []string
}

// runComplete prints, one a line, the words that complete the last of
// words (the command line after "schemaq", the last word as typed so
// far). Nothing printed leaves the shell to complete file names.
func runComplete(ctx context.Context, e *env, words []string) error {
	cmds := commands()
	if len(words) <= 1 {
		prefix := ""
		if len(words) == 1 {
			prefix = words[0]
		}
		return printMatches(e.stdout, slices.Sorted(maps.Keys(cmds)), prefix)
	}
	c, ok := cmds[words[0]]
	if !ok {
		return nil
	}
	typed, cur := words[1:len(words)-1], words[len(words)-1]
	d := declaredBy(ctx, c, typed)
	switch {
	case d.flags != nil && len(typed) > 0 && takesValue(d.flags, typed[len(typed)-1]):
		return nil // the flag's value: a file name, a database…
	case strings.HasPrefix(cur, "-") && d.flags != nil:
		var names []string
		d.flags.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
		return printMatches(e.stdout, names, cur)
	case len(typed) == 0 && len(d.verbs) > 0:
		return printMatches(e.stdout, d.verbs, cur)
	}
	return nil
}

// declaredBy runs a command with --help after the words typed, writing
// nowhere, and collects its last flag set and its verbs.
func declaredBy(ctx context.Context, c command, typed []string) declared {
	var d declared
	quiet := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" },
		flagSet: func(fs *flag.FlagSet) { d.flags = fs },
		verbs:   func(v []string) { d.verbs = v }}
	_ = c.run(ctx, quiet, append(slices.Clone(typed), "--help"))
	return d
}

// takesValue says whether word is a flag that reads the next word.
func takesValue(fs *flag.FlagSet, word string) bool {
	name := strings.TrimLeft(word, "-")
	if name == word || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

func printMatches(w io.Writer, words []string, prefix string) error {
	for _, s := range words {
		if strings.HasPrefix(s, prefix) {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// declareVerbs tells a completion run which verbs a command takes.
func (e *env) declareVerbs(verbs []string) {
	if e.verbs != nil {
		e.verbs(verbs)
	}
}
