// Package pgtree holds the small helpers every walker of libpg_query's
// parse tree needs: a depth-first walk over all nodes and the string list
// reader for qualified names.
package pgtree

import (
	pg "github.com/pganalyze/pg_query_go/v5"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Walk calls fn for n and every Node below it, depth first. It goes
// through protobuf reflection, so no node type is missed when the grammar
// grows.
func Walk(n *pg.Node, fn func(*pg.Node)) {
	Messages(n, func(m protoreflect.ProtoMessage) {
		if node, ok := m.(*pg.Node); ok {
			fn(node)
		}
	})
}

// Strings returns the String values of a node list (the parts of a
// qualified name, a list of column names), skipping other nodes.
func Strings(nodes []*pg.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if s := n.GetString_(); s != nil {
			out = append(out, s.Sval)
		}
	}
	return out
}

// Messages calls fn for every message in n's tree, Node wrappers and the
// structs held directly in fields (a CreateStmt's relation is a RangeVar,
// not a Node), depth first.
func Messages(n *pg.Node, fn func(protoreflect.ProtoMessage)) {
	if n == nil {
		return
	}
	messages(n.ProtoReflect(), fn)
}

func messages(m protoreflect.Message, fn func(protoreflect.ProtoMessage)) {
	fn(m.Interface())
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				messages(l.Get(i).Message(), fn)
			}
			return true
		}
		messages(v.Message(), fn)
		return true
	})
}
