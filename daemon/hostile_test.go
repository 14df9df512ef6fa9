package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/schemaq/schemaq/daemon"
	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/client"
	"github.com/schemaq/schemaq/pkg/natsembed"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestRepliesAlwaysArrive sends every endpoint inputs of half, nine
// tenths and all of max_payload, each in a field an error names. Before
// errors were bounded, the reply echoed the input twice (body and
// Nats-Service-Error header), was too big to send, and the caller waited
// out its timeout.
func TestRepliesAlwaysArrive(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	max := int(r.nc.MaxPayload())
	shapes := []struct {
		endpoint, name, prefix, suffix string
	}{
		{events.EndpointSearch, "database", `{"database":"`, `","question":"q"}`},
		{events.EndpointSearch, "unknown field", `{"`, `":1}`},
		{events.EndpointSearch, "kinds[0]", `{"database":"shop","question":"q","kinds":["`, `"]}`},
		{events.EndpointSearch, "question", `{"database":"shop","question":"`, `"}`},
		{events.EndpointSearch, "not JSON", ``, ``},
		{events.EndpointAsk, "database", `{"database":"`, `","question":"q"}`},
		{events.EndpointAsk, "unknown field", `{"`, `":1}`},
		{events.EndpointAsk, "schemas[0]", `{"database":"shop","question":"q","schemas":["`, `"]}`},
		{events.EndpointTables, "database", `{"database":"`, `"}`},
		{events.EndpointTables, "unknown field", `{"`, `":1}`},
		{events.EndpointTables, "table", `{"database":"shop","table":"`, `"}`},
	}
	for _, sh := range shapes {
		for _, frac := range []float64{0.5, 0.9, 1} {
			t.Run(fmt.Sprintf("%s %s %.1f", sh.endpoint, sh.name, frac), func(t *testing.T) {
				size := int(frac * float64(max))
				body := sh.prefix + strings.Repeat("a", size-len(sh.prefix)-len(sh.suffix)) + sh.suffix
				msg, err := r.nc.Request(events.EndpointSubject(sh.endpoint), []byte(body), 5*time.Second)
				if err != nil {
					t.Fatalf("%d bytes: no reply: %v", len(body), err)
				}
				code := msg.Header.Get(micro.ErrorCodeHeader)
				var reply struct{ Error *events.Error }
				if err := json.Unmarshal(msg.Data, &reply); err != nil || reply.Error == nil || reply.Error.Code != code || code != events.CodeBadRequest {
					t.Fatalf("reply %.300s (header code %q), want a bad_request error", msg.Data, code)
				}
				if len(msg.Data) > 2048 || len(msg.Header.Get(micro.ErrorHeader)) > 1100 {
					t.Errorf("reply of %d bytes, header of %d: the input is echoed", len(msg.Data), len(msg.Header.Get(micro.ErrorHeader)))
				}
			})
		}
	}
}

// A reply the server would not carry is replaced by a short error that
// says why, instead of leaving the caller to time out.
func TestReplyTooLargeForTheServer(t *testing.T) {
	r := newRigOn(t, testenv.NATSWith(t, natsembed.Options{MaxPayload: 64 << 10}))
	r.daemon(daemon.DefaultConfig, nil)
	const batches = 12 // 600 tables, in migrations that each fit in a message
	for b := range batches {
		var ddl strings.Builder
		for i := b * 50; i < (b+1)*50; i++ {
			fmt.Fprintf(&ddl, "CREATE TABLE t%04d (id int);\nCOMMENT ON TABLE t%04d IS '%s';\n", i, i, strings.Repeat("described at length ", 10))
		}
		ev, err := events.New(fmt.Sprintf("big-%d", b+1), "big", time.Now(), &events.Migration{Seq: int64(b + 1), SQL: ddl.String()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.cli.Publish(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 20*time.Second, "catalog of big", func() bool {
		c := r.cats.Catalog("big")
		return c != nil && c.Version == batches
	})
	_, err := r.cli.Tables(context.Background(), &events.TablesRequest{Database: "big", Limit: 5000})
	if !errors.Is(err, &events.Error{Code: events.CodeTooLarge}) || !strings.Contains(err.Error(), "max_payload (65536 bytes)") {
		t.Fatalf("got %v, want too_large naming max_payload", err)
	}
	if _, err := r.cli.Tables(context.Background(), &events.TablesRequest{Database: "big", Limit: 100}); err != nil {
		t.Fatalf("a smaller page: %v", err)
	}
}

// TestBusyOnlyAtTheLimit: callers that keep exactly MaxConcurrent
// requests in flight, or exactly one database's share of them, each
// sending the next on the reply, never see busy. The slots used to be
// given back only after the reply was sent, so a fast caller could find
// one still taken.
func TestBusyOnlyAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		max, perDB int
		callers    int
	}{
		{"the daemon's limit", 64, 64, 64},
		{"a database's share", 64, 16, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			cfg := daemon.DefaultConfig
			cfg.MaxConcurrent, cfg.MaxConcurrentPerDatabase = tc.max, tc.perDB
			r.daemon(cfg, nil)
			r.publishShop()
			var busy, other atomic.Int64
			var wg sync.WaitGroup
			for range tc.callers {
				// A connection of its own, as a caller has: replies reach
				// it without waiting behind the daemon's own traffic.
				cli, err := client.New(testenv.Connect(t, r.ns))
				if err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 50 {
						_, err := cli.Tables(context.Background(), &events.TablesRequest{Database: "shop"})
						switch {
						case errors.Is(err, &events.Error{Code: events.CodeBusy}):
							busy.Add(1)
						case err != nil:
							other.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if busy.Load() != 0 || other.Load() != 0 {
				t.Errorf("%d busy and %d other errors of %d requests at exactly the limit", busy.Load(), other.Load(), 50*tc.callers)
			}
		})
	}
}

// TestOneDatabaseCannotTakeTheDaemon: a team whose asks are slow (the
// model is writing) takes the free slots past its database's share only
// while more than a share stays free; then its own requests are busy,
// naming the database, and another team's are served. Before, 64 slow
// asks of one team made every other team's request busy.
func TestOneDatabaseCannotTakeTheDaemon(t *testing.T) {
	r := newRig(t)
	gate := make(chan struct{})
	cfg := daemon.DefaultConfig
	cfg.MaxConcurrent = 8 // a share of 2: shop may hold 6 while others want none
	cr := r.daemon(cfg, func(c *countingRetriever) { c.gate = gate })
	r.publishShop()
	ctx := context.Background()
	ev, err := events.New("other-1", "other", time.Now(), &events.Migration{Seq: 1, Source: "0001.sql", SQL: "CREATE TABLE ledger (id int);"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.Publish(ctx, ev); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "other applied", func() bool { c := r.cats.Catalog("other"); return c != nil && c.Version == 1 })

	const held = 6
	done := make(chan error, held)
	for range held {
		go func() {
			_, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"})
			done <- err
		}()
	}
	testenv.Eventually(t, 5*time.Second, "shop's searches in flight", func() bool { return cr.calls.Load() == held })
	// Bounded: without the share, it would wait at the gate with the others.
	pastShare, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = r.cli.Search(pastShare, &events.SearchRequest{Database: "shop", Question: "orders"})
	if !errors.Is(err, &events.Error{Code: events.CodeBusy}) || !strings.Contains(err.Error(), `database "shop" has 2 or more requests running`) {
		t.Errorf("shop past its share: %v, want busy naming it", err)
	}
	for range 5 {
		if _, err := r.cli.Tables(ctx, &events.TablesRequest{Database: "other"}); err != nil {
			t.Errorf("other while shop holds six slots: %v", err)
		}
	}
	close(gate)
	for range held {
		if err := <-done; err != nil {
			t.Errorf("shop's held search: %v", err)
		}
	}
	if _, err := r.cli.Search(ctx, &events.SearchRequest{Database: "shop", Question: "orders"}); err != nil {
		t.Errorf("shop once its searches are done: %v", err)
	}
}

// TestPerDatabaseSubjects: every endpoint also answers on
// schemaq.<endpoint>.<db>, which NATS permissions can grant database by
// database. The body may leave the database out; one that names another
// is refused.
func TestPerDatabaseSubjects(t *testing.T) {
	r := newRig(t)
	r.daemon(daemon.DefaultConfig, nil)
	r.publishShop()
	tests := []struct {
		subject, body, want string // want: a substring of the reply
	}{
		{"schemaq.search.shop", `{"question":"orders per customer"}`, `"name":"public.orders"`},
		{"schemaq.search.shop", `{"database":"shop","question":"orders"}`, `"name":"public.orders"`},
		{"schemaq.tables.shop", `{}`, `"database":"shop"`},
		{"schemaq.ask.shop", `{"question":"How many orders?"}`, `"database":"shop"`},
		{"schemaq.search.shop", `{"database":"other","question":"orders"}`, `the request came on schemaq.search.shop, the subject of database \"shop\"`},
		{"schemaq.tables.Shop", `{}`, `not a valid database name`},
		{"schemaq.tables.other", `{}`, `"code":"unknown_database"`},
	}
	for _, tc := range tests {
		t.Run(tc.subject+" "+tc.body, func(t *testing.T) {
			msg, err := r.nc.Request(tc.subject, []byte(tc.body), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(msg.Data), tc.want) {
				t.Errorf("reply %.400s, want %s", msg.Data, tc.want)
			}
		})
	}
	// The Go client uses them: a search arrives on the database's subject.
	sub, err := r.nc.SubscribeSync("schemaq.search.shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.cli.Search(context.Background(), &events.SearchRequest{Database: "shop", Question: "orders"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(time.Second); err != nil {
		t.Errorf("the client's search did not go to schemaq.search.shop: %v", err)
	}
}
