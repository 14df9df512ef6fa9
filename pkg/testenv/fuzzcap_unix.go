//go:build unix

package testenv

import "syscall"

func capAddressSpace(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: n, Max: n})
}
