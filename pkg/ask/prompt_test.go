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
			msgs := ask.Prompt("video", items, tc.joins, "How many films?", "")
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
