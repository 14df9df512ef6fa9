package main

import (
	"os"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

// TestMain stops the PostgreSQL cluster the tests that need one share.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
