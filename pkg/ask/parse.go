package ask

import (
	"encoding/json"
	"errors"
	"strings"
)

// Output errors; match with errors.Is. Both come as *OutputError with the
// raw output.
var (
	ErrNoJSON     = errors.New("the answer has neither a JSON object nor SQL")
	ErrMissingSQL = errors.New(`the answer's JSON has no "sql" string`)
)

// OutputError carries the model's raw output with the reason it could not
// be read.
type OutputError struct {
	Err error
	Raw string
}

func (e *OutputError) Error() string { return e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// ParseOutput reads {"sql", "explanation"} from a model's answer: strict
// JSON, JSON in a markdown fence, or the first balanced JSON object after
// leading prose (strings and escapes respected). Models also answer off
// format, most often after a fallback without JSON mode, and those answers
// are read too rather than spent on a repair round: SQL in a fence (the
// prose around it is the explanation), bare SQL, and JSON whose "sql"
// holds a fenced block. Trailing semicolons are stripped from the SQL; a
// missing explanation is allowed. The guard judges whatever SQL comes out.
func ParseOutput(raw string) (sql, explanation string, err error) {
	for _, cand := range candidates(raw) {
		var obj map[string]any
		if json.Unmarshal([]byte(cand), &obj) != nil {
			continue
		}
		s, ok := obj["sql"].(string)
		if !ok {
			return "", "", &OutputError{Err: ErrMissingSQL, Raw: raw}
		}
		if f, ok := fenced(strings.TrimSpace(s)); ok {
			s = f
		}
		e, _ := obj["explanation"].(string)
		return cleanSQL(s), strings.TrimSpace(e), nil
	}
	text := strings.TrimSpace(raw)
	if f, ok := fenced(text); ok && looksLikeSQL(f) {
		start := strings.Index(text, "```")
		end := strings.LastIndex(text, "```")
		prose := strings.Join(strings.Fields(text[:start]+" "+text[end+3:]), " ")
		return cleanSQL(f), prose, nil
	}
	if looksLikeSQL(text) {
		return cleanSQL(text), "", nil
	}
	return "", "", &OutputError{Err: ErrNoJSON, Raw: raw}
}

// looksLikeSQL reports whether s starts like a SQL statement. Writes count
// too: they should reach the guard and be refused as unsafe, not be
// mistaken for prose.
func looksLikeSQL(s string) bool {
	s = strings.TrimLeft(s, "( \t\r\n")
	first := ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			first = s[:i]
			break
		}
		first = s[:i+1]
	}
	switch strings.ToLower(first) {
	case "select", "with", "values", "table", "insert", "update", "delete", "merge", "create", "drop", "alter",
		"truncate", "grant", "revoke", "copy", "call", "do", "explain", "lock", "vacuum", "analyze", "refresh", "set", "show":
		return true
	}
	return false
}

func cleanSQL(s string) string {
	s = strings.TrimSpace(s)
	for strings.HasSuffix(s, ";") {
		s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	}
	return s
}

// candidates are the texts that may hold the JSON object, most likely
// first.
func candidates(raw string) []string {
	s := strings.TrimSpace(raw)
	out := []string{s}
	if f, ok := fenced(s); ok {
		out = append(out, f)
	}
	if o, ok := firstObject(s); ok {
		out = append(out, o)
	}
	return out
}

// fenced returns the body of the first ``` fence (with or without a
// language tag).
func fenced(s string) (string, bool) {
	start := strings.Index(s, "```")
	if start < 0 {
		return "", false
	}
	body := s[start+3:]
	if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.Contains(body[:nl], "{") {
		body = body[nl+1:] // drop the language tag line
	}
	end := strings.Index(body, "```")
	if end < 0 {
		return "", false
	}
	return strings.TrimSpace(body[:end]), true
}

// firstObject returns the first balanced {...} in s, skipping braces
// inside JSON strings.
func firstObject(s string) (string, bool) {
	for start := strings.IndexByte(s, '{'); start >= 0; {
		depth, inStr, esc := 0, false, false
		for i := start; i < len(s); i++ {
			c := s[i]
			switch {
			case esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '{':
				depth++
			case c == '}':
				depth--
				if depth == 0 {
					cand := s[start : i+1]
					if json.Valid([]byte(cand)) {
						return cand, true
					}
					goto next
				}
			}
		}
		return "", false
	next:
		n := strings.IndexByte(s[start+1:], '{')
		if n < 0 {
			return "", false
		}
		start += n + 1
	}
	return "", false
}
