package mcpserver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/mcpserver"
)

// wide is a Backend with one database of n tables.
type wide struct{ n int }

func (w wide) Databases(context.Context) ([]client.Database, error) {
	return []client.Database{{Name: "big"}}, nil
}

func (w wide) Tables(_ context.Context, req *events.TablesRequest) (*events.TablesReply, error) {
	r := &events.TablesReply{Database: req.Database}
	for i := range w.n {
		r.Tables = append(r.Tables, events.TableInfo{Name: fmt.Sprintf("public.t%04d", i)})
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

// TestResourcesArePaged: a schema of 450 tables lists in pages, each
// table once, the last page without a cursor.
func TestResourcesArePaged(t *testing.T) {
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := mcpserver.New(wide{450}, "0.0.0-test").Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pager", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
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
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListResourcesParams{Cursor: res.NextCursor}
	}
	if len(seen) != 450 || pages != 3 || !seen["schemaq://big/tables/public.t0449"] {
		t.Errorf("%d resources in %d pages", len(seen), pages)
	}
	if _, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: "nonsense"}); err == nil {
		t.Error("a cursor the server never gave was accepted")
	}
}
