// Package safefile reads the files a command is pointed at when they are
// someone else's: the migrations, docs and examples of a pull request
// that CI publishes or checks. Such a directory may hold a symlink to
// /etc/shadow, a FIFO that blocks a reader for ever, or a file of half a
// gigabyte. Only regular files are read, a symlink only when it stays
// inside the directory it was found in, and sizes are checked before
// reading.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrRefused marks a file that is not read: not regular, a symlink
// leaving its directory, or over the size cap.
var ErrRefused = errors.New("file refused")

// Read returns the contents of path, a file found under root (or named
// by the user, with root its directory), refusing what Check refuses
// and any file over max bytes.
func Read(root, path string, max int64) ([]byte, error) {
	f, err := Open(root, path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", strconv.Quote(path), err)
	}
	if int64(len(b)) > max {
		// It grew since it was opened.
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrRefused, strconv.Quote(path), max)
	}
	return b, nil
}

// Open opens path for reading once Check passes, and checks again what
// it opened: the file may be swapped for a FIFO between the two, so it
// is opened without blocking, and what is not a regular file is closed
// unread.
func Open(root, path string, max int64) (*os.File, error) {
	if err := Check(root, path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", strconv.Quote(path), err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", strconv.Quote(path), err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not a regular file (%s)", ErrRefused, strconv.Quote(path), st.Mode().Type())
	}
	if st.Size() > max {
		f.Close()
		return nil, fmt.Errorf("%w: %s is %d bytes, over the %d a file may be", ErrRefused, strconv.Quote(path), st.Size(), max)
	}
	return f, nil
}

// Check refuses path unless it is a regular file, or a symlink to one
// that resolves inside root.
func Check(root, path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return fmt.Errorf("%w: %s is a symlink that does not resolve: %v", ErrRefused, strconv.Quote(path), err)
		}
		if !inside(root, target) {
			return fmt.Errorf("%w: %s is a symlink out of %s", ErrRefused, strconv.Quote(path), strconv.Quote(root))
		}
		if st, err = os.Stat(target); err != nil {
			return err
		}
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrRefused, strconv.Quote(path), st.Mode().Type())
	}
	return nil
}

// inside reports whether target (resolved) lies under root (resolved).
func inside(root, target string) bool {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	r, _ = filepath.Abs(r)
	t, _ := filepath.Abs(target)
	rel, err := filepath.Rel(r, t)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
