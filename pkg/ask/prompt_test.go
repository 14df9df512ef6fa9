package ask_test

import (
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
)

func TestPromptShowsInferredJoins(t *testing.T) {
	items := []retrieve.Item{{Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: "public.film", Text: "CREATE TABLE public.film (film_id integer);"}}}
	const head = "\n## Joins implied by column names (no foreign key declares them)\n\n"
	for _, tc := range []struct {
		name  string
		joins []retrieve.InferredJoin
		want  string // "" : no joins section
	}{
		{"none", nil, ""},
		{"public tables unqualified",
			[]retrieve.InferredJoin{{From: catalog.QualName{Schema: "public", Name: "film_category"}, FromColumn: "film_id",
				To: catalog.QualName{Schema: "public", Name: "film"}, ToColumn: "film_id"}},
			head + "film_category.film_id = film.film_id\n"},
		{"other schemas qualified, names quoted as SQL needs",
			[]retrieve.InferredJoin{
				{From: catalog.QualName{Schema: "hockey", Name: "Scoring"}, FromColumn: "playerID",
					To: catalog.QualName{Schema: "hockey", Name: "Master"}, ToColumn: "playerID"},
				{From: catalog.QualName{Schema: "hockey", Name: "order"}, FromColumn: "team id",
					To: catalog.QualName{Schema: "hockey", Name: "teams"}, ToColumn: "id"}},
			head + `hockey."Scoring"."playerID" = hockey."Master"."playerID"` + "\n" + `hockey."order"."team id" = hockey.teams.id` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := ask.Prompt("video", &retrieve.Result{Items: items, Joins: tc.joins}, "How many films?", "")
			sys := msgs[0].Content
			i := strings.Index(sys, "\n## Joins")
			if tc.want == "" {
				if i >= 0 {
					t.Errorf("a joins section without joins:\n%s", sys)
				}
				return
			}
			if i < 0 || !strings.HasPrefix(sys[i:], tc.want) {
				t.Fatalf("joins section, want %q:\n%s", tc.want, sys)
			}
			// The joins follow the schema they join, in the cacheable
			// system message, not the question.
			if s := strings.Index(sys, "## Schema"); s < 0 || s > i || strings.Contains(msgs[1].Content, "Joins") {
				t.Errorf("joins out of place:\n%s\n---\n%s", sys, msgs[1].Content)
			}
		})
	}
}

// TestPromptNamesAmbiguousSchemas: when retrieval cannot tell the schemas
// apart, the model is told which they are and to keep to one; the note
// follows the question, outside the cacheable system message.
func TestPromptNamesAmbiguousSchemas(t *testing.T) {
	items := []retrieve.Item{
		{Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: "east.orders", Text: "CREATE TABLE east.orders (id bigint);"}},
		{Candidate: rerank.Candidate{Kind: chunk.KindTable, Name: "west.orders", Text: "CREATE TABLE west.orders (id bigint);"}},
	}
	shares := []retrieve.SchemaShare{{Schema: "east", Share: 0.53}, {Schema: "west", Share: 0.47}}
	const note = "\n\nNote: the question fits several schemas of this database, likeliest first with the share of the odds retrieval gives each: east (0.53), west (0.47). Use the tables of one schema, the one the question's words fit best, and name that schema in the explanation."
	for _, tc := range []struct {
		name  string
		res   retrieve.Result
		hints string
		want  string // the user message
	}{
		{"settled", retrieve.Result{Items: items, Schemas: shares}, "", "How many orders?"},
		{"one schema listed", retrieve.Result{Items: items, Schemas: shares[:1], Ambiguous: true}, "", "How many orders?"},
		{"ambiguous", retrieve.Result{Items: items, Schemas: shares, Ambiguous: true}, "", "How many orders?" + note},
		{"ambiguous, after the hints", retrieve.Result{Items: items, Schemas: shares, Ambiguous: true}, "orders are sales",
			"How many orders?\n\nHints from the asker (definitions and column meanings to rely on):\norders are sales" + note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := ask.Prompt("shop", &tc.res, "How many orders?", tc.hints)
			if got := msgs[1].Content; got != tc.want {
				t.Errorf("user message\n got %q\nwant %q", got, tc.want)
			}
			if strings.Contains(msgs[0].Content, "Note:") {
				t.Errorf("the note is in the cacheable system message:\n%s", msgs[0].Content)
			}
		})
	}
}
