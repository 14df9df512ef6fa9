package events

// Stream and subjects. Request subjects of the query service are kept out
// of every stream's subjects: a stream that captured a request would answer
// it with a PubAck.
const (
	// Stream is the JetStream stream holding every event.
	Stream = "SCHEMAQ"
	// StreamSubjects are the subjects Stream captures.
	StreamSubjectSchema   = "schemaq.schema.*"
	StreamSubjectDocs     = "schemaq.docs.*"
	StreamSubjectExamples = "schemaq.examples.*"

	// DeadLetterStream keeps events that could not be applied, with the
	// reason in headers.
	DeadLetterStream = "SCHEMAQ_DLQ"
	// DeadLetterSubjects is what DeadLetterStream captures.
	DeadLetterSubjects = "schemaq.dlq.>"

	// CatalogBucket is the JetStream key-value bucket of catalogs, one key
	// per database.
	CatalogBucket = "schemaq_catalogs"

	// ObjectBucket is the JetStream object store of payloads larger than
	// a message: the SQL of big snapshots and migrations (events/<db>/…),
	// and big catalogs (catalogs/<db>/…).
	ObjectBucket = "schemaq_objects"

	// SweepBucket is the JetStream key-value bucket in which the workers'
	// object sweeps take turns: it holds who swept last, and when.
	SweepBucket = "schemaq_sweeps"

	// AttemptBucket is the JetStream key-value bucket in which workers
	// mark a redelivered event while they handle it (key: its stream
	// sequence), so that one whose handling ended the process is
	// dead-lettered before it is tried again.
	AttemptBucket = "schemaq_attempts"

	// ServiceName is the NATS micro service of the query daemon; its
	// endpoints answer on ServiceName + "." + endpoint.
	ServiceName = "schemaq"
	// Endpoint names of the query service.
	EndpointAsk    = "ask"
	EndpointSearch = "search"
	EndpointTables = "tables"
	// EndpointFeedback takes SQL that answers a question and stores it
	// as a worked example.
	EndpointFeedback = "feedback"
)

// Headers.
const (
	// HeaderMsgID carries the event id; JetStream drops a second message
	// with the same id inside the stream's duplicate window.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderEventType repeats the event type so that tools can filter
	// without decoding the body.
	HeaderEventType = "Schemaq-Event-Type"

	// Dead-letter headers: why, what and where the event came from.
	HeaderDLQReason     = "Schemaq-Dlq-Reason"
	HeaderDLQSubject    = "Schemaq-Dlq-Subject"
	HeaderDLQSource     = "Schemaq-Dlq-Source"
	HeaderDLQStreamSeq  = "Schemaq-Dlq-Stream-Seq"
	HeaderDLQDeliveries = "Schemaq-Dlq-Deliveries"
	// HeaderDLQKind is why, as a word: one of the DLQKind constants.
	HeaderDLQKind = "Schemaq-Dlq-Kind"
	// HeaderDLQSeq is the migration's or snapshot's seq, for schema events.
	HeaderDLQSeq = "Schemaq-Dlq-Seq"
	// HeaderDLQEventID is the dead-lettered event's id.
	HeaderDLQEventID = "Schemaq-Dlq-Event-Id"
	// HeaderResentFrom, on an event re-sent from its dead letter (a
	// sweep's re-send of a gap letter, `dlq retry`), is the stream
	// sequence of the event as first published: once the copy is
	// applied, the first leaves the stream.
	HeaderResentFrom = "Schemaq-Resent-From"
)

// Kinds of dead letters (HeaderDLQKind).
const (
	// DLQKindGap: a migration whose predecessor never arrived in time.
	// Workers re-send it by themselves once the catalog reaches its
	// predecessor, and drop it once the catalog has moved past it.
	DLQKindGap = "gap"
	// DLQKindRefused: the event is valid but cannot be applied (SQL that
	// does not parse or contradicts the catalog, a changed migration).
	DLQKindRefused = "refused"
	// DLQKindConflict: a migration that disagrees with the applied
	// history (another migration at its seq, or itself applied at another
	// seq). Never swept: two publishers disagree and a person decides.
	DLQKindConflict = "conflict"
	// DLQKindInvalid: the event does not decode or validate.
	DLQKindInvalid = "invalid"
	// DLQKindFailed: a transient failure outlasted every delivery.
	DLQKindFailed = "failed"
)

// SchemaSubject is where schema.migration and schema.snapshot events for db
// are published.
func SchemaSubject(db string) string { return "schemaq.schema." + db }

// DocsSubject is where docs.upsert and docs.delete events for db go.
func DocsSubject(db string) string { return "schemaq.docs." + db }

// ExamplesSubject is where examples.upsert and examples.delete events for
// db go.
func ExamplesSubject(db string) string { return "schemaq.examples." + db }

// EventObject is the name in ObjectBucket of the SQL of event id of db:
// the id, so that re-publishing an event rewrites its one object.
func EventObject(db, id string) string { return "events/" + db + "/" + id }

// DeadLetterSubject is where a failed event for db is republished.
func DeadLetterSubject(db string) string { return "schemaq.dlq." + db }

// EndpointSubject is the catch-all request subject of a query service
// endpoint: the database is in the body. Kept for compatibility; NATS
// permissions cannot grant one database on it, so a deployment that
// grants per database denies it (docs/deploy.md).
func EndpointSubject(endpoint string) string { return ServiceName + "." + endpoint }

// DatabaseSubject is the request subject of endpoint for database db,
// schemaq.<endpoint>.<db>: NATS permissions can grant it per database. A
// request on it may leave the body's database out; one that names
// another database is refused.
func DatabaseSubject(endpoint, db string) string { return ServiceName + "." + endpoint + "." + db }

// Capabilities a daemon announces in its micro service metadata.
const (
	// CapabilityGateway is "configured" when ask writes SQL, "none" when
	// it answers with retrieval only.
	CapabilityGateway = "gateway"
	// CapabilityAllowSystemCatalogs is "true" when asks may read the
	// system catalogs (--allow-system-catalogs).
	CapabilityAllowSystemCatalogs = "allow_system_catalogs"
	// CapabilityStore is the kind of index the daemon reads: "sqlite"
	// (its own, a serve replica's) or "redis" (shared).
	CapabilityStore = "store"
)
