package catalog

import (
	"bytes"
	"strings"
)

// splitTables finds the elements of the "tables" array of the JSON object
// b, and returns them with b without them ("tables":[]). It checks the
// structure only as far as it walks it: each element and the rest are
// decoded (or known) apart. ok is false for anything it cannot split as
// encoding/json would read it (a key it would also take for "tables",
// a key with escapes, malformed structure); the caller then decodes b
// whole.
func splitTables(b []byte) (elems [][]byte, rest []byte, ok bool) {
	s := jsonScan{b: b}
	s.space()
	if !s.take('{') {
		return nil, nil, false
	}
	found := false
	var cut [2]int // the array's contents in b
	for first := true; ; first = false {
		s.space()
		if s.take('}') {
			break
		}
		if !first && (!s.take(',') || !s.spaceThen()) {
			return nil, nil, false
		}
		key, good := s.key()
		if !good {
			return nil, nil, false
		}
		tables := key == "tables"
		if !tables && strings.EqualFold(key, "tables") {
			return nil, nil, false // encoding/json folds case
		}
		s.space()
		if !s.take(':') {
			return nil, nil, false
		}
		s.space()
		if !tables {
			if !s.skip() {
				return nil, nil, false
			}
			continue
		}
		if found || !s.take('[') {
			return nil, nil, false // twice, or not an array
		}
		found = true
		cut[0] = s.i
		for n := 0; ; n++ {
			s.space()
			if s.take(']') {
				break
			}
			if n > 0 && !s.take(',') {
				return nil, nil, false
			}
			s.space()
			start := s.i
			if !s.skip() {
				return nil, nil, false
			}
			elems = append(elems, b[start:s.i])
		}
		cut[1] = s.i - 1
	}
	s.space()
	if !found || s.i != len(b) {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(b)-(cut[1]-cut[0]))
	rest = append(append(rest, b[:cut[0]]...), b[cut[1]:]...)
	return elems, rest, true
}

// jsonScan walks JSON text without decoding it.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// spaceThen skips space and reports whether anything follows.
func (s *jsonScan) spaceThen() bool {
	s.space()
	return s.i < len(s.b)
}

func (s *jsonScan) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads an object key without escapes.
func (s *jsonScan) key() (string, bool) {
	start := s.i
	if !s.str() {
		return "", false
	}
	k := s.b[start+1 : s.i-1]
	if bytes.IndexByte(k, '\\') >= 0 {
		return "", false
	}
	return string(k), true
}

// str skips a string.
func (s *jsonScan) str() bool {
	if !s.take('"') {
		return false
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			s.i += 2
		case '"':
			s.i++
			return true
		default:
			s.i++
		}
	}
	return false
}

// skip skips one value: a string, an object or array (by depth, strings
// skipped whole), or a literal or number.
func (s *jsonScan) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		return s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if !s.str() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",}] \t\n\r", rune(s.b[s.i])) {
		s.i++
	}
	return s.i > start
}
