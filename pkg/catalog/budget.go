package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limits bound what interpreting the routines and DO blocks of one Apply
// may spend. A migration is input from whoever may publish: a few lines
// of PL/pgSQL can recurse without end, double a string thirty times or
// create a hundred thousand tables, and Go's stack overflow and
// out-of-memory are fatal to every database the process serves. So the
// interpreter counts what it spends against these and stops, as drift
// naming the limit, before the runtime's own limits are reached.
type Limits struct {
	// Steps bounds statements and expressions evaluated, rows combined
	// by queries, characters compared by LIKE and objects copied to undo
	// exception blocks.
	Steps int
	// Bytes bounds the text, arrays and rows the interpreter makes, in
	// total: what it made is charged even once garbage, so the bound
	// holds for time as well as memory.
	Bytes int64
	// Objects bounds the DDL the interpreter applies: each statement
	// counts one, and a CREATE TABLE one more per column.
	Objects int
	// Time bounds the wall-clock time spent interpreting, from the first
	// step.
	Time time.Duration
	// Depth bounds nested routine calls, EXECUTE'd DO blocks included.
	Depth int
	// Text bounds one text the interpreter parses as SQL (EXECUTE's, a
	// query's): libpg_query's tree of a huge text is huge too.
	Text int
	// Reparse bounds, in bytes, the SQL text the catalog holds that the
	// Apply parses again (see maxReparse), plain DDL's included.
	Reparse int
}

// DefaultLimits are generous for real histories (a helper called once
// per table of a few thousand, each wrapped in an exception block) and
// small against the machine: well under a gigabyte, and seconds. The
// step budget is what bounds time in practice (about a second or two);
// the time budget is the backstop for work no step counts, set high
// enough that a slow or busy machine does not stop a history that a fast
// one applies whole.
func DefaultLimits() Limits {
	return Limits{
		Steps:   2_000_000,
		Bytes:   128 << 20,
		Objects: 20_000,
		Time:    30 * time.Second,
		Depth:   16,
		Text:    1 << 20,
		Reparse: maxReparse,
	}
}

// WithLimits sets the interpreter's limits for this Apply; zero fields
// keep their defaults.
func WithLimits(l Limits) ApplyOption {
	return func(o *applyOptions) { o.limits = l }
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.Steps > 0 {
		d.Steps = l.Steps
	}
	if l.Bytes > 0 {
		d.Bytes = l.Bytes
	}
	if l.Objects > 0 {
		d.Objects = l.Objects
	}
	if l.Time > 0 {
		d.Time = l.Time
	}
	if l.Depth > 0 {
		d.Depth = l.Depth
	}
	if l.Text > 0 {
		d.Text = l.Text
	}
	if l.Reparse > 0 {
		d.Reparse = l.Reparse
	}
	return d
}

// ErrBudget marks a stop because a limit of Limits was reached, or the
// Apply's context ended.
var ErrBudget = errors.New("interpreter budget spent")

// budget counts what one Apply's interpretation has spent. It is shared
// by every interpretation of the Apply, the runs restarted for skipped
// statements included, and by nested ones (an EXECUTE'd DO block, a
// routine it calls): a budget each would multiply the limits by the
// nesting. It also keeps the queries and expressions it parsed: a loop
// evaluates the same text each iteration, and parsing through
// libpg_query costs more than evaluating. Trees in the cache are only
// read (DDL is parsed afresh: applying it may change its tree).
type budget struct {
	// parent is the caller's context; run is it bounded by the time
	// budget, from the first step.
	parent, run context.Context
	cancel      context.CancelFunc
	limits      Limits

	steps, objects, rows int
	bytes                int64
	// spent is sticky: once a limit is reached every later step fails,
	// so a handler or a fallback cannot carry on the work.
	spent  error
	parsed map[string]parsed
	// reparse is what the Apply parsed again of the catalog's own text.
	reparse reparse
}

func newBudget(ctx context.Context, l Limits) *budget {
	if ctx == nil {
		ctx = context.Background()
	}
	b := &budget{parent: ctx, limits: l.orDefaults()}
	b.reparse.limit = b.limits.Reparse
	return b
}

// close stops the time budget's timer.
func (b *budget) close() {
	if b.cancel != nil {
		b.cancel()
	}
}

// checkEvery is how many steps pass between looks at the context (and
// so the time budget): often enough to stop within a millisecond or so,
// rarely enough to cost nothing.
const checkEvery = 256

func (b *budget) exceed(format string, args ...any) error {
	if b.spent == nil {
		b.spent = &stopped{what: fmt.Sprintf(format, args...), budget: true}
	}
	return b.spent
}

// tooDeep stops one chain of calls: depth is not spent, so a later call
// from the top may run.
func (b *budget) tooDeep() error {
	return &stopped{what: fmt.Sprintf("routine calls and DO blocks nested more than %d deep (the depth budget)", b.limits.Depth), budget: true}
}

// step spends n steps.
func (b *budget) step(n int) error {
	if b.spent != nil {
		return b.spent
	}
	before := b.steps
	b.steps += n
	if b.steps > b.limits.Steps {
		return b.exceed("a routine running more than %d steps (the step budget)", b.limits.Steps)
	}
	if before/checkEvery != b.steps/checkEvery || before == 0 {
		return b.checkClock()
	}
	return nil
}

func (b *budget) checkClock() error {
	if b.run == nil {
		// The package reads no clock itself: the deadline is the
		// context's.
		b.run, b.cancel = context.WithTimeout(b.parent, b.limits.Time)
	}
	if err := b.parent.Err(); err != nil {
		return b.exceed("routines still running when the apply was cancelled (%v)", err)
	}
	if b.run.Err() != nil {
		return b.exceed("routines running longer than %v (the time budget)", b.limits.Time)
	}
	return nil
}

// charge spends n bytes, before they are made where that is possible.
func (b *budget) charge(n int64) error {
	if b.spent != nil {
		return b.spent
	}
	b.bytes += n
	if b.bytes > b.limits.Bytes || n < 0 {
		return b.exceed("routines making more than %d bytes of text, arrays and rows (the byte budget)", b.limits.Bytes)
	}
	return nil
}

// create spends n objects of DDL.
func (b *budget) create(n int) error {
	if b.spent != nil {
		return b.spent
	}
	b.objects += n
	if b.objects > b.limits.Objects {
		return b.exceed("routines applying more than %d objects of DDL (the object budget)", b.limits.Objects)
	}
	return nil
}

// text checks a text the interpreter is about to parse.
func (b *budget) text(sql string) error {
	if len(sql) > b.limits.Text {
		return b.exceed("a text of %d bytes to parse as SQL, over %d (the text budget)", len(sql), b.limits.Text)
	}
	return b.charge(int64(len(sql)))
}

// valueOverhead is what a value costs beyond its text: the struct, and
// its slot in an array.
const valueOverhead = 64

// sizeOf is what v holds, arrays and records whole. It walks without
// recursion (an array nested a hundred thousand deep is input too), and
// keeps only the nested lists it has yet to walk. It stops past
// sizeCap: an array built as ARRAY[a, a] of itself shares its parts, so
// its size doubles each time while its memory does not, and a walk of
// it all would take as long as the size says.
func sizeOf(v value, sizeCap int64) int64 {
	n := int64(valueOverhead + len(v.s))
	var lists [][]value
	push := func(x value) {
		if len(x.arr) > 0 {
			lists = append(lists, x.arr)
		}
		if x.rec != nil && len(x.rec.vals) > 0 {
			lists = append(lists, x.rec.vals)
		}
	}
	push(v)
	for len(lists) > 0 && n <= sizeCap {
		l := lists[len(lists)-1]
		lists = lists[:len(lists)-1]
		for _, x := range l {
			n += int64(valueOverhead + len(x.s))
			push(x)
		}
	}
	return n
}

// size is sizeOf with the cap past which every budget is spent.
func (e *evaluator) size(v value) int64 {
	limit := DefaultLimits().Bytes
	if e.calls != nil {
		limit = e.calls.budget.limits.Bytes
	}
	return sizeOf(v, limit+1)
}

// read charges the bytes an operation reads of vals: a comparison of two
// 16 MiB strings, a cast of one, is work the step budget does not see.
func (e *evaluator) read(vals ...value) error {
	var n int64
	for _, v := range vals {
		n += e.payload(v)
	}
	if n == 0 {
		return nil
	}
	return e.charge(n)
}

// payload is what operating on v reads: its text, or an array whole. A
// number or a boolean costs nothing, so loops that count are free.
func (e *evaluator) payload(v value) int64 {
	if v.kind == vArray || v.kind == vRecord {
		return e.size(v)
	}
	return int64(len(v.s))
}

// maxValue is the most one value may hold: what the interpreter makes
// from it without charging (a comparison, a text it passes on) then
// costs at most this much.
func (b *budget) maxValue() int64 { return b.limits.Bytes / 8 }

// reserve charges n bytes about to be made for one value, refusing a
// value over maxValue before it is made.
func (e *evaluator) reserve(n int64) error {
	if e.calls == nil {
		return nil
	}
	b := e.calls.budget
	if n > b.maxValue() || n < 0 {
		return b.exceed("a value of more than %d bytes (the byte budget)", b.maxValue())
	}
	return b.charge(n)
}

// charge spends n bytes of rows, which no one value holds.
func (e *evaluator) charge(n int64) error {
	if e.calls == nil {
		return nil
	}
	return e.calls.budget.charge(n)
}

// made charges v, just made, at what it holds.
func (e *evaluator) made(v value) (value, error) {
	if v.kind != vText && v.kind != vArray && v.kind != vRecord {
		return v, nil
	}
	if err := e.reserve(e.size(v)); err != nil {
		return unknown, err
	}
	return v, nil
}
