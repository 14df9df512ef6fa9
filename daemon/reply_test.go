package daemon

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/ask"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/rerank"
	"github.com/schemaq/schemaq/pkg/retrieve"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

// An ask's reply is assembled in one place, from the retrieval and the
// answer: what it keeps of each, in both modes.
func TestAskReply(t *testing.T) {
	d := &Daemon{cfg: Config{NoGatewayHint: "set a gateway"}}
	c := chunk.Chunk{ID: "shop/table/public.orders/0", Kind: chunk.KindTable, Name: "public.orders", Text: "CREATE TABLE orders (id int)"}
	res := &retrieve.Result{Items: []retrieve.Item{{Candidate: rerank.Candidate{Kind: c.Kind, Name: c.Name, Text: c.Text, Chunks: []chunk.Chunk{c}, Score: 0.5}}},
		Warnings: []string{"retrieval warned"}, Ambiguous: true, Schemas: []retrieve.SchemaShare{{Schema: "public", Share: 0.5}},
		Timings: retrieve.Timings{Total: 3 * time.Millisecond}}
	req := &events.AskRequest{Database: "shop", Question: "q", Explain: true}

	only := d.askReply(req, nil, res, nil, "refused system catalogs")
	if !only.RetrievalOnly || only.Explanation != "set a gateway" || only.Context[0].Text == "" || !slices.Equal(only.Tables, []string{"public.orders"}) ||
		!slices.Equal(only.Warnings, []string{"no LLM gateway configured: retrieval only", "retrieval warned", "refused system catalogs"}) ||
		!only.Ambiguous || len(only.Schemas) != 1 || only.Timings["retrieve"] != 3 {
		t.Errorf("retrieval only: %+v", only)
	}

	ans := &ask.Answer{SQL: "SELECT id FROM orders", Explanation: "ids", Tables: []string{"public.orders"}, Warnings: []string{"guard warned"},
		Usage: ask.Usage{Prompt: 10, Completion: 2, Cached: 4}, LLM: 20 * time.Millisecond, Guard: time.Millisecond}
	got := d.askReply(req, nil, res, ans, "")
	if got.RetrievalOnly || got.SQL != ans.SQL || got.Error != nil || got.Context[0].Text != "" || got.Context[0].Name != "public.orders" ||
		!slices.Equal(got.Warnings, []string{"retrieval warned", "guard warned"}) || got.Usage.PromptTokens != 10 || got.Usage.CachedTokens != 4 ||
		got.Timings["llm"] != 20 || got.Timings["guard"] != 1 || got.Timings["retrieve"] != 3 || !got.Ambiguous {
		t.Errorf("answered: %+v", got)
	}

	refused := d.askReply(req, nil, res, &ask.Answer{RejectedSQL: "DELETE FROM orders", Warnings: nil,
		Err: &sqlguard.Rejection{Kind: sqlguard.ErrUnsafe, Reason: "DELETE is not read-only"}}, "")
	if refused.SQL != "" || refused.RejectedSQL != "DELETE FROM orders" || refused.Error == nil || refused.Error.Code != events.CodeUnsafeSQL {
		t.Errorf("refused: %+v", refused)
	}
}

func TestAskError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		code       string
		message    string
		retryAfter int
	}{
		{"unknown table", &sqlguard.Rejection{Kind: sqlguard.ErrUnknownTable, Reason: "relation payments is not in database shop"},
			events.CodeUnknownTable, "relation payments is not in database shop", 0},
		{"unknown column", &sqlguard.Rejection{Kind: sqlguard.ErrUnknownColumn, Reason: "column c.nme"}, events.CodeUnknownColumn, "column c.nme", 0},
		{"unsafe", &sqlguard.Rejection{Kind: sqlguard.ErrUnsafe, Reason: "pg_sleep"}, events.CodeUnsafeSQL, "pg_sleep", 0},
		{"invalid", &sqlguard.Rejection{Kind: sqlguard.ErrInvalid, Reason: "syntax error"}, events.CodeInvalidSQL, "syntax error", 0},
		{"not JSON", &ask.OutputError{Err: errors.New("no JSON object"), Raw: "I cannot help"}, events.CodeInvalidOutput,
			"no JSON object; the model answered: I cannot help", 0},
		{"unanswerable", &ask.Unanswerable{Explanation: "there is no weather data"}, events.CodeUnanswerable,
			"the model found no way to answer from this schema: there is no weather data", 0},
		{"gateway", &ask.GatewayFailure{Err: &ask.GatewayError{Status: 503}}, events.CodeGatewayError, "the LLM gateway failed: ", 0},
		{"gateway busy", &ask.GatewayFailure{Err: &ask.GatewayError{Status: 429, RetryAfter: 1500 * time.Millisecond}}, events.CodeGatewayError, "the LLM gateway failed: ", 2},
		{"refused key", &ask.GatewayFailure{Err: &ask.GatewayError{Status: 401}}, events.CodeGatewayAuth, "the LLM gateway failed: ", 0},
		{"forbidden", &ask.GatewayFailure{Err: &ask.GatewayError{Status: 403}}, events.CodeGatewayAuth, "the LLM gateway failed: ", 0},
		{"in the repair round", &ask.GatewayFailure{Err: &ask.GatewayError{Status: 400}, First: &sqlguard.Rejection{Kind: sqlguard.ErrUnsafe, Reason: "DELETE"}},
			events.CodeGatewayError, "the LLM gateway failed in the repair round: ", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := AskError(tt.err)
			if e.Code != tt.code || !strings.HasPrefix(e.Message, tt.message) || e.RetryAfter != tt.retryAfter {
				t.Errorf("AskError = %+v, want %s %q (retry after %d)", e, tt.code, tt.message, tt.retryAfter)
			}
		})
	}
}

// Every field an explained reply carries is filled from retrieval's own
// record: a field added to one and not wired here would read as zero.
func TestWireExplainCarriesEveryField(t *testing.T) {
	var in retrieve.Explain
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("Explain.%s: a %s the test does not fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	out := reflect.ValueOf(wireExplain([]retrieve.Explain{in})[0])
	for i := range out.NumField() {
		name := out.Type().Field(i).Name
		if out.Field(i).IsZero() {
			t.Errorf("events.ExplainItem.%s is not carried", name)
			continue
		}
		if src := v.FieldByName(name); !src.IsValid() || !reflect.DeepEqual(src.Interface(), out.Field(i).Interface()) {
			t.Errorf("events.ExplainItem.%s = %v, not retrieval's", name, out.Field(i).Interface())
		}
	}
}

// TestDriftWireCarriesEveryField: every field of events.Drift is filled
// from the catalog's drift, for an inferred column and a routine run in
// part.
func TestDriftWireCarriesEveryField(t *testing.T) {
	c, err := catalog.New("shop").Apply("0001_x.sql", `CREATE TABLE t (id int);
ALTER TABLE t ALTER COLUMN ghost SET NOT NULL;
CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN EXECUTE current_setting('app.ddl'); END $$;
SELECT f();`, catalog.Tolerant())
	if err != nil {
		t.Fatal(err)
	}
	c = c.Record(catalog.Applied{Seq: 1, ID: "0001_x", Source: "0001_x.sql"})
	wire, total := driftWire(c)
	if total != 2 || len(wire) != 2 {
		t.Fatalf("drift %v (total %d), want the inferred column and the stopped call", wire, total)
	}
	if wire[0].Inferred == "" || wire[0].Stopped || !wire[1].Stopped || wire[1].Inferred != "" {
		t.Fatalf("drift %+v: want an inferred entry, then a stopped one", wire)
	}
	for _, w := range wire {
		v := reflect.ValueOf(w)
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if name == "Inferred" || name == "Stopped" {
				continue
			}
			if v.Field(i).IsZero() {
				t.Errorf("events.Drift.%s is not carried: %+v", name, w)
			}
		}
	}
}

// Why join completion placed or added a table reaches the wire, in the
// results and in the explanation alike.
func TestRepliesSayWhyATableWasPlaced(t *testing.T) {
	const why, bridge = "has name, which no table before it covers; joins public.film_actor", "joins public.a and public.b"
	c := chunk.Chunk{ID: "films/table/public.actor/0", Kind: chunk.KindTable, Name: "public.actor"}
	b := chunk.Chunk{ID: "films/table/public.ab/0", Kind: chunk.KindTable, Name: "public.ab"}
	res := &retrieve.Result{
		Items: []retrieve.Item{
			{Candidate: rerank.Candidate{Kind: c.Kind, Name: c.Name, Chunks: []chunk.Chunk{c}}, Placed: why},
			{Candidate: rerank.Candidate{Kind: b.Kind, Name: b.Name, Chunks: []chunk.Chunk{b}}, Bridge: bridge},
		},
		Explain: []retrieve.Explain{{Kind: c.Kind, Name: c.Name, FinalRank: 1, Placed: why}, {Kind: b.Kind, Name: b.Name, FinalRank: 2, Bridge: bridge}},
	}
	items, ex := contextItems(res, false), wireExplain(res.Explain)
	if items[0].Placed != why || items[0].Bridge != "" || items[1].Bridge != bridge || items[1].Placed != "" {
		t.Errorf("results: %+v", items)
	}
	if ex[0].Placed != why || ex[1].Bridge != bridge || ex[1].Placed != "" {
		t.Errorf("explain: %+v", ex)
	}
}
