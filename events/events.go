// Package events is schemaq's wire contract: the subjects, headers and JSON
// payloads that producers, workers, daemons and clients exchange over NATS.
// It depends on the standard library only, so any Go service can import it.
//
// Every event is one Envelope with a spec version. Decode is strict:
// unknown fields, a newer spec, a missing or malformed field, invalid UTF-8
// and oversize events are errors that name the field. Changes are additive;
// a breaking change gets a new spec version.
package events

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// SpecVersion is the newest envelope version this code understands.
const SpecVersion = 1

// DefaultMaxEventBytes bounds an encoded event. It matches NATS's default
// max_payload; a larger schema dump must be split or the server limit and
// this one raised together.
const DefaultMaxEventBytes = 1 << 20

// Event types.
const (
	TypeMigration      = "schema.migration"
	TypeSnapshot       = "schema.snapshot"
	TypeDocUpsert      = "docs.upsert"
	TypeDocDelete      = "docs.delete"
	TypeExamplesUpsert = "examples.upsert"
	TypeExamplesDelete = "examples.delete"
)

// Envelope is the one shape every event has on the wire.
type Envelope struct {
	Spec int    `json:"spec"`
	Type string `json:"type"`
	// ID identifies the event; it is also the JetStream message id
	// (Nats-Msg-Id), so a re-published event is dropped as a duplicate.
	ID       string          `json:"id"`
	Database string          `json:"database"`
	Time     time.Time       `json:"time,omitzero"`
	Data     json.RawMessage `json:"data"`
}

// Migration is the data of a schema.migration event: DDL to apply on top
// of the catalog at version Seq-1. Its SQL may be empty (or only
// comments): the migration is then a no-op that still takes its place in
// the history, as migration tools treat an empty file.
type Migration struct {
	// Seq is the migration's position in the database's history, from 1.
	Seq int64 `json:"seq"`
	// Source names where the SQL came from (a file name); errors cite it.
	Source string `json:"source,omitempty"`
	// MigrationID is the migration's identity in its tool: its version
	// (20240101120000, 1.1) or, without one, its file name. The catalog
	// records it with a checksum of the SQL, so a publisher can tell
	// which migrations are applied whatever their seq, and refuse an
	// applied one whose content changed. Defaults to Source.
	MigrationID string `json:"migration_id,omitempty"`
	// Repeatable marks a migration applied again whenever its content
	// changes (Flyway's R__ files): an ID the catalog has applied is no
	// conflict for it.
	Repeatable bool   `json:"repeatable,omitempty"`
	SQL        string `json:"sql,omitempty"`
	// SQLGzip is the SQL gzip-compressed (base64 in JSON), for scripts
	// too large for one event otherwise. Set SQL or SQLGzip, not both;
	// Decode fills SQL from it.
	SQLGzip []byte `json:"sql_gzip,omitempty"`
	// SQLObject names the SQL in the object store when it is too large
	// for a message even compressed; the Go client moves it there by
	// itself. Set one of SQL, SQLGzip and SQLObject.
	SQLObject *ObjectRef `json:"sql_object,omitempty"`
}

// ObjectRef names a payload kept in ObjectBucket because it is larger
// than a message. The publisher writes the object before the event; the
// worker reads it when it applies the event and deletes it once the
// catalog holds the result.
type ObjectRef struct {
	// Name is the object's name in ObjectBucket.
	Name string `json:"name"`
	// Size is the object's size in bytes, as stored.
	Size uint64 `json:"size"`
	// Gzip: the object is the SQL gzip-compressed.
	Gzip bool `json:"gzip,omitempty"`
	// Checksum is the SQL's checksum as the catalog records it (SHA-256
	// of the SQL with CRLF line ends as LF, the first 16 bytes in hex),
	// so a redelivered event is recognised without reading the object.
	Checksum string `json:"checksum"`
}

// Snapshot is the data of a schema.snapshot event: the whole schema (for
// example pg_dump --schema-only). It replaces the catalog and sets its
// version to Seq.
type Snapshot struct {
	Seq       int64      `json:"seq"`
	Source    string     `json:"source,omitempty"`
	SQL       string     `json:"sql,omitempty"`
	SQLGzip   []byte     `json:"sql_gzip,omitempty"`   // as in Migration
	SQLObject *ObjectRef `json:"sql_object,omitempty"` // as in Migration
}

// MaxSQLBytes bounds the SQL of one event once decompressed.
const MaxSQLBytes = 64 << 20

// GzipSQL compresses sql for Migration.SQLGzip or Snapshot.SQLGzip.
func GzipSQL(sql string) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write([]byte(sql))
	_ = zw.Close()
	return buf.Bytes()
}

// GunzipSQL expands SQL compressed with GzipSQL, refusing corrupt data,
// more than MaxSQLBytes and invalid UTF-8.
func GunzipSQL(gz []byte) (string, error) {
	var sql string
	if err := expandSQL(&sql, gz); err != nil {
		return "", err
	}
	return sql, nil
}

// expandSQL fills *sql from gz, refusing both set, corrupt data and more
// than MaxSQLBytes (a gzip bomb).
func expandSQL(sql *string, gz []byte) error {
	if len(gz) == 0 {
		return nil
	}
	if *sql != "" {
		return fieldErr("data.sql_gzip", "set sql or sql_gzip, not both")
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return fieldErr("data.sql_gzip", "not gzip data: %v", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, MaxSQLBytes+1))
	if err != nil {
		return fieldErr("data.sql_gzip", "corrupt gzip data: %v", err)
	}
	if len(b) > MaxSQLBytes {
		return fieldErr("data.sql_gzip", "expands to more than %d bytes", MaxSQLBytes)
	}
	if !utf8.Valid(b) {
		return fieldErr("data.sql_gzip", "the SQL is not valid UTF-8 (at byte %d)", InvalidUTF8Offset(b))
	}
	*sql = string(b)
	return nil
}

// checkObject refuses an object reference beside inline SQL, one without
// a name or checksum, and one named outside its database's events: the
// object sweep keeps an object while an event of the database its name
// says names it, so an event of shop naming events/hr/… could lose its SQL.
func checkObject(db, sql string, gz []byte, ref *ObjectRef) error {
	if ref == nil {
		return nil
	}
	switch {
	case sql != "" || len(gz) > 0:
		return fieldErr("data.sql_object", "set one of sql, sql_gzip and sql_object")
	case ref.Name == "":
		return fieldErr("data.sql_object.name", "required")
	case !strings.HasPrefix(ref.Name, EventObject(db, "")) || len(ref.Name) == len(EventObject(db, "")):
		return fieldErr("data.sql_object.name", "must be under %s (the event id, as the Go client writes it), got %s", EventObject(db, ""), Quote(ref.Name))
	case len(ref.Checksum) != 32:
		return fieldErr("data.sql_object.checksum", "must be the SQL's checksum: 32 hex digits, got %s", Quote(ref.Checksum))
	}
	return nil
}

// SQLObject is the object reference of a migration or snapshot, or nil.
func (ev *Event) SQLObject() *ObjectRef {
	switch {
	case ev.Migration != nil:
		return ev.Migration.SQLObject
	case ev.Snapshot != nil:
		return ev.Snapshot.SQLObject
	}
	return nil
}

// DocUpsert is the data of a docs.upsert event: one markdown document.
type DocUpsert struct {
	DocID string `json:"doc_id"`
	Title string `json:"title,omitempty"`
	Body  string `json:"body"`
	// Tags are metadata usable as search filters (version, product, …).
	Tags map[string]string `json:"tags,omitempty"`
}

// DocDelete is the data of a docs.delete event.
type DocDelete struct {
	DocID string `json:"doc_id"`
}

// ExamplesUpsert is the data of an examples.upsert event: question/SQL
// pairs retrieved as few-shot examples.
type ExamplesUpsert struct {
	Examples []Example `json:"examples"`
}

// Example is one question/SQL pair. ID defaults to a hash of the
// question (ExampleID).
type Example struct {
	ID       string `json:"id,omitempty"`
	Question string `json:"question"`
	SQL      string `json:"sql"`
	// Schema is the schema the SQL was written in (its search_path): the
	// one its unqualified names are looked up in first, before public.
	Schema string `json:"schema,omitempty"`
	// Origin says where the pair came from: "" (published) or
	// OriginFeedback (a caller said the SQL answers the question).
	Origin string `json:"origin,omitempty"`
	// AskID is the ask (AskReply.AskID) the feedback cites, and
	// Corrected says the caller corrected that ask's SQL rather than
	// accepting it as it was.
	AskID     string `json:"ask_id,omitempty"`
	Corrected bool   `json:"corrected,omitempty"`
	// CatalogVersion and Tables say where the SQL was checked: the
	// catalog version it passed the guard at, and the relations
	// (schema.name) it reads there.
	CatalogVersion int64    `json:"catalog_version,omitempty"`
	Tables         []string `json:"tables,omitempty"`
	// Author is who gave a feedback example: "http:<token name>",
	// "nats:<account>[/<user>]" (as the NATS server reported it through a
	// service import), "http" or "nats" when nothing more is known, or
	// "mcp:<client>" through `schemaq mcp`.
	Author string `json:"author,omitempty"`
	// Client is the program the feedback came through, as it named
	// itself (FeedbackRequest.Client): a claim, where Author is what the
	// transport established.
	Client string `json:"client,omitempty"`
	// ApprovedBy is who approved a feedback example (as Author names a
	// caller): once approved it is the team's own, as a published one
	// is. It votes in full in retrieval and leaves the feedback cap.
	ApprovedBy string `json:"approved_by,omitempty"`
}

// OriginFeedback marks an example that came through the feedback
// endpoint.
const OriginFeedback = "feedback"

// MaxExampleTables bounds an example's Tables.
const MaxExampleTables = 256

// ExampleID is the id of an example published without one: a hash of
// its question with white space and case folded, so that re-publishing a
// question replaces its example.
func ExampleID(question string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.Join(strings.Fields(question), " "))))
	return hex.EncodeToString(sum[:8])
}

// FeedbackExampleID is the id of the example feedback stores: a hash of
// the question and the SQL (white space folded), so feedback is
// idempotent on the pair, and a question answered by two queries keeps
// both.
func FeedbackExampleID(question, sql string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.Join(strings.Fields(question), " ")) + "\x00" + strings.Join(strings.Fields(sql), " ")))
	return "fb-" + hex.EncodeToString(sum[:8])
}

// ExamplesDelete is the data of an examples.delete event: the ids of the
// examples to remove. An id that is not indexed is no error.
type ExamplesDelete struct {
	IDs []string `json:"ids"`
}

// MaxExamplesDeleted bounds one examples.delete event.
const MaxExamplesDeleted = 1000

// Event is a decoded, validated event: the envelope plus exactly one typed
// payload, chosen by Type.
type Event struct {
	Envelope
	Migration *Migration      `json:"-"`
	Snapshot  *Snapshot       `json:"-"`
	DocUpsert *DocUpsert      `json:"-"`
	DocDelete *DocDelete      `json:"-"`
	Examples  *ExamplesUpsert `json:"-"`
	// ExamplesDelete is set on examples.delete events.
	ExamplesDelete *ExamplesDelete `json:"-"`
}

// Errors that Decode and Validate return; match with errors.Is.
var (
	ErrMalformed = errors.New("malformed event")
	// ErrMalformedRequest is ErrMalformed's twin for query requests.
	ErrMalformedRequest = errors.New("malformed request")
	ErrInvalid          = errors.New("invalid event")
	ErrNewerSpec        = errors.New("event spec is newer than this schemaq understands")
	ErrTooLarge         = errors.New("event too large")
	ErrUnknownType      = errors.New("unknown event type")
)

// FieldError says which field of an event is wrong and why. It matches
// ErrInvalid.
type FieldError struct {
	Field   string // JSON path, e.g. "data.seq"
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("field %s: %s", clipField(e.Field), e.Problem)
}
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// databaseRe starts with a letter or digit: names such as "-" read as
// command-line flags, and those starting with "_" are schemaq's own
// ("_invalid" collects dead letters of events with no valid database).
var databaseRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidateDatabase checks that name can be a NATS subject token and a key:
// 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit.
func ValidateDatabase(name string) error {
	if !databaseRe.MatchString(name) {
		return fieldErr("database", "%s is not a valid database name: use 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit", Quote(name))
	}
	return nil
}

const (
	maxIDLen  = 256
	maxTagLen = 256
)

var tagKeyRe = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// Decode parses and validates one event. maxBytes bounds its size
// (DefaultMaxEventBytes when ≤ 0).
func Decode(b []byte, maxBytes int) (*Event, error) {
	ev, err := DecodeCompressed(b, maxBytes)
	if err != nil {
		return nil, err
	}
	return ev.Expanded()
}

// DecodeCompressed is Decode that leaves a migration's or snapshot's
// sql_gzip compressed: the event is checked in every other respect, and
// Expanded checks and expands the SQL when it is applied. A 1 MiB event
// may expand to MaxSQLBytes, so a worker that holds many events holds
// them compressed.
func DecodeCompressed(b []byte, maxBytes int) (*Event, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(b), maxBytes)
	}
	if !utf8.Valid(b) {
		off := InvalidUTF8Offset(b)
		return nil, fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrMalformed, off)
	}
	var env Envelope
	if err := strictUnmarshal(b, &env, ""); err != nil {
		return nil, err
	}
	ev := &Event{Envelope: env}
	if err := ev.decodeData(); err != nil {
		return nil, err
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}

// InvalidUTF8Offset is the offset of b's first byte that is not valid
// UTF-8, or -1, for errors that point at it.
func InvalidUTF8Offset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// DecodeRequest strictly decodes a request body (unknown fields, wrong
// types and trailing data are errors naming the field) into v.
func DecodeRequest(b []byte, v any) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: invalid UTF-8 at byte %d", ErrMalformedRequest, InvalidUTF8Offset(b))
	}
	return decodeStrict(b, v, "", ErrMalformedRequest)
}

// strictUnmarshal decodes one JSON value into v, rejecting unknown fields
// and trailing data, and turns encoding/json's errors into ones that name
// the field (prefixed with path).
func strictUnmarshal(b []byte, v any, path string) error {
	return decodeStrict(b, v, path, ErrMalformed)
}

// decodeStrict is strictUnmarshal with the error that malformed input
// wraps (an event's or a request's). Keys are matched exactly and may
// not repeat (checkKeys).
func decodeStrict(b []byte, v any, path string, malformed error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, path, malformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON object", malformed)
	}
	return checkKeys(b, reflect.TypeOf(v), path)
}

func jsonError(err error, path string, malformed error) error {
	join := func(f string) string {
		if path == "" {
			return f
		}
		if f == "" {
			return path
		}
		return path + "." + f
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%w: %v at byte %d", malformed, syn, syn.Offset)
	case errors.As(err, &typ) && typ.Field == "" && path == "":
		return fmt.Errorf("%w: expected a JSON object, got JSON %s", malformed, typ.Value)
	case errors.As(err, &typ):
		return fieldErr(join(typ.Field), "expected %s, got JSON %s", typ.Type, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if uerr != nil {
			name = strings.TrimPrefix(err.Error(), "json: unknown field ")
		}
		return fieldErr(join(name), "unknown field")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: unexpected end of JSON", malformed)
	}
	var b64 base64.CorruptInputError
	if errors.As(err, &b64) {
		return fmt.Errorf("%w: a binary field (such as data.sql_gzip) is not valid base64: %v", malformed, err)
	}
	var te *time.ParseError
	if errors.As(err, &te) {
		return fieldErr(join("time"), "not an RFC 3339 time: %v", err)
	}
	return fmt.Errorf("%w: %v", malformed, err)
}

func (ev *Event) decodeData() error {
	if ev.Spec > SpecVersion {
		return fmt.Errorf("%w: spec %d, this build understands up to %d", ErrNewerSpec, ev.Spec, SpecVersion)
	}
	if len(ev.Data) == 0 || string(ev.Data) == "null" {
		if ev.Type == "" {
			return fieldErr("type", "required")
		}
		return fieldErr("data", "required")
	}
	var target any
	switch ev.Type {
	case TypeMigration:
		ev.Migration = &Migration{}
		target = ev.Migration
	case TypeSnapshot:
		ev.Snapshot = &Snapshot{}
		target = ev.Snapshot
	case TypeDocUpsert:
		ev.DocUpsert = &DocUpsert{}
		target = ev.DocUpsert
	case TypeDocDelete:
		ev.DocDelete = &DocDelete{}
		target = ev.DocDelete
	case TypeExamplesUpsert:
		ev.Examples = &ExamplesUpsert{}
		target = ev.Examples
	case TypeExamplesDelete:
		ev.ExamplesDelete = &ExamplesDelete{}
		target = ev.ExamplesDelete
	case "":
		return fieldErr("type", "required")
	default:
		return fmt.Errorf("%w: %s (known: %s)", ErrUnknownType, Quote(ev.Type), strings.Join(Types(), ", "))
	}
	if err := strictUnmarshal(ev.Data, target, "data"); err != nil {
		return err
	}
	switch {
	case ev.Migration != nil:
		return checkCompressed(ev.Database, ev.Migration.SQL, ev.Migration.SQLGzip, ev.Migration.SQLObject)
	case ev.Snapshot != nil:
		return checkCompressed(ev.Database, ev.Snapshot.SQL, ev.Snapshot.SQLGzip, ev.Snapshot.SQLObject)
	}
	return nil
}

// checkCompressed checks where a migration's or snapshot's SQL is: one
// of inline, compressed, or in the object store.
func checkCompressed(db, sql string, gz []byte, ref *ObjectRef) error {
	if err := checkObject(db, sql, gz, ref); err != nil {
		return err
	}
	if sql != "" && len(gz) > 0 {
		return fieldErr("data.sql_gzip", "set sql or sql_gzip, not both")
	}
	return nil
}

// Expanded returns ev with its sql_gzip expanded into its SQL, checked as
// Decode checks it; ev itself when it has none. ev is not changed, so
// an event held compressed stays so.
func (ev *Event) Expanded() (*Event, error) {
	switch {
	case ev.Migration != nil && len(ev.Migration.SQLGzip) > 0:
		m := *ev.Migration
		if err := expandSQL(&m.SQL, m.SQLGzip); err != nil {
			return nil, err
		}
		m.SQLGzip = nil
		out := *ev
		out.Migration = &m
		return &out, nil
	case ev.Snapshot != nil && len(ev.Snapshot.SQLGzip) > 0:
		sn := *ev.Snapshot
		if err := expandSQL(&sn.SQL, sn.SQLGzip); err != nil {
			return nil, err
		}
		if strings.TrimSpace(sn.SQL) == "" {
			return nil, fieldErr("data.sql_gzip", "required: the compressed snapshot DDL is empty")
		}
		sn.SQLGzip = nil
		out := *ev
		out.Snapshot = &sn
		return &out, nil
	}
	return ev, nil
}

// Types lists the event types in a stable order.
func Types() []string {
	return []string{TypeMigration, TypeSnapshot, TypeDocUpsert, TypeDocDelete, TypeExamplesUpsert, TypeExamplesDelete}
}

// Validate checks the envelope and the payload. Decode calls it; producers
// call it before publishing.
func (ev *Event) Validate() error {
	if err := ev.validateEnvelope(); err != nil {
		return err
	}
	switch ev.Type {
	case TypeMigration:
		m := ev.Migration
		if len(m.MigrationID) > maxIDLen {
			return fieldErr("data.migration_id", "longer than %d bytes", maxIDLen)
		}
		if err := checkObject(ev.Database, m.SQL, m.SQLGzip, m.SQLObject); err != nil {
			return err
		}
		return validateDDL(m.Seq, m.SQL, m.SQLGzip, m.SQLObject != nil, true)
	case TypeSnapshot:
		if err := checkObject(ev.Database, ev.Snapshot.SQL, ev.Snapshot.SQLGzip, ev.Snapshot.SQLObject); err != nil {
			return err
		}
		return validateDDL(ev.Snapshot.Seq, ev.Snapshot.SQL, ev.Snapshot.SQLGzip, ev.Snapshot.SQLObject != nil, false)
	case TypeDocUpsert:
		return ev.DocUpsert.validate()
	case TypeDocDelete:
		return validateID("data.doc_id", ev.DocDelete.DocID)
	case TypeExamplesUpsert:
		return ev.Examples.validate()
	case TypeExamplesDelete:
		return ev.ExamplesDelete.validate()
	}
	return fmt.Errorf("%w: %s", ErrUnknownType, Quote(ev.Type))
}

// validateEnvelope checks the spec version, the id and the database.
func (ev *Event) validateEnvelope() error {
	switch {
	case ev.Spec == 0:
		return fieldErr("spec", "required (this build writes %d)", SpecVersion)
	case ev.Spec < 0:
		return fieldErr("spec", "must be positive, got %d", ev.Spec)
	case ev.Spec > SpecVersion:
		return fmt.Errorf("%w: spec %d, this build understands up to %d", ErrNewerSpec, ev.Spec, SpecVersion)
	}
	if err := validateID("id", ev.ID); err != nil {
		return err
	}
	if ev.Database == "" {
		return fieldErr("database", "required")
	}
	return ValidateDatabase(ev.Database)
}

func (d *DocUpsert) validate() error {
	if err := validateID("data.doc_id", d.DocID); err != nil {
		return err
	}
	if strings.TrimSpace(d.Body) == "" {
		return fieldErr("data.body", "required: the markdown text of the document")
	}
	for k, v := range d.Tags {
		if !tagKeyRe.MatchString(k) {
			return fieldErr("data.tags", "key %s: use 1 to 64 of a-z, 0-9, '_', '.' and '-'", Quote(k))
		}
		if len(v) > maxTagLen {
			return fieldErr("data.tags."+k, "longer than %d bytes", maxTagLen)
		}
	}
	return nil
}

func (x *ExamplesUpsert) validate() error {
	if len(x.Examples) == 0 {
		return fieldErr("data.examples", "required: at least one question/SQL pair")
	}
	for i, ex := range x.Examples {
		f := fmt.Sprintf("data.examples[%d]", i)
		if ex.ID != "" {
			if err := validateID(f+".id", ex.ID); err != nil {
				return err
			}
		}
		if strings.TrimSpace(ex.Question) == "" {
			return fieldErr(f+".question", "required")
		}
		if strings.TrimSpace(ex.SQL) == "" {
			return fieldErr(f+".sql", "required")
		}
		if ex.Schema != "" && strings.TrimSpace(ex.Schema) != ex.Schema {
			return fieldErr(f+".schema", "a schema name, without surrounding spaces")
		}
		if err := validateProvenance(f, ex); err != nil {
			return err
		}
	}
	return nil
}

func (x *ExamplesDelete) validate() error {
	switch {
	case len(x.IDs) == 0:
		return fieldErr("data.ids", "required: at least one example id")
	case len(x.IDs) > MaxExamplesDeleted:
		return fieldErr("data.ids", "%d ids; at most %d in one event", len(x.IDs), MaxExamplesDeleted)
	}
	for i, id := range x.IDs {
		if err := validateID(fmt.Sprintf("data.ids[%d]", i), id); err != nil {
			return err
		}
	}
	return nil
}

func validateDDL(seq int64, sql string, gz []byte, hasObject, emptyOK bool) error {
	if seq < 1 || seq > MaxSeq {
		return fieldErr("data.seq", "must be from 1 to %d, got %d", int64(MaxSeq), seq)
	}
	// A snapshot is the whole schema, so an empty one is a mistake; an
	// empty migration is a no-op, as migration tools treat one.
	if !emptyOK && strings.TrimSpace(sql) == "" && len(gz) == 0 && !hasObject {
		return fieldErr("data.sql", "required: the snapshot's DDL is empty")
	}
	return nil
}

// MaxSeq bounds a schema event's seq. A database's next event has seq
// version+1, so a snapshot at the largest int64 would leave the database
// unable to take another event; 2^53 is also the largest integer every
// JSON reader (JavaScript's among them) holds exactly.
const MaxSeq = 1 << 53

// ID is the migration's identity: MigrationID, or Source without one.
func (m *Migration) ID() string {
	if m.MigrationID != "" {
		return m.MigrationID
	}
	return m.Source
}

// validateProvenance checks what an example says of where it came from.
func validateProvenance(f string, ex Example) error {
	switch {
	case ex.Origin != "" && ex.Origin != OriginFeedback:
		return fieldErr(f+".origin", "%s: leave it out, or %q", Quote(ex.Origin), OriginFeedback)
	case ex.CatalogVersion < 0:
		return fieldErr(f+".catalog_version", "must not be negative, got %d", ex.CatalogVersion)
	case len(ex.Tables) > MaxExampleTables:
		return fieldErr(f+".tables", "%d relations; at most %d", len(ex.Tables), MaxExampleTables)
	}
	if ex.AskID != "" {
		if err := validateID(f+".ask_id", ex.AskID); err != nil {
			return err
		}
	}
	if ex.Author != "" {
		if err := validateID(f+".author", ex.Author); err != nil {
			return err
		}
	}
	if ex.Client != "" {
		if err := validateID(f+".client", ex.Client); err != nil {
			return err
		}
	}
	if ex.ApprovedBy != "" {
		if err := validateID(f+".approved_by", ex.ApprovedBy); err != nil {
			return err
		}
	}
	for i, t := range ex.Tables {
		if err := validateID(fmt.Sprintf("%s.tables[%d]", f, i), t); err != nil {
			return err
		}
	}
	return nil
}

func validateID(field, id string) error {
	switch {
	case id == "":
		return fieldErr(field, "required")
	case len(id) > maxIDLen:
		return fieldErr(field, "longer than %d bytes", maxIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fieldErr(field, "%s contains white space or control characters", Quote(id))
	}
	return nil
}

// New builds a validated event of the given payload, setting spec, type
// and data. The payload must be one of the payload types of this package.
func New(id, database string, at time.Time, payload any) (*Event, error) {
	ev := &Event{Envelope: Envelope{Spec: SpecVersion, ID: id, Database: database, Time: at.UTC()}}
	switch p := payload.(type) {
	case *Migration:
		ev.Type, ev.Migration = TypeMigration, p
	case *Snapshot:
		ev.Type, ev.Snapshot = TypeSnapshot, p
	case *DocUpsert:
		ev.Type, ev.DocUpsert = TypeDocUpsert, p
	case *DocDelete:
		ev.Type, ev.DocDelete = TypeDocDelete, p
	case *ExamplesUpsert:
		ev.Type, ev.Examples = TypeExamplesUpsert, p
	case *ExamplesDelete:
		ev.Type, ev.ExamplesDelete = TypeExamplesDelete, p
	default:
		return nil, fmt.Errorf("%w: payload of type %T", ErrUnknownType, payload)
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", ev.Type, err)
	}
	ev.Data = data
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}

// Encode returns the event's wire form.
func (ev *Event) Encode() ([]byte, error) {
	return json.Marshal(ev.Envelope)
}

// Subject is the subject the event is published on.
func (ev *Event) Subject() string {
	switch ev.Type {
	case TypeDocUpsert, TypeDocDelete:
		return DocsSubject(ev.Database)
	case TypeExamplesUpsert, TypeExamplesDelete:
		return ExamplesSubject(ev.Database)
	}
	return SchemaSubject(ev.Database)
}
