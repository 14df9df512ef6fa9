package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/schemaq/schemaq/pkg/embed"
	"github.com/schemaq/schemaq/pkg/index"
	"github.com/schemaq/schemaq/pkg/index/redisearch"
	"github.com/schemaq/schemaq/pkg/index/sqlite"
	"github.com/schemaq/schemaq/pkg/redact"
)

// indexStore is what the roles need of a store: the index, and the
// embedding cache beside it.
type indexStore interface {
	index.Store
	embed.CacheStore
}

// storeFlags choose the index store: the embedded SQLite file under the
// data directory, or a shared Redis with the query engine when a Redis
// URL is set.
type storeFlags struct {
	redisURL string
	// sentinels and master name the primary through Redis Sentinel;
	// sentinelPassword is the Sentinels' own (environment only).
	sentinels, master string
	sentinelPassword  string
	// cluster seeds a Redis Cluster client.
	cluster    string
	prefix     string
	algorithm  string
	ca         string
	cacheTTL   time.Duration
	search     string
	lease      time.Duration
	staleReads time.Duration
	password   string // from the environment only
}

func (f *storeFlags) register(fs *flag.FlagSet, e *env) error {
	ttl, err := envDuration(e, "SCHEMAQ_REDIS_CACHE_TTL", 30*24*time.Hour)
	if err != nil {
		return err
	}
	lease, err := envDuration(e, "SCHEMAQ_REDIS_LEASE", redisearch.DefaultLease)
	if err != nil {
		return err
	}
	stale, err := envDuration(e, "SCHEMAQ_REDIS_STALE_READS", redisearch.DefaultStaleReads)
	if err != nil {
		return err
	}
	f.password = e.getenv("SCHEMAQ_REDIS_PASSWORD")
	f.sentinelPassword = e.getenv("SCHEMAQ_REDIS_SENTINEL_PASSWORD")
	fs.StringVar(&f.sentinels, "redis-sentinels", envString(e, "SCHEMAQ_REDIS_SENTINELS", ""), "the shared index's Redis through Sentinel: host:port of the Sentinels, comma-separated; the client follows the primary they name through a failover (--redis-url then gives only the user, password, database and TLS) [SCHEMAQ_REDIS_SENTINELS]")
	fs.StringVar(&f.master, "redis-master", envString(e, "SCHEMAQ_REDIS_MASTER", ""), "with --redis-sentinels: the master name the Sentinels monitor [SCHEMAQ_REDIS_MASTER]")
	fs.StringVar(&f.cluster, "redis-cluster", envString(e, "SCHEMAQ_REDIS_CLUSTER", ""), "the shared index on Redis Cluster: host:port of some of its nodes, comma-separated; searches run in memory (--redis-url then gives only the user, password and TLS) [SCHEMAQ_REDIS_CLUSTER]")
	fs.StringVar(&f.redisURL, "redis-url", envString(e, "SCHEMAQ_REDIS_URL", ""), "shared index in Redis with the query engine: redis://[user:password@]host:port/db or rediss:// for TLS; empty uses the embedded SQLite index [SCHEMAQ_REDIS_URL]")
	fs.StringVar(&f.prefix, "redis-prefix", envString(e, "SCHEMAQ_REDIS_PREFIX", "schemaq:"), "prefix of every Redis key and index [SCHEMAQ_REDIS_PREFIX]")
	fs.StringVar(&f.algorithm, "redis-vector-algorithm", envString(e, "SCHEMAQ_REDIS_VECTOR_ALGORITHM", "HNSW"), "HNSW or FLAT (exact) [SCHEMAQ_REDIS_VECTOR_ALGORITHM]")
	fs.StringVar(&f.search, "redis-search", envString(e, "SCHEMAQ_REDIS_SEARCH", redisearch.SearchMemory), "where searches run: memory (each daemon holds the databases it searches, ranks as the embedded store, no round trip a search under a lease, one otherwise) or server (the query engine: FT.SEARCH, nothing held) [SCHEMAQ_REDIS_SEARCH]")
	fs.StringVar(&f.ca, "redis-ca", envString(e, "SCHEMAQ_REDIS_CA", ""), "CA file for rediss:// with a private CA [SCHEMAQ_REDIS_CA]")
	fs.DurationVar(&f.lease, "redis-lease", lease, "searching in memory, how long a daemon serves its snapshots without checking them while writes announce their changes to it; a daemon that dies unannounced holds each write up to this long; 0 checks before every search [SCHEMAQ_REDIS_LEASE]")
	fs.DurationVar(&f.staleReads, "redis-stale-reads", stale, "searching in memory, how long a daemon answers from the snapshots it holds while Redis cannot be reached (a Sentinel failover, a partition), from the last time Redis confirmed each; 0 fails those searches [SCHEMAQ_REDIS_STALE_READS]")
	fs.DurationVar(&f.cacheTTL, "redis-cache-ttl", ttl, "expiry of embedding cache entries in Redis; 0 keeps them [SCHEMAQ_REDIS_CACHE_TTL]")
	return nil
}

// storeLease is Options.Lease for the --redis-lease given: 0 is off.
func (f *storeFlags) storeLease() time.Duration {
	if f.lease <= 0 {
		return -1
	}
	return f.lease
}

// shared reports whether the index is the shared Redis one.
func (f *storeFlags) shared() bool { return f.redisURL != "" || f.sentinels != "" || f.cluster != "" }

// where names the Redis for logs and errors, without a password.
func (f *storeFlags) where() string {
	switch {
	case f.sentinels != "":
		return fmt.Sprintf("Sentinel master %s via %s", f.master, f.sentinels)
	case f.cluster != "":
		return "Redis Cluster via " + f.cluster
	}
	return redact.URL(f.redisURL)
}

// client builds the Redis client: from the URL, or, with Sentinels, a
// failover client that follows the primary they name. The password may
// come from SCHEMAQ_REDIS_PASSWORD instead of the URL, so that it stays
// out of process listings and manifests.
func (f *storeFlags) client() (redis.UniversalClient, error) {
	opt := &redis.Options{}
	if f.redisURL != "" {
		var err error
		if opt, err = redis.ParseURL(f.redisURL); err != nil {
			return nil, usagef("--redis-url (SCHEMAQ_REDIS_URL): %v", err)
		}
	}
	if f.password != "" && opt.Password == "" {
		opt.Password = f.password
	}
	if f.ca != "" {
		if opt.TLSConfig == nil {
			return nil, usagef("--redis-ca is set but %s is not a rediss:// URL", redact.URL(f.redisURL))
		}
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, usagef("--redis-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usagef("--redis-ca: %s holds no PEM certificate", f.ca)
		}
		opt.TLSConfig.RootCAs = pool
		opt.TLSConfig.MinVersion = tls.VersionTLS12
	}
	opt.ClientName = "schemaq"
	switch {
	case f.sentinels != "" && f.cluster != "":
		return nil, usagef("--redis-sentinels and --redis-cluster name two kinds of Redis; give one")
	case f.cluster != "":
		if opt.DB != 0 {
			return nil, usagef("--redis-cluster: Redis Cluster has database 0 only, and --redis-url names %d", opt.DB)
		}
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: commaList(f.cluster), Username: opt.Username, Password: opt.Password,
			TLSConfig: opt.TLSConfig, ClientName: opt.ClientName}), nil
	case f.sentinels == "":
		return redis.NewClient(opt), nil
	case f.master == "":
		return nil, usagef("--redis-sentinels needs --redis-master (SCHEMAQ_REDIS_MASTER): the master name the Sentinels monitor")
	}
	addrs := commaList(f.sentinels)
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: f.master, SentinelAddrs: addrs, SentinelPassword: f.sentinelPassword,
		Username: opt.Username, Password: opt.Password, DB: opt.DB, TLSConfig: opt.TLSConfig, ClientName: opt.ClientName}), nil
}

// commaList splits a comma-separated flag value (URLs, host:port),
// leaving out blanks.
func commaList(list string) []string {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// openStore opens the chosen store for vectors of dim dimensions from
// model. A writer (a process running a worker) may create the next
// Redis index version; readers only use the current one. The returned
// check is the store's readiness probe; close releases everything.
func (f *storeFlags) openStore(ctx context.Context, log *zap.Logger, dataDir string, model string, dim int, writer bool) (indexStore, func(context.Context) error, func() error, error) {
	if !f.shared() {
		s, err := sqlite.Open(ctx, filepath.Join(dataDir, "index.db"), dim)
		if err != nil {
			return nil, nil, nil, err
		}
		check := func(ctx context.Context) error {
			_, err := s.Count(ctx, index.Filter{Database: "_readyz"})
			return err
		}
		return s, check, s.Close, nil
	}
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{log.Named("redis")}) })
	s, rdb, err := f.openRedis(ctx, redisearch.Options{Prefix: f.prefix, Dimensions: dim, Model: model,
		Algorithm: f.algorithm, Writer: writer, CacheTTL: f.cacheTTL, Search: f.search, Lease: f.storeLease(), StaleReads: f.staleReads})
	if err != nil {
		return nil, nil, nil, err
	}
	log.Info("index store: redis", zap.String("url", f.where()), zap.Int("index_version", s.Version()),
		zap.Bool("building", s.Rebuilt()), zap.String("prefix", f.prefix), zap.String("search", f.search))
	return s, s.Check, func() error { return errors.Join(s.Close(), rdb.Close()) }, nil
}

// leaseMetrics exports a shared-index store's lease figures: whether a
// daemon searches without round trips, and what the announcements cost
// the writes (docs/deploy.md).
func leaseMetrics(reg prometheus.Registerer, s interface{ LeaseStats() redisearch.LeaseStats }) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "schemaq_index_lease_held",
			Help: "1 while this process holds its lease on the shared index: its in-memory searches need no round trip to Redis."},
			func() float64 {
				if s.LeaseStats().Held {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_index_lease_lapses_total",
			Help: "Times a held lease ended early (its subscription dropped or went silent); searches check Redis until it is renewed."},
			func() float64 { return float64(s.LeaseStats().Lapses) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_index_announcements_total",
			Help: "Writes to the shared index announced to the searching processes."},
			func() float64 { return float64(s.LeaseStats().Announcements) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_index_announce_seconds_total",
			Help: "Time writes spent announcing their changes and waiting for every lease holder's acknowledgement."},
			func() float64 { return s.LeaseStats().Waited.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "schemaq_index_stale_searches_total",
			Help: "Searches answered from a held snapshot while Redis could not be reached (--redis-stale-reads)."},
			func() float64 { return float64(s.LeaseStats().Stale) }),
	)
}

// openRedis connects to the configured Redis and opens the store with
// opt; on failure the client is closed again, and an unreachable server
// is named by its URL with the password hidden.
func (f *storeFlags) openRedis(ctx context.Context, opt redisearch.Options) (*redisearch.Store, redis.UniversalClient, error) {
	rdb, err := f.client()
	if err != nil {
		return nil, nil, err
	}
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := redisearch.Open(openCtx, rdb, opt)
	if err != nil {
		rdb.Close()
		if errors.Is(err, index.ErrUnavailable) {
			return nil, nil, fmt.Errorf("index store %s: %w", f.where(), err)
		}
		return nil, nil, fmt.Errorf("index store %s: %w", f.where(), err)
	}
	return s, rdb, nil
}

// go-redis logs through one process-wide logger (its design, not ours);
// the first store opened routes it into zap, once.
var redisLogOnce sync.Once

type redisLogger struct{ log *zap.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}

// benchStore opens a Redis store under a prefix of its own for one
// benchmark run; closing it removes everything the run wrote.
func (f *storeFlags) benchStore(ctx context.Context, dim int) (index.Store, string, error) {
	s, rdb, err := f.openRedis(ctx, redisearch.Options{Prefix: "schemaq-bench:" + nuid.Next() + ":", Dimensions: dim,
		Model: "bench", Algorithm: f.algorithm, Writer: true, Search: f.search, Lease: f.storeLease()})
	if err != nil {
		return nil, "", err
	}
	if f.search == redisearch.SearchMemory {
		return benchRedis{s, rdb}, "redis (search in memory)", nil
	}
	return benchRedis{s, rdb}, "redis (server, " + strings.ToLower(f.algorithm) + ")", nil
}

type benchRedis struct {
	*redisearch.Store
	rdb redis.UniversalClient
}

func (b benchRedis) Close() error {
	err := b.DropAll(context.Background())
	return errors.Join(err, b.Store.Close(), b.rdb.Close())
}
