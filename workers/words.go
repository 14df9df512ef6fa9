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
// names (namewords.DefaultMaxPerDatabase).
const DefaultMaxWordsPerDatabase = namewords.DefaultMaxPerDatabase

// nameWords holds a counter of each database's words, from the catalog
// this worker last wrote or counted. Events of one database are applied
// one at a time (the database's lock), so a counter is never used by two
// at once; the maps are shared, and words holds each counter's count for
// the gauge, which reads every database's.
type nameWords struct {
	mu    sync.Mutex
	dbs   map[string]*namewords.Counter
	words map[string]int
}

// wordCount is a catalog's count, to keep once the catalog is written.
type wordCount struct {
	db      string
	tally   namewords.Tally
	counted bool
}

// count counts the words of next, a later version of cat, and reports
// whether they are within max (0: no bound, and nothing is counted) or
// no more than cat's: a database past the bound (written before it, or
// under a higher one) may still drop what it no longer uses.
func (n *nameWords) count(max int, cat, next *catalog.Catalog) (wordCount, bool) {
	if max <= 0 {
		return wordCount{}, true
	}
	c := n.counter(next.Database)
	c.Follow(cat)
	before := c.Words()
	n.kept(next.Database, before)
	t := c.Count(next)
	return wordCount{db: next.Database, tally: t, counted: true}, t.Words <= max || t.Words <= before
}

// keep makes the written catalog of wc the one its database's next is
// counted from, and returns the largest count among the databases, for
// the gauge an alert reads before a team's migrations are refused.
func (n *nameWords) keep(wc wordCount) (fullest int) {
	if !wc.counted {
		return 0
	}
	c := n.counter(wc.db)
	c.Keep(wc.tally)
	return n.kept(wc.db, c.Words())
}

// forget drops a retired database's counter and returns the largest
// count of those left.
func (n *nameWords) forget(db string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.dbs, db)
	delete(n.words, db)
	return n.fullestLocked()
}

// kept records db's count and returns the largest.
func (n *nameWords) kept(db string, words int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.words[db] = words
	return n.fullestLocked()
}

func (n *nameWords) fullestLocked() (fullest int) {
	for _, w := range n.words {
		fullest = max(fullest, w)
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
	w.exportWords(w.words.keep(wc))
	bound := w.cfg.MaxWordsPerDatabase
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

// pastWordBound finds where evs, a run of migrations that together take
// their database past MaxWordsPerDatabase, cross it: a migration whose
// catalog before is within the bound and whose catalog after is not.
// It bisects, applying a prefix again from cat for each probe, so a run
// of n costs about 2n applies and log n counts (applying and counting
// after each one would count the run's new tables again at each). The
// prefix before it is written as a run; it is refused, naming the count
// and the bound.
func (w *Worker) pastWordBound(ctx context.Context, cat *catalog.Catalog, rev uint64, evs []*events.Event, streamSeqs []uint64, words int) []outcome {
	lo, hi := 0, len(evs) // the catalog after lo migrations fits; after hi it does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		replay, applied := w.startReplay(cat)
		for i, ev := range evs[:mid] {
			if out := w.applyMigration(ctx, replay, applied, ev, streamSeqs[i]); out.act != actAck {
				// It applied in the run (a routine's time budget, a
				// cut): the run is tried again, and judged then.
				return []outcome{{act: actRetry, source: out.source, seq: out.seq, version: cat.Version, reason: out.reason}}
			}
		}
		wc, fits := w.words.count(w.cfg.MaxWordsPerDatabase, cat, replay.Catalog())
		if fits {
			lo = mid
		} else {
			hi, words = mid, wc.tally.Words
		}
	}
	var before []outcome
	version := cat.Version
	if lo > 0 {
		before = w.applyMigrations(ctx, cat, rev, evs[:lo], streamSeqs[:lo])
		if last := before[len(before)-1]; last.act != actAck || last.wrote == nil {
			return before // judged again once those are written
		}
		version = evs[lo-1].Migration.Seq
	}
	ev := evs[lo]
	source, _ := migrationNames(ev)
	return append(before, outcome{act: actDeadLetter, kind: events.DLQKindRefused, source: source, seq: ev.Migration.Seq, version: version,
		reason: w.wordsRefusal(ev.Type, ev.Migration.Seq, ev.Database, words)})
}

// wordsRefusal is the dead letter's reason for an event whose catalog
// holds words past the bound.
func (w *Worker) wordsRefusal(typ string, seq int64, db string, words int) string {
	return fmt.Sprintf("%s %d would give database %s %d distinct words in the names of its tables, views and columns, past the bound of %d per database (--max-words-per-database): nothing of it was applied; drop what is no longer used, or ask the operator to raise the bound",
		typ, seq, db, words, w.cfg.MaxWordsPerDatabase)
}

// exportWords sets the gauge of the fullest database's share of the
// word bound.
func (w *Worker) exportWords(fullest int) {
	if w.m != nil && w.cfg.MaxWordsPerDatabase > 0 {
		w.m.fullestWords.Set(float64(fullest) / float64(w.cfg.MaxWordsPerDatabase))
	}
}
