package benchmark

import (
	"strings"
	"unicode"
)

// SQLite's functions that PostgreSQL spells otherwise, rewritten as
// PostgreSQL's. Each takes the call's arguments (already rewritten) and
// returns the replacement, or "" to leave the call as it was written
// (an argument count it does not know).
var sqliteCalls = map[string]func(args []string) string{
	"iif": ifCall,
	"if":  ifCall,
	"instr": func(a []string) string {
		if len(a) != 2 {
			return ""
		}
		return "strpos(" + a[0] + ", " + a[1] + ")"
	},
	"total": func(a []string) string {
		if len(a) != 1 {
			return ""
		}
		return "coalesce(sum(" + a[0] + "), 0)"
	},
	"group_concat": func(a []string) string {
		switch len(a) {
		case 1:
			return "string_agg((" + a[0] + ")::text, ',')"
		case 2:
			return "string_agg((" + a[0] + ")::text, " + a[1] + ")"
		}
		return ""
	},
	"julianday": func(a []string) string {
		if len(a) != 1 {
			return ""
		}
		return "(extract(epoch FROM " + timestampOf(a[0]) + ") / 86400.0 + 2440587.5)"
	},
	"datetime": func(a []string) string {
		if len(a) != 1 {
			return ""
		}
		return timestampOf(a[0])
	},
	"date": func(a []string) string {
		if len(a) != 1 {
			return ""
		}
		return "(" + timestampOf(a[0]) + ")::date"
	},
	"strftime": func(a []string) string {
		if len(a) != 2 {
			return ""
		}
		f, ok := strings.CutPrefix(a[0], "'")
		if !ok || !strings.HasSuffix(f, "'") {
			return ""
		}
		return "to_char(" + timestampOf(a[1]) + ", '" + strftimeFormat.Replace(strings.TrimSuffix(f, "'")) + "')"
	},
}

func ifCall(a []string) string {
	if len(a) != 3 {
		return ""
	}
	return "CASE WHEN " + a[0] + " THEN " + a[1] + " ELSE " + a[2] + " END"
}

// timestampOf is a SQLite time value as a PostgreSQL timestamp: 'now' is
// now(), anything else is cast.
func timestampOf(arg string) string {
	if strings.EqualFold(strings.TrimSpace(arg), "'now'") {
		return "now()"
	}
	return "(" + arg + ")::timestamp"
}

// strftimeFormat maps SQLite's strftime fields to to_char's.
var strftimeFormat = strings.NewReplacer("%Y", "YYYY", "%m", "MM", "%d", "DD", "%H", "HH24", "%M", "MI", "%S", "SS",
	"%j", "DDD", "%W", "WW", "%w", "D", "%f", "SS.MS", "%s", "EPOCH", "%%", "%")

// rewriteCalls rewrites the calls of sqliteCalls in sql, their arguments
// first, leaving strings, quoted names and every other call as written.
func rewriteCalls(sql string) string {
	rs := []rune(sql)
	var b strings.Builder
	for i := 0; i < len(rs); {
		switch r := rs[i]; {
		case r == '\'' || r == '"' || r == '`':
			j := closing(rs, i, r)
			b.WriteString(string(rs[i:j]))
			i = j
		case unicode.IsLetter(r) || r == '_':
			j := wordEnd(rs, i)
			word := string(rs[i:j])
			open := skipSpace(rs, j)
			rewrite, known := sqliteCalls[strings.ToLower(word)]
			if !known || open >= len(rs) || rs[open] != '(' || (i > 0 && rs[i-1] == '.') {
				b.WriteString(word)
				i = j
				continue
			}
			args, end := callArgs(rs, open)
			for k := range args {
				args[k] = strings.TrimSpace(rewriteCalls(args[k]))
			}
			if out := rewrite(args); out != "" && end > open {
				b.WriteString(out)
			} else {
				b.WriteString(string(rs[i:end]))
			}
			i = end
		default:
			b.WriteRune(r)
			i++
		}
	}
	return b.String()
}

// callArgs splits the arguments of the call whose parenthesis opens at
// open, at its top-level commas, and returns the index after the closing
// parenthesis (len(rs) when there is none).
func callArgs(rs []rune, open int) (args []string, end int) {
	depth, start := 0, open+1
	for i := open; i < len(rs); i++ {
		switch rs[i] {
		case '\'', '"', '`':
			i = closing(rs, i, rs[i]) - 1
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				if s := string(rs[start:i]); strings.TrimSpace(s) != "" || len(args) > 0 {
					args = append(args, s)
				}
				return args, i + 1
			}
		case ',':
			if depth == 1 {
				args = append(args, string(rs[start:i]))
				start = i + 1
			}
		}
	}
	return nil, len(rs)
}
