package testenv

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// DocsNATSConfig is the block (authorization, accounts) of the example
// in the markdown file docs that follows intro, with each $…_PASS
// defined as its name in lower case: a test runs what the docs tell
// users to write.
func DocsNATSConfig(t testing.TB, docs, intro, block string) string {
	t.Helper()
	raw, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), intro)
	if !ok {
		t.Fatalf("%s: no example after %q", docs, intro)
	}
	m := regexp.MustCompile("(?s)```\n(" + block + " \\{.*?\n\\})\n```").FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("%s: the example after %q is not a %s block", docs, intro, block)
	}
	var vars strings.Builder
	for _, v := range regexp.MustCompile(`\$([A-Z_]+_PASS)`).FindAllStringSubmatch(m[1], -1) {
		fmt.Fprintf(&vars, "%s: %q\n", v[1], strings.ToLower(v[1]))
	}
	return vars.String() + m[1]
}
