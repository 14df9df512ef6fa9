package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/mcpserver"
)

// wide is a Backend with databases of n tables each ("big" when none
// is named); rows counts the tables its listings returned.
type wide struct {
	n    int
	dbs  []string
	rows *atomic.Int64
}

func (w wide) Databases(context.Context) ([]client.Database, error) {
	if len(w.dbs) == 0 {
		return []client.Database{{Name: "big"}}, nil
	}
	var out []client.Database
	for _, d := range w.dbs {
		out = append(out, client.Database{Name: d})
	}
	return out, nil
}

// Tables pages as the daemon does: names after req.After, at most
// req.Limit, and Next when more follow.
func (w wide) Tables(_ context.Context, req *events.TablesRequest) (*events.TablesReply, error) {
	r := &events.TablesReply{Database: req.Database}
	limit := req.Limit
	if limit <= 0 {
		limit = events.DefaultTablesLimit
	}
	for i := range w.n {
		name := fmt.Sprintf("public.t%04d", i)
		if name <= req.After {
			continue
		}
		if len(r.Tables) == limit {
			r.Next = r.Tables[len(r.Tables)-1].Name
			break
		}
		r.Tables = append(r.Tables, events.TableInfo{Name: name})
	}
	if w.rows != nil {
		w.rows.Add(int64(len(r.Tables)))
	}
	return r, nil
}

func (wide) Search(context.Context, *events.SearchRequest) (*events.SearchReply, error) {
	return nil, nil
}
func (wide) Ask(context.Context, *events.AskRequest) (*events.AskReply, error) { return nil, nil }
func (wide) Feedback(context.Context, *events.FeedbackRequest) (*events.FeedbackReply, error) {
	return nil, nil
}

// TestResourcesArePaged: tables list in pages, each once, across
// databases (in name order, whatever order they come in), the last page
// without a cursor, and each page reads only its own tables.
func TestResourcesArePaged(t *testing.T) {
	cases := []struct {
		name    string
		backend wide
		total   int
		pages   int
		last    string
	}{
		{"one database", wide{n: 450}, 450, 3, "schemaq://big/tables/public.t0449"},
		{"pages end where databases do", wide{n: 200, dbs: []string{"c", "a", "b"}}, 600, 3, "schemaq://c/tables/public.t0199"},
		{"pages span databases", wide{n: 150, dbs: []string{"b", "a", "c"}}, 450, 3, "schemaq://c/tables/public.t0149"},
		{"ten thousand tables", wide{n: 10000}, 10000, 50, "schemaq://big/tables/public.t9999"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.backend.rows = new(atomic.Int64)
			ct, st := mcp.NewInMemoryTransports()
			ctx := context.Background()
			if _, err := mcpserver.New(tc.backend, "0.0.0-test").Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "pager", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var order []string
			seen := map[string]bool{}
			pages := 0
			params := &mcp.ListResourcesParams{}
			for {
				res, err := cs.ListResources(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, r := range res.Resources {
					if seen[r.URI] {
						t.Errorf("%s listed twice", r.URI)
					}
					seen[r.URI] = true
					order = append(order, r.URI)
				}
				if res.NextCursor == "" {
					break
				}
				params = &mcp.ListResourcesParams{Cursor: res.NextCursor}
			}
			if len(seen) != tc.total || pages != tc.pages || order[len(order)-1] != tc.last {
				t.Errorf("%d resources in %d pages, the last %s; want %d in %d, the last %s", len(seen), pages, order[len(order)-1], tc.total, tc.pages, tc.last)
			}
			if !slices.IsSorted(order) {
				t.Error("resources are not listed in database and table order")
			}
			if read := tc.backend.rows.Load(); read > int64(tc.total) {
				t.Errorf("listing %d tables read %d", tc.total, read)
			}
			for _, bad := range []string{"nonsense", "e30", "bm9uc2Vuc2U"} {
				if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: bad}); err == nil {
					t.Errorf("cursor %q, which the server never gave, was accepted", bad)
				}
			}
		})
	}
}
