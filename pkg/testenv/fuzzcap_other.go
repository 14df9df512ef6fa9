//go:build !unix

package testenv

import "errors"

func capAddressSpace(uint64) error {
	return errors.New("not supported on this system")
}
