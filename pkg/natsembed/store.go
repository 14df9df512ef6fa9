package natsembed

import (
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"
)

// JetStream's storage limit. Left unset, nats-server fixes it at start to
// three quarters of the disk then free, and no runtime change may raise a
// limit so derived: once the disk had filled and was freed, every
// JetStream write of the process went on failing with "insufficient
// resources" until a restart. The embedded server sets the same limit
// explicitly instead, which a reload may raise, and raises it as the disk
// gains room: three quarters of what JetStream holds and what is free.

// storeLimit is the limit nats-server would derive for dir: three
// quarters of its free space (0 when it cannot tell).
func storeLimit(dir string) int64 { return freeBytes(dir) / 4 * 3 }

// freeBytes is the space free to dir's user on its filesystem.
func freeBytes(dir string) int64 {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0
	}
	return int64(uint64(fs.Bavail) * uint64(fs.Bsize))
}

// growStore raises ns's storage limit every so often while the disk has
// more room than the limit allows for, until the server stops.
func growStore(ns *server.Server, opts *server.Options, every time.Duration, log *zap.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if !ns.Running() {
			return
		}
		if raised, err := raiseStoreLimit(ns, opts); err != nil {
			log.Warn("cannot raise JetStream's storage limit", zap.Error(err))
		} else if raised > 0 {
			log.Info("JetStream's storage limit raised: the disk has more room", zap.Int64("max_store_bytes", raised))
		}
	}
}

// raiseStoreLimit reloads ns with a higher storage limit when the disk
// allows one a tenth above the current limit, and returns it (0: none).
func raiseStoreLimit(ns *server.Server, opts *server.Options) (int64, error) {
	info, err := ns.Jsz(nil)
	if err != nil || info.Disabled {
		return 0, nil
	}
	// Three quarters of what JetStream holds and what is free: constant
	// while JetStream alone writes, higher once the disk grows or others
	// free space. (What JetStream holds plus three quarters of the free
	// space would creep up as JetStream wrote, past the disk.)
	want := (int64(info.Store) + freeBytes(opts.StoreDir)) / 4 * 3
	if want <= opts.JetStreamMaxStore+opts.JetStreamMaxStore/10 {
		return 0, nil
	}
	next := *opts
	next.JetStreamMaxStore = want
	if err := ns.ReloadOptions(&next); err != nil {
		return 0, err
	}
	opts.JetStreamMaxStore = want
	return want, nil
}
