package bearer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// WatchEvery is how often Watch looks at the tokens file.
const WatchEvery = 10 * time.Second

// A token revoked in the file should stop working without a restart: a
// leaked token otherwise stayed good until someone rolled every pod. The
// kubelet updates a mounted Secret by pointing its ..data symlink at a
// new directory, so the file is known by where it resolves, its size and
// its time, and read again when any of them changes.

// Watch reads path again every interval while ctx lasts and, when it
// changed, makes its tokens (and global) ring's set. A file that no
// longer loads leaves the set as it was. report hears of each reload: the
// tokens it holds, or why the file was kept out.
func Watch(ctx context.Context, ring *Keyring, path, global string, every time.Duration, report func(tokens int, err error)) {
	// The first look reads the file again: it may have changed between
	// the caller's Load and now.
	last := fileStamp{resolved: "(not read yet)"}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := stamp(path)
		if now == last { // the same version, or still unreadable (told once)
			continue
		}
		last = now
		if err != nil {
			report(0, err)
			continue
		}
		tokens, err := Load(path)
		if err != nil {
			report(0, err)
			continue
		}
		ring.Replace(global, tokens)
		report(len(tokens), nil)
	}
}

// fileStamp tells one version of a file from another.
type fileStamp struct {
	resolved string
	size     int64
	mod      time.Time
}

func stamp(path string) (fileStamp, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileStamp{}, err
	}
	st, err := os.Stat(resolved)
	if err != nil {
		return fileStamp{}, err
	}
	if !st.Mode().IsRegular() {
		return fileStamp{}, errors.New(path + " is not a regular file")
	}
	return fileStamp{resolved: resolved, size: st.Size(), mod: st.ModTime()}, nil
}
