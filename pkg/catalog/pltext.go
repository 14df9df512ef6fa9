package catalog

import (
	"strings"
	"unicode/utf8"
)

// The text functions helpers cut and pad names with (left(name, 63),
// lpad(n::text, 4, '0')), as PostgreSQL computes them: positions and
// lengths count characters, not bytes.

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
	if err := e.reserve(n * utf8.UTFMax); err != nil {
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
