package pgtree

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
)

// MaxDepth bounds how deeply an expression may nest before it reaches
// libpg_query. The C library turns its parse tree into protobuf with
// unbounded recursion: a chain of 25,000 left-associative operators
// (1+1+…, 'a'||'a'||…, x::int::int…) overflows the C stack, and no Go
// recover can catch a SIGSEGV in cgo, so one hostile migration would kill
// the process on every redelivery. Chains of about 5,000 already fail in
// protobuf decoding; real schemas stay far below 100. Nesting made of
// brackets is bounded by the grammar's own stack (about 6,000 levels),
// but it adds to the depth of the chains inside it, so both count.
const MaxDepth = 1000

// DepthError is the refusal of an input nested deeper than MaxDepth.
type DepthError struct {
	// Offset is the byte offset of the token at which the bound was
	// passed.
	Offset int
	Limit  int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("expression nested more than %d levels deep (each operator of a chain such as a+b+c counts one); refused before parsing", e.Limit)
}

// Parse is pg.Parse for untrusted SQL: it refuses, with a *DepthError,
// input whose expressions nest deeper than MaxDepth, before any of it
// reaches the C parser. Every parse of SQL that came from outside (events,
// examples, a model's answer) goes through here.
func Parse(sql string) (*pg.ParseResult, error) {
	if err := CheckDepth(sql, MaxDepth); err != nil {
		return nil, err
	}
	return pg.Parse(sql)
}

// CheckDepth scans sql as PostgreSQL's lexer would (strings, quoted
// identifiers, dollar quotes and comments are opaque) and returns a
// *DepthError when the estimated depth of its parse tree passes limit.
// The estimate is an upper bound: each open bracket counts one level,
// and so does each operator since the last separator at that bracket
// level (a comma, a semicolon, AND, OR, WHEN, THEN, ELSE), because a
// chain of left-associative operators nests one level per operator,
// while separators start sibling subtrees. It is a single pass over the
// bytes, so it costs next to nothing beside the parse it protects.
func CheckDepth(sql string, limit int) error {
	s := depthScan{sql: sql, limit: limit, chains: []int{0}}
	return s.run()
}

type depthScan struct {
	sql    string
	limit  int
	chains []int // operators since the last separator, per open bracket
	depth  int   // len(chains)-1 + the sum of chains
}

func (s *depthScan) run() error {
	for i := 0; i < len(s.sql); {
		c := s.sql[i]
		switch {
		case c == '\'':
			i = skipQuoted(s.sql, i, '\'', isEscapeString(s.sql, i))
		case c == '"':
			i = skipQuoted(s.sql, i, '"', false)
		case c == '$':
			i = s.dollar(i)
		case c == '-' && strings.HasPrefix(s.sql[i:], "--"):
			i = skipLineComment(s.sql, i)
		case c == '/' && strings.HasPrefix(s.sql[i:], "/*"):
			i = skipBlockComment(s.sql, i)
		case c == '(' || c == '[':
			s.chains = append(s.chains, 0)
			s.depth++
			if s.depth > s.limit {
				return &DepthError{Offset: i, Limit: s.limit}
			}
			i++
		case c == ')' || c == ']':
			s.close()
			i++
		case c == ',':
			s.separate()
			i++
		case c == ';':
			s.chains = s.chains[:1]
			s.chains[0], s.depth = 0, 0
			i++
		case c == ':' && strings.HasPrefix(s.sql[i:], "::"):
			if err := s.operator(i); err != nil {
				return err
			}
			i += 2
		case isOperatorChar(c):
			if err := s.operator(i); err != nil {
				return err
			}
			for i < len(s.sql) && isOperatorChar(s.sql[i]) && !strings.HasPrefix(s.sql[i:], "--") && !strings.HasPrefix(s.sql[i:], "/*") {
				i++
			}
		case isIdentStart(c):
			j := i + 1
			for j < len(s.sql) && isIdentChar(s.sql[j]) {
				j++
			}
			if err := s.word(i, s.sql[i:j]); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

func (s *depthScan) operator(at int) error {
	s.chains[len(s.chains)-1]++
	s.depth++
	if s.depth > s.limit {
		return &DepthError{Offset: at, Limit: s.limit}
	}
	return nil
}

func (s *depthScan) separate() {
	top := len(s.chains) - 1
	s.depth -= s.chains[top]
	s.chains[top] = 0
}

func (s *depthScan) close() {
	if len(s.chains) == 1 { // an unbalanced bracket: the parser will say so
		return
	}
	top := len(s.chains) - 1
	s.depth -= s.chains[top] + 1
	s.chains = s.chains[:top]
}

// word treats keywords that join operands as operators and keywords that
// start a sibling operand as separators; other words are operands.
func (s *depthScan) word(at int, w string) error {
	if len(w) < 2 || len(w) > 8 {
		return nil
	}
	var buf [8]byte
	for i := 0; i < len(w); i++ {
		buf[i] = w[i] &^ 0x20 // ASCII upper case; other bytes match no keyword anyway
	}
	switch string(buf[:len(w)]) {
	case "AND", "OR", "WHEN", "THEN", "ELSE":
		s.separate()
	case "COLLATE", "AT", "LIKE", "ILIKE", "SIMILAR", "BETWEEN", "IS", "ISNULL", "NOTNULL", "IN", "NOT", "OPERATOR":
		return s.operator(at)
	}
	return nil
}

// dollar skips a dollar-quoted string ($$…$$, $tag$…$tag$) starting at
// i, whose body is a string to this parser (a function body is parsed
// separately, through Parse again, if at all). A $ that starts no quote
// (a parameter $1, or part of an identifier) is skipped alone.
func (s *depthScan) dollar(i int) int {
	if i > 0 && isIdentChar(s.sql[i-1]) {
		return i + 1
	}
	j := i + 1
	for j < len(s.sql) && s.sql[j] != '$' && isIdentChar(s.sql[j]) {
		if j == i+1 && !isIdentStart(s.sql[j]) {
			return i + 1
		}
		j++
	}
	if j >= len(s.sql) || s.sql[j] != '$' {
		return i + 1
	}
	tag := s.sql[i : j+1]
	end := strings.Index(s.sql[j+1:], tag)
	if end < 0 {
		return len(s.sql)
	}
	return j + 1 + end + len(tag)
}

// isEscapeString reports whether the quote at i opens an E'…' string, in
// which a backslash escapes the next character.
func isEscapeString(sql string, i int) bool {
	if i == 0 || (sql[i-1] != 'E' && sql[i-1] != 'e') {
		return false
	}
	return i == 1 || !isIdentChar(sql[i-2])
}

func skipQuoted(sql string, i int, q byte, backslash bool) int {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case backslash && sql[j] == '\\':
			j++
		case sql[j] == q:
			if j+1 < len(sql) && sql[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(sql)
}

func skipLineComment(sql string, i int) int {
	nl := strings.IndexByte(sql[i:], '\n')
	if nl < 0 {
		return len(sql)
	}
	return i + nl + 1
}

// skipBlockComment skips a /* … */ comment; they nest in PostgreSQL.
func skipBlockComment(sql string, i int) int {
	depth := 0
	for j := i; j+1 < len(sql); j++ {
		switch {
		case sql[j] == '/' && sql[j+1] == '*':
			depth++
			j++
		case sql[j] == '*' && sql[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(sql)
}

func isOperatorChar(c byte) bool {
	return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 0x80 || (c|0x20) >= 'a' && (c|0x20) <= 'z'
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || c == '$' || c >= '0' && c <= '9'
}
