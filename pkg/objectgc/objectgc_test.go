package objectgc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/catalogkv"
	"github.com/schemaq/schemaq/pkg/objectgc"
	"github.com/schemaq/schemaq/pkg/streams"
	"github.com/schemaq/schemaq/pkg/testenv"
)

type fixture struct {
	ctx  context.Context
	js   jetstream.JetStream
	obj  jetstream.ObjectStore
	kv   jetstream.KeyValue
	cats *catalogkv.Store
}

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	js, err := jetstream.New(testenv.Connect(t, testenv.NATS(t)))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := streams.Ensure(ctx, js, streams.DefaultConfig)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := streams.Objects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{ctx: ctx, js: js, obj: obj, kv: kv, cats: catalogkv.New(kv, catalogkv.WithObjects(obj))}
}

func (f *fixture) put(t *testing.T, name string) {
	t.Helper()
	if _, err := f.obj.PutBytes(f.ctx, name, []byte("-- the SQL of "+name)); err != nil {
		t.Fatal(err)
	}
}

// event publishes on subject a migration of db at seq whose SQL is object
// name ("" for inline SQL); extra is spliced into its data, as a newer
// publisher's fields would be.
func (f *fixture) event(t *testing.T, subject, db string, seq int64, name, extra string) {
	t.Helper()
	ref := ""
	if name != "" {
		ref = fmt.Sprintf(`,"sql_object":{"name":%q,"size":20,"gzip":true,"checksum":"00"}`, name)
	} else {
		ref = fmt.Sprintf(`,"sql":"CREATE TABLE t%d (id int);"`, seq)
	}
	data := fmt.Sprintf(`{"spec":1,"type":"schema.migration","id":"%s-%d-%s","database":%q,"data":{"seq":%d%s%s}}`,
		db, seq, strings.ReplaceAll(name, "/", "_"), db, seq, ref, extra)
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	if _, err := f.js.PublishMsg(f.ctx, m); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) names(t *testing.T) []string {
	t.Helper()
	list, err := f.obj.List(f.ctx)
	if err != nil && err != jetstream.ErrNoObjectsFound {
		t.Fatal(err)
	}
	var names []string
	for _, o := range list {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	return names
}

// bigCatalog encodes to more than an entry holds, so it is kept as an
// object: random names do not compress away.
func bigCatalog(t *testing.T, db string, version int64) *catalog.Catalog {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(version), 3))
	var b strings.Builder
	for i := range 9_000 {
		fmt.Fprintf(&b, "CREATE TABLE t_%x_%d (id bigint PRIMARY KEY", rng.Uint64(), i)
		for range 8 {
			fmt.Fprintf(&b, ", c_%x text", rng.Uint64())
		}
		b.WriteString(");\n")
	}
	c, err := catalog.Snapshot(db, "big.sql", b.String())
	if err != nil {
		t.Fatal(err)
	}
	c.Version = version
	return c
}

// TestSweep lays out every case an object of the store can be in, then
// sweeps dry, for real, and again: what is needed stays, what nothing
// will read goes, and each removal says why.
func TestSweep(t *testing.T) {
	f := setup(t)
	shop := catalog.New("shop")
	shop.Version = 2
	if _, err := f.cats.Put(f.ctx, shop, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cats.Put(f.ctx, bigCatalog(t, "big", 7), 0); err != nil {
		t.Fatal(err)
	}
	current, err := f.cats.Object(f.ctx, "big")
	if err != nil || !strings.HasPrefix(current, "catalogs/big/7-") {
		t.Fatalf("the big catalog's object: %q %v", current, err)
	}
	// A long history before the events that matter, so that reading the
	// stream has to page.
	for seq := range int64(600) {
		f.event(t, events.SchemaSubject("shop"), "shop", seq+1, "", "")
	}
	cases := []struct {
		name string
		// what references it
		stream, letter bool
		db             string
		seq            int64
		extra          string
		keep           bool
		why            string
	}{
		{name: "events/shop/applied", stream: true, db: "shop", seq: 2, why: "applied or passed: the catalog is at version 2"},
		{name: "events/shop/passed", stream: true, db: "shop", seq: 1, why: "applied or passed"},
		{name: "events/shop/waiting", stream: true, db: "shop", seq: 4, keep: true},
		{name: "events/shop/newer-publisher", stream: true, db: "shop", seq: 5, extra: `,"sql_dialect":"postgres"`, keep: true},
		{name: "events/shop/lettered", letter: true, db: "shop", seq: 3, keep: true},
		{name: "events/shop/lettered-applied", stream: true, letter: true, db: "shop", seq: 1, keep: true},
		{name: "events/shop/never-published", db: "shop", why: "no event in the stream or the dead letters names it"},
		{name: "events/new/first", stream: true, db: "new", seq: 1, keep: true},
		{name: "events/gone/aged-out", db: "gone", why: "no event in the stream"},
		{name: "catalogs/big/3-stale", why: "a catalog replaced since"},
		{name: "catalogs/dropped/1-x", why: "a catalog replaced since"},
		{name: "backups/not-ours", keep: true},
	}
	for _, c := range cases {
		f.put(t, c.name)
		if c.stream {
			f.event(t, events.SchemaSubject(c.db), c.db, c.seq, c.name, c.extra)
		}
		if c.letter {
			f.event(t, events.DeadLetterSubject(c.db), c.db, c.seq, c.name, "")
		}
	}
	before := f.names(t)

	log := zaptest.NewLogger(t)
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	reg := prometheus.NewRegistry()
	m := objectgc.NewMetrics(reg)
	dry, err := objectgc.New(f.js, f.cats, log, objectgc.Config{Grace: time.Hour, DryRun: true}, objectgc.WithMetrics(m), objectgc.WithClock(later))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := dry.Once(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.names(t); !slices.Equal(got, before) {
		t.Fatalf("a dry run deleted objects:\nbefore %v\nafter  %v", before, got)
	}
	removed := map[string]string{}
	for _, r := range rep.Removed {
		removed[r.Name] = r.Why
	}
	for _, c := range cases {
		why, gone := removed[c.name]
		switch {
		case c.keep && gone:
			t.Errorf("%s: would be removed (%s), but it is needed", c.name, why)
		case !c.keep && !gone:
			t.Errorf("%s: would be kept, but nothing reads it", c.name)
		case !c.keep && !strings.Contains(why, c.why):
			t.Errorf("%s: removed because %q, want %q", c.name, why, c.why)
		}
	}
	if len(rep.Removed) != len(removed) || rep.Objects != len(before) || rep.Young != 0 || len(rep.Skipped) != 0 {
		t.Errorf("report: %+v", rep)
	}
	if got := swept(t, reg, "event"); got != 0 {
		t.Errorf("a dry run counted %v objects swept", got)
	}

	// Objects younger than the grace are not looked at.
	young, err := objectgc.New(f.js, f.cats, log, objectgc.Config{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := young.Once(f.ctx); err != nil || len(rep.Removed) != 0 || rep.Young != len(before)-1 {
		t.Fatalf("sweep within the grace: %+v %v", rep, err)
	}

	s, err := objectgc.New(f.js, f.cats, log, objectgc.Config{Grace: time.Hour}, objectgc.WithMetrics(m), objectgc.WithClock(later))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Once(f.ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range cases {
		if c.keep {
			want = append(want, c.name)
		}
	}
	want = append(want, current)
	slices.Sort(want)
	if got := f.names(t); !slices.Equal(got, want) {
		t.Errorf("objects after the sweep:\n got  %v\n want %v", got, want)
	}
	if got := swept(t, reg, "event"); got != 4 {
		t.Errorf("event objects swept: %v, want 4", got)
	}
	if got := swept(t, reg, "catalog"); got != 2 {
		t.Errorf("catalog objects swept: %v, want 2", got)
	}
	// The big catalog still reads, from its object.
	if c, _, err := catalogkv.New(f.kv, catalogkv.WithObjects(f.obj)).Get(f.ctx, "big"); err != nil || len(c.Tables()) != 9_000 {
		t.Errorf("the big catalog after the sweep: %v", err)
	}
	rep, err = s.Once(f.ctx)
	if err != nil || len(rep.Removed) != 0 {
		t.Errorf("a second sweep: %+v %v", rep, err)
	}
}

// swept reads schemaq_objects_swept_total{kind} from reg.
func swept(t *testing.T, reg *prometheus.Registry, kind string) float64 {
	t.Helper()
	return counter(t, reg, "schemaq_objects_swept_total", "kind", kind)
}

// counter reads the counter name{label="value"} from reg.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestTurns runs replicas' sweeps on one clock and checks that they take
// turns: none sweeps within nine tenths of an interval of the last
// sweep, the one that swept last keeps the turn at its next tick, and of
// replicas that try at once only one sweeps.
func TestTurns(t *testing.T) {
	f := setup(t)
	turns, err := streams.Sweeps(f.ctx, f.js)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := start
	at := func(d time.Duration) { mu.Lock(); now = start.Add(d); mu.Unlock() }
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cfg := objectgc.Config{Every: time.Hour, Grace: time.Hour}
	reg := prometheus.NewRegistry()
	m := objectgc.NewMetrics(reg)
	replica := func(name string) *objectgc.Collector {
		s, err := objectgc.New(f.js, f.cats, zaptest.NewLogger(t), cfg, objectgc.WithClock(clock), objectgc.WithMetrics(m), objectgc.WithTurns(turns, name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := replica("a"), replica("b")
	steps := []struct {
		at    time.Duration
		who   string
		sweep bool
	}{
		{0, "a", true},                               // nobody has swept
		{10 * time.Minute, "b", false},               // a did, 10 minutes ago
		{53 * time.Minute, "b", false},               // still under 54 minutes
		{59 * time.Minute, "a", true},                // a keeps its turn
		{60 * time.Minute, "b", false},               // a swept a minute ago
		{59*time.Minute + 55*time.Minute, "b", true}, // a has stopped: b takes over
		{119 * time.Minute, "a", false},              // a is back; b swept 5 minutes ago
		{170 * time.Minute, "b", true},
	}
	for _, st := range steps {
		at(st.at)
		s := a
		if st.who == "b" {
			s = b
		}
		rep, err := s.Tick(f.ctx)
		if err != nil {
			t.Fatalf("%s at %v: %v", st.who, st.at, err)
		}
		if got := rep != nil; got != st.sweep {
			t.Errorf("%s at %v swept: %v, want %v", st.who, st.at, got, st.sweep)
		}
	}
	if got := counter(t, reg, "schemaq_object_sweeps_total", "result", "not_our_turn"); got != 4 {
		t.Errorf("sweeps not taken counted %v times, want 4", got)
	}
	if got := counter(t, reg, "schemaq_object_sweeps_total", "result", "ok"); got != 4 {
		t.Errorf("sweeps counted %v times, want 4", got)
	}

	// Replicas that try at once, long after the last turn: one sweeps.
	at(10 * time.Hour)
	var wg sync.WaitGroup
	var swept, failed atomic.Int32
	for i := range 8 {
		s := replica(fmt.Sprintf("r%d", i))
		wg.Go(func() {
			rep, err := s.Tick(f.ctx)
			if err != nil {
				t.Error(err)
				failed.Add(1)
			}
			if rep != nil {
				swept.Add(1)
			}
		})
	}
	wg.Wait()
	if swept.Load() != 1 || failed.Load() != 0 {
		t.Errorf("of 8 replicas at once, %d swept, want 1", swept.Load())
	}

	// A turn that does not decode is nobody's.
	if _, err := turns.Put(f.ctx, "last", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if rep, err := b.Tick(f.ctx); rep == nil || err != nil {
		t.Errorf("after an unreadable turn: %v %v, want a sweep", rep, err)
	}
}

// TestTickWithoutTurns checks that without turns every Tick sweeps.
func TestTickWithoutTurns(t *testing.T) {
	f := setup(t)
	s, err := objectgc.New(f.js, f.cats, zaptest.NewLogger(t), objectgc.Config{Every: time.Hour, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if rep, err := s.Tick(f.ctx); rep == nil || err != nil {
			t.Errorf("Tick without turns: %v %v, want a sweep", rep, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  objectgc.Config
		want string
	}{
		{"no grace", objectgc.Config{Every: time.Hour}, "grace"},
		{"negative interval", objectgc.Config{Every: -time.Second, Grace: time.Hour}, "negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := objectgc.New(nil, nil, nil, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New(%+v): %v, want an error naming %q", c.cfg, err, c.want)
			}
		})
	}
}
