package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestRepliesGoOnlyToInboxes: a caller allowed one database names a
// reply subject that the daemon's permissions reach and its own do not.
// Before, the daemon wrote its answer over another team's catalog entry
// ($KV…), stored it as an event of another database (schemaq.examples…),
// or answered into the JetStream API. Now the request is dropped
// unanswered, counted, and nothing is published there; an inbox still
// gets its answer.
func TestRepliesGoOnlyToInboxes(t *testing.T) {
	r := newRig(t)
	reg := prometheus.NewRegistry()
	r.daemon(daemon.DefaultConfig, nil, daemon.WithMetrics(daemon.NewMetrics(reg)))
	r.publishShop()

	hostile := []string{
		"$KV.schemaq_catalogs.other",
		"$JS.API.STREAM.PURGE.SCHEMAQ",
		"$O.schemaq_objects.C.x",
		"$SRV.PING",
		"schemaq.examples.other",
		"schemaq.dlq.schema.other",
		"_INBOX.x.>",
	}
	var got []*nats.Msg
	for _, subj := range hostile {
		sub, err := r.nc.SubscribeSync(strings.TrimSuffix(subj, ".>") + ".>")
		if err != nil {
			t.Fatal(err)
		}
		exact, err := r.nc.SubscribeSync(subj)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			for _, s := range []*nats.Subscription{sub, exact} {
				for {
					m, err := s.NextMsg(0)
					if err != nil {
						break
					}
					got = append(got, m)
				}
			}
		}()
	}
	body := []byte(`{"database":"shop","question":"customers"}`)
	for _, subj := range hostile {
		m := nats.NewMsg(events.EndpointSubject(events.EndpointSearch) + ".shop")
		m.Reply, m.Data = subj, body
		if err := r.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "every hostile reply subject refused", func() bool {
		return counterSum(t, reg, "schemaq_daemon_refused_replies_total") == float64(len(hostile))
	})
	// An inbox is answered, and by then every earlier request was
	// decided: the refusals above are counted before any work.
	if _, err := r.nc.Request(events.EndpointSubject(events.EndpointSearch)+".shop", body, 5*time.Second); err != nil {
		t.Fatalf("a request with an inbox went unanswered: %v", err)
	}
	if err := r.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // anything published would be here by now
	t.Cleanup(func() {
		for _, m := range got {
			t.Errorf("the daemon published on %s: %.200s", m.Subject, m.Data)
		}
	})
}

func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += counterValue(m)
		}
	}
	return sum
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}
