package redisearch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/schemaq/schemaq/pkg/index"
)

// Searching in memory, a process must know before each search whether
// its snapshot of a database is current. Asking Redis (the generation
// check) costs a round trip per search. A lease moves that cost to the
// writes, which are rare: a process holding snapshots registers as a
// reader with an expiry it renews; every write announces the databases
// it changed on a channel and returns only once each registered reader
// whose lease has not expired has acknowledged the announcement. A
// reader marks the databases named as changed before it acknowledges,
// so a search that starts after a write returned (after `publish
// --wait`, say) either finds its database marked, and checks, or finds
// its lease lapsed, and checks. While a reader holds its lease and no
// announcement has named a database since its last check, the search
// runs with no round trip.
//
// Why this is safe when parts fail:
//   - A reader renews only after a PING on its subscription came back:
//     every announcement made before the PING has then been processed,
//     and a subscription that stopped delivering stops renewing. Its
//     local lease runs from the PING's sending, so it ends before the
//     expiry Redis holds for it, after which writers stop waiting for it.
//   - A subscription that dropped may have lost announcements: on every
//     (re)subscription the reader marks every database changed at its
//     next renewal, and acknowledges what Redis had announced by then,
//     even when that is less than it saw before (Redis restarted and
//     lost data).
//   - A writer that dies between its write and its announcement leaves
//     readers unaware; the renewal also compares the generations of the
//     snapshots held with Redis's, so such a change is found within a
//     renewal (a quarter lease), and the write, never acknowledged, made
//     no promise.
//
// It rests on the reader's clock and Redis's running at about the same
// rate (leaseMargin of the lease absorbs the difference) and on Redis's
// clock not stepping forward, as any lease does.

// DefaultLease is a reader's lease when Options.Lease is zero. A reader
// that dies without deregistering holds writes for at most this long,
// once: then its lease has expired and writers drop it.
const DefaultLease = 2 * time.Second

// leaseMargin is the part of the lease a reader gives up to clock drift.
const leaseMargin = 8 // a reader's lease ends lease/leaseMargin early

// announceWait bounds how long a write waits for readers that keep
// renewing without acknowledging, which a reader of this code does not
// do: past it the write fails, and is retried, rather than hang.
const announceWait = 30 * time.Second

func (s *Store) lease() time.Duration {
	switch {
	case s.opt.Lease < 0:
		return 0
	case s.opt.Lease == 0:
		return DefaultLease
	}
	return s.opt.Lease
}

func (s *Store) readersKey() string   { return s.opt.Prefix + "{lease}:readers" }
func (s *Store) acksKey() string      { return s.opt.Prefix + "{lease}:acks" }
func (s *Store) announcedKey() string { return s.opt.Prefix + "{lease}:announced" }
func (s *Store) channel() string      { return s.opt.Prefix + "changes" }

// pendingReaders is the Lua the announcement scripts share: it drops
// readers whose lease expired by Redis's clock and counts the others that
// have not acknowledged announcement seq. KEYS[r]: readers (id scored by
// expiry in ms), KEYS[r+1]: acks (id → highest announcement processed).
const pendingReaders = `
local function pending(r, seq)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local gone = redis.call('ZRANGEBYSCORE', KEYS[r], '-inf', now)
  for _, id in ipairs(gone) do
    redis.call('ZREM', KEYS[r], id)
    redis.call('HDEL', KEYS[r+1], id)
  end
  local n = 0
  for _, id in ipairs(redis.call('ZRANGE', KEYS[r], 0, -1)) do
    local a = redis.call('HGET', KEYS[r+1], id)
    if not a or tonumber(a) < seq then n = n + 1 end
  end
  return n
end
`

// announceScript numbers an announcement and publishes it in one step,
// so that announcements reach every subscriber in the order of their
// numbers, and counts the readers yet to acknowledge it. KEYS: announced,
// readers, acks; ARGV: channel, payload (the databases, one a line).
var announceScript = redis.NewScript(pendingReaders + `
local seq = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], seq .. '\n' .. ARGV[2])
return {seq, pending(2, seq)}
`)

// pendingScript counts the readers yet to acknowledge announcement
// ARGV[1]. KEYS: readers, acks.
var pendingScript = redis.NewScript(pendingReaders + `
return pending(1, tonumber(ARGV[1]))
`)

// renewScript sets a reader's expiry to Redis's clock plus the lease and
// returns the last announcement's number and whether the reader was
// registered anew (its lease had lapsed, and a writer dropped it with
// its acknowledgement). KEYS: readers, announced; ARGV: id, lease in ms.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local added = redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return {tonumber(redis.call('GET', KEYS[2]) or '0'), added}
`)

// ackScript records that a registered reader processed announcements up
// to ARGV[2], and leaves no mark for a reader no longer registered.
// One goroutine of the reader sends its acknowledgements, in order; the
// mark may go down, when Redis restarted and numbers from 1 again.
// KEYS: acks, readers; ARGV: id, seq.
var ackScript = redis.NewScript(`
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// announce tells readers that dbs changed. With wait, it returns once
// every reader holding a lease has acknowledged; a write calls it with
// wait only when it succeeded, since only then does it promise anything.
func (s *Store) announce(ctx context.Context, wait bool, dbs []string) error {
	dbs = uniq(dbs)
	if len(dbs) == 0 {
		return nil
	}
	start := time.Now()
	defer func() {
		s.leaseStats.announcements.Add(1)
		s.leaseStats.waited.Add(int64(time.Since(start)))
	}()
	if !wait {
		// The write failed, perhaps for its context: announce what may
		// have landed anyway, briefly.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
	}
	res, err := announceScript.Run(ctx, s.rdb, []string{s.announcedKey(), s.readersKey(), s.acksKey()}, s.channel(), strings.Join(dbs, "\n")).Int64Slice()
	if err != nil {
		return fmt.Errorf("announce the change: %w", classify(err))
	}
	if !wait || len(res) != 2 {
		return nil
	}
	seq, pending := res[0], res[1]
	deadline := time.Now().Add(announceWait)
	for pause := 100 * time.Microsecond; pending > 0; pause = min(2*pause, 5*time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d searching processes have not acknowledged the change after %s", index.ErrUnavailable, pending, announceWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pending, err = pendingScript.Run(ctx, s.rdb, []string{s.readersKey(), s.acksKey()}, seq).Int64()
		if err != nil {
			return fmt.Errorf("wait for searching processes to see the change: %w", classify(err))
		}
	}
	return nil
}

// announced is deferred by every write: it announces dbs whatever the
// outcome, and waits for the readers only when the write succeeded.
func (s *Store) announced(ctx context.Context, errp *error, dbs ...string) {
	if err := s.announce(ctx, *errp == nil, dbs); err != nil && *errp == nil {
		*errp = err
	}
}

func uniq(dbs []string) []string {
	out := dbs[:0:0]
	for _, db := range dbs {
		if db != "" && !slices.Contains(out, db) {
			out = append(out, db)
		}
	}
	return out
}

// watch is a reader's side of the lease: what announcements it processed
// and whether its lease holds.
type watch struct {
	start sync.Once
	stop  context.CancelFunc
	done  chan struct{}
	id    string

	mu sync.Mutex
	// epoch counts marks; dirty is the epoch of the last mark of each
	// database, all that of the last mark of every database. A check
	// that began at epoch e covers every mark up to e.
	epoch uint64
	dirty map[string]uint64
	all   uint64
	seen  int64 // the highest announcement processed
	acked int64
	// sessionMax is the highest announcement processed on the current
	// subscription: every one of them came from the server as it is now.
	sessionMax int64
	// resync is set on every (re)subscription: announcements may have
	// been lost, and the next renewal marks every database.
	resync   bool
	leaseEnd time.Time
	lapses   int64
	pongs    map[string]chan struct{}
	ackWake  chan struct{}
}

// watching starts this process's lease once, on its first search in
// memory; a process that only writes never registers, and writes wait
// for no one on its account.
func (s *Store) watching() *watch {
	w := &s.watch
	if s.lease() <= 0 || s.opt.Search != SearchMemory {
		return nil
	}
	w.start.Do(func() {
		var b [8]byte
		_, _ = rand.Read(b[:])
		w.id = hex.EncodeToString(b[:])
		w.dirty = map[string]uint64{}
		w.pongs = map[string]chan struct{}{}
		w.ackWake = make(chan struct{}, 1)
		w.resync = true
		ctx, cancel := context.WithCancel(context.Background())
		w.stop, w.done = cancel, make(chan struct{})
		go s.runWatch(ctx)
	})
	return w
}

// checkStart is the epoch a generation check begins at, recorded before
// it reads Redis; 0 when there is no lease to record it for.
func (w *watch) checkStart() uint64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch + 1
}

// fresh reports whether a snapshot whose last check began at checked
// (checkStart's value) may serve a search of db without another: the
// lease holds and no announcement has named db since.
func (w *watch) fresh(db string, checked uint64) bool {
	if w == nil || checked == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Before(w.leaseEnd) && checked > w.dirty[db] && checked > w.all
}

func (w *watch) markAll() {
	w.epoch++
	w.all = w.epoch
}

// mark marks dbs changed; w.mu held.
func (w *watch) mark(dbs []string) {
	w.epoch++
	for _, db := range dbs {
		w.dirty[db] = w.epoch
	}
}

// processed records announcement seq naming dbs.
func (w *watch) processed(seq int64, dbs []string) {
	w.mu.Lock()
	w.mark(dbs)
	w.seen = max(w.seen, seq)
	w.sessionMax = max(w.sessionMax, seq)
	w.mu.Unlock()
	w.wakeAck()
}

func (w *watch) wakeAck() {
	select {
	case w.ackWake <- struct{}{}:
	default:
	}
}

// lost ends the lease at once: the subscription broke, and until it is
// back and a PING has come through it, announcements may be missed.
func (w *watch) lost() {
	w.mu.Lock()
	if time.Now().Before(w.leaseEnd) {
		w.lapses++
	}
	w.leaseEnd = time.Time{}
	w.mu.Unlock()
}

// LeaseStats is what an operator watches of the leases (docs/deploy.md).
type LeaseStats struct {
	// Held is whether this process holds its lease now: searches then
	// run without a round trip.
	Held bool
	// Lapses counts the times a held lease ended early: its subscription
	// dropped or its PINGs went unanswered.
	Lapses int64
	// Announcements counts this process's writes announced to readers,
	// and Waited is the time they took, acknowledgements included.
	Announcements int64
	Waited        time.Duration
	// Stale counts searches served from a held snapshot while Redis
	// could not be reached (Options.StaleReads).
	Stale int64
}

// LeaseStats returns the lease's figures so far.
func (s *Store) LeaseStats() LeaseStats {
	w := &s.watch
	w.mu.Lock()
	held, lapses := time.Now().Before(w.leaseEnd), w.lapses
	w.mu.Unlock()
	return LeaseStats{Held: held, Lapses: lapses,
		Announcements: s.leaseStats.announcements.Load(), Waited: time.Duration(s.leaseStats.waited.Load()),
		Stale: s.leaseStats.stale.Load()}
}

// runWatch keeps the lease: it acknowledges in one goroutine and runs
// subscription sessions one after another, each processing announcements
// as they come and renewing a quarter lease apart, until its connection
// fails.
func (s *Store) runWatch(ctx context.Context) {
	w := &s.watch
	defer close(w.done)
	acks := make(chan struct{})
	go func() { defer close(acks); s.ackLoop(ctx) }()
	defer func() { <-acks }()
	for pause := 50 * time.Millisecond; ctx.Err() == nil; pause = min(2*pause, time.Second) {
		if s.session(ctx) {
			pause = 50 * time.Millisecond
		}
		w.lost()
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// session subscribes and serves one subscription until it fails, or its
// PINGs stop coming back (a connection half open): it reports whether it
// processed anything.
func (s *Store) session(ctx context.Context) (ok bool) {
	w := &s.watch
	ctx, cancel := context.WithCancel(ctx)
	ps := s.rdb.Subscribe(ctx, s.channel())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		s.renewLoop(ctx, ps)
		_ = ps.Close() // stuck or stopping: ends Receive below
	}()
	defer func() {
		cancel()
		<-renewed
	}()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			return ok
		}
		ok = true
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				w.mu.Lock()
				w.resync, w.sessionMax = true, 0
				w.mu.Unlock()
			}
		case *redis.Message:
			head, rest, _ := strings.Cut(m.Payload, "\n")
			seq, err := strconv.ParseInt(head, 10, 64)
			if err != nil {
				continue // not an announcement of ours
			}
			w.processed(seq, strings.Split(rest, "\n"))
		case *redis.Pong:
			w.mu.Lock()
			if ch, found := w.pongs[m.Payload]; found {
				close(ch)
				delete(w.pongs, m.Payload)
			}
			w.mu.Unlock()
		}
	}
}

// renewLoop renews the lease a quarter lease apart, each time after a
// PING through the subscription came back; it returns when ctx ends or
// two PINGs in a row went unanswered.
func (s *Store) renewLoop(ctx context.Context, ps *redis.PubSub) {
	w := &s.watch
	every := s.lease() / 4
	missed := 0
	for n := 0; ; n++ {
		err := s.renew(ctx, ps, strconv.Itoa(n))
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errNoPong):
			w.lost()
			if missed++; missed == 2 {
				return
			}
		case err != nil:
			w.lost()
		default:
			missed = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

var errNoPong = errors.New("no reply to a PING through the subscription")

func (s *Store) renew(ctx context.Context, ps *redis.PubSub, token string) error {
	w := &s.watch
	lease := s.lease()
	pong := make(chan struct{})
	w.mu.Lock()
	w.pongs[token] = pong
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.pongs, token)
		w.mu.Unlock()
	}()
	sent := time.Now()
	if err := ps.Ping(ctx, token); err != nil {
		return err
	}
	select {
	case <-pong:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(lease / 4):
		return errNoPong
	}
	res, err := renewScript.Run(ctx, s.rdb, []string{s.readersKey(), s.announcedKey()}, w.id, lease.Milliseconds()).Int64Slice()
	if err != nil {
		return err
	}
	if len(res) != 2 {
		return fmt.Errorf("renew the lease: reply %v", res)
	}
	last, added := res[0], res[1] == 1
	w.mu.Lock()
	if added {
		w.acked = -1 // a writer may have dropped the acknowledgement with the lapsed lease: write it again
	}
	if w.resync {
		// The mark covers everything announced up to last, and this
		// subscription delivered, in order, what came after. What was
		// seen before it may be above both: Redis restarted (empty, or
		// from a persisted state behind the one it lost) and numbers
		// from there again, and acknowledgements must follow it down,
		// written again whatever the stored ones say.
		w.markAll()
		w.seen, w.acked = max(last, w.sessionMax), -1
		w.resync = false
	}
	w.leaseEnd = sent.Add(lease - lease/leaseMargin)
	w.mu.Unlock()
	w.wakeAck()
	s.recheckHeld(ctx)
	return nil
}

// recheckHeld compares the generations of the snapshots held with
// Redis's and marks those that moved: a write whose announcement never
// went out (its writer died between the two) is found here, and so is a
// Redis that lost its data. A database
// whose projection lock is held is left alone: the projection announces
// itself when it has landed, and one of more than atomicChanges chunks
// lands in batches, which a catch-up now would see part written. Its
// writer dying frees the lock within lockTTL, and then it is marked.
func (s *Store) recheckHeld(ctx context.Context) {
	v := s.ver()
	s.mem.mu.Lock()
	var dbs []string
	var gens []int64
	for k, c := range s.mem.dbs {
		if snap, gen := c.cur.Snapshot(); k.version == v && snap != nil { // one loading is checked anyway
			dbs, gens = append(dbs, k.db), append(gens, gen)
		}
	}
	s.mem.mu.Unlock()
	if len(dbs) == 0 {
		return
	}
	pipe := s.rdb.Pipeline()
	genCmds := make([]*redis.StringCmd, len(dbs))
	locks := make([]*redis.IntCmd, len(dbs))
	for i, db := range dbs {
		genCmds[i] = pipe.HGet(ctx, s.gensKeyAt(v, db), "g:"+db)
		locks[i] = pipe.Exists(ctx, s.lockKeyAt(v, db))
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return // the next renewal tries again
	}
	var moved []string
	for i, c := range genCmds {
		if now, _ := c.Int64(); now != gens[i] && locks[i].Val() == 0 {
			moved = append(moved, dbs[i])
		}
	}
	if len(moved) > 0 {
		w := &s.watch
		w.mu.Lock()
		w.mark(moved)
		w.mu.Unlock()
	}
}

// ackLoop acknowledges the highest announcement processed, coalescing
// a burst into one write.
func (s *Store) ackLoop(ctx context.Context) {
	w := &s.watch
	retry := time.NewTicker(s.lease() / 4)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.ackWake:
		case <-retry.C:
		}
		w.mu.Lock()
		seen, acked := w.seen, w.acked
		w.mu.Unlock()
		if seen <= acked {
			continue
		}
		registered, err := ackScript.Run(ctx, s.rdb, []string{s.acksKey(), s.readersKey()}, w.id, seen).Int()
		if err != nil || registered == 0 {
			continue // the ticker tries again, after the renewal registers
		}
		w.mu.Lock()
		if w.acked == acked { // else a renewal asked meanwhile for the mark to be written again
			w.acked = seen
		}
		w.mu.Unlock()
	}
}

// closeWatch stops the lease and deregisters, so that writes stop
// waiting for this process at once rather than when its lease expires.
func (s *Store) closeWatch() {
	w := &s.watch
	w.start.Do(func() {}) // after Close, no lease starts
	if w.stop == nil {
		return
	}
	w.stop()
	<-w.done
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := s.rdb.TxPipeline()
	pipe.ZRem(ctx, s.readersKey(), w.id)
	pipe.HDel(ctx, s.acksKey(), w.id)
	_, _ = pipe.Exec(ctx)
}
