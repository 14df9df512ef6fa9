package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/index"
)

// Feedback is a write: what a caller hands back is stored as an example
// that later prompts show and that votes for tables. 10,000 pairs were
// stored in under seven seconds, and the stream keeps them for ever. So
// feedback is rate-limited per caller and per database, and a database
// keeps a bounded number of feedback examples.

// FeedbackLimits bound the feedback a daemon takes.
type FeedbackLimits struct {
	// PerCaller and PerDatabase are the feedback a minute one caller
	// (callerOf) and one database may give, on this daemon; a burst of
	// as many is allowed.
	PerCaller, PerDatabase int
	// MaxExamples is the most feedback examples a database keeps. Past
	// it, feedback is refused until some are deleted (`schemaq examples
	// delete`): nothing is evicted in silence, and the team's published
	// examples do not count.
	MaxExamples int
}

// DefaultFeedbackLimits suit people and agents confirming answers.
var DefaultFeedbackLimits = FeedbackLimits{PerCaller: 30, PerDatabase: 120, MaxExamples: 5000}

// rateLimiter is a token bucket per key, refilled per minute. Keys idle
// for a full refill are dropped, so the map stays the size of the
// callers active within a minute, and never over maxKeys.
type rateLimiter struct {
	mu      sync.Mutex
	perMin  float64
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

const maxLimiterKeys = 100_000

func newRateLimiter(perMinute int) *rateLimiter {
	return &rateLimiter{perMin: float64(perMinute), buckets: map[string]*bucket{}}
}

// allow takes a token for key at now, reporting false when there is
// none (a limit of zero or less allows everything).
func (l *rateLimiter) allow(key string, now time.Time) bool {
	if l == nil || l.perMin <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxLimiterKeys {
			l.sweep(now)
			if len(l.buckets) >= maxLimiterKeys {
				return false // a flood of callers: refuse rather than grow
			}
		}
		b = &bucket{tokens: l.perMin, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.perMin, b.tokens+now.Sub(b.at).Minutes()*l.perMin)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (l *rateLimiter) sweep(now time.Time) {
	for k, b := range l.buckets {
		if now.Sub(b.at) >= time.Minute {
			delete(l.buckets, k)
		}
	}
}

// admitFeedback applies the limits to one feedback request.
func (d *Daemon) admitFeedback(ctx context.Context, db string) *events.Error {
	now := time.Now()
	who := callerFrom(ctx)
	if !d.feedbackByCaller.allow(who, now) {
		return events.Errorf(events.CodeRateLimited, "%s gave more than %d feedback a minute; nothing was stored, retry later", quoteCaller(who), d.cfg.Feedback.PerCaller)
	}
	if !d.feedbackByDB.allow(db, now) {
		return events.Errorf(events.CodeRateLimited, "database %s took more than %d feedback a minute; nothing was stored, retry later", events.Quote(db), d.cfg.Feedback.PerDatabase)
	}
	if max := d.cfg.Feedback.MaxExamples; max > 0 {
		n, err := d.count.Count(ctx, index.Filter{Database: db, Kinds: []string{chunk.KindExample}, Tags: map[string]string{chunk.TagOrigin: events.OriginFeedback}})
		if err != nil {
			return events.Errorf(events.CodeStoreUnavailable, "counting the feedback examples of %s: %v; nothing was stored", events.Quote(db), err)
		}
		if n >= max {
			return events.Errorf(events.CodeRateLimited, "database %s keeps at most %d feedback examples and has %d; nothing was stored: delete some (`schemaq examples list --db %s`, `examples delete`)", events.Quote(db), max, n, db)
		}
	}
	return nil
}

func quoteCaller(who string) string {
	if who == "" {
		return "this caller"
	}
	return events.Quote(who)
}
