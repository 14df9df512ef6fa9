package catalog

import (
	"encoding/json"
	"fmt"
)

// Decoder reads one database's catalogs again and again, as a daemon
// does with every version it follows, reusing the tables it decoded the
// time before: a table whose JSON is, byte for byte, what it decoded then
// is that very object (as ShareWith would make it), and is not decoded
// again. Decoding a version of 10,000 tables whole cost a daemon 90–120
// ms and 20 MB each time one table changed. Not safe for concurrent use.
type Decoder struct {
	tables map[string]*Table // by their JSON, the last catalog's
	bytes  int
}

// Unmarshal decodes what MarshalJSON wrote, as UnmarshalJSON does, and
// keeps the JSON of the catalog's tables, and only theirs, for the next
// call.
func (d *Decoder) Unmarshal(b []byte) (*Catalog, error) {
	var w struct {
		wireHead
		Tables []json.RawMessage `json:"tables"`
		wireTail
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	next := make(map[string]*Table, len(w.Tables))
	tables := make([]*Table, len(w.Tables))
	size := 0
	for i, raw := range w.Tables {
		t, ok := d.tables[string(raw)]
		if !ok {
			if err := json.Unmarshal(raw, &t); err != nil {
				return nil, fmt.Errorf("decode catalog: table %d: %w", i+1, err)
			}
		}
		tables[i] = t
		if _, seen := next[string(raw)]; !seen {
			next[string(raw)], size = t, size+len(raw)
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
