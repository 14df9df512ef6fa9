package catalog

import (
	"bytes"
	"encoding/json"
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
	head := wireHead{Database: c.Database, Version: c.Version}
	for _, s := range c.Schemas() {
		head.Schemas = append(head.Schemas, wireSchema{s, c.schemas[s]})
	}
	hb, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	tb, err := json.Marshal(wireTail{Views: c.Views(), Enums: c.Enums(), History: c.history, Base: c.base,
		Functions: c.Functions(), Drift: c.drift, Routines: c.Routines()})
	if err != nil {
		return nil, err
	}
	tables := c.Tables()
	next := make(map[*Table][]byte, len(tables))
	var buf bytes.Buffer
	buf.Grow(len(hb) + len(tb) + e.bytes + 64)
	buf.Write(hb[:len(hb)-1]) // without its closing brace
	buf.WriteString(`,"tables":[`)
	size := 0
	for i, t := range tables {
		b, ok := e.tables[t]
		if !ok {
			if b, err = json.Marshal(t); err != nil {
				return nil, err
			}
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
		next[t], size = b, size+len(b)
	}
	buf.WriteString("],")
	buf.Write(tb[1:]) // without its opening brace
	e.tables, e.bytes = next, size
	return buf.Bytes(), nil
}

// Held is how many bytes of table JSON e keeps for the next call.
func (e *Encoder) Held() int { return e.bytes }

// wireHead and wireTail are wireCatalog's fields before and after its
// tables, in its order.
type wireHead struct {
	Database string       `json:"database"`
	Version  int64        `json:"version"`
	Schemas  []wireSchema `json:"schemas"`
}

type wireTail struct {
	Views     []*View     `json:"views"`
	Enums     []*Enum     `json:"enums"`
	History   []Applied   `json:"history,omitempty"`
	Base      *Base       `json:"base,omitempty"`
	Functions []*Function `json:"functions,omitempty"`
	Drift     []Drift     `json:"drift,omitempty"`
	Routines  []*Routine  `json:"routines,omitempty"`
}
