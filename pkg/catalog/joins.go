package catalog

import (
	"cmp"
	"slices"
	"strings"

	"github.com/schemaq/schemaq/pkg/text"
)

// InferredJoin is a join a schema's names imply where no foreign key
// declares it: From.FromColumn = To.ToColumn, To's one-column primary
// key. Both tables are in one schema.
type InferredJoin struct {
	From       QualName
	FromColumn string
	To         QualName
	ToColumn   string
	// The tables' keys, computed once: every request looks joins up and
	// orders them by these.
	from, to string
}

// FromKey and ToKey are the joined tables' keys (QualName.Key).
func (j InferredJoin) FromKey() string { return j.from }
func (j InferredJoin) ToKey() string   { return j.to }

// CompareJoins orders joins by their tables and columns, so that the same
// joins always make the same list.
func CompareJoins(a, b InferredJoin) int {
	return cmp.Or(strings.Compare(a.from, b.from), strings.Compare(a.FromColumn, b.FromColumn), strings.Compare(a.to, b.to))
}

// inferJoins finds the joins a schema's names imply where no foreign key
// declares them: many schemas declare few or none (a warehouse loaded
// from files, a dump without constraints), and a question that needs a
// lookup table (film_category's category) then has no edge to reach it.
// Within one schema, a table that declares no foreign key of its own
// (one that does, itself or through its partitions, has declared its
// joins: declares) joins table b when
//
//   - it has a column named as b's one-column primary key
//     (film_category.category_id and category.category_id), unless that
//     name is a bare "id", which every table may have; or
//   - b's key is a bare "id" and it has a column named for b and "id"
//     (orders.customer_id, customers.id), or for b without the
//     namespace both names start with (ci_build_needs.build_id,
//     ci_builds.id); or
//   - it has a column of the key's type family named for b in the
//     singular (economy.country, claims.encounter), numbered or not
//     (borders.country1 and country2), or for b and its key column
//     (city.country_code, country.code). A plural
//     (langs.pages) is a count more often than a reference, and a
//     column of another type (a rating real beside a rating table's
//     integer key) holds a value, not the key.
//
// Names compare with case and underscores ignored (CategoryID). Each
// pair of columns comes once: two tables keyed by the same name join
// each other from one side only.
//
// The joins come by schema. A schema whose joins base (an earlier
// version's) found from the same tables keeps them: a migration changes
// a few schemas of many.
func inferJoins(cat *Catalog, declares func(*Table) bool, base map[string]*schemaJoins) map[string]*schemaJoins {
	bySchema := map[string]*schemaJoins{}
	for _, t := range cat.Tables() {
		if t.PartitionOf == nil {
			s := bySchema[t.Schema]
			if s == nil {
				s = &schemaJoins{}
				bySchema[t.Schema] = s
			}
			s.tables = append(s.tables, keyedTable{t: t})
			s.declares = append(s.declares, declares(t))
		}
	}
	for name, s := range bySchema {
		if b := base[name]; b != nil && b.foundFrom(s) {
			bySchema[name] = b
			continue
		}
		s.find()
	}
	return bySchema
}

// schemaJoins are one schema's inferred joins and what they were found
// from: its tables (partitions aside) in catalog order, and whether each
// declares its joins. A schema's joins depend on nothing else, and a
// table a catalog holds is never changed (a clone copies it first), so a
// later version whose schema holds the very same tables, declaring
// alike, has the very same joins.
type schemaJoins struct {
	tables   []keyedTable
	declares []bool
	joins    []InferredJoin
}

// foundFrom reports whether s's joins were found from next's tables.
func (s *schemaJoins) foundFrom(next *schemaJoins) bool {
	return slices.Equal(s.declares, next.declares) &&
		slices.EqualFunc(s.tables, next.tables, func(a, b keyedTable) bool { return a.t == b.t })
}

// find finds the schema's joins.
func (s *schemaJoins) find() {
	for i := range s.tables {
		s.tables[i].key = s.tables[i].t.QualName().Key()
	}
	keys := newJoinKeys(s.tables)
	if len(keys.byKey) == 0 && len(keys.byName) == 0 {
		return
	}
	j := &joinFinder{seen: map[[2]joinEnd]bool{}}
	for i, kt := range s.tables {
		if !s.declares[i] { // one that declares its joins is left alone
			j.match(kt, keys)
		}
	}
	s.joins = j.out
}

// keyedTable is a table with its key, which each join it is in carries.
type keyedTable struct {
	t   *Table
	key string
}

// joinKeys are one schema's tables with a one-column primary key, by
// the names a column that references them would have.
type joinKeys struct {
	byKey  map[string][]keyedTable // key column → tables keyed by it
	byName map[string][]keyedTable // name+"id" → tables keyed by a bare id
	// byTable: tables by the names of a column that names the table
	// (country) or the table and its key (countrycode), which must also
	// share the key's type family.
	byTable map[string][]keyedTable
}

func newJoinKeys(tables []keyedTable) joinKeys {
	k := joinKeys{byKey: map[string][]keyedTable{}, byName: map[string][]keyedTable{}, byTable: make(map[string][]keyedTable, len(tables))}
	for _, kt := range tables {
		t := kt.t
		if t.PrimaryKey == nil || len(t.PrimaryKey.Columns) != 1 {
			continue
		}
		n, key := joinName(t.Name), joinName(t.PrimaryKey.Columns[0])
		k.table(kt, n, key)
		if key != "id" {
			k.byKey[key] = append(k.byKey[key], kt)
			continue
		}
		k.name("", n, kt)
		// A namespaced name (ci_builds) is named without its namespace
		// by the tables that share it (ci_build_needs' build_id).
		if ns, rest, ok := strings.Cut(strings.ToLower(t.Name), "_"); ok && rest != "" {
			k.name(ns+"\x00", joinName(rest), kt)
		}
	}
	return k
}

// name files kt, keyed by a bare id, under prefix+n+"id" and its
// singular's.
func (k joinKeys) name(prefix, n string, kt keyedTable) {
	k.byName[prefix+n+"id"] = append(k.byName[prefix+n+"id"], kt)
	if s := text.Singular(n); s != n {
		k.byName[prefix+s+"id"] = append(k.byName[prefix+s+"id"], kt)
	}
}

// table files kt, named n and keyed by key (as joinName has them),
// under the names of a column that names it: its name in the singular,
// and its name (either number) with its key column's, unless that is a
// bare id, which name already files, or names the table itself
// (category_id), which byKey files.
func (k joinKeys) table(kt keyedTable, n, key string) {
	s := text.Singular(n)
	k.byTable[s] = append(k.byTable[s], kt)
	if key != "id" && !strings.HasPrefix(key, s) {
		k.byTable[s+key] = append(k.byTable[s+key], kt)
		if n != s {
			k.byTable[n+key] = append(k.byTable[n+key], kt)
		}
	}
}

// joinEnd is one column of a join.
type joinEnd struct {
	t   *Table
	col string
}

// joinFinder collects joins, each pair of columns once: two tables keyed
// by the same name each find the other.
type joinFinder struct {
	seen map[[2]joinEnd]bool
	out  []InferredJoin
}

// maxKeyOwners is the most tables one name may lead to and still infer
// a join: a key name that many tables share (code, uuid) names none of
// them, as a bare id names none, and joining every one to every other
// grew with the square of the tables (2,000 tables keyed by name made
// two million joins and 2 GB; TestSharedKeyNamesJoinNothing).
const maxKeyOwners = 10

// match adds the joins of kt's columns to the tables of keys they name.
func (j *joinFinder) match(kt keyedTable, keys joinKeys) {
	ns, _, namespaced := strings.Cut(strings.ToLower(kt.t.Name), "_")
	for _, c := range kt.t.Columns {
		n := joinName(c.Name)
		for _, b := range owners(keys.byKey[n]) {
			j.add(kt, c.Name, b)
		}
		for _, b := range owners(keys.byName[n]) {
			j.add(kt, c.Name, b)
		}
		j.matchTable(kt, c, n, keys)
		if base := strings.TrimRight(n, "0123456789"); base != n && base != "" {
			j.matchTable(kt, c, base, keys) // borders.country1, country2
		}
		if namespaced {
			for _, b := range owners(keys.byName[ns+"\x00"+n]) {
				j.add(kt, c.Name, b)
			}
		}
	}
}

// matchTable adds the joins of c, named n, to the tables it names
// (byTable) whose key is of its type family.
func (j *joinFinder) matchTable(kt keyedTable, c *Column, n string, keys joinKeys) {
	for _, b := range owners(keys.byTable[n]) {
		if sameKeyFamily(c, b.t.Column(b.t.PrimaryKey.Columns[0])) {
			j.add(kt, c.Name, b)
		}
	}
}

// owners is the tables a name leads to, none when more than
// maxKeyOwners share it.
func owners(tables []keyedTable) []keyedTable {
	if len(tables) > maxKeyOwners {
		return nil
	}
	return tables
}

func (j *joinFinder) add(a keyedTable, col string, b keyedTable) {
	if a.t == b.t {
		return
	}
	e := [2]joinEnd{{a.t, col}, {b.t, b.t.PrimaryKey.Columns[0]}}
	if j.seen[e] || j.seen[[2]joinEnd{e[1], e[0]}] {
		return
	}
	j.seen[e] = true
	j.out = append(j.out, InferredJoin{From: a.t.QualName(), FromColumn: col, To: b.t.QualName(), ToColumn: e[1].col, from: a.key, to: b.key})
}

// sameKeyFamily reports whether a column that only names a table holds
// values of the table's key type: both known (keyFamily), and alike.
func sameKeyFamily(c, key *Column) bool {
	if key == nil {
		return false
	}
	f := keyFamily(c)
	return f != "" && f == keyFamily(key)
}

// joinName is a name as joins compare it: lower case, letters and digits.
func joinName(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') }) < 0 {
		return s // already so: most names are, and every column is asked
	}
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// String writes the join as a query would, with the names as declared
// (describing a table writes its keys so): from.column = to.column.
func (j InferredJoin) String() string {
	return j.From.Schema + "." + j.From.Name + "." + j.FromColumn + " = " + j.To.Schema + "." + j.To.Name + "." + j.ToColumn
}
