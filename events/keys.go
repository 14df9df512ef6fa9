package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// AsID makes a name someone gave (a NATS user, an MCP client's name)
// usable as an id field: blanks and control characters become '_', and
// it is cut to max bytes at a character boundary.
func AsID(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "")
	}
	return s
}

// MaxEcho bounds how much of an input value an error message repeats: an
// error that echoed a 600 KB field would not fit in a reply.
const MaxEcho = 64

// Quote is %q of s cut to MaxEcho bytes (at a character boundary), marked
// as cut with its full size, so an error that names a bad value stays
// small whatever the value.
func Quote(s string) string {
	if len(s) <= MaxEcho {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q… (cut; %d bytes in all)", prefix(s, MaxEcho), len(s))
}

// clipField cuts a field path for an error message: an unknown key is
// the caller's text, of any size.
func clipField(f string) string {
	if len(f) <= MaxEcho {
		return f
	}
	return fmt.Sprintf("%s… (cut; %d bytes in all)", prefix(f, MaxEcho), len(f))
}

// OneLine makes a header value of s: its white space folded to single
// spaces (a newline would end the header), and at most n bytes, cut at a
// character boundary.
func OneLine(s string, n int) string {
	return prefix(strings.Join(strings.Fields(s), " "), n)
}

// prefix is s cut to at most n bytes at a character boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// checkKeys walks the JSON in b beside the Go type it decodes into and
// refuses what encoding/json lets through: a key given twice (it keeps
// the last, so two readers of one message could disagree about it) and a
// key that matches a field only when case is ignored ("Database" for
// "database"). Both are errors naming the key's path.
func checkKeys(b []byte, t reflect.Type, path string) error {
	k := keySkim{b: b}
	return k.value(t, path)
}

// keySkim reads JSON that encoding/json has already decoded, so it is
// valid: it needs no error handling, and it skims values (an event's
// SQL is most of its bytes) without copying or unquoting them. Only keys
// are read.
type keySkim struct {
	b []byte
	i int
}

func (k *keySkim) space() {
	for k.i < len(k.b) && (k.b[k.i] == ' ' || k.b[k.i] == '\t' || k.b[k.i] == '\n' || k.b[k.i] == '\r') {
		k.i++
	}
}

func (k *keySkim) value(t reflect.Type, path string) error {
	k.space()
	if k.i >= len(k.b) {
		return nil
	}
	t = deref(t)
	switch k.b[k.i] {
	case '{':
		return k.object(t, path)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		k.i++
		for n := 0; ; n++ {
			k.space()
			if k.i >= len(k.b) || k.b[k.i] == ']' {
				k.i++
				return nil
			}
			if err := k.value(elem, fmt.Sprintf("%s[%d]", path, n)); err != nil {
				return err
			}
			k.space()
			if k.i < len(k.b) && k.b[k.i] == ',' {
				k.i++
			}
		}
	case '"':
		k.str()
	default: // a number, true, false or null
		for k.i < len(k.b) && !strings.ContainsRune(",]} \t\n\r", rune(k.b[k.i])) {
			k.i++
		}
	}
	return nil
}

// str skips a string and returns its raw contents, between the quotes.
func (k *keySkim) str() []byte {
	start := k.i + 1
	for j := start; j < len(k.b); {
		q := bytes.IndexByte(k.b[j:], '"')
		if q < 0 {
			break
		}
		j += q
		backslashes := 0
		for b := j - 1; b >= start && k.b[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			k.i = j + 1
			return k.b[start:j]
		}
		j++
	}
	k.i = len(k.b)
	return k.b[start:]
}

func (k *keySkim) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = jsonFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	seen := map[string]bool{}
	k.i++ // '{'
	for {
		k.space()
		if k.i >= len(k.b) || k.b[k.i] == '}' {
			k.i++
			return nil
		}
		key := string(k.str())
		if strings.IndexByte(key, '\\') >= 0 {
			_ = json.Unmarshal([]byte(`"`+key+`"`), &key) // escapes, as encoding/json read them
		}
		at := joinPath(path, key)
		if seen[key] {
			return fieldErr(at, "given twice")
		}
		seen[key] = true
		next := elem
		if fields != nil {
			ft, ok := fields[key]
			if !ok {
				// encoding/json would have matched it ignoring case, or
				// refused it as unknown; either way it is not ours.
				return fieldErr(at, "unknown field (field names are case-sensitive)")
			}
			next = ft
		}
		k.space()
		k.i++ // ':'
		if err := k.value(next, at); err != nil {
			return err
		}
		k.space()
		if k.i < len(k.b) && k.b[k.i] == ',' {
			k.i++
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// A json.RawMessage is decoded on its own later, with its own check.
	if t == reflect.TypeFor[json.RawMessage]() {
		return nil
	}
	return t
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps each JSON key of struct type t, exactly as encoding/json
// writes it, to the field's type; embedded structs without a tag lend
// their fields, as in encoding/json.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" && tag == "-":
			continue
		case f.Anonymous && name == "" && deref(f.Type) != nil && deref(f.Type).Kind() == reflect.Struct:
			for k, v := range jsonFields(deref(f.Type)) {
				m[k] = v
			}
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		m[name] = f.Type
	}
	fieldCache.Store(t, m)
	return m
}
