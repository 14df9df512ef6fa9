package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is a SQL value as far as a replay can know it. unknown stands for
// what only the database held (a row count, a setting, the result of a
// function we do not run); it flows through expressions as SQL's NULL
// flows, and evaluation stops only where it would decide something.
type value struct {
	kind vkind
	s    string // text, or the object an oid names ("r:schema.table")
	i    int64
	b    bool
	arr  []value
	rec  *record
	// text is what an oid cast to regclass, regtype or regnamespace
	// prints as; a plain oid has none (regtypes.go).
	text string
}

type vkind uint8

const (
	vUnknown vkind = iota
	vNull
	vText
	vInt
	vBool
	vArray
	vRecord
	vOid
)

// record is a row a query returned, for FOR r IN SELECT … and r.column.
type record struct {
	cols []string
	vals []value
}

func (r *record) field(name string) (value, bool) {
	for i, c := range r.cols {
		if c == name {
			return r.vals[i], true
		}
	}
	return value{}, false
}

var (
	unknown = value{kind: vUnknown}
	null    = value{kind: vNull}
)

func str(s string) value    { return value{kind: vText, s: s} }
func integer(i int64) value { return value{kind: vInt, i: i} }
func boolean(b bool) value  { return value{kind: vBool, b: b} }

func (v value) known() bool { return v.kind != vUnknown }

// String renders v as PostgreSQL casts it to text (::text, ||,
// quote_literal): a boolean is true or false.
func (v value) String() string {
	switch v.kind {
	case vText:
		return v.s
	case vInt:
		return strconv.FormatInt(v.i, 10)
	case vBool:
		if v.b {
			return "true"
		}
		return "false"
	case vOid:
		return v.text
	case vArray:
		parts := make([]string, len(v.arr))
		for i, e := range v.arr {
			switch {
			case e.kind == vNull:
				parts[i] = "NULL"
			case needsArrayQuote(e.output()):
				parts[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e.output()) + `"`
			default:
				parts[i] = e.output()
			}
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return ""
}

// output renders v as its type's output function does, which format(),
// concat() and an array's elements use: a boolean is t or f there.
func (v value) output() string {
	if v.kind == vBool {
		if v.b {
			return "t"
		}
		return "f"
	}
	return v.String()
}

// brief shows v in a message: in full when short, else its start, or an
// array's length. A stop's message is kept in the catalog's drift, and a
// value may be megabytes.
func brief(v value) string {
	if v.kind == vArray && sizeOf(v, 1<<12) > 1<<12 {
		return fmt.Sprintf("an array of %d elements", len(v.arr))
	}
	if v.kind == vText {
		return excerpt(v.s)
	}
	return excerpt(v.String())
}

func needsArrayQuote(s string) bool {
	return s == "" || strings.EqualFold(s, "null") || strings.ContainsAny(s, `{},"\ `+"\t\n")
}

// asInt converts v as an integer cast does.
func (v value) asInt() (int64, bool) {
	switch v.kind {
	case vInt:
		return v.i, true
	case vText:
		i, err := strconv.ParseInt(strings.TrimSpace(v.s), 10, 64)
		return i, err == nil
	}
	return 0, false
}

// asBool converts v as a boolean cast does.
func (v value) asBool() (bool, bool) {
	switch v.kind {
	case vBool:
		return v.b, true
	case vText:
		switch strings.ToLower(strings.TrimSpace(v.s)) {
		case "t", "true", "y", "yes", "on", "1":
			return true, true
		case "f", "false", "n", "no", "off", "0":
			return false, true
		}
	}
	return false, false
}

// compare orders two known, non-null values: integers numerically when
// both read as integers, everything else as text. ok is false when they
// cannot be compared with certainty.
func compare(a, b value) (int, bool) {
	if anyStandIn(a, b) {
		eq, certain := standInEqual(a, b)
		switch {
		case !certain:
			return 0, false
		case eq:
			return 0, true
		}
		return 1, true // unequal; binary asks only equality of them
	}
	if a.kind == vOid && b.kind == vOid && (a.s == notHeld.s || b.s == notHeld.s) {
		if a.s == b.s {
			return 0, false // two objects not held may be one
		}
		return 1, true
	}
	if a.kind == vOid || b.kind == vOid {
		if a.kind != b.kind {
			// Oid 0 (no relation) is unlike every object; any other
			// number is an oid of the database, which we cannot match.
			if x, ok := a.asInt(); ok && a.kind == vInt && x == 0 {
				return -1, true
			}
			if y, ok := b.asInt(); ok && b.kind == vInt && y == 0 {
				return 1, true
			}
			return 0, false
		}
		return strings.Compare(a.s, b.s), true
	}
	if a.kind == vBool || b.kind == vBool {
		x, ok1 := a.asBool()
		y, ok2 := b.asBool()
		if !ok1 || !ok2 {
			return 0, false
		}
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	}
	if a.kind == vInt || b.kind == vInt {
		x, ok1 := a.asInt()
		y, ok2 := b.asInt()
		if ok1 && ok2 {
			switch {
			case x < y:
				return -1, true
			case x > y:
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	if a.kind == vArray || b.kind == vArray {
		if a.kind != b.kind {
			return 0, false
		}
		return strings.Compare(a.String(), b.String()), true
	}
	return strings.Compare(a.s, b.s), true
}

// parseArrayLiteral reads a one-dimensional array literal ('{a,"b c"}').
func parseArrayLiteral(s string) ([]value, error) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, fmt.Errorf("malformed array literal %q", s)
	}
	body := s[1 : len(s)-1]
	var out []value
	if strings.TrimSpace(body) == "" {
		return out, nil
	}
	var cur strings.Builder
	quoted, inQuote, escaped := false, false, false
	flush := func() {
		el := cur.String()
		if !quoted {
			el = strings.TrimSpace(el)
		}
		if !quoted && strings.EqualFold(el, "null") {
			out = append(out, null)
		} else {
			out = append(out, str(el))
		}
		cur.Reset()
		quoted = false
	}
	for _, r := range body {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '"':
			inQuote, quoted = !inQuote, true
		case r == '{' && !inQuote:
			return nil, fmt.Errorf("multidimensional array literal %q", s)
		case r == ',' && !inQuote:
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("malformed array literal %q", s)
	}
	flush()
	return out, nil
}

var errTooLong = errors.New("a text too long")

// formatSQL implements PostgreSQL's format(): %s, %I, %L and %%, with
// positions (%2$s), the flag - and widths (%-10s, %*s, %*2$s).
// The text it writes is bounded by max: a format of a thousand %1$s of a
// long argument is input too, and so is a width of a billion.
func formatSQL(f string, args []value, max int) (string, error) {
	var b strings.Builder
	next := 0
	for i := 0; i < len(f); i++ {
		if b.Len() > max {
			return "", errTooLong
		}
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		sp, err := parseSpec(f, i+1, next, args)
		if err != nil {
			return "", err
		}
		i, next = sp.end, sp.arg+1
		if sp.width > max {
			return "", errTooLong
		}
		text, err := formatArg(sp.typ, args[sp.arg])
		if err != nil {
			return "", err
		}
		if pad := sp.width - utf8.RuneCountInString(text); pad > 0 && sp.left {
			text += strings.Repeat(" ", pad)
		} else if pad > 0 {
			text = strings.Repeat(" ", pad) + text
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// spec is one format() specifier: the argument it formats, its width
// and alignment, its type, and the index of its type letter in the
// format.
type spec struct {
	arg, width, end int
	left            bool
	typ             byte
}

// parseSpec reads %[position][flags][width]type from i, just past the
// %: position n$, the flag -, and a width that is a number, * (the next
// argument, taken before the value's) or *n$. A width argument that is
// negative aligns left; one that is NULL is no width.
func parseSpec(f string, i, next int, args []value) (spec, error) {
	sp := spec{arg: -1}
	unterminated := fmt.Errorf("unterminated format() type specifier")
	// position reads n$ at i: its argument's index, and where it ends.
	position := func(i int) (int, int, bool) {
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		if j == i || j >= len(f) || f[j] != '$' || f[i] == '0' {
			return 0, i, false
		}
		n, err := strconv.Atoi(f[i:j])
		if err != nil {
			n = len(args) + 1 // past the arguments, whatever it said
		}
		return n - 1, j + 1, true
	}
	if n, j, ok := position(i); ok {
		sp.arg, i = n, j
	}
	for i < len(f) && f[i] == '-' {
		sp.left, i = true, i+1
	}
	switch {
	case i < len(f) && f[i] >= '1' && f[i] <= '9':
		j := i
		for j < len(f) && f[j] >= '0' && f[j] <= '9' {
			j++
		}
		w, err := strconv.Atoi(f[i:j])
		if err != nil || w > 1<<30 {
			w = 1 << 30 // more than any text may hold: errTooLong
		}
		sp.width, i = w, j
	case i < len(f) && f[i] == '*':
		warg := next
		if n, j, ok := position(i + 1); ok {
			warg, i = n, j
		} else {
			next, i = next+1, i+1
		}
		if warg >= len(args) {
			return sp, fmt.Errorf("too few arguments for format()")
		}
		w := args[warg]
		if !w.known() {
			return sp, errUnknownValue
		}
		if w.kind != vNull {
			n, ok := w.asInt()
			if !ok {
				return sp, fmt.Errorf("format() width %q is no integer", brief(w))
			}
			if n < 0 {
				sp.left, n = true, -n
			}
			sp.width = int(min(n, 1<<30))
		}
	}
	if i >= len(f) {
		return sp, unterminated
	}
	if sp.arg < 0 {
		sp.arg = next
	}
	if sp.arg >= len(args) {
		return sp, fmt.Errorf("too few arguments for format()")
	}
	sp.typ, sp.end = f[i], i
	return sp, nil
}

// formatArg is one argument as %s, %I or %L writes it.
func formatArg(typ byte, v value) (string, error) {
	if !v.known() {
		return "", errUnknownValue
	}
	switch typ {
	case 's':
		if v.kind == vNull {
			return "", nil
		}
		return v.output(), nil
	case 'I':
		if v.kind == vNull {
			return "", fmt.Errorf("null values cannot be formatted as an SQL identifier")
		}
		return quoteIdentFunc(v.output())
	case 'L':
		if v.kind == vNull {
			return "NULL", nil
		}
		return literalOf(v.output()), nil
	}
	return "", fmt.Errorf("format() type %q is not evaluated", typ)
}

// quoteNullable is quote_nullable(): NULL, or the value as a string
// literal (E'…' when it holds a backslash, as PostgreSQL writes it).
func quoteNullable(v value) string {
	if v.kind == vNull {
		return "NULL"
	}
	return literalOf(v.String())
}

// literalOf is s quoted as quote_literal() writes it (render.go's
// quoteLiteral writes DDL, where a backslash needs no E'…').
func literalOf(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}
