package events

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// TestCatalogHistoryIsBounded: an entry is read up to the bound on its
// expanded JSON, and refused past it with the bound named.
func TestCatalogHistoryIsBounded(t *testing.T) {
	zip := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return buf.Bytes()
	}
	const limit = 1 << 20
	small := `{"database":"shop","version":3,"history":[{"seq":3,"id":"0003.sql"}]}`
	h, err := decodeCatalogHistory(zip(small), limit)
	if err != nil || h.Database != "shop" || h.Version != 3 || len(h.History) != 1 {
		t.Fatalf("%+v, %v", h, err)
	}
	// Valid JSON that keeps going: the decoder would hold all of it.
	bomb := `{"database":"shop","tables":[` + strings.Repeat(`{"name":"t"},`, 2*limit/12) + `{}]}`
	if _, err := decodeCatalogHistory(zip(bomb), limit); err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("past the bound: %v", err)
	}
}
