//go:build !unix

package main

import "os"

// Without flock the data directory is not guarded; the documented
// platforms are Linux and macOS.
// locksTell is false: a free lock says nothing here.
const locksTell = false

func flock(*os.File) error   { return nil }
func funlock(*os.File) error { return nil }
