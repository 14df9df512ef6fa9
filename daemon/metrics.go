package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of a daemon; build with NewMetrics on the process's registerer.
type Metrics struct {
	requests *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	stage    *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
	llmCalls prometheus.Counter
	serving  prometheus.Gauge
	forwards *prometheus.CounterVec
	// refusedReplies counts requests whose reply subject was not an
	// inbox (replies.go).
	refusedReplies *prometheus.CounterVec
	cuts           *prometheus.CounterVec
	ambiguous      *prometheus.CounterVec
	// retrievalOnly counts asks answered without SQL because this daemon
	// has no gateway: in a queue group that mixes replicas, the share of
	// asks that went to the wrong one.
	retrievalOnly prometheus.Counter
	feedback      *prometheus.CounterVec
	// staleExamples counts the worked examples retrieval found and left
	// out because their SQL no longer fits the catalog.
	staleExamples *prometheus.CounterVec
}

// NewMetrics registers the daemon's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_requests_total",
			Help: "Requests by endpoint and outcome code (ok, or the error code)."}, []string{"endpoint", "code"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "schemaq_daemon_request_seconds",
			Help: "Request latency by endpoint.", Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14)}, []string{"endpoint"}),
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "schemaq_daemon_stage_seconds",
			Help: "Latency of request stages: retrieve, llm, guard.", Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14)}, []string{"stage"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_llm_tokens_total",
			Help: "LLM tokens by kind: prompt, completion, cached; of every gateway call, those of asks that failed and of repair rounds included."}, []string{"kind"}),
		llmCalls: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_daemon_llm_calls_total",
			Help: "LLM gateway calls, failed ones and repair rounds included."}),
		serving: prometheus.NewGauge(prometheus.GaugeOpts{Name: "schemaq_daemon_serving",
			Help: "1 while the daemon is in the queue group (its store answers), 0 while it takes no requests."}),
		refusedReplies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_refused_replies_total",
			Help: "Requests dropped unanswered because their reply subject was not an inbox (a $JS, $KV, $O, $SRV or schemaq subject), by endpoint."}, []string{"endpoint"}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_forwarded_total",
			Help: "Requests this daemon took while its store failed and handed to a replica, by outcome: answered (a replica replied) or failed (none could)."}, []string{"outcome"}),
		cuts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_budget_cuts_total",
			Help: "Replies by endpoint whose context the token budget (--token-budget) cut: results or inferred joins left out."}, []string{"endpoint"}),
		ambiguous: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_ambiguous_total",
			Help: "Replies by endpoint whose question fits several schemas about equally (ambiguous: the likeliest has less than the retriever's AmbiguousShare of the odds, 0.6 by default)."}, []string{"endpoint"}),
		retrievalOnly: prometheus.NewCounter(prometheus.CounterOpts{Name: "schemaq_daemon_retrieval_only_total",
			Help: "Asks answered with retrieval only, no SQL, because this daemon has no LLM gateway."}),
		feedback: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_feedback_total",
			Help: "Feedback by outcome: stored (published as an example), refused (the guard or the catalog refused the SQL), limited (over a rate or the bound on feedback examples) or failed (the stream did not take it)."}, []string{"outcome"}),
		staleExamples: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "schemaq_daemon_stale_examples_total",
			Help: "Worked examples retrieval found and left out, by endpoint, because their SQL no longer fits the catalog: a relation or column gone (schemaq examples list --stale names them)."}, []string{"endpoint"}),
	}
	reg.MustRegister(m.requests, m.seconds, m.stage, m.tokens, m.llmCalls, m.serving, m.forwards, m.refusedReplies, m.cuts, m.ambiguous, m.retrievalOnly, m.feedback, m.staleExamples)
	return m
}
