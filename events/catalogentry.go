package events

import "encoding/binary"

// The entries of CatalogBucket start with a header that holds the
// catalog's version, so that readers which only need the version (the
// Go client listing databases, status) neither decompress nor decode the
// catalog, nor need the DDL parser that builds one. Entries written
// before the header existed are plain gzip-compressed JSON.
const (
	// CatalogEntryInline: the header, then the catalog's JSON gzip-compressed.
	CatalogEntryInline = "sqcat1"
	// CatalogEntryObject: the header, then JSON naming the object-store
	// object that holds the compressed catalog.
	CatalogEntryObject = "sqcatO"
	// CatalogEntryHeaderLen is the header's length: the magic, then the
	// version as a big-endian 64-bit integer.
	CatalogEntryHeaderLen = len(CatalogEntryInline) + 8
)

// CatalogEntryVersion is the catalog version in an entry's header; false
// for an entry without one.
func CatalogEntryVersion(b []byte) (int64, bool) {
	if len(b) < CatalogEntryHeaderLen {
		return 0, false
	}
	if m := string(b[:len(CatalogEntryInline)]); m != CatalogEntryInline && m != CatalogEntryObject {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[len(CatalogEntryInline):CatalogEntryHeaderLen])), true
}
