package workers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/streams"
)

// Lanes. A consumer delivers in stream order, so a database that
// publishes thousands of events of one kind held every other database's
// events of that kind back until its own were applied: one team's
// thousand migrations, each allowed a second or two of interpreter time,
// stalled every other team's migrations for as long.
//
// When a database's queue on this worker holds LaneAt events, its later
// events of that kind move to a lane: a durable consumer of that
// database's subjects alone, starting at the event that found the queue
// full. The worker consumer then acknowledges that database's events from
// the lane's start on without applying them, at the speed of an ack, and
// reaches the other databases' events behind them; every worker consumes
// the lanes into the same queues, so the database's events are applied
// at its own pace, in order, as before. An event may be applied by both
// paths, which changes nothing (the same rules as a redelivery: a
// migration at or below the catalog's version is a duplicate, a doc's
// sections carry their stream sequence).
//
// A lane is retired once it has had nothing pending for LaneQuiet, and no
// event may be lost on the way. The worker consumer leaves an event to a
// lane only on the lane's info read at most laneTimes.fresh before, and
// only while the lane is not sealed. Retiring is three steps, each taken
// by whichever worker comes to it (a worker that dies midway leaves the
// next step to the others):
//
//  1. Seal: the worker consumers keep the database's new events again.
//  2. laneTimes.seal later, longer than fresh, every event that any
//     worker left to the lane on an info read before the seal is in the
//     stream: the stream's last sequence then is the lane's horizon.
//  3. Once the lane has applied everything up to its horizon, it is
//     closed: no worker reads it any more, and the server deletes it
//     laneTimes.close later (a worker's delete by name could remove a
//     new lane of the same database). What it holds past the horizon the
//     worker consumers hold as well.
//
// Lanes are bounded by MaxLanes per consumer: past that, a flooding
// database's events stay in line, as before.

// laneTimes are the lanes' clocks; tests shorten them.
type laneTimes struct {
	// fresh is how old a lane's info may be when a worker consumer leaves
	// an event to it.
	fresh time.Duration
	// seal is how long after its seal a lane's horizon is set: longer
	// than fresh (see above).
	seal time.Duration
	// tick is how often lanes are listed, consumed and tended.
	tick time.Duration
	// close is how long a closing lane stays unread before the server
	// deletes it.
	close time.Duration
}

var defaultLaneTimes = laneTimes{fresh: time.Second, seal: 5 * time.Second, tick: time.Second, close: 5 * time.Second}

// laneView is what a worker last read of a lane.
type laneView struct {
	lane streams.Lane
	ok   bool      // a lane exists
	read time.Time // when the read began
}

// takes reports whether the lane delivers the event at stream sequence
// seq, so that a worker consumer may leave it there: the lane exists, is
// not sealed, starts at or before seq, and this was read at most fresh
// before now.
func (v laneView) takes(seq uint64, now time.Time, fresh time.Duration) bool {
	return v.ok && !v.lane.Sealed && seq >= v.lane.Start && now.Sub(v.read) <= fresh
}

// lanes are a worker's lanes: what it read of them, the ones it
// consumes, and its notes for retiring them.
type lanes struct {
	mu       sync.Mutex
	closed   bool // the worker is stopping: no lane starts
	views    map[string]laneView
	running  map[string]jetstream.ConsumeContext
	quiet    map[string]time.Time // since when a lane had nothing pending
	sealSeen map[string]time.Time // when this worker first saw it sealed
}

func newLanes() *lanes {
	return &lanes{views: map[string]laneView{}, running: map[string]jetstream.ConsumeContext{},
		quiet: map[string]time.Time{}, sealSeen: map[string]time.Time{}}
}

func (ls *lanes) remember(v laneView) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.views[v.lane.Name] = v
}

// known reports whether the worker has seen the lane named name open.
func (ls *lanes) known(name string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.views[name].ok
}

// forget drops a retired lane, returning its consumption to stop.
func (ls *lanes) forget(name string) jetstream.ConsumeContext {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	cc := ls.running[name]
	delete(ls.views, name)
	delete(ls.running, name)
	delete(ls.quiet, name)
	delete(ls.sealSeen, name)
	return cc
}

// count is how many lanes beside the consumer named of this worker runs.
func (ls *lanes) count(of string) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for name := range ls.running {
		if strings.HasPrefix(name, streams.LaneName(of, "")) {
			n++
		}
	}
	return n
}

// stop ends every lane's consumption for the worker's shutdown, and
// returns them to drain.
func (ls *lanes) stop() []jetstream.ConsumeContext {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closed = true
	var out []jetstream.ConsumeContext
	for _, cc := range ls.running {
		out = append(out, cc)
	}
	return out
}

// arrive takes an event from a worker consumer: to its lane when its
// database floods, to its database's queue otherwise.
func (w *Worker) arrive(ctx, work context.Context, msg jetstream.Msg) {
	if w.divert(ctx, work, msg) {
		return
	}
	w.enqueue(ctx, work, msg, 1)
}

// divert acknowledges msg unapplied when its database's lane, fresh and
// unsealed, delivers it; it opens the lane when the database's queue is
// full. While a lane is open, every later event of its database goes
// there, not only those that find the queue full, so that docs and
// examples keep one path, in stream order.
func (w *Worker) divert(ctx, work context.Context, msg jetstream.Msg) bool {
	if w.cfg.LaneAt <= 0 {
		return false
	}
	db := subjectDB(msg.Subject())
	of := w.consumerOf(msg.Subject())
	full := w.queueFull(db)
	if !full && !w.lanes.known(streams.LaneName(of, db)) {
		return false
	}
	meta, err := msg.Metadata()
	if err != nil {
		return false
	}
	seq := meta.Sequence.Stream
	if !w.laneFor(ctx, work, of, db, seq, full).takes(seq, time.Now(), w.laneTimes.fresh) {
		return false
	}
	if err := msg.Ack(); err != nil {
		return false // applied here, then
	}
	if w.m != nil {
		w.m.diverted.Inc()
	}
	return true
}

// laneFor is db's lane beside the consumer named of, opened from seq on
// when there is none and the database's queue is full.
func (w *Worker) laneFor(ctx, work context.Context, of, db string, seq uint64, full bool) laneView {
	v := w.laneView(ctx, of, db)
	if !v.ok && full && events.ValidateDatabase(db) == nil { // a lane's name is made of it
		v = w.openLane(ctx, work, of, db, seq)
	}
	return v
}

// consumerOf names the worker consumer that delivers subject.
func (w *Worker) consumerOf(subject string) string {
	if strings.HasPrefix(subject, events.SchemaSubject("")) {
		return w.cfg.Consumer.SchemaName()
	}
	return w.cfg.Consumer.DocsName()
}

// queueFull reports whether db's queue holds LaneAt events, or an
// eighth of MaxHeldBytes: its later events go to a lane.
func (w *Worker) queueFull(db string) bool {
	w.qmu.Lock()
	defer w.qmu.Unlock()
	q := w.queues[db]
	if q == nil {
		return false
	}
	return len(q.items)+len(q.incoming) >= w.cfg.LaneAt || (w.cfg.MaxHeldBytes > 0 && q.bytes.Load() >= w.cfg.MaxHeldBytes/8)
}

// laneView returns db's lane beside the consumer named of, read again
// when what the worker has is older than half of fresh.
func (w *Worker) laneView(ctx context.Context, of, db string) laneView {
	name := streams.LaneName(of, db)
	w.lanes.mu.Lock()
	v, ok := w.lanes.views[name]
	w.lanes.mu.Unlock()
	if ok && time.Since(v.read) < w.laneTimes.fresh/2 {
		return v
	}
	read := time.Now()
	c, err := w.js.Consumer(ctx, events.Stream, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		v = laneView{lane: streams.Lane{Name: name}, read: read}
	case err != nil:
		return laneView{}
	default:
		l, ok := w.cfg.Consumer.Lane(c.CachedInfo())
		v = laneView{lane: l, ok: ok, read: read}
		v.lane.Name = name
	}
	w.lanes.remember(v)
	return v
}

// openLane creates db's lane from stream sequence start and consumes it.
func (w *Worker) openLane(ctx, work context.Context, of, db string, start uint64) laneView {
	if w.lanes.count(of) >= w.cfg.MaxLanes {
		return laneView{}
	}
	read := time.Now()
	l, err := streams.OpenLane(ctx, w.js, w.cfg.Consumer, of, db, start, w.laneWindow(of))
	if err != nil {
		w.log.Warn("cannot open a lane for a flooding database; its events stay in line", zap.String("db", db), zap.Error(err))
		return laneView{}
	}
	v := laneView{lane: l, ok: true, read: read}
	w.lanes.remember(v)
	if w.runLane(ctx, work, l.Name) {
		w.log.Info("a database's events moved to a lane of their own, out of other databases' way",
			zap.String("db", db), zap.String("lane", l.Name), zap.Uint64("from_stream_seq", l.Start))
	}
	return v
}

// laneWindow is how many events a lane holds unacknowledged. Migrations
// wait in their queue for a missing predecessor without settling, so a
// predecessor published after a window's worth of its successors (a
// history published in reverse) stays behind them, undelivered, until
// the gap timeout dead-letters them (and re-sends them once it comes):
// a schema lane holds half as many as its consumer, so that with the
// LaneAt its queue holds before the lane, a reversed history of some
// hundreds still applies at once. Docs never wait, and a docs lane holds
// LaneAt. With MaxLanes lanes beside each consumer a worker may hold
// MaxLanes × (MaxAckPending/2 + LaneAt) more events than its two
// consumers' 2 × MaxAckPending; MaxHeldBytes bounds their bytes.
func (w *Worker) laneWindow(of string) int {
	if of == w.cfg.Consumer.SchemaName() {
		return max(w.cfg.Consumer.MaxAckPending/2, w.cfg.LaneAt)
	}
	return w.cfg.LaneAt
}

// runLane starts consuming a lane into the databases' queues, once.
func (w *Worker) runLane(ctx, work context.Context, name string) bool {
	w.lanes.mu.Lock()
	defer w.lanes.mu.Unlock()
	if _, ok := w.lanes.running[name]; ok || w.lanes.closed {
		return false
	}
	c, err := w.js.Consumer(ctx, events.Stream, name)
	if err != nil {
		return false // retired meanwhile, or the next tick retries
	}
	// A lane takes no more while the worker holds half of MaxHeldBytes,
	// so that the other half stays for the worker consumers.
	cc, err := c.Consume(func(msg jetstream.Msg) { w.enqueue(ctx, work, msg, 2) },
		w.pullLimit(max(64, w.cfg.LaneAt)), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrConsumerDeleted) && !errors.Is(err, jetstream.ErrConsumerNotFound) &&
				!errors.Is(err, jetstream.ErrNoHeartbeat) {
				w.log.Warn("consume error", zap.String("consumer", name), zap.Error(err))
			}
		}))
	if err != nil {
		w.log.Warn("cannot consume a lane; the next look retries", zap.String("lane", name), zap.Error(err))
		return false
	}
	w.lanes.running[name] = cc
	if w.m != nil {
		w.m.lanes.Set(float64(len(w.lanes.running)))
	}
	return true
}

// watchLanes consumes the lanes other workers open and tends all of them
// toward retirement, every tick until ctx ends.
func (w *Worker) watchLanes(ctx, work context.Context) {
	t := time.NewTicker(w.laneTimes.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := w.tendLanes(ctx, work)
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, nats.ErrConnectionClosed):
			return // closed for good: the process is going
		default:
			w.log.Warn("cannot look at the lanes; the next look retries", zap.Error(err))
		}
	}
}

// tendLanes lists this worker's lanes once: each is consumed, and moved a
// step toward retirement when it is quiet.
func (w *Worker) tendLanes(ctx, work context.Context) error {
	stream, err := w.eventStream(ctx)
	if err != nil {
		return err
	}
	read := time.Now()
	infos, err := w.laneInfos(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, li := range infos {
		l := li.lane
		if l.Closing {
			continue // no longer read: it goes once unread (CloseLane)
		}
		seen[l.Name] = true
		w.lanes.remember(laneView{lane: l, ok: true, read: read})
		w.runLane(ctx, work, l.Name)
		if err := w.retireStep(ctx, stream, li.info, l); errors.Is(err, nats.ErrConnectionClosed) {
			return err
		} else if err != nil {
			w.log.Warn("a lane's retirement step failed; the next look retries", zap.String("lane", l.Name), zap.Error(err))
		}
	}
	// Lanes another worker deleted: stop consuming them.
	w.lanes.mu.Lock()
	var gone []string
	for name := range w.lanes.running {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	w.lanes.mu.Unlock()
	for _, name := range gone {
		if cc := w.lanes.forget(name); cc != nil {
			cc.Stop()
		}
	}
	w.countLanes()
	return nil
}

// laneInfo is a lane with its consumer's info.
type laneInfo struct {
	lane streams.Lane
	info *jetstream.ConsumerInfo
}

// laneInfos lists the lanes beside this worker's consumers.
func (w *Worker) laneInfos(ctx context.Context) ([]laneInfo, error) {
	stream, err := w.eventStream(ctx)
	if err != nil {
		return nil, err
	}
	var out []laneInfo
	lister := stream.ListConsumers(ctx)
	for ci := range lister.Info() {
		if l, ok := w.cfg.Consumer.Lane(ci); ok {
			out = append(out, laneInfo{lane: l, info: ci})
		}
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	return out, nil
}

func (w *Worker) countLanes() {
	if w.m == nil {
		return
	}
	w.lanes.mu.Lock()
	defer w.lanes.mu.Unlock()
	w.m.lanes.Set(float64(len(w.lanes.running)))
}

// retireStep takes a lane the next step toward retirement, if it is
// due: seal a lane quiet for LaneQuiet, set a sealed lane's horizon
// laneTimes.seal after this worker first saw it sealed, close a lane
// that applied everything up to its horizon.
func (w *Worker) retireStep(ctx context.Context, stream jetstream.Stream, ci *jetstream.ConsumerInfo, l streams.Lane) error {
	switch w.lanes.due(ci, l, time.Now(), w.cfg.LaneQuiet, w.laneTimes.seal) {
	case stepSeal:
		if err := streams.MarkLane(ctx, w.js, ci, streams.LaneSealedKey, "true"); err != nil {
			return err
		}
		// Only now: the wait for the horizon counts from the seal.
		w.lanes.sawSealed(l.Name, time.Now())
	case stepHorizon:
		si, err := stream.Info(ctx)
		if err != nil {
			return err
		}
		return streams.MarkLane(ctx, w.js, ci, streams.LaneHorizonKey, strconv.FormatUint(max(si.State.LastSeq, 1), 10))
	case stepClose:
		if err := streams.CloseLane(ctx, w.js, ci, w.laneTimes.close); err != nil {
			return err
		}
		if cc := w.lanes.forget(l.Name); cc != nil {
			cc.Stop()
		}
		w.log.Info("a lane closed: its database's events are in line with the others' again, and the server deletes the lane once no worker reads it", zap.String("db", l.DB), zap.String("lane", l.Name),
			zap.Uint64("horizon", l.Horizon))
	}
	return nil
}

// retirement steps (retireStep).
type step int

const (
	stepNone step = iota
	stepSeal
	stepHorizon
	stepClose
)

// due is the step l is due for, by what ci says of it now and what this
// worker saw of it before.
func (ls *lanes) due(ci *jetstream.ConsumerInfo, l streams.Lane, now time.Time, quiet, seal time.Duration) step {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case !l.Sealed:
		idle := ci.NumPending == 0 && ci.NumAckPending == 0
		return pick(stepSeal, since(ls.quiet, l.Name, now, idle) >= quiet)
	case l.Horizon == 0:
		// Sealed by this worker (sawSealed) or another, at the latest now.
		return pick(stepHorizon, since(ls.sealSeen, l.Name, now, true) >= seal)
	default:
		applied := ci.NumAckPending == 0 && (ci.NumPending == 0 || ci.Delivered.Stream >= l.Horizon)
		return pick(stepClose, applied)
	}
}

// since is how long name has been in a state (in), as marks records when
// it entered; a name out of the state leaves marks.
func since(marks map[string]time.Time, name string, now time.Time, in bool) time.Duration {
	if !in {
		delete(marks, name)
		return 0
	}
	t, ok := marks[name]
	if !ok {
		marks[name] = now
		return 0
	}
	return now.Sub(t)
}

func pick(s step, due bool) step {
	if due {
		return s
	}
	return stepNone
}

func (ls *lanes) sawSealed(name string, now time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.sealSeen[name] = now
}
