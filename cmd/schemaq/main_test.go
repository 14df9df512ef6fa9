package main

import (
	"os"
	"testing"

	"github.com/schemaq/schemaq/pkg/pgtest"
)

// TestMain stops the PostgreSQL cluster the tests that need one share.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
