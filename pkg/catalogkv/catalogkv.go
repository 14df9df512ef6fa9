// Package catalogkv keeps catalogs in a JetStream key-value bucket, one key
// per database, gzip-compressed JSON, written with compare-and-set on the
// entry's revision so that two workers can never both advance a catalog.
package catalogkv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	// The same gzip format, written faster (BenchmarkEncode): a catalog
	// is encoded on every migration. It is in the module graph already
	// (nats-server depends on it).
	"github.com/klauspost/compress/gzip"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/streams"
)

// ErrConflict: the entry changed since it was read; read again.
var ErrConflict = errors.New("catalog changed concurrently")

// Store reads and writes catalogs. It remembers the last catalog it read
// or wrote per database, so that reading an entry it already holds costs a
// revision check instead of decompressing and decoding the whole schema.
// Catalogs are treated as immutable values, so sharing them is safe.
type Store struct {
	kv    jetstream.KeyValue
	objs  jetstream.ObjectStore
	js    jetstream.JetStream // nil: keys by watching alone
	mu    sync.Mutex
	known map[string]cached
	// wrote holds, per database, the entry value this store last wrote
	// (as a digest) and the catalog in it, set before the write so that
	// a watcher in the same process that sees the entry first still
	// finds it.
	wrote map[string]written
	enc   encoder
	// decoders read what other processes wrote, decoding only the
	// tables that changed since the entry read before.
	decoders perDatabase[catalog.Decoder, *catalog.Decoder]
}

type written struct {
	sum [sha256.Size]byte
	cat *catalog.Catalog
}

type cached struct {
	rev    uint64
	cat    *catalog.Catalog
	object string // the object holding it, when it is too big for a value
}

// Option configures a Store or a Watcher.
type Option func(*options)

type options struct {
	objs  jetstream.ObjectStore
	local *Store
	js    jetstream.JetStream
}

// WithObjects lets catalogs larger than a value (MaxInline) live in the
// object store, referenced from their entry. Without it, such a catalog
// cannot be written, and an entry referencing one cannot be read.
func WithObjects(obj jetstream.ObjectStore) Option { return func(o *options) { o.objs = obj } }

// WithLocal tells a Watcher that this process writes catalogs through
// s (the embedded default runs its worker and daemon in one process): an
// entry whose value is what s wrote is taken as the catalog s holds, not
// decompressed and decoded again.
func WithLocal(s *Store) Option { return func(o *options) { o.local = s } }

// WithJetStream lets a Store's Keys take the bucket's keys from the
// server's list of its subjects (streams.KeyValueKeys). Without it Keys
// relies on nats.go's watch of the bucket alone, which leaves out a key
// whose entry is replaced while it reads. (A Watcher holds such an entry
// moments after its Ready, when the watch delivers what replaced it.)
func WithJetStream(js jetstream.JetStream) Option { return func(o *options) { o.js = js } }

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// New returns a store over the catalog bucket.
func New(kv jetstream.KeyValue, opts ...Option) *Store {
	o := newOptions(opts)
	return &Store{kv: kv, objs: o.objs, js: o.js, known: map[string]cached{}, wrote: map[string]written{}}
}

// get reads db's entry, each attempt bounded (streams.ReadAttempt) and
// retried after one that went unanswered or found the bucket without a
// leader, until ctx ends: one read lost with a dead server held every
// database behind it for the event's whole deadline.
func (s *Store) get(ctx context.Context, db string) (jetstream.KeyValueEntry, error) {
	return streams.Retried(ctx, streams.ReadAttempt, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return s.kv.Get(ctx, db) })
}

func (s *Store) Get(ctx context.Context, db string) (*catalog.Catalog, uint64, error) {
	e, err := s.get(ctx, db)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return catalog.New(db), 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read catalog %s: %w", db, err)
	}
	s.mu.Lock()
	k, ok := s.known[db]
	s.mu.Unlock()
	if ok && k.rev == e.Revision() {
		return k.cat, k.rev, nil
	}
	var c *catalog.Catalog
	var object string
	err = s.decoders.use(db, func(dec *catalog.Decoder) (err error) {
		c, object, err = decodeValue(ctx, s.objs, e.Value(), dec)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read catalog %s (revision %d): %w", db, e.Revision(), err)
	}
	s.remember(db, e.Revision(), c, object)
	return c, e.Revision(), nil
}

// ErrCorrupt marks a catalog entry that was read but does not decode (or
// whose object is gone): reading it again will not help, rebuilding it
// from the events will.
var ErrCorrupt = errors.New("catalog entry does not decode")

// Entry returns the revision of db's entry (0: none) and the version its
// header claims (-1 when the header is unreadable too), without decoding
// the catalog: what a rebuild of a corrupt entry starts from.
func (s *Store) Entry(ctx context.Context, db string) (rev uint64, version int64, err error) {
	e, err := s.get(ctx, db)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read catalog %s: %w", db, err)
	}
	v, ok := events.CatalogEntryVersion(e.Value())
	if !ok {
		v = -1
	}
	return e.Revision(), v, nil
}

func (s *Store) remember(db string, rev uint64, c *catalog.Catalog, object string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.known[db]; !ok || k.rev < rev {
		s.known[db] = cached{rev, c, object}
	}
}

// Put writes c if the entry is still at revision rev (0: must not exist)
// and returns the new revision.
func (s *Store) Put(ctx context.Context, c *catalog.Catalog, rev uint64) (uint64, error) {
	b, err := s.enc.encode(c)
	if err != nil {
		return 0, err
	}
	object := ""
	if len(b) > MaxInline {
		if s.objs == nil {
			return 0, fmt.Errorf("write catalog %s: %d bytes encoded, more than an entry holds (%d), and no object store to keep it in", c.Database, len(b), MaxInline)
		}
		object = fmt.Sprintf("%s%d-%s", ObjectPrefix(c.Database), c.Version, nuid.Next())
		// The name is this write's own: a write sent again replaces it.
		info, err := streams.Retried(ctx, streams.ObjectAttempt(uint64(len(b))), func(ctx context.Context) (*jetstream.ObjectInfo, error) {
			return s.objs.PutBytes(ctx, object, b[headerLen:])
		})
		if err != nil {
			return 0, fmt.Errorf("write catalog %s to object %s: %w", c.Database, object, err)
		}
		ref, _ := json.Marshal(objectRef{Object: object, Size: info.Size})
		b = append(header(refMagic, c.Version), ref...)
	}
	s.mu.Lock()
	s.wrote[c.Database] = written{sha256.Sum256(b), c}
	s.mu.Unlock()
	var next uint64
	if rev == 0 {
		next, err = streams.Bounded(ctx, streams.WriteAttempt, func(ctx context.Context) (uint64, error) { return s.kv.Create(ctx, c.Database, b) })
	} else {
		next, err = streams.Bounded(ctx, streams.WriteAttempt, func(ctx context.Context) (uint64, error) { return s.kv.Update(ctx, c.Database, b, rev) })
	}
	if err != nil && object != "" {
		s.dropObject(object)
	}
	var apiErr *jetstream.APIError
	switch {
	// A replicated bucket reports the conflict with its own code (10164).
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		return 0, fmt.Errorf("write catalog %s at revision %d: %w", c.Database, rev, ErrConflict)
	case err != nil:
		return 0, fmt.Errorf("write catalog %s: %w", c.Database, err)
	}
	// The catalog this one replaces is no longer read by anyone but a
	// watcher still decoding it, which keeps its last good one.
	s.mu.Lock()
	prev := s.known[c.Database]
	s.mu.Unlock()
	if prev.rev == rev && prev.object != "" {
		s.dropObject(prev.object)
	}
	s.remember(c.Database, next, c, object)
	return next, nil
}

// writtenAs returns the catalog this store wrote as value b for db, or nil.
func (s *Store) writtenAs(db string, b []byte) *catalog.Catalog {
	s.mu.Lock()
	w, ok := s.wrote[db]
	s.mu.Unlock()
	if !ok || w.sum != sha256.Sum256(b) {
		return nil
	}
	return w.cat
}

func (s *Store) dropObject(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.objs.Delete(ctx, name)
}

// MaxInline is the largest encoded catalog kept in its entry; a larger
// one goes to the object store. It leaves room under the bucket's value
// limit (events.DefaultMaxEventBytes) and NATS's default max payload.
const MaxInline = 900 << 10

// objectRef is the entry of a catalog kept in the object store.
type objectRef struct {
	Object string `json:"object"`
	Size   uint64 `json:"size"`
}

// decodeValue decodes an entry, reading the object it references when it
// references one (and returning its name), through dec when not nil
// (decodeWith).
func decodeValue(ctx context.Context, objs jetstream.ObjectStore, b []byte, dec *catalog.Decoder) (*catalog.Catalog, string, error) {
	if len(b) < headerLen || string(b[:len(refMagic)]) != refMagic {
		c, err := decodeWith(b, dec)
		if err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return c, "", nil
	}
	var ref objectRef
	if err := json.Unmarshal(b[headerLen:], &ref); err != nil {
		return nil, "", fmt.Errorf("%w: bad object reference: %w", ErrCorrupt, err)
	}
	if objs == nil {
		return nil, "", fmt.Errorf("decode catalog: it is kept in object %s and this reader has no object store", ref.Object)
	}
	gz, err := streams.Retried(ctx, streams.ObjectAttempt(ref.Size), func(ctx context.Context) ([]byte, error) { return objs.GetBytes(ctx, ref.Object) })
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, "", fmt.Errorf("%w: its object %s is gone", ErrCorrupt, ref.Object)
	}
	if err != nil {
		return nil, "", fmt.Errorf("decode catalog: read object %s: %w", ref.Object, err)
	}
	c, err := decodeWith(append(header(headerMagic, 0), gz...), dec)
	if err != nil {
		return nil, "", fmt.Errorf("%w: object %s: %w", ErrCorrupt, ref.Object, err)
	}
	return c, ref.Object, nil
}

// Keys lists the databases that have a catalog. With WithJetStream, a
// key the watch left out but the bucket's subjects name is read, to tell
// an entry put beside the watch from a deleted one.
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	watched, err := s.kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, fmt.Errorf("list catalogs: %w", err)
	}
	if s.js == nil {
		return watched, nil
	}
	all, err := streams.KeyValueKeys(ctx, s.js, s.kv.Bucket())
	if err != nil {
		return nil, fmt.Errorf("list catalogs: %w", err)
	}
	seen := make(map[string]bool, len(watched))
	for _, k := range watched {
		seen[k] = true
	}
	keys := watched
	for _, k := range all {
		if seen[k] {
			continue
		}
		if _, err := s.get(ctx, k); err == nil {
			keys = append(keys, k)
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("list catalogs: read %s: %w", k, err)
		}
	}
	return keys, nil
}

// header starts a stored catalog: a magic and the catalog's version, so
// that a worker can learn a catalog's version without decoding it (one
// waiting for its predecessor looks on every change). Values written
// before it are plain gzip and still read.
const (
	headerMagic = events.CatalogEntryInline // then the version and the gzip JSON
	refMagic    = events.CatalogEntryObject // then the version and an objectRef in JSON
	headerLen   = events.CatalogEntryHeaderLen
)

func header(magic string, version int64) []byte {
	b := make([]byte, headerLen)
	copy(b, magic)
	binary.BigEndian.PutUint64(b[len(magic):], uint64(version))
	return b
}

// Encode is the stored form: the header, then gzip of the catalog's JSON.
func Encode(c *catalog.Catalog) ([]byte, error) {
	var e encoder
	return e.encode(c)
}

// encoder encodes catalogs with reused gzip writers: a new writer
// allocates its compression state afresh, which at BestSpeed costs as
// much as compressing a catalog of a hundred tables, on every write.
// It keeps each database's catalog.Encoder, so that a migration encodes
// the tables it changed, not every table (48 ms of JSON at 10,000
// tables), up to heldJSONBytes of table JSON over all databases.
type encoder struct {
	writers sync.Pool // *gzip.Writer
	dbs     perDatabase[catalog.Encoder, *catalog.Encoder]
}

func (e *encoder) encode(c *catalog.Catalog) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(headerMagic)
	_ = binary.Write(&buf, binary.BigEndian, c.Version)
	zw, _ := e.writers.Get().(*gzip.Writer)
	if zw == nil {
		// Fastest compression: catalogs are written on every migration,
		// and the ratio on JSON is already good at this level.
		zw, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	} else {
		zw.Reset(&buf)
	}
	defer e.writers.Put(zw)
	if err := e.writeJSON(zw, c); err != nil {
		return nil, fmt.Errorf("encode catalog %s: %w", c.Database, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode catalog %s: %w", c.Database, err)
	}
	return buf.Bytes(), nil
}

// writeJSON writes c's JSON to w through its database's encoder.
func (e *encoder) writeJSON(w io.Writer, c *catalog.Catalog) error {
	return e.dbs.use(c.Database, func(enc *catalog.Encoder) error { return enc.Encode(w, c) })
}

// expand gunzips b, refusing more than limit bytes: an entry past
// events.MaxCatalogJSONBytes is refused as corrupt rather than expanded
// into every daemon's memory. The size gzip records is only a hint, and
// bounded: b is untrusted.
func expand(b []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if len(b) >= 4 {
		hint := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
		buf.Grow(min(hint, 32*len(b), limit) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(zr, int64(limit)+1)); err != nil {
		return nil, err
	}
	if buf.Len() > limit {
		return nil, fmt.Errorf("its JSON is over %d MiB once expanded", limit>>20)
	}
	return buf.Bytes(), nil
}

// Decode reads what Encode wrote.
func Decode(b []byte) (*catalog.Catalog, error) { return decodeWith(b, nil) }

// decodeWith is Decode through dec, which reuses the tables it decoded
// the time before; nil decodes every table.
func decodeWith(b []byte, dec *catalog.Decoder) (*catalog.Catalog, error) {
	if len(b) >= headerLen && string(b[:len(refMagic)]) == refMagic {
		return nil, errors.New("decode catalog: the entry references an object; read it through a Store or Watcher with the object store")
	}
	if _, ok := events.CatalogEntryVersion(b); ok {
		b = b[headerLen:]
	}
	raw, err := expand(b, events.MaxCatalogJSONBytes)
	if err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	if dec != nil {
		return dec.Unmarshal(raw)
	}
	// UnmarshalJSON directly: through json.Unmarshal the whole catalog
	// would be scanned for validity once more before it is decoded.
	var c catalog.Catalog
	if err := c.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return &c, nil
}

// Watcher keeps every catalog of the bucket in memory, current within
// moments of a write: what daemons read for FK expansion, table listings
// and the SQL guard. New entries of databases that requests read are
// decoded as they come, by one goroutine, so requests neither wait for a
// decode nor repeat it; entries of databases no one reads (a history
// being ingested) are decoded on first use.
type Watcher struct {
	mu      sync.Mutex
	cats    map[string]*watched
	ready   chan struct{}
	onError func(key string, err error)
	hooks   []func(*catalog.Catalog)
	// warms holds, per database whose hooks are at work, the catalog
	// they take next (nil: none waits).
	warms   map[string]*catalog.Catalog
	pending chan struct{} // a new entry waits to be decoded
	objs    jetstream.ObjectStore
	local   *Store
	// decoders keep each database's tables by their JSON between
	// versions (catalog.Decoder), up to heldJSONBytes.
	decoders perDatabase[catalog.Decoder, *catalog.Decoder]
}

// watched is one database's newest entry and the last catalog decoded.
type watched struct {
	version  int64
	seq      uint64           // counts entries, so a decode knows it is still the newest
	raw      []byte           // the newest value, not decoded yet; nil once it is
	good     *catalog.Catalog // the newest catalog that decoded
	decoding bool             // the decoder is at work on raw
	lastRead time.Time        // when a request last asked for it
}

// warmFor is how recently a database must have been read for the watcher
// to decode its new entries as they come. A history being ingested with
// no one asking writes many catalogs no request will read; those are
// decoded on first use instead.
const warmFor = time.Minute

// Watch starts watching the bucket until ctx ends. onError reports entries
// that do not decode (they are skipped, the last good catalog stays).
// New entries are decoded in the background as they come, so the first
// request after a migration does not pay for it.
func Watch(ctx context.Context, kv jetstream.KeyValue, onError func(key string, err error), opts ...Option) (*Watcher, error) {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch catalogs: %w", err)
	}
	o := newOptions(opts)
	cw := &Watcher{cats: map[string]*watched{}, ready: make(chan struct{}), onError: onError, pending: make(chan struct{}, 1),
		warms: map[string]*catalog.Catalog{}, objs: o.objs, local: o.local}
	initial := true
	go follow(ctx, w, func(e jetstream.KeyValueEntry) {
		switch {
		case e != nil:
			cw.apply(e)
		case initial: // the initial values are all delivered
			close(cw.ready)
			initial = false
		}
	})
	go cw.decodeLoop(ctx)
	return cw, nil
}

// OnCatalog calls fn with the catalogs the watcher decodes from now on,
// outside its lock: a cache can be warmed before requests need it. fn
// runs on a goroutine of the catalog's database, one call at a time; the
// database's entries that came while fn ran are decoded after it, once,
// the newest. One database's slow fn (a daemon warming the vocabulary of
// ten thousand tables) holds up neither another database's decoding nor
// its fn.
func (cw *Watcher) OnCatalog(fn func(*catalog.Catalog)) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	cw.hooks = append(cw.hooks, fn)
}

func (cw *Watcher) apply(e jetstream.KeyValueEntry) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(cw.cats, e.Key())
		return
	}
	version, err := ValueVersion(e.Value())
	if err != nil {
		cw.reportLocked(e.Key(), err)
		return
	}
	w := cw.cats[e.Key()]
	if w == nil {
		w = &watched{version: -1}
		cw.cats[e.Key()] = w
	}
	if version >= w.version {
		w.version, w.raw = version, e.Value()
		w.seq++
		cw.kick()
	}
}

// decodeLoop decodes new entries as they arrive.
func (cw *Watcher) decodeLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-cw.pending:
		}
		cw.mu.Lock()
		var dbs []string
		for db, w := range cw.cats {
			// A database whose hooks are at work is decoded after them
			// (they kick), as the newest entry by then: its requests keep
			// the catalog whose graph is warm, or being warmed, rather
			// than one that none is built for yet.
			if _, warming := cw.warms[db]; w.raw != nil && time.Since(w.lastRead) < warmFor && !warming {
				dbs = append(dbs, db)
			}
		}
		cw.mu.Unlock()
		for _, db := range dbs {
			cw.catalog(db, true)
		}
	}
}

func (cw *Watcher) reportLocked(key string, err error) {
	if cw.onError != nil {
		cw.onError(key, err)
	}
}

// Ready is closed once the catalogs that existed when watching began are
// loaded.
func (cw *Watcher) Ready() <-chan struct{} { return cw.ready }

// Catalog returns db's current catalog or nil. A new entry is decoded by
// the watcher's own goroutine; until it is, callers get the catalog
// before it rather than wait (or decode it again each), unless there is
// none yet. Decoding happens outside the lock, so a large catalog never
// holds up another database's requests.
func (cw *Watcher) Catalog(db string) *catalog.Catalog {
	return cw.catalog(db, false)
}

func (cw *Watcher) catalog(db string, decoder bool) *catalog.Catalog {
	cw.mu.Lock()
	w := cw.cats[db]
	if w == nil {
		cw.mu.Unlock()
		return nil
	}
	raw, seq, good := w.raw, w.seq, w.good
	if !decoder {
		w.lastRead = time.Now()
	}
	if raw == nil || w.decoding || (good != nil && !decoder) {
		if raw != nil && !decoder {
			cw.kick()
		}
		cw.mu.Unlock()
		return good
	}
	w.decoding = true
	cw.mu.Unlock()
	c, err := cw.decode(db, raw, good)
	cw.mu.Lock()
	w.decoding = false
	if cw.cats[db] == w && w.seq == seq {
		w.raw = nil
		if err != nil {
			cw.reportLocked(db, err)
		}
	}
	if err == nil && (w.good == nil || c.Version >= w.good.Version) {
		w.good = c
	}
	good = w.good
	more := w.raw != nil
	if err == nil && len(cw.hooks) > 0 {
		cw.warmLocked(db, c)
	}
	cw.mu.Unlock()
	if more {
		cw.kick() // a newer entry came while this one decoded
	}
	return good
}

// warmLocked has the hooks take c: now, on a goroutine of db's own, or
// after the catalog they are taking, in place of any that waited.
func (cw *Watcher) warmLocked(db string, c *catalog.Catalog) {
	_, warming := cw.warms[db]
	cw.warms[db] = c
	if warming {
		return
	}
	go func() {
		for {
			cw.mu.Lock()
			c, hooks := cw.warms[db], cw.hooks
			cw.warms[db] = nil
			if c == nil {
				delete(cw.warms, db)
				cw.mu.Unlock()
				cw.kick() // an entry that came meanwhile waits to be decoded
				return
			}
			cw.mu.Unlock()
			for _, h := range hooks {
				h(c)
			}
		}
	}()
}

// decode turns an entry into its catalog: the very catalog when this
// process wrote it, otherwise decoded through the database's
// catalog.Decoder, which decodes only the tables whose JSON changed, and
// made to share the rest with the one before (prev), so that per-table
// work downstream is not redone for what did not change.
func (cw *Watcher) decode(db string, raw []byte, prev *catalog.Catalog) (*catalog.Catalog, error) {
	if cw.local != nil {
		if c := cw.local.writtenAs(db, raw); c != nil {
			return c, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c *catalog.Catalog
	err := cw.decoders.use(db, func(dec *catalog.Decoder) (err error) {
		c, _, err = decodeValue(ctx, cw.objs, raw, dec)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.ShareWith(prev)
	return c, nil
}

func (cw *Watcher) kick() {
	select {
	case cw.pending <- struct{}{}:
	default:
	}
}

// Databases lists the databases with a catalog.
func (cw *Watcher) Databases() []string {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	out := make([]string, 0, len(cw.cats))
	for k := range cw.cats {
		out = append(out, k)
	}
	return out
}

// Changes calls fn with a database's name each time its catalog entry is
// written, until ctx ends. It reads only entry metadata, so it costs the
// same for any catalog size; workers use it to wake events that wait for
// a predecessor applied by another worker.
func (s *Store) Changes(ctx context.Context, fn func(db string)) error {
	w, err := s.kv.WatchAll(ctx, jetstream.MetaOnly(), jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch catalog changes: %w", err)
	}
	go follow(ctx, w, func(e jetstream.KeyValueEntry) {
		if e != nil {
			fn(e.Key())
		}
	})
	return nil
}

// Retired calls fn with each database whose catalog entry is deleted or
// purged (schemaq databases retire), those deleted before the watch
// began included, until ctx ends. A database published again after its
// retirement has an entry again: fn is not called for it at start.
func (s *Store) Retired(ctx context.Context, fn func(db string)) error {
	w, err := s.kv.WatchAll(ctx, jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("watch retired catalogs: %w", err)
	}
	go follow(ctx, w, func(e jetstream.KeyValueEntry) {
		if e != nil && e.Operation() != jetstream.KeyValuePut {
			fn(e.Key())
		}
	})
	return nil
}

// Revision returns the revision of db's entry (0: none), without reading
// the catalog.
func (s *Store) Revision(ctx context.Context, db string) (uint64, error) {
	_, rev, err := s.Version(ctx, db)
	return rev, err
}

// Version returns db's catalog version and entry revision (0 and 0: none)
// without decoding the catalog, unless it was stored without a header.
func (s *Store) Version(ctx context.Context, db string) (int64, uint64, error) {
	e, err := s.get(ctx, db)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read catalog %s: %w", db, err)
	}
	v, err := ValueVersion(e.Value())
	if err != nil {
		return 0, 0, fmt.Errorf("read catalog %s (revision %d): %w", db, e.Revision(), err)
	}
	return v, e.Revision(), nil
}

// Object names the object that holds db's catalog: "" when the catalog
// fits its entry, or there is none. Whatever else lies under catalogs/db/
// in the object store is left over from catalogs replaced since.
func (s *Store) Object(ctx context.Context, db string) (string, error) {
	e, err := s.get(ctx, db)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read catalog %s: %w", db, err)
	}
	b := e.Value()
	if len(b) < headerLen || string(b[:len(refMagic)]) != refMagic {
		return "", nil
	}
	var ref objectRef
	if err := json.Unmarshal(b[headerLen:], &ref); err != nil {
		return "", fmt.Errorf("read catalog %s (revision %d): bad object reference: %w", db, e.Revision(), err)
	}
	return ref.Object, nil
}

// ObjectPrefix is where the catalogs of db too big for an entry are kept
// in the object store.
func ObjectPrefix(db string) string { return "catalogs/" + db + "/" }

// ValueVersion is the version of a stored catalog: from its header, or,
// for a value stored without one, by decoding it.
func ValueVersion(b []byte) (int64, error) {
	if v, ok := events.CatalogEntryVersion(b); ok {
		return v, nil
	}
	c, err := Decode(b)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return c.Version, nil
}

// follow hands a watcher's entries to fn until ctx ends or the watcher
// closes, then stops it. A nil entry marks the end of the initial values.
func follow(ctx context.Context, w jetstream.KeyWatcher, fn func(jetstream.KeyValueEntry)) {
	defer w.Stop() //nolint:errcheck // best effort on shutdown
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			fn(e)
		}
	}
}
