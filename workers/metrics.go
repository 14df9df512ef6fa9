package workers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of a worker; build with NewMetrics on the process's registerer.
type Metrics struct {
	events      *prometheus.CounterVec
	apply       *prometheus.HistogramVec
	pending     prometheus.Gauge
	ackPending  prometheus.Gauge
	redelivered prometheus.Gauge
	held        prometheus.Gauge
	heldBytes   prometheus.Gauge
	drift       prometheus.Counter
	unplaced    prometheus.Counter
	rested      prometheus.Counter
	// heldForProjections is time applies waited for projections.
	heldForProjections prometheus.Counter
	// paused counts databases whose queue waits for a write to succeed
	// (pause.go); pauses counts the pauses begun.
	paused prometheus.Gauge
	pauses prometheus.Counter
	// freshness is how long an event took from the stream to its ack.
	freshness *prometheus.HistogramVec
	// repaired counts projections the audit found behind their catalog.
	repaired prometheus.Counter
	// lanes are the lanes this worker consumes; diverted counts events a
	// worker consumer left to a lane (lanes.go).
	lanes    prometheus.Gauge
	diverted prometheus.Counter
	// superseded counts doc events a newer one made useless, by what
	// became of them (supersede.go).
	superseded *prometheus.CounterVec
	// fullest is the largest share of the stream's bound on events per
	// database that one database's events of one kind hold (bound.go).
	fullest prometheus.Gauge
	// fullestWords is the largest share of --max-words-per-database that
	// a database this worker wrote holds (words.go).
	fullestWords prometheus.Gauge
}

// NewMetrics registers the worker's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_worker_events_total",
			Help: "Events settled, by type and outcome (ack, retry, dead_letter)."}, []string{"type", "outcome"}),
		apply: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "schemaq_worker_apply_seconds",
			Help: "Time to handle one event: decode, apply, chunk, embed, write.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12)}, []string{"type"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_consumer_pending",
			Help: "Events in the stream the worker consumers (schema, docs) and their lanes have not delivered yet (lag), summed."}),
		ackPending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_consumer_ack_pending",
			Help: "Events delivered and not acknowledged yet, both consumers and their lanes summed."}),
		redelivered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_consumer_redelivered",
			Help: "Events being redelivered."}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_held_events",
			Help: "Events this process holds in its databases' queues: being applied, waiting for a predecessor, or applied and waiting for their projection."}),
		heldBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_held_bytes",
			Help: "Bytes of the events this process holds, as delivered, against --max-held-bytes."}),
		drift: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_catalog_drift_total",
			Help: "Migration statements applied tolerantly: skipped, or applied by inferring a column, because they name objects the catalog does not know."}),
		unplaced: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_examples_unplaced_total",
			Help: "Examples indexed whose SQL does not parse or reads tables the catalog lacks on their search_path: they vote for no table in retrieval."}),
		rested: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_rested_seconds_total",
			Help: "Time indexing rested to give way to requests answered in the same process (--index-yield)."}),
		heldForProjections: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_apply_held_seconds_total",
			Help: "Time applies waited for projections under way in the same process to finish (projections go first)."}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_paused_databases",
			Help: "Databases whose events wait, pending, for a write to succeed: a store out of space, or a dead letter that cannot be published."}),
		pauses: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_pauses_total",
			Help: "Pauses begun: a database's queue stopped for a write that failed for lack of space, or a dead letter that could not be published."}),
		freshness: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "schemaq_worker_freshness_seconds",
			Help:    "Time from an event's arrival in the stream to its acknowledgement: applied, indexed and searchable (for a migration, once its projection is written). By the NATS server's clock.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 14)}, []string{"type"}),
		repaired: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_projections_repaired_total",
			Help: "Databases the periodic audit found indexed behind their catalog (a store that lost acknowledged writes, as a Redis failover can) and re-projected."}),
		lanes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_lanes",
			Help: "Lanes this worker consumes: databases whose events of one kind flooded and were moved out of the other databases' way."}),
		diverted: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_worker_diverted_total",
			Help: "Events a worker consumer acknowledged unapplied because their database's lane delivers them."}),
		superseded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_worker_superseded_events_total",
			Help: "Events newer events may have superseded (docs, examples, schema events before a snapshot, refused or re-sent schema events once their seq applied from another), by outcome: deleted from the stream, gone (deleted already), live (it still holds an example no newer event replaced), kept (a mark or history names events the stream does not hold as it says), failed or skipped (left in the stream)."}, []string{"outcome"}),
		fullest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_stream_fullest_database_share",
			Help: "The largest share of the stream's bound on one database's events of one kind (--max-events-per-database) that a database holds; at 1 its publishes of that kind are refused. 0 without a bound."}),
		fullestWords: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_worker_fullest_words_share",
			Help: "The largest share of --max-words-per-database (distinct words in the names of one database's tables, views and columns) that a database this worker last wrote holds; past 1 its migrations are refused. 0 without a bound."}),
	}
	reg.MustRegister(m.events, m.apply, m.pending, m.ackPending, m.redelivered, m.held, m.heldBytes, m.drift, m.unplaced, m.rested, m.heldForProjections, m.paused, m.pauses, m.freshness, m.repaired,
		m.lanes, m.diverted, m.superseded, m.fullest, m.fullestWords)
	return m
}

// settled counts an event settled as act after handling of the given
// seconds (negative: not handled, as a gap letter), and, when it was
// acknowledged, how long it took from the stream to searchable. m may be
// nil (no metrics).
func (m *Metrics) settled(typ string, act action, it *item, seconds float64) {
	if m == nil {
		return
	}
	m.events.WithLabelValues(typ, act.String()).Inc()
	if seconds >= 0 {
		m.apply.WithLabelValues(typ).Observe(seconds)
	}
	if act == actAck && it.meta != nil && !it.meta.Timestamp.IsZero() {
		m.freshness.WithLabelValues(typ).Observe(max(0, time.Since(it.meta.Timestamp).Seconds()))
	}
}
