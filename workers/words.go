package workers

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/namewords"
)

// DefaultMaxWordsPerDatabase bounds the distinct words of one database's
// names. Ten thousand tables of ordinary words (BIRD's and Spider's
// columns pooled) hold about 12,000; a daemon's vocabulary of 52,000
// words of no other schema took 92 MB and 1.2 s to build.
const DefaultMaxWordsPerDatabase = 50_000

// nameWords holds a counter of each database's words, from the catalog
// this worker last wrote or counted. Events of one database are applied
// one at a time (the database's lock), so a counter is never used by two
// at once; the map is shared.
type nameWords struct {
	mu  sync.Mutex
	dbs map[string]*namewords.Counter
}

// wordCount is a catalog's count, to keep once the catalog is written.
type wordCount struct {
	db      string
	tally   namewords.Tally
	counted bool
}

// count counts next's words and reports whether they are within max (0:
// no bound, and nothing is counted).
func (n *nameWords) count(max int, next *catalog.Catalog) (wordCount, bool) {
	if max <= 0 {
		return wordCount{}, true
	}
	t := n.counter(next.Database).Count(next)
	return wordCount{db: next.Database, tally: t, counted: true}, t.Words <= max
}

// keep makes the written catalog of wc the one its database's next is
// counted from, and returns the largest count among the databases, for
// the gauge an alert reads before a team's migrations are refused.
func (n *nameWords) keep(wc wordCount) (fullest int) {
	if !wc.counted {
		return 0
	}
	n.counter(wc.db).Keep(wc.tally)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.dbs {
		fullest = max(fullest, c.Words())
	}
	return fullest
}

// wroteWords keeps wc's count once its catalog is written, exports the
// fullest database's share of the bound, and warns when wc's database
// comes within a tenth of it (after a start, its first write there),
// so that its producer hears before its migrations are refused.
func (w *Worker) wroteWords(wc wordCount) {
	if !wc.counted {
		return
	}
	before := w.words.counter(wc.db).Words()
	fullest := w.words.keep(wc)
	bound := w.cfg.MaxWordsPerDatabase
	if w.m != nil {
		w.m.fullestWords.Set(float64(fullest) / float64(bound))
	}
	if near := bound - bound/10; before < near && wc.tally.Words >= near {
		w.log.Warn("a database's names hold nine tenths of the words a database may hold; past the bound its migrations are refused",
			zap.String("database", wc.db), zap.Int("words", wc.tally.Words), zap.Int("max_words_per_database", bound))
	}
}

func (n *nameWords) counter(db string) *namewords.Counter {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.dbs[db]
	if c == nil {
		c = &namewords.Counter{}
		n.dbs[db] = c
	}
	return c
}

// pastWordBound finds which of evs, a run of migrations that together
// take their database past MaxWordsPerDatabase, is the first to, by
// applying them again one at a time and counting after each. The ones
// before it are written as a run; it is refused, naming the count and
// the bound. Only a database at its bound pays for this second replay.
func (w *Worker) pastWordBound(ctx context.Context, cat *catalog.Catalog, rev uint64, evs []*events.Event, streamSeqs []uint64) []outcome {
	replay, applied := w.startReplay(cat)
	for i, ev := range evs {
		out := w.applyMigration(ctx, replay, applied, ev, streamSeqs[i])
		if out.act != actAck {
			// It applied in the run (a routine's time budget, a cut):
			// the run is tried again, and judged then.
			return []outcome{{act: actRetry, source: out.source, seq: out.seq, version: cat.Version, reason: out.reason}}
		}
		words, fits := w.words.count(w.cfg.MaxWordsPerDatabase, replay.Catalog())
		if fits {
			continue
		}
		var before []outcome
		version := cat.Version
		if i > 0 {
			before = w.applyMigrations(ctx, cat, rev, evs[:i], streamSeqs[:i])
			if last := before[len(before)-1]; last.act != actAck || last.wrote == nil {
				return before // judged again once those are written
			}
			version = evs[i-1].Migration.Seq
		}
		refused := out
		refused.act, refused.kind, refused.version = actDeadLetter, events.DLQKindRefused, version
		refused.reason = w.wordsRefusal(ev.Type, out.seq, ev.Database, words.tally.Words)
		return append(before, refused)
	}
	// Counted one at a time, the run fits: its words were counted from
	// another catalog than this worker's last, and it is tried again.
	return []outcome{{act: actRetry, source: evs[0].Migration.Source, seq: evs[0].Migration.Seq, version: cat.Version,
		reason: fmt.Sprintf("the words of %s were counted past the bound for the run of migrations from %d, but not for any one of them; tried again", evs[0].Database, evs[0].Migration.Seq)}}
}

// wordsRefusal is the dead letter's reason for an event whose catalog
// holds words past the bound.
func (w *Worker) wordsRefusal(typ string, seq int64, db string, words int) string {
	return fmt.Sprintf("%s %d would give database %s %d distinct words in the names of its tables, views and columns, past the bound of %d per database (--max-words-per-database): nothing of it was applied; drop what is no longer used, or ask the operator to raise the bound",
		typ, seq, db, words, w.cfg.MaxWordsPerDatabase)
}
