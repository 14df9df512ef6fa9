package catalog

import (
	"bytes"
	"encoding/json"
	"io"
)

// Encoder writes one database's catalogs again and again, as a worker
// does on every migration, reusing the JSON of each table it wrote the
// time before when the table is the very object it was (ShareWith): a
// one-table migration of 10,000 tables encodes one table, not 3 MB.
// The bytes are MarshalJSON's. Not safe for concurrent use.
type Encoder struct {
	tables map[*Table][]byte
	bytes  int
}

// Marshal encodes c as MarshalJSON does, and keeps the JSON of c's
// tables, and only theirs, for the next call.
func (e *Encoder) Marshal(c *Catalog) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(e.bytes + 4096)
	if err := e.Encode(&buf, c); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Encode writes what Marshal returns to w, table by table: a gzip
// writer takes it without the whole JSON ever being held.
func (e *Encoder) Encode(w io.Writer, c *Catalog) error {
	hb, err := json.Marshal(c.wireHead())
	if err != nil {
		return err
	}
	tb, err := json.Marshal(c.wireTail())
	if err != nil {
		return err
	}
	tables := c.Tables()
	next := make(map[*Table][]byte, len(tables))
	ew := errWriter{w: w}
	ew.write(hb[:len(hb)-1]) // without its closing brace
	ew.write([]byte(`,"tables":[`))
	size := 0
	for i, t := range tables {
		b, ok := e.tables[t]
		if !ok {
			if b, err = json.Marshal(t); err != nil {
				return err
			}
		}
		if i > 0 {
			ew.write(comma)
		}
		ew.write(b)
		next[t], size = b, size+len(b)
	}
	ew.write([]byte("],"))
	ew.write(tb[1:]) // without its opening brace
	if ew.err != nil {
		return ew.err
	}
	e.tables, e.bytes = next, size
	return nil
}

var comma = []byte{','}

// errWriter keeps the first error of a run of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (ew *errWriter) write(b []byte) {
	if ew.err == nil {
		_, ew.err = ew.w.Write(b)
	}
}

// Held is how many bytes of table JSON e keeps for the next call.
func (e *Encoder) Held() int { return e.bytes }
