package testenv

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// FuzzAddressSpaceEnv names the variable that caps a fuzz worker's
// address space, in bytes (CI sets it).
const FuzzAddressSpaceEnv = "SCHEMAQ_FUZZ_ADDRESS_SPACE"

// CapFuzzWorker caps the address space of the process when it is a fuzz
// worker, the process that runs the inputs, to FuzzAddressSpaceEnv's
// bytes when that is set: an input whose evaluation outgrows the budgets
// then dies of out-of-memory, which the coordinator reports as a
// failure with the input. The coordinator itself is left alone. It keeps
// the corpus and replays a worker's mutations in a 100 MB scratch, and
// under a shell's ulimit, which caps both, it once ran out of room
// itself, with nothing found. Call it before f.Fuzz.
func CapFuzzWorker(f *testing.F) {
	f.Helper()
	v := os.Getenv(FuzzAddressSpaceEnv)
	worker := flag.Lookup("test.fuzzworker")
	if v == "" || worker == nil || worker.Value.String() != "true" {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		f.Fatalf("%s=%q: want a number of bytes", FuzzAddressSpaceEnv, v)
	}
	if err := capAddressSpace(n); err != nil {
		f.Fatalf("capping the fuzz worker's address space to %d bytes: %v", n, err)
	}
}
