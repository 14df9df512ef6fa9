package daemon

import "sync"

// A console request may hold a slot of the concurrency limit for three
// request timeouts (a check replays a pull request's DDL). One token
// sending many at once would hold every slot and stall every team's
// searches; each caller holds at most a few console slots at a time.

// consolePerCaller is how many console requests one caller may have
// running at once: a person's pages, not a script's flood.
const consolePerCaller = 4

// callerSlots counts the console requests each caller has running.
type callerSlots struct {
	mu   sync.Mutex
	held map[string]int
	max  int
}

func newCallerSlots(max int) *callerSlots {
	return &callerSlots{held: map[string]int{}, max: max}
}

// acquire takes one of who's slots, or reports that all are held.
func (s *callerSlots) acquire(who string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[who] >= s.max {
		return false
	}
	s.held[who]++
	return true
}

func (s *callerSlots) release(who string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[who]--; s.held[who] <= 0 {
		delete(s.held, who)
	}
}
