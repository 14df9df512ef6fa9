package catalogkv

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
)

// BenchmarkEncode is the catalog encoding every write pays, at a hundred
// tables (a small database's history) and at a thousand.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{100, 1000} {
		c := catalog.New("bench")
		var sql strings.Builder
		for i := range n {
			fmt.Fprintf(&sql, "CREATE TABLE t%d (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now(), owner_id bigint);\n", i)
		}
		c, err := c.Apply("bench.sql", sql.String())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tables=%d/fresh", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tables=%d/reused", n), func(b *testing.B) {
			b.ReportAllocs()
			var e encoder
			for b.Loop() {
				if _, err := e.encode(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeMigrations is what a worker pays per migration to
// encode a database of 10,000 tables: each op encodes the next version,
// one table altered, sharing the rest with the version before (as the
// worker's ShareWith leaves them). fresh encodes every table each time.
func BenchmarkEncodeMigrations(b *testing.B) {
	cats := migrationVersions(b)
	versions := len(cats)
	for _, mode := range []string{"fresh", "held"} {
		b.Run(mode, func(b *testing.B) {
			var e encoder
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var err error
				if mode == "fresh" {
					_, err = Encode(cats[i%versions])
				} else {
					_, err = e.encode(cats[i%versions])
				}
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// migrationVersions is 32 versions of a database of 10,000 tables, one
// table altered in each, sharing the rest with the version before.
func migrationVersions(b *testing.B) []*catalog.Catalog {
	var sql strings.Builder
	for i := range 10_000 {
		fmt.Fprintf(&sql, "CREATE TABLE t%d (id bigint PRIMARY KEY, name text NOT NULL, created_at timestamptz DEFAULT now(), owner_id bigint);\n", i)
	}
	c, err := catalog.New("bench").Apply("bench.sql", sql.String())
	if err != nil {
		b.Fatal(err)
	}
	cats := []*catalog.Catalog{c}
	for v := 1; v < 32; v++ {
		n, err := c.Apply("alter.sql", fmt.Sprintf("ALTER TABLE t%d ADD COLUMN c%d int;", v*97, v))
		if err != nil {
			b.Fatal(err)
		}
		n.ShareWith(c)
		cats, c = append(cats, n), n
	}
	return cats
}

// TestEncoderKeepsTableJSONWithinItsBound: the databases written longest
// ago lose their table JSON first, and what is written is the same
// either way.
func TestEncoderKeepsTableJSONWithinItsBound(t *testing.T) {
	cat := func(db string, n int) *catalog.Catalog {
		var sql strings.Builder
		for i := range n {
			fmt.Fprintf(&sql, "CREATE TABLE t%d (id bigint PRIMARY KEY, note text);\n", i)
		}
		c, err := catalog.New(db).Apply("t.sql", sql.String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := cat("a", 100), cat("b", 100)
	var probe encoder
	if _, err := probe.encode(a); err != nil {
		t.Fatal(err)
	}
	e := encoder{dbs: perDatabase[catalog.Encoder, *catalog.Encoder]{limit: probe.dbs.total * 3 / 2}} // room for one database
	for _, c := range []*catalog.Catalog{a, b} {
		got, err := e.encode(c)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Encode(c)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: held and fresh encodings differ", c.Database)
		}
	}
	if _, ok := e.dbs.dbs["a"]; ok || e.dbs.dbs["b"] == nil || e.dbs.total != e.dbs.dbs["b"].held || e.dbs.total > e.dbs.limit {
		t.Errorf("held %d bytes of %v, limit %d; want b's alone", e.dbs.total, len(e.dbs.dbs), e.dbs.limit)
	}
}

// BenchmarkDecodeMigrations is what a daemon pays per version to follow
// a database of 10,000 tables that another process writes: each op
// decodes the next version, one table altered, and shares what did not
// change with the version before (Watcher.decode). fresh decodes every
// table each time; held decodes through the database's catalog.Decoder.
func BenchmarkDecodeMigrations(b *testing.B) {
	var entries [][]byte
	for _, c := range migrationVersions(b) {
		e, err := Encode(c)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, e)
	}
	versions := len(entries)
	for _, mode := range []string{"fresh", "held"} {
		b.Run(mode, func(b *testing.B) {
			var dec catalog.Decoder
			var prev *catalog.Catalog
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var d *catalog.Decoder
				if mode == "held" {
					d = &dec
				}
				n, err := decodeWith(entries[i%versions], d)
				if err != nil {
					b.Fatal(err)
				}
				n.ShareWith(prev)
				prev = n
				i++
			}
		})
	}
}

// TestExpandIsBounded: an entry's gzip is expanded up to the bound and
// refused past it, whatever size its trailer claims.
func TestExpandIsBounded(t *testing.T) {
	zip := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(b)
		_ = zw.Close()
		return buf.Bytes()
	}
	const limit = 1 << 20
	exact := bytes.Repeat([]byte("{}"), limit/2)
	if got, err := expand(zip(exact), limit); err != nil || !bytes.Equal(got, exact) {
		t.Fatalf("%d bytes, at the bound: %d back, %v", len(exact), len(got), err)
	}
	bomb := zip(make([]byte, 4*limit)) // 4 MiB of zeros in about 4 KiB
	if _, err := expand(bomb, limit); err == nil || !strings.Contains(err.Error(), "over 1 MiB") {
		t.Fatalf("a bomb past the bound: %v", err)
	}
	lying := slices.Clone(zip(exact))
	binary.LittleEndian.PutUint32(lying[len(lying)-4:], 1<<31) // claims 2 GiB
	if _, err := expand(lying, limit); err == nil {
		t.Fatal("a trailer that lies about the size was taken")
	}
}
