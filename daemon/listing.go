package daemon

import (
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
)

// Listings. A page of the tables endpoint is a binary search in the
// catalog's tables and views sorted by name. Sorting them again for
// every page cost 50 ms at 50,000 tables, so a caller paging one name
// at a time could keep a daemon busy for the better part of an hour.
// Each database's sorted listing is kept for the catalog it was built
// from, which it holds weakly: a new version replaces it, and an old
// catalog is not kept alive for it.

// maxListings bounds the databases whose listings are kept: a listing
// costs about a hundred bytes a table.
const maxListings = 16

// listings keeps the sorted listings of the databases listed last.
type listings struct {
	mu    sync.Mutex
	byDB  map[string]listing
	order []string // databases, the longest kept first
}

type listing struct {
	cat weak.Pointer[catalog.Catalog]
	all []events.TableInfo
}

// of returns cat's tables and views sorted by name. The slice is shared:
// callers copy what they hand on.
func (l *listings) of(cat *catalog.Catalog) []events.TableInfo {
	l.mu.Lock()
	got, ok := l.byDB[cat.Database]
	l.mu.Unlock()
	if ok && got.cat.Value() == cat {
		return got.all
	}
	all := sortedListing(cat) // outside the lock: other databases' pages need not wait
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byDB == nil {
		l.byDB = map[string]listing{}
	}
	if _, ok := l.byDB[cat.Database]; !ok {
		l.order = append(l.order, cat.Database)
		if len(l.order) > maxListings {
			delete(l.byDB, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.byDB[cat.Database] = listing{cat: weak.Make(cat), all: all}
	return all
}

func sortedListing(cat *catalog.Catalog) []events.TableInfo {
	tables, views := cat.Tables(), cat.Views() // each a copy
	all := make([]events.TableInfo, 0, len(tables)+len(views))
	for _, t := range tables {
		all = append(all, events.TableInfo{Name: t.Schema + "." + t.Name, Comment: t.Comment, Columns: len(t.Columns)})
	}
	for _, v := range views {
		all = append(all, events.TableInfo{Name: v.Schema + "." + v.Name, Comment: v.Comment, Columns: len(v.Columns), View: true})
	}
	slices.SortFunc(all, func(a, b events.TableInfo) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// page fills out with the page of all that req asks for: after
// req.After, at most req.Limit (0: the default), and the name to ask
// after for the next.
func page(all []events.TableInfo, req *events.TablesRequest, out *events.TablesReply) {
	out.Total = len(all)
	start := 0
	if req.After != "" {
		start, _ = slices.BinarySearchFunc(all, req.After, func(t events.TableInfo, after string) int {
			if t.Name <= after {
				return -1
			}
			return 1
		})
	}
	limit := req.Limit
	if limit == 0 {
		limit = events.DefaultTablesLimit
	}
	end := min(start+limit, len(all))
	out.Tables = slices.Clone(all[start:end])
	if end < len(all) {
		out.Next = all[end-1].Name
	}
}
