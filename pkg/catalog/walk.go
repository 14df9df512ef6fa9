package catalog

import (
	pg "github.com/pganalyze/pg_query_go/v5"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walk calls fn for n and every Node below it, in depth-first order. It
// goes through protobuf reflection so that no node type is missed when the
// grammar grows.
func walk(n *pg.Node, fn func(*pg.Node)) {
	if n == nil {
		return
	}
	fn(n)
	walkMessage(n.ProtoReflect(), fn)
}

func walkMessage(m protoreflect.Message, fn func(*pg.Node)) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				visitMessage(l.Get(i).Message(), fn)
			}
			return true
		}
		visitMessage(v.Message(), fn)
		return true
	})
}

func visitMessage(m protoreflect.Message, fn func(*pg.Node)) {
	if n, ok := m.Interface().(*pg.Node); ok {
		fn(n)
	}
	walkMessage(m, fn)
}
