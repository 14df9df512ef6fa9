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
	found := false
	var cut [2]int // the array's contents in b
	ok = s.object(func(key string) bool {
		if key != "tables" {
			return !strings.EqualFold(key, "tables") && s.skip() // encoding/json folds case
		}
		if found {
			return false // twice: encoding/json takes the last
		}
		found, cut[0] = true, s.i+1
		var good bool
		elems, good = s.elements()
		cut[1] = s.i - 1
		return good
	})
	if !ok || !found {
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

// object walks an object that is all of s, calling value at each
// member's value with its key; value skips it, or fails the walk.
func (s *jsonScan) object(value func(key string) bool) bool {
	s.space()
	if !s.take('{') {
		return false
	}
	for first := true; ; first = false {
		s.space()
		if s.take('}') {
			break
		}
		if !first && !s.take(',') {
			return false
		}
		s.space()
		key, ok := s.key()
		if !ok {
			return false
		}
		s.space()
		if !s.take(':') {
			return false
		}
		s.space()
		if !value(key) {
			return false
		}
	}
	s.space()
	return s.i == len(s.b)
}

// elements walks an array and returns its elements.
func (s *jsonScan) elements() ([][]byte, bool) {
	if !s.take('[') {
		return nil, false
	}
	var out [][]byte
	for n := 0; ; n++ {
		s.space()
		if s.take(']') {
			return out, true
		}
		if n > 0 {
			if !s.take(',') {
				return nil, false
			}
			s.space()
		}
		start := s.i
		if !s.skip() {
			return nil, false
		}
		out = append(out, s.b[start:s.i])
	}
}

func (s *jsonScan) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
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
		return s.container()
	}
	start := s.i
	for s.i < len(s.b) && !strings.ContainsRune(",}] \t\n\r", rune(s.b[s.i])) {
		s.i++
	}
	return s.i > start
}

// container skips an object or array by its depth, strings skipped
// whole.
func (s *jsonScan) container() bool {
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
