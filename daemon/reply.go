package daemon

import (
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// askReply is the one place an ask's reply is assembled: from the
// retrieval, and from the model's answer when a gateway is configured
// (ans nil: retrieval only). refused is the warning for a request that
// asked for system catalogs this daemon does not allow.
func (d *Daemon) askReply(req *events.AskRequest, cat *catalog.Catalog, res *retrieve.Result, ans *ask.Answer, refused string) *events.AskReply {
	out := &events.AskReply{Database: req.Database, Joins: wireJoins(res.Joins)}
	if ans == nil {
		out.Explanation, out.RetrievalOnly = d.cfg.NoGatewayHint, true
		out.Context, out.Timings = contextItems(res, true), timings(res.Timings)
		out.Warnings = append([]string{"no LLM gateway configured: retrieval only"}, res.Warnings...)
		for _, it := range res.Items {
			if it.Kind == "table" || it.Kind == "view" {
				out.Tables = append(out.Tables, it.Name)
			}
		}
	} else {
		// The prompt held the context's text; the reply names it only.
		out.Context = contextItems(res, false)
		out.Timings = map[string]float64{"retrieve": ms(res.Timings.Total), "llm": ms(ans.LLM), "guard": ms(ans.Guard)}
		out.Warnings = append(append(out.Warnings, res.Warnings...), ans.Warnings...)
		out.Usage = &events.Usage{PromptTokens: ans.Usage.Prompt, CompletionTokens: ans.Usage.Completion, CachedTokens: ans.Usage.Cached, LLMCalls: ans.Usage.Calls}
		out.SQL, out.Explanation, out.RejectedSQL, out.Tables = ans.SQL, ans.Explanation, ans.RejectedSQL, ans.Tables
		if ans.Err != nil {
			out.Error = AskError(ans.Err)
		}
	}
	if req.Explain {
		out.Explain, out.QueryTerms = wireExplain(res.Explain), WireTerms(res.Terms)
	}
	if refused != "" {
		out.Warnings = append(out.Warnings, refused)
	}
	out.Schemas, out.Ambiguous = wireShares(res.Schemas), res.Ambiguous
	if w := driftWarning(cat); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	return out
}

// AskError is the error a reply carries for why an answer has no SQL
// (Answer.Err): its code, and a message that says what to do.
func AskError(err error) *events.Error {
	var gf *ask.GatewayFailure
	if errors.As(err, &gf) {
		code := events.CodeGatewayError
		var ge *ask.GatewayError
		if errors.As(gf.Err, &ge) && (ge.Status == http.StatusUnauthorized || ge.Status == http.StatusForbidden) {
			code = events.CodeGatewayAuth
		}
		e := events.Errorf(code, "%s", gf.Error())
		if ge != nil && ge.RetryAfter > 0 {
			e.RetryAfter = int(math.Ceil(ge.RetryAfter.Seconds()))
		}
		return e
	}
	var un *ask.Unanswerable
	if errors.As(err, &un) {
		return events.Errorf(events.CodeUnanswerable, "%s", un.Error())
	}
	var oe *ask.OutputError
	if errors.As(err, &oe) {
		return events.Errorf(events.CodeInvalidOutput, "%v; the model answered: %.500s", oe.Err, oe.Raw)
	}
	code := events.CodeInvalidSQL
	switch {
	case errors.Is(err, sqlguard.ErrUnsafe):
		code = events.CodeUnsafeSQL
	case errors.Is(err, sqlguard.ErrUnknownTable):
		code = events.CodeUnknownTable
	case errors.Is(err, sqlguard.ErrUnknownColumn):
		code = events.CodeUnknownColumn
	}
	var r *sqlguard.Rejection
	if errors.As(err, &r) {
		return events.Errorf(code, "%s", r.Reason)
	}
	return events.Errorf(code, "%v", err)
}

// contextItems are a result's items as a reply lists them, with their
// text or without.
func contextItems(res *retrieve.Result, text bool) []events.ContextItem {
	out := make([]events.ContextItem, 0, len(res.Items))
	for _, it := range res.Items {
		c := events.ContextItem{ID: it.Chunks[0].ID, Kind: it.Kind, Name: it.Name, Score: it.Score, Bridge: it.Bridge, Placed: it.Placed, Title: it.Title}
		if text {
			c.Text = it.Text
		}
		out = append(out, c)
	}
	return out
}

func timings(t retrieve.Timings) map[string]float64 {
	return map[string]float64{"retrieve": ms(t.Total), "bm25": ms(t.BM25), "knn": ms(t.KNN), "embed": ms(t.Embed)}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// The wire forms of what retrieval records: retrieval's own types stay
// free to change, and replies change only here.

func wireJoins(joins []retrieve.InferredJoin) []events.Join {
	var out []events.Join
	for _, j := range joins {
		out = append(out, events.Join{From: j.From.Key(), FromColumn: j.FromColumn, To: j.To.Key(), ToColumn: j.ToColumn})
	}
	return out
}

func wireShares(shares []retrieve.SchemaShare) []events.SchemaShare {
	var out []events.SchemaShare
	for _, s := range shares {
		out = append(out, events.SchemaShare{Schema: s.Schema, Share: s.Share})
	}
	return out
}

// WireTerms are retrieval's query terms as replies carry them.
func WireTerms(terms []retrieve.Term) []events.QueryTerm {
	var out []events.QueryTerm
	for _, t := range terms {
		out = append(out, events.QueryTerm{Term: t.Term, Why: t.Why, From: t.From})
	}
	return out
}

func wireExplain(ex []retrieve.Explain) []events.ExplainItem {
	var out []events.ExplainItem
	for _, e := range ex {
		out = append(out, events.ExplainItem{Kind: e.Kind, Name: e.Name, BM25Rank: e.BM25Rank, BM25Score: e.BM25Score,
			KNNRank: e.KNNRank, KNNScore: e.KNNScore, HintRank: e.HintRank, HintScore: e.HintScore,
			IdentifierRank: e.IdentifierRank, Identifier: e.Identifier, ExampleRank: e.ExampleRank, Example: e.Example,
			DocRank: e.DocRank, Doc: e.Doc, SchemaRoute: e.SchemaRoute, SchemaEvidence: e.SchemaEvidence,
			SchemaLikelihood: e.SchemaLikelihood, SchemaByFeatures: e.SchemaByFeatures, LiftedTo: e.LiftedTo,
			FusedRank: e.FusedRank, FusedScore: e.FusedScore, SchemaRank: e.SchemaRank, SchemaScore: e.SchemaScore,
			RerankRank: e.RerankRank, RerankScore: e.RerankScore, FinalRank: e.FinalRank, Bridge: e.Bridge, Placed: e.Placed})
	}
	return out
}

// tableInfo is a description as a tables reply carries it. A hub table
// of a large schema is joined by thousands: more than a reply should
// carry (NATS's limit is 1 MB), so the lists are cut, with their totals.
func tableInfo(d *catalog.Description) events.TableInfo {
	info := events.TableInfo{Name: d.Name, Comment: d.Comment, Columns: d.Columns, View: d.View, DDL: d.DDL,
		References: d.References, ReferencedBy: d.ReferencedBy, Joins: d.Joins, Enums: d.Enums, Renamed: d.Renamed, History: d.History}
	if n := len(info.ReferencedBy); n > events.MaxKeysListed {
		info.ReferencedBy, info.ReferencedByTotal = info.ReferencedBy[:events.MaxKeysListed], n
	}
	if n := len(info.Joins); n > events.MaxKeysListed {
		info.Joins, info.JoinsTotal = info.Joins[:events.MaxKeysListed], n
	}
	return info
}
