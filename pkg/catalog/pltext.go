package catalog

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text functions helpers cut, pad, split and join names with
// (left(name, 63), lpad(n::text, 4, '0'), split_part(qualified, '.', 2)),
// as PostgreSQL computes them: positions and lengths count characters,
// not bytes.

// textFunc evaluates left, right, substr, the trims and the pads over
// known, non-NULL arguments; a call of another arity or with a count
// that is no integer is not evaluated.
func (e *evaluator) textFunc(name string, args []value) (value, error) {
	if len(args) == 0 {
		return unknown, nil
	}
	s := []rune(args[0].String())
	switch name {
	case "left", "right":
		if n, ok := intArg(args, 1); ok && len(args) == 2 {
			return str(string(cut(s, n, name == "left"))), nil
		}
	case "substr", "substring":
		return substr(s, args)
	case "btrim", "ltrim", "rtrim":
		set := " "
		if len(args) == 2 {
			set = args[1].String()
		} else if len(args) != 1 {
			return unknown, nil
		}
		t := string(s)
		if name != "rtrim" {
			t = strings.TrimLeft(t, set)
		}
		if name != "ltrim" {
			t = strings.TrimRight(t, set)
		}
		return str(t), nil
	case "lpad", "rpad":
		return e.pad(s, args, name == "lpad")
	}
	return unknown, nil
}

func intArg(args []value, i int) (int64, bool) {
	if i >= len(args) {
		return 0, false
	}
	return args[i].asInt()
}

// cut is left(s, n) (front) or right(s, n): n characters, or all but
// -n of them when n is negative.
func cut(s []rune, n int64, front bool) []rune {
	size := int64(len(s))
	keep := n
	if n < 0 {
		keep = max(size+n, 0)
	}
	keep = min(keep, size)
	if front {
		return s[:keep]
	}
	return s[size-keep:]
}

// substr is substr(s, from[, count]): from counts from 1 and may be 0
// or negative, when the characters before 1 count against count.
func substr(s []rune, args []value) (value, error) {
	from, ok := intArg(args, 1)
	if !ok || len(args) > 3 {
		return unknown, nil
	}
	end := int64(len(s)) + 1
	if len(args) == 3 {
		count, ok := intArg(args, 2)
		switch {
		case !ok:
			return unknown, nil
		case count < 0:
			return unknown, stop("substr(): negative substring length not allowed")
		case from > 0 && count > int64(len(s)):
			// from+count cannot overflow past the text's end.
		default:
			end = min(end, from+count)
		}
	}
	start := max(from, 1)
	if start >= end || start > int64(len(s)) {
		return str(""), nil
	}
	return str(string(s[start-1 : end-1])), nil
}

// pad is lpad or rpad: s filled to n characters with fill (a space by
// default) or cut to n. Its text is reserved before it is built, as n
// is input.
func (e *evaluator) pad(s []rune, args []value, left bool) (value, error) {
	n, ok := intArg(args, 1)
	if !ok || len(args) > 3 {
		return unknown, nil
	}
	fill := []rune(" ")
	if len(args) == 3 {
		fill = []rune(args[2].String())
	}
	if n <= 0 {
		return str(""), nil
	}
	if n <= int64(len(s)) || len(fill) == 0 {
		return str(string(s[:min(n, int64(len(s)))])), nil
	}
	// Saturated: n * 4 past 2^63 wraps round to a small reservation.
	if err := e.reserve(min(n, math.MaxInt64/utf8.UTFMax) * utf8.UTFMax); err != nil {
		return unknown, err
	}
	pad := make([]rune, 0, n-int64(len(s)))
	for int64(len(pad)) < n-int64(len(s)) {
		pad = append(pad, fill[len(pad)%len(fill)])
	}
	if left {
		return str(string(pad) + string(s)), nil
	}
	return str(string(s) + string(pad)), nil
}

// foldCase is lower() or upper(). ASCII letters fold alike in every
// locale; others fold as the database's LC_CTYPE says (not at all in the
// C locale, by Unicode in most UTF-8 ones), which a replay cannot know.
func foldCase(name, s string) (value, error) {
	fold, foldRune := strings.ToLower, unicode.ToLower
	if name == "upper" {
		fold, foldRune = strings.ToUpper, unicode.ToUpper
	}
	for _, r := range s {
		if r >= utf8.RuneSelf && foldRune(r) != r {
			return unknown, stop("%s() of %q, whose letters beyond ASCII the database's locale folds", name, excerpt(s))
		}
	}
	return str(fold(s)), nil
}

// arrayToString is PostgreSQL's array_to_string: the elements of every
// dimension in order, as their output function writes them, NULLs left
// out unless nullText stands for them. It walks without recursion, as
// sizeOf does; reserveFor has bounded what it walks.
func arrayToString(a value, delim string, nullText *string) string {
	var b strings.Builder
	first := true
	write := func(s string) {
		if !first {
			b.WriteString(delim)
		}
		first = false
		b.WriteString(s)
	}
	stack := [][]value{a.arr}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		if len(top) == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		el := top[0]
		stack[len(stack)-1] = top[1:]
		switch {
		case el.kind == vArray:
			stack = append(stack, el.arr)
		case el.kind == vNull && nullText != nil:
			write(*nullText)
		case el.kind != vNull:
			write(el.output())
		}
	}
	return b.String()
}

// splitPart is PostgreSQL's split_part: fields count from 1, or from
// the end when negative; an empty delimiter leaves the text one field.
func splitPart(s, delim string, n int64) (value, error) {
	if n == 0 {
		return unknown, stop("split_part(): field position must not be zero")
	}
	parts := []string{s}
	if delim != "" {
		parts = strings.Split(s, delim)
	}
	if n < 0 {
		n += int64(len(parts)) + 1
	}
	if n < 1 || n > int64(len(parts)) {
		return str(""), nil
	}
	return str(parts[n-1]), nil
}

// stringToArray is PostgreSQL's string_to_array of two arguments: an
// empty text is an empty array, an empty delimiter leaves the text one
// element, and a NULL one splits it into its characters.
func stringToArray(s string, delim value) value {
	out := []value{}
	switch {
	case s == "":
	case delim.kind == vNull:
		for _, r := range s {
			out = append(out, str(string(r)))
		}
	case delim.String() == "":
		out = append(out, str(s))
	default:
		for _, p := range strings.Split(s, delim.String()) {
			out = append(out, str(p))
		}
	}
	return value{kind: vArray, arr: out}
}
