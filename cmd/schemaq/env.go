package main

import "os"

// osGetenv is the only place the process environment is read; commands get
// it through env so tests can give their own.
func osGetenv(key string) string { return os.Getenv(key) }
