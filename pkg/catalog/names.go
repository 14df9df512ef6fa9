package catalog

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxIdentLen is NAMEDATALEN-1: PostgreSQL truncates identifiers to 63 bytes.
const maxIdentLen = 63

// reservedWords are the keywords PostgreSQL does not accept as a bare column
// or table name (RESERVED_KEYWORD and TYPE_FUNC_NAME_KEYWORD in kwlist.h);
// they must be quoted.
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric both case cast
		check collate column constraint create current_catalog current_date current_role current_time
		current_timestamp current_user default deferrable desc distinct do else end except false fetch
		for foreign from grant group having in initially intersect into lateral leading limit localtime
		localtimestamp not null offset on only or order placing primary references returning select
		session_user some symmetric system_user table then to trailing true union unique user using
		variadic when where window with
		authorization binary collation concurrently cross current_schema freeze full ilike inner is
		isnull join left like natural notnull outer overlaps right similar tablesample verbose`) {
		m[w] = true
	}
	return m
}()

// QuoteIdent quotes an identifier the way PostgreSQL needs it written:
// bare when it is lower-case letters, digits and underscores not starting
// with a digit and not a reserved word; double-quoted otherwise.
func QuoteIdent(s string) string {
	if s != "" && !reservedWords[s] && isBareIdent(s) {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// colNameWords are PostgreSQL 15's COL_NAME_KEYWORDs: a table or column
// may bear one bare, so DDL is rendered without quotes, but
// quote_ident() and format('%I') quote every keyword that is not
// unreserved, and a name a helper builds from their output has the
// quotes in it.
var colNameWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`between bigint bit boolean char character coalesce dec decimal exists
		extract float greatest grouping inout int integer interval least national nchar none normalize
		nullif numeric out overlay position precision real row setof smallint substring time timestamp
		treat trim values varchar xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces
		xmlparse xmlpi xmlroot xmlserialize xmltable`) {
		m[w] = true
	}
	return m
}()

// newerKeywords became keywords that quote_ident() quotes after
// PostgreSQL 15 (16's SYSTEM_USER and SQL/JSON constructors, 17's
// JSON_TABLE and MERGE_ACTION): whether a helper's name gets quotes
// depends on the server's version.
var newerKeywords = map[string]bool{
	"system_user": true, "json_array": true, "json_arrayagg": true, "json_object": true, "json_objectagg": true,
	"json": true, "json_exists": true, "json_query": true, "json_scalar": true,
	"json_serialize": true, "json_table": true, "json_value": true, "merge_action": true,
}

// quoteIdentFunc is quote_ident() and format('%I'): QuoteIdent, and a
// column-name keyword quoted too. A word that is a keyword only in a
// later version stops.
func quoteIdentFunc(s string) (string, error) {
	if newerKeywords[s] {
		return "", stop("quote_ident() of %q, which PostgreSQL 16 and later quote and earlier versions do not", s)
	}
	if colNameWords[s] {
		return `"` + s + `"`, nil
	}
	return QuoteIdent(s), nil
}

func isBareIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case (c >= '0' && c <= '9') || c == '$':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// makeObjectName builds a constraint name the way PostgreSQL's
// makeObjectName does, so that a later DROP CONSTRAINT naming the default
// name finds it: name1_name2_label, shortening the longer of name1 and name2
// until the whole fits in 63 bytes.
func makeObjectName(name1, name2, label string) string {
	n1, n2 := len(name1), len(name2)
	avail := maxIdentLen - len(label) - 1
	if name2 != "" {
		avail--
	}
	for n1+n2 > avail {
		if n1 > n2 {
			n1--
		} else {
			n2--
		}
	}
	out := clipUTF8(name1, n1)
	if name2 != "" {
		out += "_" + clipUTF8(name2, n2)
	}
	return out + "_" + label
}

// clipUTF8 cuts s to at most n bytes without splitting a character
// (pg_mbcliplen).
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// columnsAddition joins column names for a default constraint name, as
// ChooseIndexNameAddition does: names joined by "_", stopping once the
// result is long enough to be truncated anyway.
func columnsAddition(cols []string) string {
	var b strings.Builder
	for _, c := range cols {
		if b.Len() > 0 {
			b.WriteByte('_')
		}
		b.WriteString(c)
		if b.Len() >= maxIdentLen {
			break
		}
	}
	return b.String()
}

// chooseConstraintName picks a default name that no constraint of t has yet,
// trying label, then label1, label2, … like ChooseConstraintName.
func chooseConstraintName(t *Table, name2, label string) string {
	name := makeObjectName(t.Name, name2, label)
	// A key's name is its index's, which steps around the other indexes.
	if !t.hasConstraint(name) && !(indexLabels[label] && t.indexAt(name) >= 0) {
		return name
	}
	// Each pass tested a name against every constraint: a table of n
	// unnamed checks cost n³ (4,000 of them in 60 KB of SQL took 22 s).
	// One scan for the passes the names hold, or, where the name is cut
	// to fit, a set made once, costs n² (with maxTableNames, bounded).
	if pass, ok := lowestFreePass(t, indexLabels[label], name2, label); ok {
		if pass == 0 {
			return name
		}
		return makeObjectName(t.Name, name2, label+strconv.Itoa(pass))
	}
	taken := t.names(indexLabels[label])
	for pass := 1; taken[name]; pass++ {
		name = makeObjectName(t.Name, name2, label+strconv.Itoa(pass))
	}
	return name
}

// lowestFreePass finds the first pass (0 for the label alone, then 1,
// 2, …) of t's constraints' names (its indexes' too with indexes) whose
// name makeObjectName gives uncut, by one scan of the names. It reports
// false where a pass up to their number would be cut to fit, for the
// caller to try each name.
func lowestFreePass(t *Table, indexes bool, name2, label string) (int, bool) {
	names := t.nameList(indexes)
	name1 := t.Name
	longest := makeObjectName(name1, name2, label+strconv.Itoa(len(names)+1))
	prefix := name1 + "_"
	if name2 != "" {
		prefix += name2 + "_"
	}
	prefix += label
	if !strings.HasPrefix(longest, prefix) || len(longest) != len(prefix)+len(strconv.Itoa(len(names)+1)) {
		return 0, false
	}
	used := make([]bool, len(names)+2)
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok {
			continue
		}
		if rest == "" {
			used[0] = true
			continue
		}
		if rest[0] < '1' || rest[0] > '9' || strings.Trim(rest, "0123456789") != "" {
			continue // label01, label+1: no pass's
		}
		if p, err := strconv.Atoi(rest); err == nil && p < len(used) {
			used[p] = true
		}
	}
	for p, u := range used {
		if !u {
			return p, true
		}
	}
	return len(used), true
}

// nameList lists t's constraints' names, and its indexes' too with
// indexes.
func (t *Table) nameList(indexes bool) []string {
	out := make([]string, 0, len(t.Unique)+len(t.ForeignKeys)+len(t.Checks)+len(t.Indexes)+1)
	if t.PrimaryKey != nil {
		out = append(out, t.PrimaryKey.Name)
	}
	for _, k := range t.Unique {
		out = append(out, k.Name)
	}
	for _, f := range t.ForeignKeys {
		out = append(out, f.Name)
	}
	for _, c := range t.Checks {
		out = append(out, c.Name)
	}
	if indexes {
		for _, ix := range t.Indexes {
			out = append(out, ix.Name)
		}
	}
	return out
}

// ConstraintNames lists the names of t's primary key, unique keys,
// foreign keys and checks, in that order.
func (t *Table) ConstraintNames() []string { return t.nameList(false) }

// names is nameList as a set.
func (t *Table) names(indexes bool) map[string]bool {
	list := t.nameList(indexes)
	set := make(map[string]bool, len(list))
	for _, n := range list {
		set[n] = true
	}
	return set
}

func itoa(i int) string { return strconv.Itoa(i) }

func (t *Table) hasConstraint(name string) bool {
	if t.PrimaryKey != nil && t.PrimaryKey.Name == name {
		return true
	}
	for _, k := range t.Unique {
		if k.Name == name {
			return true
		}
	}
	for _, f := range t.ForeignKeys {
		if f.Name == name {
			return true
		}
	}
	for _, c := range t.Checks {
		if c.Name == name {
			return true
		}
	}
	return false
}
