package events

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// AppliedMigration is one migration a catalog records as applied, in
// the history of its entry in CatalogBucket: what a publisher plans
// against, as migration tools plan against their schema_migrations
// table.
type AppliedMigration struct {
	Seq int64 `json:"seq"`
	// ID is the migration's identity in its tool (its version, or its
	// file name without one).
	ID     string `json:"id"`
	Source string `json:"source,omitempty"`
	// Checksum is Checksum of the SQL that was applied.
	Checksum string `json:"checksum"`
	// StreamSeq is where the applied event sits in the event stream (0
	// when not recorded). An event at the same seq that sits before it
	// was superseded (a broken migration, fixed and published again), not
	// a conflict: a replica replaying the stream meets it first.
	StreamSeq uint64 `json:"stream_seq,omitempty"`
}

// SnapshotBase is the snapshot a catalog's history starts from, when it
// does.
type SnapshotBase struct {
	Seq    int64  `json:"seq"`
	Source string `json:"source,omitempty"`
	// StreamSeq is where the snapshot's event sits in the event stream
	// (0 when not recorded).
	StreamSeq uint64 `json:"stream_seq,omitempty"`
}

// CatalogHistory is what a catalog entry records of how the catalog came
// to be: its version, the migrations applied in seq order, and the
// snapshot it starts from. It is read without the catalog's tables, and
// so without the DDL parser.
type CatalogHistory struct {
	Database string             `json:"database"`
	Version  int64              `json:"version"`
	History  []AppliedMigration `json:"history,omitempty"`
	Base     *SnapshotBase      `json:"base,omitempty"`
}

// ErrCatalogInObject is an entry whose catalog is kept in the object
// store: CatalogEntryObjectName names the object, whose bytes
// DecodeCatalogHistory then reads.
var ErrCatalogInObject = errors.New("the catalog is kept in the object store")

// CatalogEntryObjectName is the object an entry of the object form
// references.
func CatalogEntryObjectName(entry []byte) (string, error) {
	if len(entry) < CatalogEntryHeaderLen || string(entry[:len(CatalogEntryObject)]) != CatalogEntryObject {
		return "", errors.New("not an entry that references an object")
	}
	var ref struct {
		Object string `json:"object"`
	}
	if err := json.Unmarshal(entry[CatalogEntryHeaderLen:], &ref); err != nil || ref.Object == "" {
		return "", fmt.Errorf("bad object reference: %v", err)
	}
	return ref.Object, nil
}

// DecodeCatalogHistory reads the history of a catalog entry (inline, with
// or without a header) or of the object an entry references (gzip of the
// catalog's JSON). An entry of the object form returns
// ErrCatalogInObject.
func DecodeCatalogHistory(b []byte) (*CatalogHistory, error) {
	return decodeCatalogHistory(b, MaxCatalogJSONBytes)
}

// MaxCatalogJSONBytes bounds a catalog entry's JSON once expanded:
// 50,000 tables are about 25 MB, and a few KiB of gzip can expand to
// gigabytes. Readers refuse an entry past it.
const MaxCatalogJSONBytes = 1 << 30

func decodeCatalogHistory(b []byte, limit int64) (*CatalogHistory, error) {
	if len(b) >= CatalogEntryHeaderLen {
		switch string(b[:len(CatalogEntryInline)]) {
		case CatalogEntryObject:
			return nil, ErrCatalogInObject
		case CatalogEntryInline:
			b = b[CatalogEntryHeaderLen:]
		}
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("catalog entry: %w", err)
	}
	var h CatalogHistory
	lr := &io.LimitedReader{R: zr, N: limit + 1}
	if err := json.NewDecoder(lr).Decode(&h); err != nil {
		if lr.N == 0 {
			return nil, fmt.Errorf("catalog entry: its JSON is over %d MiB once expanded", limit>>20)
		}
		return nil, fmt.Errorf("catalog entry: %w", err)
	}
	return &h, nil
}
