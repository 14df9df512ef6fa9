package catalog

import (
	"encoding/json"
	"fmt"
)

// Decoder reads one database's catalogs again and again, as a daemon
// does with every version it follows, reusing the tables it decoded the
// time before: a table whose JSON is, byte for byte, what it decoded then
// is that very object (as ShareWith would make it), and is not decoded
// again, nor scanned by encoding/json. Decoding a version of 10,000
// tables whole cost a daemon 90–130 ms and 20 MB each time one table
// changed. Not safe for concurrent use.
type Decoder struct {
	tables map[string]decoded // by their JSON, the last catalog's
	bytes  int
}

// decoded is a table and its JSON.
type decoded struct {
	t    *Table
	json string
}

// Unmarshal decodes what MarshalJSON wrote, as UnmarshalJSON does, and
// keeps the JSON of the catalog's tables, and only theirs, for the next
// call.
func (d *Decoder) Unmarshal(b []byte) (*Catalog, error) {
	elems, rest, split := splitTables(b)
	if !split {
		rest = b // not as MarshalJSON writes: encoding/json reads it all
	}
	var w struct {
		wireHead
		Tables []json.RawMessage `json:"tables"`
		wireTail
	}
	if err := json.Unmarshal(rest, &w); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	if !split {
		for _, r := range w.Tables {
			elems = append(elems, r)
		}
	}
	next := make(map[string]decoded, len(elems))
	tables := make([]*Table, len(elems))
	size := 0
	for i, raw := range elems {
		e, ok := d.tables[string(raw)]
		if !ok {
			if err := json.Unmarshal(raw, &e.t); err != nil {
				return nil, fmt.Errorf("decode catalog: table %d: %w", i+1, err)
			}
			e.json = string(raw)
		}
		tables[i] = e.t
		if _, seen := next[e.json]; !seen {
			next[e.json], size = e, size+len(e.json)
		}
	}
	c, err := fromWire(wireCatalog{w.wireHead, tables, w.wireTail})
	if err != nil {
		return nil, err
	}
	d.tables, d.bytes = next, size
	return c, nil
}

// Held is how many bytes of table JSON d keeps for the next call.
func (d *Decoder) Held() int { return d.bytes }
