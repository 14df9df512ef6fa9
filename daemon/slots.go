package daemon

import (
	"sync"

	"github.com/schemaq/schemaq/events"
)

// A console request may hold a slot of the concurrency limit for three
// request timeouts (a check replays a pull request's DDL). One token
// sending many at once would hold every slot and stall every team's
// searches; each caller holds at most a few console slots at a time.
//
// The same holds across the API: an ask holds its slot while the model
// writes, seconds, so one team's batch job of 64 concurrent asks took
// every slot of a daemon and every other team got busy. Each database
// has a share of the slots (Config.MaxConcurrentPerDatabase, a quarter
// by default). Within its share a database's request is always taken
// while a slot is free; past it, only while more than a share of the
// slots stays free. A database alone may use three quarters of the
// daemon, and the last quarter is kept for databases within their
// share: a busy team leaves the others room without idling slots it
// could use.

// consolePerCaller is how many console requests one caller may have
// running at once: a person's pages, not a script's flood.
const consolePerCaller = 4

// keyedSlots counts the requests each key (a console caller, a
// database) has running, up to max each.
type keyedSlots struct {
	mu   sync.Mutex
	held map[string]int
	max  int
}

func newKeyedSlots(max int) *keyedSlots {
	return &keyedSlots{held: map[string]int{}, max: max}
}

// acquire takes one of who's slots, or reports that all are held.
func (s *keyedSlots) acquire(who string) bool { return s.acquireOver(who, false) }

// acquireOver is acquire that, when roomy, also takes a slot past who's
// max.
func (s *keyedSlots) acquireOver(who string, roomy bool) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[who] >= s.max && !roomy {
		return false
	}
	s.held[who]++
	return true
}

func (s *keyedSlots) release(who string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[who]--; s.held[who] <= 0 {
		delete(s.held, who)
	}
}

// databaseSlots bounds each database's share of the concurrency limit;
// nil when the share is the whole.
func databaseSlots(cfg Config) *keyedSlots {
	share := cfg.MaxConcurrentPerDatabase
	if share == 0 {
		share = max(1, cfg.MaxConcurrent/4)
	}
	if share >= cfg.MaxConcurrent {
		return nil
	}
	return newKeyedSlots(share)
}

// acquireDatabase takes a slot of db's share, called with the daemon's
// slot already held: past the share only while more than a share of
// the daemon's slots is free.
func (d *Daemon) acquireDatabase(db string) bool {
	if d.perDB == nil {
		return true
	}
	return d.perDB.acquireOver(db, len(d.sem) <= cap(d.sem)-d.perDB.max)
}

// databaseBusy is the reply to a request of a database past its share
// while the daemon is crowded.
func (d *Daemon) databaseBusy(db string) *events.Error {
	return events.Errorf(events.CodeBusy, "database %s has %d or more requests running on this daemon, past its share, and the last %d of its %d slots are kept for other databases; retry shortly",
		events.Quote(db), d.perDB.max, d.perDB.max, cap(d.sem))
}
