package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDecodeGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) != len(Types()) {
		t.Fatalf("want one golden file per event type, got %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := Decode(b, 0)
			if err != nil {
				t.Fatalf("golden event does not decode: %v", err)
			}
			if want := strings.TrimSuffix(filepath.Base(f), ".json"); ev.Type != want {
				t.Errorf("type %q, want %q", ev.Type, want)
			}
			// Encode → Decode gives the same event.
			enc, err := ev.Encode()
			if err != nil {
				t.Fatal(err)
			}
			again, err := Decode(enc, 0)
			if err != nil {
				t.Fatalf("re-decode: %v", err)
			}
			a, _ := json.Marshal(again.Envelope)
			if string(a) != string(enc) {
				t.Errorf("round trip changed the event:\n%s\n%s", enc, a)
			}
		})
	}
}

func TestDecodeBadInput(t *testing.T) {
	valid := func(typ, data string) string {
		return `{"spec":1,"type":"` + typ + `","id":"e1","database":"shop","data":` + data + `}`
	}
	tests := []struct {
		name    string
		in      string
		want    error
		field   string // for FieldErrors
		message string
	}{
		{"malformed JSON", `{"spec":1,`, ErrMalformed, "", "unexpected end"},
		{"not an object", `[1,2]`, ErrMalformed, "", ""},
		{"trailing data", valid("docs.delete", `{"doc_id":"a"}`) + `{}`, ErrMalformed, "", "after the JSON object"},
		{"unknown envelope field", `{"spec":1,"type":"docs.delete","id":"e","database":"shop","data":{"doc_id":"a"},"extra":1}`, ErrInvalid, "extra", "unknown field"},
		{"unknown data field", valid("docs.delete", `{"doc_id":"a","force":true}`), ErrInvalid, "data.force", "unknown field"},
		{"wrong type in data", valid("schema.migration", `{"seq":"three","sql":"SELECT 1"}`), ErrInvalid, "data.seq", "expected int64"},
		{"newer spec", `{"spec":2,"type":"docs.delete","id":"e","database":"shop","data":{"doc_id":"a"}}`, ErrNewerSpec, "", "spec 2"},
		{"missing spec", `{"type":"docs.delete","id":"e","database":"shop","data":{"doc_id":"a"}}`, ErrInvalid, "spec", "required"},
		{"unknown type", valid("schema.drop", `{}`), ErrUnknownType, "", `"schema.drop"`},
		{"missing type", `{"spec":1,"id":"e","database":"shop","data":{}}`, ErrInvalid, "type", "required"},
		{"missing data", `{"spec":1,"type":"docs.delete","id":"e","database":"shop"}`, ErrInvalid, "data", "required"},
		{"missing id", `{"spec":1,"type":"docs.delete","database":"shop","data":{"doc_id":"a"}}`, ErrInvalid, "id", "required"},
		{"id with spaces", `{"spec":1,"type":"docs.delete","id":"a b","database":"shop","data":{"doc_id":"a"}}`, ErrInvalid, "id", "white space"},
		{"missing database", `{"spec":1,"type":"docs.delete","id":"e","data":{"doc_id":"a"}}`, ErrInvalid, "database", "required"},
		{"invalid database name", `{"spec":1,"type":"docs.delete","id":"e","database":"Shop.prod","data":{"doc_id":"a"}}`, ErrInvalid, "database", "not a valid database name"},
		{"database name too long", `{"spec":1,"type":"docs.delete","id":"e","database":"` + strings.Repeat("a", 65) + `","data":{"doc_id":"a"}}`, ErrInvalid, "database", "not a valid"},
		{"bad time", `{"spec":1,"type":"docs.delete","id":"e","database":"shop","time":"yesterday","data":{"doc_id":"a"}}`, ErrInvalid, "time", "RFC 3339"},
		{"seq zero", valid("schema.migration", `{"seq":0,"sql":"CREATE TABLE t (id int)"}`), ErrInvalid, "data.seq", "from 1 to 9007199254740992"},
		{"seq at the largest int64", valid("schema.snapshot", `{"seq":9223372036854775807,"sql":"CREATE TABLE t (id int)"}`), ErrInvalid, "data.seq", "got 9223372036854775807"},
		{"seq one past 2^53", valid("schema.migration", `{"seq":9007199254740993}`), ErrInvalid, "data.seq", "from 1 to"},
		{"key in another case", `{"spec":1,"type":"docs.delete","id":"e","Database":"shop","data":{"doc_id":"a"}}`, ErrInvalid, "Database", "case-sensitive"},
		{"data key in another case", valid("docs.delete", `{"DOC_ID":"a"}`), ErrInvalid, "data.DOC_ID", "case-sensitive"},
		{"key given twice", `{"spec":1,"type":"docs.delete","id":"e","database":"shop","database":"other","data":{"doc_id":"a"}}`, ErrInvalid, "database", "given twice"},
		{"data key given twice", valid("docs.delete", `{"doc_id":"a","doc_id":"b"}`), ErrInvalid, "data.doc_id", "given twice"},
		{"tag given twice", valid("docs.upsert", `{"doc_id":"a.md","body":"x","tags":{"v":"1","v":"2"}}`), ErrInvalid, "data.tags.v", "given twice"},
		{"example key in another case", valid("examples.upsert", `{"examples":[{"question":"q","SQL":"x"}]}`), ErrInvalid, "data.examples[0].SQL", "case-sensitive"},
		{"database name a flag would take", `{"spec":1,"type":"docs.delete","id":"e","database":"-","data":{"doc_id":"a"}}`, ErrInvalid, "database", "starting with a letter or digit"},
		{"database name of schemaq's own", `{"spec":1,"type":"docs.delete","id":"e","database":"_dlq","data":{"doc_id":"a"}}`, ErrInvalid, "database", "starting with a letter or digit"},
		{"migration id too long", valid("schema.migration", `{"seq":1,"migration_id":"`+strings.Repeat("v", 257)+`"}`), ErrInvalid, "data.migration_id", "longer than"},
		{"snapshot without SQL", valid("schema.snapshot", `{"seq":4}`), ErrInvalid, "data.sql", "empty"},
		{"doc without body", valid("docs.upsert", `{"doc_id":"a.md","body":""}`), ErrInvalid, "data.body", "required"},
		{"doc with bad tag key", valid("docs.upsert", `{"doc_id":"a.md","body":"x","tags":{"Has Space":"v"}}`), ErrInvalid, "data.tags", "Has Space"},
		{"doc with invalid UTF-8", valid("docs.upsert", "{\"doc_id\":\"a.md\",\"body\":\"caf\xe9\"}"), ErrMalformed, "", "invalid UTF-8 at byte"},
		{"no examples", valid("examples.upsert", `{"examples":[]}`), ErrInvalid, "data.examples", "at least one"},
		{"example without SQL", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x"},{"question":"q2","sql":""}]}`), ErrInvalid, "data.examples[1].sql", "required"},
		{"example schema with spaces", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x","schema":" sales"}]}`), ErrInvalid, "data.examples[0].schema", "surrounding spaces"},
		{"example of an unknown origin", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x","origin":"log"}]}`), ErrInvalid, "data.examples[0].origin", "feedback"},
		{"example ask id with spaces", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x","ask_id":"a b"}]}`), ErrInvalid, "data.examples[0].ask_id", "white space"},
		{"example read table empty", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x","tables":["public.t",""]}]}`), ErrInvalid, "data.examples[0].tables[1]", "required"},
		{"example negative catalog version", valid("examples.upsert", `{"examples":[{"question":"q","sql":"x","catalog_version":-1}]}`), ErrInvalid, "data.examples[0].catalog_version", "negative"},
		{"delete no ids", valid("examples.delete", `{"ids":[]}`), ErrInvalid, "data.ids", "at least one"},
		{"delete empty id", valid("examples.delete", `{"ids":["a",""]}`), ErrInvalid, "data.ids[1]", "required"},
		{"oversize", valid("schema.migration", `{"seq":1,"sql":"`+strings.Repeat("x", 2000)+`"}`), ErrTooLarge, "", "limit is 1024"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in), 1024)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.field != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field {
					t.Errorf("got %v, want a FieldError on %q", err, tc.field)
				}
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q should mention %q", err, tc.message)
			}
		})
	}
}

// An empty migration file is a no-op that keeps its place in the history,
// as migration tools treat one; the catalog records it.
func TestEmptyMigrationIsValid(t *testing.T) {
	for _, data := range []string{`{"seq":3}`, `{"seq":3,"sql":"  \n"}`, `{"seq":3,"sql":"-- nothing yet\n","migration_id":"3"}`} {
		ev, err := Decode([]byte(`{"spec":1,"type":"schema.migration","id":"e","database":"shop","data":`+data+`}`), 0)
		if err != nil {
			t.Errorf("%s: %v", data, err)
			continue
		}
		if ev.Migration.Seq != 3 {
			t.Errorf("%s: seq %d", data, ev.Migration.Seq)
		}
	}
	m := &Migration{Seq: 1, Source: "db/0001_init.sql"}
	if m.ID() != "db/0001_init.sql" {
		t.Errorf("ID without migration_id: %q", m.ID())
	}
	m.MigrationID = "1"
	if m.ID() != "1" {
		t.Errorf("ID: %q", m.ID())
	}
}

func TestNewBuildsValidEvents(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	ev, err := New("shop-1", "shop", at, &Migration{Seq: 1, Source: "0001_init.sql", SQL: "CREATE TABLE t (id int)"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Subject() != "schemaq.schema.shop" || ev.Type != TypeMigration {
		t.Errorf("got subject %q type %q", ev.Subject(), ev.Type)
	}
	b, _ := ev.Encode()
	back, err := Decode(b, 0)
	if err != nil || back.Migration.SQL != "CREATE TABLE t (id int)" || !back.Time.Equal(at) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if _, err := New("x", "Bad Name", at, &DocDelete{DocID: "a"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New with a bad database: got %v", err)
	}
	if _, err := New("x", "shop", at, "not a payload"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("New with a bad payload: got %v", err)
	}
	d, _ := New("d", "shop", at, &DocUpsert{DocID: "a.md", Body: "# A"})
	x, _ := New("x", "shop", at, &ExamplesUpsert{Examples: []Example{{Question: "q", SQL: "SELECT 1"}}})
	if d.Subject() != "schemaq.docs.shop" || x.Subject() != "schemaq.examples.shop" {
		t.Errorf("subjects: %s %s", d.Subject(), x.Subject())
	}
}

func TestSubjectsStayOutOfStreams(t *testing.T) {
	streamPrefixes := []string{"schemaq.schema.", "schemaq.docs.", "schemaq.examples.", "schemaq.dlq."}
	for _, ep := range []string{EndpointAsk, EndpointSearch, EndpointTables} {
		for _, s := range []string{EndpointSubject(ep), DatabaseSubject(ep, "shop")} {
			for _, p := range streamPrefixes {
				if strings.HasPrefix(s, p) {
					t.Errorf("request subject %s would be captured by a stream (%s*)", s, p)
				}
			}
		}
	}
}

func TestErrorMatchesByCode(t *testing.T) {
	err := error(Errorf(CodeTimeout, "deadline of %s passed", "2s"))
	wrapped := errors.Join(errors.New("ask"), err)
	if !errors.Is(wrapped, &Error{Code: CodeTimeout}) || errors.Is(wrapped, &Error{Code: CodeBusy}) {
		t.Error("Error.Is should compare codes")
	}
}

func TestRequestValidation(t *testing.T) {
	tests := []struct {
		name  string
		req   interface{ Validate() error }
		field string
	}{
		{"empty question", &AskRequest{Database: "shop", Question: " "}, "question"},
		{"bad database", &SearchRequest{Database: "", Question: "q"}, "database"},
		{"k too large", &SearchRequest{Database: "shop", Question: "q", K: 1000}, "k"},
		{"long question", &AskRequest{Database: "shop", Question: strings.Repeat("q", MaxQuestionBytes+1)}, "question"},
		{"tables bad db", &TablesRequest{Database: "a.b"}, "database"},
		{"unknown kind", &SearchRequest{Database: "shop", Question: "q", Kinds: []string{"table", "index"}}, "kinds[1]"},
		{"empty schema", &AskRequest{Database: "shop", Question: "q", Schemas: []string{""}}, "schemas[0]"},
		{"long hints", &SearchRequest{Database: "shop", Question: "q", Hints: strings.Repeat("h", MaxQuestionBytes+1)}, "hints"},
		{"long ask hints", &AskRequest{Database: "shop", Question: "q", Hints: strings.Repeat("h", MaxQuestionBytes+1)}, "hints"},
		{"NUL question", &SearchRequest{Database: "shop", Question: "\x00\x00\x00"}, "question"},
		{"zero-width question", &AskRequest{Database: "shop", Question: "\u200b\u200c\u200d\u2060\ufeff"}, "question"},
		{"too many schemas", &SearchRequest{Database: "shop", Question: "q", Schemas: strings.Fields(strings.Repeat("s ", MaxSchemas+1))}, "schemas"},
		{"too many kinds", &SearchRequest{Database: "shop", Question: "q", Kinds: strings.Fields(strings.Repeat("table ", MaxKinds+1))}, "kinds"},
		{"too many tags", &SearchRequest{Database: "shop", Question: "q", Tags: manyTags(MaxTags + 1)}, "tags"},
		{"bad tag key", &AskRequest{Database: "shop", Question: "q", Tags: map[string]string{"Has Space": "v"}}, "tags"},
		{"long table", &TablesRequest{Database: "shop", Table: strings.Repeat("t", 600_000)}, "table"},
		{"long after", &TablesRequest{Database: "shop", After: strings.Repeat("t", 200)}, "after"},
		{"object of another kind", &TablesRequest{Database: "shop", Objects: []IndexedRef{{Kind: "doc", Name: "a.md"}, {Kind: "table", Name: "t"}}}, "objects[1].kind"},
		{"object without a name", &TablesRequest{Database: "shop", Objects: []IndexedRef{{Kind: "example", Name: ""}}}, "objects[0].name"},
		{"too many objects", &TablesRequest{Database: "shop", Objects: make([]IndexedRef, MaxObjectsAsked+1)}, "objects"},
		{"feedback without SQL", &FeedbackRequest{Database: "shop", Question: "q", SQL: " \n"}, "sql"},
		{"feedback without question", &FeedbackRequest{Database: "shop", SQL: "SELECT 1"}, "question"},
		{"feedback SQL too long", &FeedbackRequest{Database: "shop", Question: "q", SQL: strings.Repeat("x", MaxFeedbackSQLBytes+1)}, "sql"},
		{"feedback corrected without ask", &FeedbackRequest{Database: "shop", Question: "q", SQL: "SELECT 1", Corrected: true}, "ask_id"},
		{"feedback ask id with spaces", &FeedbackRequest{Database: "shop", Question: "q", SQL: "SELECT 1", AskID: "a b"}, "ask_id"},
		{"feedback schema with spaces", &FeedbackRequest{Database: "shop", Question: "q", SQL: "SELECT 1", Schema: "sales "}, "schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var fe *FieldError
			if err := tc.req.Validate(); !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("got %v, want a FieldError on %s", err, tc.field)
			}
		})
	}
	if err := (&AskRequest{Database: "shop", Question: "how many orders?"}).Validate(); err != nil {
		t.Errorf("valid request: %v", err)
	}
	if err := (&FeedbackRequest{Database: "shop", Question: "how many orders?", SQL: "SELECT count(*) FROM orders", AskID: "x1", Corrected: true}).Validate(); err != nil {
		t.Errorf("valid feedback: %v", err)
	}
}

func manyTags(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("t%d", i)] = "v"
	}
	return m
}

// A request is decoded as docs/api.md says: keys exactly, once each, and
// errors say "request", not "event".
func TestDecodeRequestStrictly(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
		field    string
		message  string
	}{
		{"key in another case", `{"database":"shop","QUESTION":"q"}`, ErrInvalid, "QUESTION", "case-sensitive"},
		{"key given twice", `{"database":"shop","question":"a","question":"b"}`, ErrInvalid, "question", "given twice"},
		{"tag given twice", `{"database":"shop","question":"a","tags":{"v":"1","v":"2"}}`, ErrInvalid, "tags.v", "given twice"},
		{"malformed", `{"database":`, ErrMalformedRequest, "", "malformed request"},
		{"not an object", `"q"`, ErrMalformedRequest, "", "malformed request"},
		{"trailing data", `{"database":"shop","question":"q"} {}`, ErrMalformedRequest, "", "malformed request"},
		{"invalid UTF-8", "{\"database\":\"shop\",\"question\":\"caf\xe9\"}", ErrMalformedRequest, "", "malformed request: invalid UTF-8"},
		{"duplicate behind quotes and escapes", `{"database":"shop","question":"a \\\"}, \"question\": [\\\\","tags":{"k":"}"},"question":"b"}`, ErrInvalid, "question", "given twice"},
		{"escaped key given twice", `{"database":"shop","question":"a","qu\u0065stion":"b"}`, ErrInvalid, "question", "given twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var req SearchRequest
			err := DecodeRequest([]byte(tc.in), &req)
			if !errors.Is(err, tc.want) || strings.Contains(err.Error(), "event") {
				t.Fatalf("got %v, want %v and no word of events", err, tc.want)
			}
			var fe *FieldError
			if tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field) {
				t.Errorf("got %v, want a FieldError on %q", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q should mention %q", err, tc.message)
			}
		})
	}
	var req SearchRequest
	if err := DecodeRequest([]byte(`{"database":"shop","question":"q","tags":{"v":"1"},"kinds":["table"]}`), &req); err != nil || req.Tags["v"] != "1" {
		t.Errorf("a well-formed request: %v, %+v", err, req)
	}
	// Strings that look like JSON, escaped keys and numbers are values.
	req = SearchRequest{}
	body := " {\n \"d\\u0061tabase\" : \"shop\" ,\"question\":\"x \\\"}, \\\"question\\\": [\\\\\",\"k\":5,\"kinds\":[ \"table\" , \"view\" ] } "
	if err := DecodeRequest([]byte(body), &req); err != nil || req.Database != "shop" || req.K != 5 || len(req.Kinds) != 2 {
		t.Errorf("%s: %v, %+v", body, err, req)
	}
}

// However long the input, an error that names it stays short: it has to
// fit in a reply's header.
func TestErrorsEchoAShortPrefix(t *testing.T) {
	huge := strings.Repeat("x", 600_000)
	tests := []struct {
		name string
		err  func() error
	}{
		{"database", func() error { return (&SearchRequest{Database: huge, Question: "q"}).Validate() }},
		{"unknown field", func() error { return DecodeRequest([]byte(`{"`+huge+`":1}`), &SearchRequest{}) }},
		{"tag given twice", func() error {
			return DecodeRequest([]byte(`{"database":"shop","question":"q","tags":{"`+huge+`":"1","`+huge+`":"2"}}`), &SearchRequest{})
		}},
		{"kind", func() error {
			return (&SearchRequest{Database: "shop", Question: "q", Kinds: []string{huge}}).Validate()
		}},
		{"schema", func() error {
			return (&SearchRequest{Database: "shop", Question: "q", Schemas: []string{huge}}).Validate()
		}},
		{"event type", func() error {
			_, err := Decode([]byte(`{"spec":1,"type":"`+huge+`","id":"e","database":"shop","data":{}}`), 2<<20)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil {
				t.Fatal("accepted")
			}
			if len(err.Error()) > 400 || !strings.Contains(err.Error(), "cut; 600") {
				t.Errorf("error of %d bytes, want under 400 that says the input was cut: %.200s", len(err.Error()), err)
			}
		})
	}
}

func TestResendSubject(t *testing.T) {
	ev := func(db, typ, data string) []byte {
		return []byte(`{"spec":1,"type":"` + typ + `","id":"e1","database":"` + db + `","data":` + data + `}`)
	}
	migration := ev("shop", TypeMigration, `{"seq":3,"sql":"CREATE TABLE t (id int)"}`)
	tests := []struct {
		name, subject string
		data          []byte
		want          string // "" for a refusal
	}{
		{"migration", "schemaq.dlq.shop", migration, "schemaq.schema.shop"},
		{"doc", "schemaq.dlq.shop", ev("shop", TypeDocDelete, `{"doc_id":"a"}`), "schemaq.docs.shop"},
		{"examples", "schemaq.dlq.shop", ev("shop", TypeExamplesUpsert, `{"examples":[{"question":"q","sql":"SELECT 1"}]}`), "schemaq.examples.shop"},
		{"empty body", "schemaq.dlq.shop", nil, ""},
		{"not an event", "schemaq.dlq.shop", []byte(`{"hello":1}`), ""},
		{"another database's event", "schemaq.dlq.shop", ev("billing", TypeMigration, `{"seq":3,"sql":"SELECT 1"}`), ""},
		{"not a letter subject", "$JS.API.STREAM.DELETE.SCHEMAQ", migration, ""},
		{"invalid letter database", "schemaq.dlq.shop.x", migration, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResendSubject(tc.subject, tc.data)
			switch {
			case tc.want == "" && !errors.Is(err, ErrBadLetter):
				t.Fatalf("got %q, %v; want ErrBadLetter", got, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestImportsOnlyStdlib keeps the wire contract importable by any service.
func TestImportsOnlyStdlib(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pf, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pf.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: package events may import the standard library only", f, path)
			}
		}
	}
}

// TestDocsShowGoldenPayloads keeps docs/events.md true: every golden event
// appears in it verbatim.
func TestDocsShowGoldenPayloads(t *testing.T) {
	doc, err := os.ReadFile("../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/*.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !strings.Contains(string(doc), strings.TrimSpace(string(b))) {
			t.Errorf("docs/events.md does not show %s as it is", f)
		}
	}
}

// FuzzDecode: any bytes decode to a valid event or an error; never a panic.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Add([]byte(`{"spec":1,"type":"docs.upsert","id":"x","database":"d","data":{"doc_id":"a","body":"b","tags":{"k":"v"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode(b, 1<<16)
		if err == nil {
			if verr := ev.Validate(); verr != nil {
				t.Fatalf("decoded an invalid event: %v", verr)
			}
		}
	})
}

func TestCompressedSQL(t *testing.T) {
	sql := "CREATE TABLE big (id int);\n" + strings.Repeat("-- padding that compresses well\n", 50000)
	ev, err := New("big-1", "shop", time.Now(), &Snapshot{Seq: 1, SQLGzip: GzipSQL(sql)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ev.Encode()
	if len(b) > DefaultMaxEventBytes || len(sql) <= DefaultMaxEventBytes {
		t.Fatalf("the test wants a script over the limit that compresses under it: %d → %d", len(sql), len(b))
	}
	back, err := Decode(b, 0)
	if err != nil || back.Snapshot.SQL != sql {
		t.Fatalf("decode: %v (sql %d bytes)", err, len(back.Snapshot.SQL))
	}
	// Held compressed, expanded on demand into a copy.
	held, err := DecodeCompressed(b, 0)
	if err != nil || held.Snapshot.SQL != "" || len(held.Snapshot.SQLGzip) == 0 {
		t.Fatalf("decode compressed: %v (sql %d bytes)", err, len(held.Snapshot.SQL))
	}
	if x, err := held.Expanded(); err != nil || x.Snapshot.SQL != sql || x.Snapshot.SQLGzip != nil || held.Snapshot.SQL != "" {
		t.Errorf("expanded: %v; the held event has %d bytes of SQL", err, len(held.Snapshot.SQL))
	}
	enc := func(data string) []byte {
		return []byte(`{"spec":1,"type":"schema.migration","id":"x","database":"shop","data":` + data + `}`)
	}
	b64 := func(b []byte) string { j, _ := json.Marshal(b); return string(j) }
	bomb := GzipSQL(strings.Repeat("a", MaxSQLBytes+1))
	tests := []struct {
		name, data, want string
		inside           bool // found only when the SQL is expanded
	}{
		{"both set", `{"seq":1,"sql":"SELECT 1","sql_gzip":` + b64(GzipSQL("SELECT 1")) + `}`, "not both", false},
		{"not gzip", `{"seq":1,"sql_gzip":` + b64([]byte("plain text")) + `}`, "not gzip data", true},
		{"gzip bomb", `{"seq":1,"sql_gzip":` + b64(bomb) + `}`, "expands to more than", true},
		{"invalid UTF-8 inside", `{"seq":1,"sql_gzip":` + b64(GzipSQL("caf\xe9")) + `}`, "not valid UTF-8", true},
		{"object beside inline SQL", `{"seq":1,"sql":"SELECT 1","sql_object":{"name":"events/shop/x","size":3,"checksum":"00112233445566778899aabbccddeeff"}}`, "set one of sql, sql_gzip and sql_object", false},
		{"object without a name", `{"seq":1,"sql_object":{"size":3,"checksum":"00112233445566778899aabbccddeeff"}}`, "data.sql_object.name", false},
		{"object without a checksum", `{"seq":1,"sql_object":{"name":"events/shop/x","size":3}}`, "data.sql_object.checksum", false},
		{"object of another database", `{"seq":1,"sql_object":{"name":"events/hr/x","size":3,"checksum":"00112233445566778899aabbccddeeff"}}`, `must be under events/shop/ (the event id, as the Go client writes it), got "events/hr/x"`, false},
		{"object outside the events", `{"seq":1,"sql_object":{"name":"shop.sql","size":3,"checksum":"00112233445566778899aabbccddeeff"}}`, "must be under events/shop/", false},
		{"object named for no event", `{"seq":1,"sql_object":{"name":"events/shop/","size":3,"checksum":"00112233445566778899aabbccddeeff"}}`, "must be under events/shop/", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(enc(tc.data), 1<<20)
			var fe *FieldError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a field error mentioning %q", err, tc.want)
			}
			held, err := DecodeCompressed(enc(tc.data), 1<<20)
			if !tc.inside {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("compressed: got %v, want a field error mentioning %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("compressed: %v; the SQL is not read until it is expanded", err)
			}
			if _, err := held.Expanded(); !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("expanded: got %v, want a field error mentioning %q", err, tc.want)
			}
		})
	}
	// An empty compressed migration is a no-op like an empty plain one;
	// an empty snapshot is a mistake either way.
	if ev, err := Decode(enc(`{"seq":1,"sql_gzip":`+b64(GzipSQL("  "))+`}`), 1<<20); err != nil || ev.Migration.SQL != "  " {
		t.Errorf("empty compressed migration: %v", err)
	}
	snap := []byte(`{"spec":1,"type":"schema.snapshot","id":"x","database":"shop","data":{"seq":1,"sql_gzip":` + b64(GzipSQL("  ")) + `}}`)
	var fe *FieldError
	if _, err := Decode(snap, 1<<20); !errors.As(err, &fe) || !strings.Contains(err.Error(), "compressed snapshot DDL is empty") {
		t.Errorf("empty compressed snapshot: %v", err)
	}
	if _, err := Decode(enc(`{"seq":1,"sql_gzip":"%%%"}`), 1<<20); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "not valid base64") {
		t.Errorf("bad base64: %v", err)
	}
}

func TestOneLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\r\n  c", 10, "a b c"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never cut in half
		{"", 5, ""},
	} {
		if got := OneLine(tc.in, tc.n); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// BenchmarkDecodeMigration is the decode of a migration event near the
// 1 MiB limit: the strict key check must not walk the SQL twice.
func BenchmarkDecodeMigration(b *testing.B) {
	ev, err := New("e1", "shop", time.Now(), &Migration{Seq: 1, SQL: strings.Repeat("CREATE TABLE t (id int, name text);\n", 25000)})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := ev.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Decode(raw, 2<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeRequest: whatever the bytes, decoding never panics (the key
// check skims JSON encoding/json accepted, without its own error paths).
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{`{"database":"shop","question":"q"}`, `{"question":"a \"}\\","tags":{"k":"}"}}`, `{"kinds":["table",1,null,{"x":[]}]}`, ` {"d\u0061tabase" : "x"} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req SearchRequest
		_ = DecodeRequest(b, &req)
		var ev AskRequest
		_ = DecodeRequest(b, &ev)
	})
}

// TestFeedbackExampleID: feedback is idempotent on the question and the
// SQL as written, spacing aside; another SQL for the question is another
// example.
func TestFeedbackExampleID(t *testing.T) {
	a := FeedbackExampleID("How many  orders?", "SELECT count(*)\nFROM orders")
	if b := FeedbackExampleID("how many orders?", "SELECT count(*) FROM orders"); a != b {
		t.Errorf("spacing and the question's case changed the id: %s, %s", a, b)
	}
	if c := FeedbackExampleID("how many orders?", "SELECT count(id) FROM orders"); a == c {
		t.Errorf("other SQL, same id %s", a)
	}
	if d := FeedbackExampleID("how many orders?", "select count(*) from orders"); a == d {
		t.Errorf("SQL differing in case (a quoted name may) got the same id %s", a)
	}
	if !strings.HasPrefix(a, "fb-") || validateID("id", a) != nil || a == ExampleID("How many orders?") {
		t.Errorf("feedback id %q", a)
	}
}

func TestExamplesDeleteIsBounded(t *testing.T) {
	ev := &Event{Envelope: Envelope{Spec: SpecVersion, Type: TypeExamplesDelete, ID: "d", Database: "shop", Data: []byte("{}")},
		ExamplesDelete: &ExamplesDelete{IDs: strings.Fields(strings.Repeat("x ", MaxExamplesDeleted+1))}}
	var fe *FieldError
	if err := ev.Validate(); !errors.As(err, &fe) || fe.Field != "data.ids" || !strings.Contains(err.Error(), "at most 1000") {
		t.Errorf("got %v", err)
	}
	ev.ExamplesDelete.IDs = ev.ExamplesDelete.IDs[:MaxExamplesDeleted]
	if err := ev.Validate(); err != nil {
		t.Errorf("%d ids: %v", MaxExamplesDeleted, err)
	}
}
