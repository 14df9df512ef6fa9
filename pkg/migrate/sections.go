package migrate

import (
	"regexp"
	"strings"
)

// Tools that keep a migration's down steps in the same file as its up
// steps mark them with comments: dbmate with `-- migrate:up` and
// `-- migrate:down`, goose with `-- +goose Up` and `-- +goose Down`.
// Applied whole, such a file would create a table and drop it again.
var (
	dbmateMark = regexp.MustCompile(`(?m)^--\s*migrate:(up|down)\b.*$`)
	gooseMark  = regexp.MustCompile(`(?mi)^--\s*\+goose\s+(up|down)\b.*$`)
)

// UpSection returns sql with every down section blanked, for a file in a
// format with sections (tool names it: "dbmate" or "goose"), or sql as it
// is. Blanking with spaces keeps the line and column of every statement
// that remains, so errors still point into the file.
func UpSection(sql string) (up, tool string) {
	for _, f := range []struct {
		name string
		re   *regexp.Regexp
	}{{"dbmate", dbmateMark}, {"goose", gooseMark}} {
		marks := f.re.FindAllStringSubmatchIndex(sql, -1)
		if len(marks) == 0 {
			continue
		}
		b := []byte(sql)
		// Text before the first mark belongs to no section: tools ignore
		// it, and so do we.
		blank(b, 0, marks[0][0])
		for i, m := range marks {
			end := len(b)
			if i+1 < len(marks) {
				end = marks[i+1][0]
			}
			if strings.EqualFold(sql[m[2]:m[3]], "down") {
				blank(b, m[0], end)
			}
		}
		return string(b), f.name
	}
	return sql, ""
}

func blank(b []byte, from, to int) {
	for i := from; i < to; i++ {
		if b[i] != '\n' && b[i] != '\r' {
			b[i] = ' '
		}
	}
}
