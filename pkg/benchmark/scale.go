package benchmark

import (
	"fmt"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v5"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/schemaq/schemaq/pkg/pgtree"
)

// Replicas are the copies Replicate makes.
type Replicas struct {
	// Scripts holds one SQL script per copy, the original first: each
	// fits in an event on its own.
	Scripts []string
	// Of names each schema's copies (public's too), in copy order: the
	// names Replicate gave them, which depend on what names the schema
	// had taken already.
	Of map[string][]string
}

// Replicate makes a schema of at least tables tables from sql by copying
// it into renamed schemas (copy k renames schema s to s_k, and puts
// unqualified objects in public_k), so load and scale can be measured at
// sizes no real fixture has while the questions still find their words.
func Replicate(sql string, tables int) (Replicas, error) {
	tree, err := pgtree.Parse(sql)
	if err != nil {
		return Replicas{}, fmt.Errorf("replicate: %w", err)
	}
	per := 0
	schemas := map[string]bool{"public": true}
	for _, st := range tree.Stmts {
		if st.Stmt.GetCreateStmt() != nil {
			per++
		}
		if cs := st.Stmt.GetCreateSchemaStmt(); cs != nil {
			schemas[cs.Schemaname] = true
		}
	}
	if per == 0 {
		return Replicas{}, fmt.Errorf("replicate: the schema has no CREATE TABLE")
	}
	copies := max(1, (tables+per-1)/per)
	format := copyFormat(schemas, copies)
	out := Replicas{Scripts: []string{sql}, Of: map[string][]string{}}
	for k := 2; k <= copies; k++ {
		c, err := pgtree.Parse(sql)
		if err != nil {
			return Replicas{}, err
		}
		suffix := fmt.Sprintf(format, k)
		for s := range schemas {
			out.Of[s] = append(out.Of[s], s+suffix)
		}
		// rename moves a schema-qualified type name to the copy's schema.
		rename := func(names []*pg.Node) {
			if len(names) == 2 {
				if s := names[0].GetString_(); s != nil && schemas[s.Sval] {
					s.Sval += suffix
				}
			}
		}
		var extra []string
		for _, st := range c.Stmts {
			pgtree.Messages(st.Stmt, func(m protoreflect.ProtoMessage) {
				switch n := m.(type) {
				case *pg.RangeVar:
					if n.Schemaname == "" {
						n.Schemaname = "public"
					}
					n.Schemaname += suffix
				case *pg.CreateSchemaStmt:
					n.Schemaname += suffix
				case *pg.TypeName:
					rename(n.Names)
				case *pg.CreateEnumStmt:
					rename(n.TypeName)
				case *pg.CreateDomainStmt:
					rename(n.Domainname)
				}
			})
		}
		extra = append(extra, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS public%s;", suffix))
		body, err := pg.Deparse(c)
		if err != nil {
			return Replicas{}, fmt.Errorf("replicate: copy %d: %w", k, err)
		}
		out.Scripts = append(out.Scripts, strings.Join(extra, "\n")+"\n"+body+";")
	}
	return out, nil
}

// copyFormat is the suffix of the copies' schemas: _2, _3 … unless the
// schema has a schema of such a name already (BIRD has food_inspection
// and food_inspection_2), then _copy2 …, and so on.
func copyFormat(schemas map[string]bool, copies int) string {
	for _, format := range []string{"_%d", "_copy%d", "_lookalike%d"} {
		clash := false
		for s := range schemas {
			for k := 2; k <= copies && !clash; k++ {
				clash = schemas[s+fmt.Sprintf(format, k)]
			}
		}
		if !clash {
			return format
		}
	}
	return "_schemaq_copy%d"
}
