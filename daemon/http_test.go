package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/testenv"
)

func httpPost(t *testing.T, url, token, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(daemon.HeaderRequestID, "req-1")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestHTTPAnswersAsNATSDoes: the HTTP API runs the NATS handlers, so the
// same request gets the same reply, and errors their status.
func TestHTTPAnswersAsNATSDoes(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
	r.publishShop()
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Token: "s3cret"}))
	defer srv.Close()

	search := `{"database":"shop","question":"which customers placed the most orders","k":3}`
	code, hdr, body := httpPost(t, srv.URL+"/v1/search", "s3cret", search)
	var viaHTTP events.SearchReply
	if code != http.StatusOK || hdr.Get(daemon.HeaderRequestID) != "req-1" || json.Unmarshal([]byte(body), &viaHTTP) != nil || len(viaHTTP.Results) != 3 {
		t.Fatalf("search: %d %v %s", code, hdr, body)
	}
	viaNATS, err := r.cli.Search(context.Background(), &events.SearchRequest{Database: "shop", Question: "which customers placed the most orders", K: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range viaNATS.Results {
		if viaNATS.Results[i].ID != viaHTTP.Results[i].ID {
			t.Errorf("result %d: %s over HTTP, %s over NATS", i, viaHTTP.Results[i].ID, viaNATS.Results[i].ID)
		}
	}

	cases := []struct {
		name, path, token, body string
		status                  int
		want                    string
	}{
		{"tables", "/v1/tables", "s3cret", `{"database":"shop","table":"orders"}`, 200, `"name":"public.orders"`},
		{"ask without a gateway", "/v1/ask", "s3cret", `{"database":"shop","question":"how many orders?"}`, 200, `"retrieval_only":true`},
		{"feedback", "/v1/feedback", "s3cret", `{"database":"shop","question":"orders per customer","sql":"SELECT customer_id, count(*) FROM orders GROUP BY 1"}`, 200, `"tables":["public.orders"]`},
		{"feedback refused", "/v1/feedback", "s3cret", `{"database":"shop","question":"drop them","sql":"DELETE FROM orders"}`, 422, `"code":"unsafe_sql"`},
		{"feedback without SQL", "/v1/feedback", "s3cret", `{"database":"shop","question":"q"}`, 400, `field sql: required`},
		{"no token", "/v1/search", "", search, 401, `"code":"unauthorized"`},
		{"a wrong token", "/v1/search", "guess", search, 401, `"code":"unauthorized"`},
		{"unknown field", "/v1/search", "s3cret", `{"database":"shop","question":"q","kk":1}`, 400, `"code":"bad_request"`},
		{"k out of range", "/v1/search", "s3cret", `{"database":"shop","question":"q","k":500}`, 400, `field k: must be between 1 and 100, got 500`},
		{"unknown database", "/v1/search", "s3cret", `{"database":"nope","question":"q"}`, 404, `"code":"unknown_database"`},
		{"unknown table", "/v1/tables", "s3cret", `{"database":"shop","table":"nope"}`, 404, `"code":"not_found"`},
		{"too large", "/v1/search", "s3cret", `{"database":"shop","question":"` + strings.Repeat("x", 2<<20) + `"}`, 413, `"code":"too_large"`},
		{"no such path", "/v2/search", "s3cret", search, 404, `/openapi.json describes it`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := httpPost(t, srv.URL+tc.path, tc.token, tc.body)
			if code != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d and %q", code, body, tc.status, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		name, method, path, ctype string
		status                    int
	}{
		{"GET on a POST endpoint", http.MethodGet, "/v1/search", "", http.StatusMethodNotAllowed},
		{"a form, which a browser may send across sites", http.MethodPost, "/v1/search", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"text/plain likewise", http.MethodPost, "/v1/search", "text/plain", http.StatusUnsupportedMediaType},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(search))
		req.Header.Set("Authorization", "Bearer s3cret")
		if tc.ctype != "" {
			req.Header.Set("Content-Type", tc.ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/databases", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `{"name":"shop","version":6}`) {
		t.Errorf("databases: %d %s", resp.StatusCode, b)
	}
}

// TestHTTPBusy: the concurrency limit is the NATS endpoints' own: a
// request over HTTP beyond it is 429 with Retry-After.
func TestHTTPBusy(t *testing.T) {
	r := newRig(t)
	gate := make(chan struct{})
	cfg := daemon.DefaultConfig
	cfg.MaxConcurrent = 1
	cr := r.daemon(cfg, func(c *countingRetriever) { c.gate = gate })
	r.publishShop()
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{}))
	defer srv.Close()
	first := make(chan int, 1)
	go func() {
		code, _, _ := httpPost(t, srv.URL+"/v1/search", "", `{"database":"shop","question":"orders"}`)
		first <- code
	}()
	testenv.Eventually(t, 5*time.Second, "first request in flight", func() bool { return cr.calls.Load() == 1 })
	code, hdr, body := httpPost(t, srv.URL+"/v1/search", "", `{"database":"shop","question":"orders"}`)
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"busy"`) {
		t.Errorf("second request: %d %v %s", code, hdr, body)
	}
	close(gate)
	if c := <-first; c != http.StatusOK {
		t.Errorf("first request: %d", c)
	}
}

// TestHTTPNeedsATokenBeyondLoopback: an API on every interface without a
// token is refused before it listens.
func TestHTTPNeedsATokenBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true},
		{"localhost:0", "", true},
		{"[::1]:0", "", true},
		{":8080", "", false},
		{"0.0.0.0:8080", "", false},
		{"10.0.0.5:8080", "", false},
		{"0.0.0.0:8080", "t", true},
	} {
		if err := daemon.CheckHTTP(tc.addr, tc.token != ""); (err == nil) != tc.ok {
			t.Errorf("CheckHTTP(%q, token %v): %v", tc.addr, tc.token != "", err)
		}
	}
}

// TestOpenAPIDescribesTheTypes: /openapi.json is OpenAPI 3.1, names every
// path the handler serves, and its schemas accept the replies the
// endpoints give and refuse what strict decoding refuses.
func TestOpenAPIDescribesTheTypes(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
	r.publishShop()
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Version: "1.2.3"}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]*jsonschema.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.2.3" {
		t.Errorf("openapi %q, version %q", doc.OpenAPI, doc.Info.Version)
	}
	for path, method := range map[string]string{"/v1/search": "post", "/v1/ask": "post", "/v1/tables": "post", "/v1/feedback": "post", "/v1/databases": "get"} {
		if _, ok := doc.Paths[path][method]; !ok {
			t.Errorf("no %s %s in the document", method, path)
		}
	}
	validate := func(schema string, v any) error {
		t.Helper()
		s := doc.Components.Schemas[schema]
		if s == nil {
			t.Fatalf("no schema %s", schema)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		var inst any
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &inst)
		return res.Validate(inst)
	}
	// The replies the endpoints give are what the schemas say.
	for _, tc := range []struct {
		path, body, schema string
	}{
		{"/v1/search", `{"database":"shop","question":"refunds of orders","k":5,"explain":true}`, "SearchReply"},
		{"/v1/ask", `{"database":"shop","question":"how many orders?"}`, "AskReply"},
		{"/v1/tables", `{"database":"shop","table":"orders"}`, "TablesReply"},
		{"/v1/search", `{"database":"nope","question":"q"}`, "SearchReply"},
		{"/v1/feedback", `{"database":"shop","question":"orders per customer","sql":"SELECT customer_id, count(*) FROM orders GROUP BY 1"}`, "FeedbackReply"},
		{"/v1/feedback", `{"database":"shop","question":"ghosts","sql":"SELECT * FROM ghosts"}`, "FeedbackReply"},
	} {
		_, _, body := httpPost(t, srv.URL+tc.path, "", tc.body)
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if err := validate(tc.schema, v); err != nil {
			t.Errorf("%s %s: the reply does not match %s: %v\n%s", tc.path, tc.body, tc.schema, err, body)
		}
	}
	// Requests: what decodes validates, and a field the types lack does
	// not.
	if err := validate("SearchRequest", map[string]any{"database": "shop", "question": "q", "k": 3}); err != nil {
		t.Errorf("a valid search request: %v", err)
	}
	if err := validate("SearchRequest", map[string]any{"database": "shop", "question": "q", "kk": 3}); err == nil {
		t.Error("the schema accepts a field the request type lacks")
	}
	// Every property of a request schema is a JSON field of its type, and
	// the other way round.
	for name, typ := range map[string]reflect.Type{
		"SearchRequest": reflect.TypeOf(events.SearchRequest{}),
		"AskRequest":    reflect.TypeOf(events.AskRequest{}),
		"TablesRequest": reflect.TypeOf(events.TablesRequest{}),
		"SearchReply":   reflect.TypeOf(events.SearchReply{}),
		"AskReply":      reflect.TypeOf(events.AskReply{}),
		"TablesReply":   reflect.TypeOf(events.TablesReply{}),
	} {
		fields := map[string]bool{}
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if tag != "" && tag != "-" {
				fields[tag] = true
			}
		}
		props := doc.Components.Schemas[name].Properties
		for f := range fields {
			if props[f] == nil {
				t.Errorf("%s: field %s is not in the schema", name, f)
			}
		}
		for p := range props {
			if !fields[p] {
				t.Errorf("%s: the schema has %s, which the type lacks", name, p)
			}
		}
	}
	if !bytes.Contains(raw, []byte(`"bearer"`)) {
		t.Error("the document does not describe the bearer token")
	}
}

// TestEveryReplyMatchesItsDeclaredSchema sends requests that each end in
// a different status, handlers' and the transport's, and holds each
// reply against the schema the document declares for that path and
// status; every reply carries a request id.
func TestEveryReplyMatchesItsDeclaredSchema(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil, daemon.WithFeedback(r.cli))
	r.publishShop()
	srv := httptest.NewServer(r.d.HTTPHandler(daemon.HTTPConfig{Version: "1", Token: "s3cret", AllowedHosts: []string{"*"}}))
	defer srv.Close()
	spec, err := daemon.OpenAPI("1")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct{ URL string } `json:"servers"`
		Paths   map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema map[string]any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]*jsonschema.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) == 0 {
		t.Error("the document names no servers")
	}
	validate := schemaValidator(t, spec)
	matches := func(ref, body string) error { return validate(strings.TrimPrefix(ref, "#/components/schemas/"), body) }
	huge := `{"database":"shop","question":"` + strings.Repeat("x", 2<<20) + `"}`
	tests := []struct {
		name, method, path, ctype, token, host, body string
		status                                       int
	}{
		{"a search", "POST", "/v1/search", "application/json", "s3cret", "", `{"database":"shop","question":"refunds"}`, 200},
		{"an unknown database", "POST", "/v1/search", "application/json", "s3cret", "", `{"database":"nope","question":"q"}`, 404},
		{"a body that does not decode", "POST", "/v1/search", "application/json", "s3cret", "", `{"database":"shop","questio":"q"}`, 400},
		{"no token", "POST", "/v1/search", "application/json", "", "", `{"database":"shop","question":"q"}`, 401},
		{"no Content-Type", "POST", "/v1/search", "", "s3cret", "", `{"database":"shop","question":"q"}`, 415},
		{"too big", "POST", "/v1/search", "application/json", "s3cret", "", huge, 413},
		{"refused feedback", "POST", "/v1/feedback", "application/json", "s3cret", "", `{"database":"shop","question":"ghosts","sql":"SELECT * FROM ghosts"}`, 422},
		{"the databases", "GET", "/v1/databases", "", "s3cret", "", "", 200},
		{"the databases without a token", "GET", "/v1/databases", "", "", "", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, b)
			}
			if resp.Header.Get(daemon.HeaderRequestID) == "" {
				t.Error("no request id")
			}
			declared, ok := doc.Paths[tt.path][strings.ToLower(tt.method)].Responses[fmt.Sprint(tt.status)]
			if !ok {
				t.Fatalf("%s %s declares no %d", tt.method, tt.path, tt.status)
			}
			schema := declared.Content["application/json"].Schema
			var refs []string
			if ref, ok := schema["$ref"].(string); ok {
				refs = append(refs, ref)
			}
			for _, alt := range asSlice(schema["anyOf"]) {
				refs = append(refs, alt.(map[string]any)["$ref"].(string))
			}
			var errs []error
			for _, ref := range refs {
				if err := matches(ref, string(b)); err == nil {
					return
				} else {
					errs = append(errs, err)
				}
			}
			t.Errorf("the reply matches none of %v: %v\n%.300s", refs, errs, b)
		})
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
