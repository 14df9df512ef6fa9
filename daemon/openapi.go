package daemon

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/schemaq/schemaq/events"
)

// OpenAPI describes the HTTP API in OpenAPI 3.1. The schemas are derived
// from the very types the handlers decode and encode (OpenAPI 3.1 schemas
// are JSON Schema 2020-12), so the document cannot drift from the code.
func OpenAPI(version string) ([]byte, error) {
	schemas := map[string]*jsonschema.Schema{}
	for name, f := range map[string]func(*jsonschema.ForOptions) (*jsonschema.Schema, error){
		"SearchRequest":   jsonschema.For[events.SearchRequest],
		"SearchReply":     jsonschema.For[events.SearchReply],
		"AskRequest":      jsonschema.For[events.AskRequest],
		"AskReply":        jsonschema.For[events.AskReply],
		"TablesRequest":   jsonschema.For[events.TablesRequest],
		"TablesReply":     jsonschema.For[events.TablesReply],
		"FeedbackRequest": jsonschema.For[events.FeedbackRequest],
		"FeedbackReply":   jsonschema.For[events.FeedbackReply],
		"Databases":       jsonschema.For[databasesReply],
		"ErrorReply":      jsonschema.For[errorReply],
		// The console's own endpoints (consoleapi.go).
		"ExamplesRequest":      jsonschema.For[ExamplesRequest],
		"ExamplesReply":        jsonschema.For[ExamplesReply],
		"ExampleIDsRequest":    jsonschema.For[ExampleIDsRequest],
		"ExamplesDeleteReply":  jsonschema.For[ExamplesDeleteReply],
		"ExamplesApproveReply": jsonschema.For[ExamplesApproveReply],
		"DocsRequest":          jsonschema.For[DocsRequest],
		"DocsReply":            jsonschema.For[DocsReply],
		"CheckRequest":         jsonschema.For[CheckRequest],
		"CheckReply":           jsonschema.For[CheckReply],
		"OperationsRequest":    jsonschema.For[OperationsRequest],
		"OperationsReply":      jsonschema.For[OperationsReply],
		"LetterRequest":        jsonschema.For[LetterRequest],
		"LetterReply":          jsonschema.For[LetterReply],
	} {
		s, err := f(nil)
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", name, err)
		}
		schemas[name] = s
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	jsonBody := func(name string) map[string]any {
		return map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": ref(name)}}}
	}
	// Errors the transport answers before a handler runs (the token, the
	// body's size and type, the Host) are an ErrorReply; those a handler
	// answers are the endpoint's reply with its error set; a 400 or 500
	// may be either.
	transport := map[int]bool{401: true, 413: true, 415: true, 421: true}
	either := map[int]bool{400: true, 500: true}
	errorResponses := func(reply string, codes ...int) map[string]any {
		out := map[string]any{}
		for _, c := range codes {
			desc := map[int]string{
				400: "bad_request: the body does not decode (unknown or repeated keys, wrong types) or a field is out of bounds",
				401: "the bearer token is missing or wrong",
				403: "forbidden: the token may not use that database, or may only read it (the tokens file)",
				404: "unknown_database or not_found",
				413: "the request is over 1 MiB",
				415: "the Content-Type is not application/json (it is required)",
				421: "the Host header is not one the API answers (--http-allowed-hosts)",
				422: "feedback: the SQL was refused (unsafe_sql, invalid_sql, unknown_table, unknown_column) and nothing was stored. ask: the model's SQL was refused (unsafe_sql, invalid_sql, unknown_table, unknown_column) or it could not answer (unanswerable, invalid_output); the reply carries the rejected SQL",
				429: "busy: the daemon is at --max-concurrent; retry after the Retry-After seconds",
				502: "gateway_error or gateway_auth: the LLM gateway failed or refused the credentials",
				503: "store_unavailable: the index store does not answer; stream_unavailable: the event stream did not take the feedback",
				504: "timeout: the request's deadline passed",
				500: "internal: the daemon failed in a way it did not expect (its log has the request id)",
			}[c]
			schema := ref(reply)
			switch {
			case transport[c]:
				schema = ref("ErrorReply")
			case either[c] && reply != "ErrorReply":
				schema = map[string]any{"anyOf": []any{ref(reply), ref("ErrorReply")}}
			}
			out[fmt.Sprint(c)] = map[string]any{"description": desc,
				"headers": map[string]any{HeaderRequestID: requestIDHeader},
				"content": map[string]any{"application/json": map[string]any{"schema": schema}}}
		}
		return out
	}
	post := func(summary, req, reply string, codes ...int) map[string]any {
		responses := errorResponses(reply, append(codes, 500)...)
		responses["200"] = map[string]any{"description": "the reply", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody(reply)["content"]}
		return map[string]any{"post": map[string]any{
			"summary":     summary,
			"operationId": req[:len(req)-len("Request")],
			"requestBody": map[string]any{"required": true, "content": jsonBody(req)["content"]},
			"parameters":  []any{requestIDParam},
			"responses":   responses,
		}}
	}
	// The console's endpoints answer every error as an ErrorReply.
	consolePost := func(summary, op, req, reply string, codes ...int) map[string]any {
		responses := errorResponses("ErrorReply", append([]int{400, 401, 403, 413, 415, 421, 429, 504}, codes...)...)
		responses["200"] = map[string]any{"description": "the reply", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody(reply)["content"]}
		return map[string]any{"post": map[string]any{
			"summary": summary, "operationId": op, "tags": []any{"console"},
			"requestBody": map[string]any{"required": true, "content": jsonBody(req)["content"]},
			"parameters":  []any{requestIDParam},
			"responses":   responses,
		}}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "schemaq",
			"version":     version,
			"description": "Schema retrieval and text-to-SQL. The same requests and replies as the NATS endpoints (docs/api.md); every reply carries the request id in Schemaq-Request-Id, and every error reply an error object {code, message}.",
		},
		"paths": map[string]any{
			"/v1/search":             post("Retrieve the tables, views, docs and examples that answer a question", "SearchRequest", "SearchReply", 400, 401, 403, 404, 413, 415, 421, 429, 503, 504),
			"/v1/ask":                post("Write checked SQL for a question (retrieval only without an LLM gateway)", "AskRequest", "AskReply", 400, 401, 403, 404, 413, 415, 421, 422, 429, 502, 503, 504),
			"/v1/feedback":           post("Hand back SQL that answers a question; SQL the guard passes is stored as a worked example", "FeedbackRequest", "FeedbackReply", 400, 401, 403, 404, 413, 415, 421, 422, 429, 503, 504),
			"/v1/tables":             post("List a database's tables, describe one, or ask the indexed version of docs and examples", "TablesRequest", "TablesReply", 400, 401, 403, 404, 413, 415, 421, 429, 503, 504),
			"/v1/examples":           consolePost("List a database's examples, with why each no longer fits the catalog (read)", "ListExamples", "ExamplesRequest", "ExamplesReply", 404, 500, 503),
			"/v1/examples/delete":    consolePost("Delete examples by id (write)", "DeleteExamples", "ExampleIDsRequest", "ExamplesDeleteReply", 404, 500, 503),
			"/v1/examples/approve":   consolePost("Approve feedback examples: they count as the team's own from then on (write)", "ApproveExamples", "ExampleIDsRequest", "ExamplesApproveReply", 404, 500, 503),
			"/v1/docs":               consolePost("List a database's docs with their sections and tags (read)", "ListDocs", "DocsRequest", "DocsReply", 404, 500, 503),
			"/v1/check":              consolePost("Check migrations not yet published, as schemaq check does (read)", "CheckMigrations", "CheckRequest", "CheckReply", 500, 503),
			"/v1/operations":         consolePost("The stream, its consumers, the daemons and the dead letters of the token's databases (admin)", "Operations", "OperationsRequest", "OperationsReply", 500, 503),
			"/v1/deadletters/retry":  consolePost("Publish a dead letter's event again, to its own subject (admin)", "RetryDeadLetter", "LetterRequest", "LetterReply", 404, 500, 503),
			"/v1/deadletters/delete": consolePost("Delete a dead letter (admin)", "DeleteDeadLetter", "LetterRequest", "LetterReply", 404, 500, 503),
			"/v1/databases": map[string]any{"get": map[string]any{
				"summary":     "The databases with a catalog, and their versions",
				"operationId": "Databases",
				"parameters":  []any{requestIDParam},
				"responses": map[string]any{
					"200": map[string]any{"description": "the databases", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody("Databases")["content"]},
					"401": map[string]any{"description": "the bearer token is missing or wrong", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody("ErrorReply")["content"]},
					"421": map[string]any{"description": "the Host header is not one the API answers (--http-allowed-hosts)", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody("ErrorReply")["content"]},
					"500": map[string]any{"description": "internal", "headers": map[string]any{HeaderRequestID: requestIDHeader}, "content": jsonBody("ErrorReply")["content"]},
				},
			}},
		},
		// Relative: the API is where this document was read from (schemaq
		// up serves both on http://127.0.0.1:8080 by default).
		"servers": []any{map[string]any{"url": "/", "description": "the server this document came from"}},
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "required when the server sets SCHEMAQ_HTTP_TOKEN (always beyond loopback)"},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}, map[string]any{}},
	}
	// JSON Schema allows true for "any value"; code generators built on
	// OpenAPI 3.0's object-only schemas (oapi-codegen, kin-openapi) refuse
	// it, so an open field is {} with a word instead.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	return json.MarshalIndent(openSchemas(tree, ""), "", "  ")
}

// openSchemas replaces the schema true, where a schema is expected, with
// an empty one.
func openSchemas(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if key == "properties" || k == "items" {
				if b, ok := c.(bool); ok && b {
					x[k] = map[string]any{"description": "any JSON value"}
					continue
				}
			}
			x[k] = openSchemas(c, k)
		}
	case []any:
		for i, c := range x {
			x[i] = openSchemas(c, key)
		}
	}
	return v
}

var requestIDHeader = map[string]any{
	"description": "the request's id: the one sent, or one made",
	"schema":      map[string]any{"type": "string"},
}

var requestIDParam = map[string]any{
	"name": HeaderRequestID, "in": "header", "required": false,
	"description": "an id for the request's logs and reply; one is made when absent",
	"schema":      map[string]any{"type": "string"},
}

type databasesReply struct {
	Databases []struct {
		Name    string `json:"name"`
		Version int64  `json:"version"`
	} `json:"databases"`
}

type errorReply struct {
	Error *events.Error `json:"error"`
}
