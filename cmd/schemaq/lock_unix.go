//go:build unix

package main

import (
	"os"
	"syscall"
)

// locksTell: a lock another process holds is refused, so a free one
// means no process holds it.
const locksTell = true

func flock(f *os.File) error   { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }
func funlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
