package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion asks __complete what the shell asks it: commands,
// verbs, flags (the command's own and the shared ones), nothing after a
// flag that takes a value (the shell then completes file names).
func TestCompletion(t *testing.T) {
	tests := []struct {
		words []string
		want  []string // each must be offered
		not   []string // none of these may be
	}{
		{[]string{""}, []string{"ask", "publish", "examples", "completion"}, []string{completeCommand}},
		{[]string{"ex"}, []string{"examples"}, []string{"ask"}},
		{[]string{"examples", ""}, []string{"list", "show", "delete"}, nil},
		{[]string{"examples", "l"}, []string{"list"}, []string{"show"}},
		{[]string{"examples", "list", "--s"}, []string{"--stale"}, []string{"--wait", "--db"}},
		{[]string{"publish", ""}, []string{"migrations", "snapshot", "docs", "examples"}, nil},
		{[]string{"publish", "migrations", "--"}, []string{"--db", "--wait", "--baseline", "--nats-url", "--json"}, nil},
		{[]string{"bench", "re"}, []string{"retrieval"}, []string{"search"}},
		{[]string{"bench", "retrieval", "--sch"}, []string{"--schema", "--schema-window"}, []string{"--db"}},
		{[]string{"dlq", ""}, []string{"list", "retry", "purge"}, nil},
		{[]string{"up", "--data"}, []string{"--data-dir"}, nil},
		{[]string{"search", "--db", ""}, nil, []string{"list", "--db", "--json"}},
		{[]string{"search", "--json", "--"}, []string{"--db", "--k"}, nil},
		{[]string{"nosuchcommand", ""}, nil, []string{"list"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.words, "_"), func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{completeCommand}, tt.words...)...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				got[l] = true
			}
			for _, w := range tt.want {
				if !got[w] {
					t.Errorf("%q not offered: %q", w, out)
				}
			}
			for _, w := range tt.not {
				if got[w] {
					t.Errorf("%q offered: %q", w, out)
				}
			}
		})
	}
	if _, errOut, code := runCLI(t, "completion", "fish"); code != exitUsage || !strings.Contains(errOut, "bash or zsh") {
		t.Errorf("completion fish: exit %d, %s", code, errOut)
	}
}

// TestCompletionInBash sources the script into a real bash and
// completes as a user pressing tab would, against the built binary.
func TestCompletionInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "schemaq"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build schemaq: %v\n%s", err, out)
	}
	script := `source <(schemaq completion bash)
COMP_WORDS=(schemaq examples li); COMP_CWORD=2; _schemaq; echo "1:${COMPREPLY[*]}"
COMP_WORDS=(schemaq publish docs --ta); COMP_CWORD=3; _schemaq; echo "2:${COMPREPLY[*]}"
COMP_WORDS=(schemaq st); COMP_CWORD=1; _schemaq; echo "3:${COMPREPLY[*]}"
`
	cmd := exec.Command(bash, "--norc", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	if want := "1:list\n2:--tag\n3:status\n"; string(out) != want {
		t.Errorf("bash completed\n%s\nwant\n%s", out, want)
	}
}
