package redisearch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/testenv"
)

// holdsLease waits until s holds its lease, as a daemon does a moment
// after its first search.
func holdsLease(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !s.watch.held() {
		if time.Now().After(deadline) {
			t.Fatal("no lease after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *watch) held() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Before(w.leaseEnd)
}

// hmgets is how many HMGETs the server has served since its stats were
// reset: generation checks, chunk reads.
func hmgets(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_hmget:calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// tableNames searches db in s as the next request would and returns the
// tables it finds.
func tableNames(t *testing.T, s *Store, db string) []string {
	t.Helper()
	ctx := context.Background()
	v, err := s.PinSpeculative(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := v.(index.Confirmer); ok {
		current, err := c.Confirm(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !current {
			if v, err = s.Pin(ctx, db); err != nil {
				t.Fatal(err)
			}
		}
	}
	hits, err := v.SearchText(ctx, index.TextQuery{Filter: index.Filter{Database: db}, Terms: []string{"id"}, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Chunk.Name)
	}
	return out
}

// While a reader holds its lease its searches cost no round trip, and
// still every search that starts after a write returned finds it: the
// write waited for the reader to learn of it. Without a lease, each
// search checks.
func TestLeaseServesWithoutChecksAndReadsYourWrites(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lease time.Duration
	}{{"lease", 0}, {"no lease", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.StartRedis(t)
			writer := inMemory(t, srv.Client(), "t:", dim)
			rdb := srv.Client()
			reader := inMemory(t, rdb, "t:", dim)
			reader.opt.Lease = tc.lease
			if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
				t.Fatal(err)
			}
			tableNames(t, reader, "shop")
			if tc.lease >= 0 {
				holdsLease(t, reader)
			}
			const searches = 200
			var checks int
			// A machine too busy to answer a PING within a quarter lease
			// ends the lease (as it should) and the searches check: such a
			// round is measured again.
			for round := 0; round < 3; round++ {
				lapses := reader.LeaseStats().Lapses
				before := hmgets(t, rdb)
				for range searches {
					tableNames(t, reader, "shop")
				}
				checks = hmgets(t, rdb) - before
				if reader.LeaseStats().Lapses == lapses {
					break
				}
				holdsLease(t, reader)
			}
			if tc.lease >= 0 && checks > searches/10 {
				t.Errorf("%d searches under a lease made %d generation checks", searches, checks)
			}
			if tc.lease < 0 && checks < searches {
				t.Errorf("%d searches without a lease made %d generation checks", searches, checks)
			}
			for i := range 100 {
				name := fmt.Sprintf("public.t%03d", i)
				if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, name, 1, nil)}); err != nil {
					t.Fatal(err)
				}
				if got := tableNames(t, reader, "shop"); !slices.Contains(got, name) {
					t.Fatalf("a search right after %s was written does not find it (%d tables)", name, len(got))
				}
			}
			if err := writer.Delete(ctx, "shop", []string{rec("shop", chunk.KindTable, "public.t000", 1, nil).ID}); err != nil {
				t.Fatal(err)
			}
			if got := tableNames(t, reader, "shop"); slices.Contains(got, "public.t000") {
				t.Error("a search right after a delete still finds the table")
			}
			if st := writer.LeaseStats(); st.Announcements < 102 || st.Waited <= 0 || st.Held {
				t.Errorf("the writer's figures: %+v; want 102 announcements or more, their time, no lease", st)
			}
			if st := reader.LeaseStats(); tc.lease < 0 && (st.Held || st.Lapses != 0) {
				t.Errorf("the figures of a reader without a lease: %+v", st)
			}
		})
	}
}

// Several readers, several writers, searches running while writes
// arrive: each write returns only once every reader knows of it, and a
// reader's subscription killed again and again (a network cut, a
// failover) costs a lapse of its lease, never a stale answer.
func TestLeaseHoldsUnderConcurrentWritesAndLostSubscriptions(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	admin := srv.Client()
	var readers []*Store
	for range 3 {
		readers = append(readers, inMemory(t, srv.Client(), "t:", dim))
	}
	writers := []*Store{inMemory(t, srv.Client(), "t:", dim), inMemory(t, srv.Client(), "t:", dim)}
	if _, err := writers[0].Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil), rec("hr", chunk.KindTable, "public.staff", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	for _, r := range readers {
		tableNames(t, r, "shop")
		tableNames(t, r, "hr")
		holdsLease(t, r)
	}
	stop := make(chan struct{})
	var background sync.WaitGroup
	background.Add(2)
	go func() { // searches that race the writes, as other requests do
		defer background.Done()
		for {
			select {
			case <-stop:
				return
			default:
				for _, r := range readers {
					if _, err := r.Pin(ctx, "hr"); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}
	}()
	go func() { // cut every subscription now and then
		defer background.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
				if err := admin.ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	errs := make(chan error, len(writers))
	for wi, w := range writers {
		db := []string{"shop", "hr"}[wi]
		go func() {
			for i := range 60 {
				name := fmt.Sprintf("public.w%d_%03d", wi, i)
				if _, err := w.Upsert(ctx, []index.Record{rec(db, chunk.KindTable, name, 1, nil)}); err != nil {
					errs <- err
					return
				}
				for ri, r := range readers {
					if got := tableNames(t, r, db); !slices.Contains(got, name) {
						errs <- fmt.Errorf("reader %d: a search right after %s was written to %s does not find it", ri, name, db)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(stop)
	background.Wait()
	for i, r := range readers {
		holdsLease(t, r) // and it comes back
		if st := r.LeaseStats(); st.Lapses == 0 {
			t.Errorf("reader %d counted no lapse though its subscription was cut: %+v", i, st)
		}
	}
}

// A reader that dies without deregistering holds writes until its lease
// lapses by Redis's clock, then no more: the next write does not wait.
// One that closes deregisters, and holds nothing.
func TestWritesWaitForADeadReaderOnlyUntilItsLeaseLapses(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	rdb := srv.Client()
	writer := inMemory(t, rdb, "t:", dim)
	reader := inMemory(t, srv.Client(), "t:", dim)
	reader.opt.Lease = 400 * time.Millisecond
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	tableNames(t, reader, "shop")
	holdsLease(t, reader)
	reader.watch.stop() // dead: no renewals, no acknowledgements, still registered
	<-reader.watch.done
	if n := rdb.ZCard(ctx, writer.readersKey()).Val(); n != 1 {
		t.Fatalf("%d readers registered, want the dead one", n)
	}
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.refunds", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, writer.readersKey()).Val(); n != 0 {
		t.Errorf("%d readers registered after the dead one's lease lapsed, want none", n)
	}
	if reader.watch.held() {
		t.Error("the dead reader believes it still holds its lease")
	}

	other := inMemory(t, srv.Client(), "t:", dim)
	tableNames(t, other, "shop")
	holdsLease(t, other)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, writer.readersKey()).Val(); n != 0 {
		t.Errorf("%d readers registered after Close, want none", n)
	}
}

// With Redis gone the subscription fails, the lease lapses at once, and
// a search fails as the store being unavailable rather than answer from
// a snapshot nothing vouches for.
func TestLeaseLapsesWithRedisDown(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	s := inMemory(t, srv.Client(), "t:", dim)
	if _, err := s.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	tableNames(t, s, "shop")
	holdsLease(t, s)
	srv.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for s.watch.held() {
		if time.Now().After(deadline) {
			t.Fatal("the lease still holds 10 s after Redis stopped")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.Pin(ctx, "shop"); !errors.Is(err, index.ErrUnavailable) {
		t.Errorf("Pin with Redis down: %v, want ErrUnavailable", err)
	}
	if st := s.LeaseStats(); st.Held || st.Lapses != 1 {
		t.Errorf("figures with Redis down: %+v, want one lapse and no lease", st)
	}
}

// Writes that were never announced are found by the renewal's look at
// the generations (their writer died before announcing), unless the
// database's projection lock is held: a projection of more than
// atomicChanges chunks lands in batches and announces itself at the
// end, and a daemon holding its lease sees it whole.
func TestUnannouncedWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		locked bool
	}{{"writer died: found by the renewal", false}, {"projection under way: seen whole", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := testenv.StartRedis(t)
			writer := inMemory(t, srv.Client(), "t:", dim)
			reader := inMemory(t, srv.Client(), "t:", dim)
			reader.opt.Lease = 200 * time.Millisecond
			if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
				t.Fatal(err)
			}
			tableNames(t, reader, "shop")
			holdsLease(t, reader)
			tableNames(t, reader, "shop") // checked under the lease
			release := func() {}
			if tc.locked {
				var err error
				if release, err = writer.lock(ctx, "shop"); err != nil {
					t.Fatal(err)
				}
			}
			var recs []index.Record
			for i := range 2 * atomicChanges {
				recs = append(recs, rec("shop", chunk.KindTable, fmt.Sprintf("public.t%03d", i), 1, nil))
			}
			if _, err := writer.upsert(ctx, recs); err != nil { // no announcement
				t.Fatal(err)
			}
			time.Sleep(3 * reader.lease() / 4) // three renewals
			got := len(tableNames(t, reader, "shop"))
			switch {
			case tc.locked && got != 1:
				t.Errorf("under the projection lock a search saw %d tables, want the snapshot before it (1)", got)
			case !tc.locked && got != len(recs)+1:
				t.Errorf("three renewals after an unannounced write a search saw %d tables, want %d", got, len(recs)+1)
			}
			release()
			if err := writer.announce(ctx, true, []string{"shop"}); err != nil {
				t.Fatal(err)
			}
			if got := len(tableNames(t, reader, "shop")); got != len(recs)+1 {
				t.Errorf("after the announcement a search saw %d tables, want %d", got, len(recs)+1)
			}
		})
	}
}

// Redis restarted empty (no persistence) numbers announcements from 1
// again, below what every daemon acknowledged before: writes must wait
// for the daemons again, and find them, rather than take an old
// acknowledgement for a new one or hang on one that never comes.
func TestLeaseAfterRedisRestartsEmpty(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	writer := inMemory(t, srv.Client(), "t:", dim)
	reader := inMemory(t, srv.Client(), "t:", dim)
	write := func(name string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := writer.Upsert(wctx, []index.Record{rec("shop", chunk.KindTable, name, 1, nil)}); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		if got := tableNames(t, reader, "shop"); !slices.Contains(got, name) {
			t.Fatalf("a search right after %s was written does not find it: %v", name, got)
		}
	}
	write("public.orders")
	holdsLease(t, reader)
	for i := range 50 { // the counter well above where it starts again
		write(fmt.Sprintf("public.before%02d", i))
	}
	srv.Stop()
	srv.Start()
	if err := srv.Client().HSet(ctx, writer.metaKey(), "current", 1, "spec:1", writer.spec).Err(); err != nil {
		t.Fatal(err)
	}
	holdsLease(t, reader)
	for i := range 20 {
		write(fmt.Sprintf("public.after%02d", i))
	}
}

// silencer is a TCP proxy to Redis that can silence the connections
// that subscribed: they stay open and deliver nothing either way, as a
// connection through a dead NAT entry or to a hung peer does.
type silencer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]*proxied // by the client's side
}

type proxied struct{ subscribed, silent bool }

func newSilencer(t *testing.T, target string) *silencer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silencer{ln: ln, conns: map[net.Conn]*proxied{}}
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c] = &proxied{}
			open = append(open, c, up)
			p.mu.Unlock()
			go p.pipe(c, up, c, true)
			go p.pipe(up, c, c, false)
		}
	}()
	return p
}

func (p *silencer) addr() string { return p.ln.Addr().String() }

// pipe copies src to dst; client is the connection's client side. A
// SUBSCRIBE from the client marks the connection as a subscription.
func (p *silencer) pipe(src, dst, client net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		p.mu.Lock()
		st := p.conns[client]
		if fromClient && bytes.Contains(bytes.ToLower(buf[:n]), []byte("subscribe")) {
			st.subscribed = true
		}
		drop := st.silent
		p.mu.Unlock()
		if drop {
			continue
		}
		if _, err := dst.Write(buf[:n]); err != nil {
			src.Close()
			return
		}
	}
}

// silence silences the subscriptions open now; later ones pass.
func (p *silencer) silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, st := range p.conns {
		if st.subscribed {
			st.silent = true
		}
	}
}

// A subscription that goes silent without an error (no RST, no FIN)
// loses announcements unnoticed by the connection. The daemon's PINGs
// through it go unanswered, so it stops renewing; its lease lapses
// before Redis's record of it, writes stop waiting for it then, and its
// searches check again, so a search right after a write still finds
// it. It then subscribes anew and holds its lease again.
func TestLeaseLapsesWhenTheSubscriptionFallsSilent(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	proxy := newSilencer(t, srv.Addr())
	writer := inMemory(t, srv.Client(), "t:", dim)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), DisableIdentity: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	reader := inMemory(t, rdb, "t:", dim)
	reader.opt.Lease = 400 * time.Millisecond
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.orders", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	tableNames(t, reader, "shop")
	holdsLease(t, reader)
	proxy.silence()
	for i := range 3 {
		name := fmt.Sprintf("public.t%d", i)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := writer.Upsert(wctx, []index.Record{rec("shop", chunk.KindTable, name, 1, nil)})
		cancel()
		if err != nil {
			t.Fatalf("write %s with a silent subscription: %v", name, err)
		}
		if got := tableNames(t, reader, "shop"); !slices.Contains(got, name) {
			t.Fatalf("a search right after %s was written, the subscription silent, does not find it: %v", name, got)
		}
	}
	if st := reader.LeaseStats(); st.Lapses == 0 {
		t.Errorf("no lapse counted: %+v", st)
	}
	holdsLease(t, reader) // on a new subscription
	if _, err := writer.Upsert(ctx, []index.Record{rec("shop", chunk.KindTable, "public.last", 1, nil)}); err != nil {
		t.Fatal(err)
	}
	if got := tableNames(t, reader, "shop"); !slices.Contains(got, "public.last") {
		t.Errorf("under the new lease a search does not find the last write: %v", got)
	}
}
