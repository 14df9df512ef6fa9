package chunk

import (
	"maps"
	"slices"
	"strings"
)

// Doc chunks one markdown document: one chunk per section, a section being
// the text under a heading down to the next heading of any level. Each
// chunk's title is the document title and the heading path ("Refunds >
// Partial refunds"), which also leads its text so a section read alone
// keeps its context. Sections larger than MaxDocBytes are split at
// paragraph, then line, then word boundaries. Headings inside fenced code
// blocks are code, not structure.
func Doc(db, docID, title, body string, tags map[string]string, opts Options) []Chunk {
	opts = opts.withDefaults()
	secs := sections(body)
	if title == "" && len(secs) > 0 && len(secs[0].path) > 0 {
		title = secs[0].path[0]
	}
	var out []Chunk
	for _, s := range secs {
		path := s.path
		if len(path) > 0 && path[0] == title {
			path = path[1:]
		}
		heading := strings.Join(append([]string{title}, path...), " > ")
		if title == "" {
			heading = strings.Join(path, " > ")
		}
		prefix := ""
		if heading != "" {
			prefix = "# " + heading + "\n\n"
		}
		for _, piece := range splitText(s.text, opts.MaxDocBytes-len(prefix)-1) {
			ch := Chunk{Database: db, Kind: KindDoc, Name: docID, Part: len(out) + 1,
				Title: heading, Text: prefix + piece + "\n", Tags: maps.Clone(tags)}
			ch.seal()
			out = append(out, ch)
		}
	}
	return out
}

type section struct {
	path []string
	text string
}

// sections splits markdown on ATX headings (#, ##, …) outside code fences,
// tracking the heading path. Text before the first heading is a section of
// its own with an empty path. A heading with no text of its own makes no
// section; it lives on in the path of the sections below it.
func sections(md string) []section {
	var out []section
	var path []string
	var levels []int
	var buf []string
	fence := ""
	flush := func() {
		text := strings.TrimSpace(strings.Join(buf, "\n"))
		buf = buf[:0]
		if text != "" {
			out = append(out, section{path: append([]string(nil), path...), text: text})
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimSpace(line)
		if f := fenceMarker(trimmed); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(trimmed, fence):
				fence = ""
			}
			buf = append(buf, line)
			continue
		}
		if fence == "" {
			if level, text := headingOf(trimmed); level > 0 {
				flush()
				for len(levels) > 0 && levels[len(levels)-1] >= level {
					levels, path = levels[:len(levels)-1], path[:len(path)-1]
				}
				levels, path = append(levels, level), append(path, text)
				continue
			}
		}
		buf = append(buf, line)
	}
	flush()
	return out
}

func fenceMarker(line string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, f) {
			return f
		}
	}
	return ""
}

// headingOf parses an ATX heading: 1–6 '#' then a space.
func headingOf(line string) (int, string) {
	level := 0
	for level < len(line) && line[level] == '#' {
		level++
	}
	if level == 0 || level > 6 || (level < len(line) && line[level] != ' ' && line[level] != '\t') {
		return 0, ""
	}
	text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[level:]), "#"))
	if text == "" {
		return 0, ""
	}
	return level, text
}

// splitText cuts text into pieces of at most max bytes, preferring
// paragraph breaks, then line breaks, then spaces; a single word longer
// than max is cut at a UTF-8 boundary.
func splitText(text string, max int) []string {
	if max < 64 {
		max = 64
	}
	if len(text) <= max {
		return []string{text}
	}
	for _, sep := range []string{"\n\n", "\n", " "} {
		parts := strings.Split(text, sep)
		if len(parts) == 1 {
			continue
		}
		var out []string
		cur := ""
		for _, p := range parts {
			switch {
			case cur == "":
				cur = p
			case len(cur)+len(sep)+len(p) <= max:
				cur += sep + p
			default:
				out = append(out, splitText(cur, max)...)
				cur = p
			}
		}
		if cur != "" {
			out = append(out, splitText(cur, max)...)
		}
		return out
	}
	cut := max
	for cut > 0 && text[cut]&0xC0 == 0x80 {
		cut--
	}
	return append([]string{text[:cut]}, splitText(text[cut:], max)...)
}

// DocSQL returns the code of a doc chunk's fenced blocks that may be SQL:
// those marked sql, pgsql, postgres, postgresql or psql, and unmarked
// ones, which the caller parses and drops when they are not. A block a
// size split cut in two is returned up to the cut.
func DocSQL(c Chunk) []string {
	var out, buf []string
	fence, keep := "", false
	for _, line := range strings.Split(c.Text, "\n") {
		trimmed := strings.TrimSpace(line)
		f := fenceMarker(trimmed)
		switch {
		case fence == "" && f != "":
			fence, buf = f, buf[:0]
			info := strings.ToLower(strings.TrimSpace(strings.TrimLeft(trimmed, "`~")))
			info, _, _ = strings.Cut(info, " ")
			keep = slices.Contains([]string{"", "sql", "pgsql", "postgres", "postgresql", "psql"}, info)
		case fence != "" && strings.HasPrefix(trimmed, fence):
			if keep && len(buf) > 0 {
				out = append(out, strings.Join(buf, "\n"))
			}
			fence = ""
		case fence != "":
			buf = append(buf, line)
		}
	}
	if fence != "" && keep && len(buf) > 0 {
		out = append(out, strings.Join(buf, "\n"))
	}
	return out
}
