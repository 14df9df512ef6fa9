package daemon

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
)

// TestListingPages: paging a listing of any size, one name or thousands
// at a time, from the start or after any name (one that is not there
// too), returns every table and view once, in order; a new version of
// the catalog is listed anew.
func TestListingPages(t *testing.T) {
	snapshot := func(n int, extra string) *catalog.Catalog {
		t.Helper()
		var b strings.Builder
		b.WriteString("CREATE SCHEMA a; CREATE SCHEMA \"a-b\";\n")
		for i := range n {
			fmt.Fprintf(&b, "CREATE TABLE %s.t%05d (id int);\n", []string{"public", "a", `"a-b"`}[i%3], i)
		}
		b.WriteString("CREATE VIEW a.v AS SELECT 1 AS one;\n" + extra)
		cat, err := catalog.Snapshot("db", "s.sql", b.String())
		if err != nil {
			t.Fatal(err)
		}
		return cat
	}
	tests := []struct {
		name   string
		tables int
		limit  int
	}{
		{"one table", 1, 0},
		{"a page of one", 7, 1},
		{"pages of two", 30, 2},
		{"the default page", 2500, 0},
		{"the largest page", 12000, events.MaxTablesLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l listings
			cat := snapshot(tc.tables, "")
			var got []string
			req := &events.TablesRequest{Limit: tc.limit}
			for pages := 0; ; pages++ {
				if pages > tc.tables+1 {
					t.Fatal("paging does not end")
				}
				out := &events.TablesReply{}
				page(l.of(cat), req, out)
				if out.Total != tc.tables+1 {
					t.Fatalf("total %d, want %d", out.Total, tc.tables+1)
				}
				for _, ti := range out.Tables {
					got = append(got, ti.Name)
				}
				if out.Next == "" {
					break
				}
				req.After = out.Next
			}
			if len(got) != tc.tables+1 {
				t.Fatalf("%d names, want %d", len(got), tc.tables+1)
			}
			for i := 1; i < len(got); i++ {
				if got[i-1] >= got[i] {
					t.Fatalf("out of order at %d: %s then %s", i, got[i-1], got[i])
				}
			}
			// After a name that is not there: from the next one.
			out := &events.TablesReply{}
			page(l.of(cat), &events.TablesRequest{After: "a.t", Limit: 1}, out)
			if len(out.Tables) != 1 || out.Tables[0].Name <= "a.t" || out.Tables[0].Name != firstAfter(got, "a.t") {
				t.Errorf("after a.t: %+v", out.Tables)
			}
			// A page handed on is the caller's: changing it changes no
			// later page.
			out.Tables[0].Name = "changed"
			again := &events.TablesReply{}
			page(l.of(cat), &events.TablesRequest{After: "a.t", Limit: 1}, again)
			if again.Tables[0].Name == "changed" {
				t.Error("a page shares the kept listing")
			}
			// A new version is listed anew.
			next := snapshot(tc.tables, "CREATE TABLE public.zz_new (id int);\n")
			out = &events.TablesReply{}
			page(l.of(next), &events.TablesRequest{After: got[len(got)-1]}, out)
			if len(out.Tables) != 1 || out.Tables[0].Name != "public.zz_new" {
				t.Errorf("the new version's last page: %+v", out.Tables)
			}
		})
	}
}

func firstAfter(sorted []string, after string) string {
	for _, s := range sorted {
		if s > after {
			return s
		}
	}
	return ""
}

// TestListingsAreBoundedAndWeak: listings are kept for at most
// maxListings databases, and a kept listing does not keep its catalog
// alive.
func TestListingsAreBoundedAndWeak(t *testing.T) {
	var l listings
	for i := range maxListings + 5 {
		cat, err := catalog.Snapshot(fmt.Sprintf("db%d", i), "s.sql", "CREATE TABLE t (id int);")
		if err != nil {
			t.Fatal(err)
		}
		l.of(cat)
	}
	if len(l.byDB) != maxListings || len(l.order) != maxListings {
		t.Fatalf("%d listings (%d in order), want %d", len(l.byDB), len(l.order), maxListings)
	}
	if _, ok := l.byDB["db0"]; ok {
		t.Error("the oldest listing is still kept")
	}
	runtime.GC()
	if c := l.byDB[fmt.Sprintf("db%d", maxListings+4)].cat.Value(); c != nil {
		t.Error("a kept listing keeps its catalog alive")
	}
}
