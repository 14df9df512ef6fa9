package retrieve

import (
	"strings"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/text"
)

// inferJoins finds the joins a schema's names imply where no foreign key
// declares them: many schemas declare few or none (a warehouse loaded
// from files, a dump without constraints), and a question that needs a
// lookup table (film_category's category) then has no edge to reach it.
// Within one schema, a table that declares no foreign key of its own
// (one that does has declared its joins) joins table b when
//
//   - it has a column named as b's one-column primary key
//     (film_category.category_id and category.category_id), unless that
//     name is a bare "id", which every table may have; or
//   - b's key is a bare "id" and it has a column named for b and "id"
//     (orders.customer_id, customers.id), or for b without the
//     namespace both names start with (ci_build_needs.build_id,
//     ci_builds.id).
//
// Names compare with case and underscores ignored (CategoryID). Each
// pair comes once, in either order; declared keys are the caller's.
func inferJoins(cat *catalog.Catalog) [][2]string {
	type keyed struct {
		key  string // table key
		name string // the table's name, normalised
	}
	bySchema := map[string][]*catalog.Table{}
	for _, t := range cat.Tables() {
		if t.PartitionOf == nil {
			bySchema[t.Schema] = append(bySchema[t.Schema], t)
		}
	}
	var out [][2]string
	seen := map[[2]string]bool{}
	add := func(a, b string) {
		if a == b {
			return
		}
		if a > b {
			a, b = b, a
		}
		if !seen[[2]string{a, b}] {
			seen[[2]string{a, b}] = true
			out = append(out, [2]string{a, b})
		}
	}
	for _, tables := range bySchema {
		byKey := map[string][]string{}  // key column → tables keyed by it
		byName := map[string][]string{} // name+"id" → tables keyed by a bare id
		for _, t := range tables {
			if t.PrimaryKey == nil || len(t.PrimaryKey.Columns) != 1 {
				continue
			}
			k := joinName(t.PrimaryKey.Columns[0])
			key := t.QualName().Key()
			if k != "id" {
				byKey[k] = append(byKey[k], key)
				continue
			}
			n := joinName(t.Name)
			byName[n+"id"] = append(byName[n+"id"], key)
			if s := text.Singular(n); s != n {
				byName[s+"id"] = append(byName[s+"id"], key)
			}
			// A namespaced name (ci_builds) is named without its
			// namespace by the tables that share it (ci_build_needs'
			// build_id).
			if ns, rest, ok := strings.Cut(strings.ToLower(t.Name), "_"); ok && rest != "" {
				r := joinName(rest)
				byName[ns+"\x00"+r+"id"] = append(byName[ns+"\x00"+r+"id"], key)
				if s := text.Singular(r); s != r {
					byName[ns+"\x00"+s+"id"] = append(byName[ns+"\x00"+s+"id"], key)
				}
			}
		}
		if len(byKey) == 0 && len(byName) == 0 {
			continue
		}
		for _, t := range tables {
			if len(t.ForeignKeys) > 0 {
				continue // it declares its joins
			}
			key := t.QualName().Key()
			for _, c := range t.Columns {
				n := joinName(c.Name)
				for _, b := range byKey[n] {
					add(key, b)
				}
				for _, b := range byName[n] {
					add(key, b)
				}
				if ns, _, ok := strings.Cut(strings.ToLower(t.Name), "_"); ok {
					for _, b := range byName[ns+"\x00"+n] {
						add(key, b)
					}
				}
			}
		}
	}
	return out
}

// joinName is a name as joins compare it: lower case, letters and digits.
func joinName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if ('a' <= r && r <= 'z') || ('0' <= r && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}
