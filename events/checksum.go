package events

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Checksum identifies a migration's content: the SHA-256 of its SQL with
// line endings normalised, so a checkout on Windows is not a change. It
// is the form of ObjectRef.Checksum and of the checksums the catalog
// records, so publishers compute it without the DDL parser.
func Checksum(sql string) string {
	sum := sha256.Sum256([]byte(strings.ReplaceAll(sql, "\r\n", "\n")))
	return hex.EncodeToString(sum[:16])
}
