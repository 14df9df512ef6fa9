package catalog

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestDecodeRefusesWhatNoWriterWrites: an entry MarshalJSON could not
// have written is refused with what is wrong and where, where each of
// these stopped the daemon that decoded it.
func TestDecodeRefusesWhatNoWriterWrites(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"a null table", `{"database":"d","tables":[{"schema":"public","name":"a"},null]}`, "table 2 is null"},
		{"a null column", `{"database":"d","tables":[{"schema":"public","name":"t","columns":[{"name":"a","type":"int"},null]}]}`, "column 2 of table public.t is null"},
		{"a null view", `{"database":"d","views":[null]}`, "view 1 is null"},
		{"a null view column", `{"database":"d","views":[{"schema":"public","name":"v","columns":[null]}]}`, "column 1 of view public.v is null"},
		{"a null enum", `{"database":"d","enums":[null]}`, "enum 1 is null"},
		{"a null function", `{"database":"d","functions":[null]}`, "function 1 is null"},
		{"a key's columns against its references", `{"database":"d","tables":[{"schema":"public","name":"t","foreign_keys":[{"name":"t_fk","columns":["a","b"],"ref_table":{"schema":"public","name":"u"},"ref_columns":["id"]}]}]}`, "foreign key t_fk of table public.t has 2 columns and 1 referenced"},
		{"a table twice", `{"database":"d","tables":[{"schema":"public","name":"t"},{"schema":"public","name":"t"}]}`, "duplicate table public.t"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Catalog
			err := c.UnmarshalJSON([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestDecoderDecodesOnlyWhatChanged: a Decoder reads each version as
// UnmarshalJSON does; the tables whose JSON it read before are the
// objects it made then, the others new. What it refuses leaves what it
// keeps as it was.
func TestDecoderDecodesOnlyWhatChanged(t *testing.T) {
	v1, err := Snapshot("shop", "base.sql", thawBase)
	if err != nil {
		t.Fatal(err)
	}
	v2 := mustApply(t, v1, "ALTER TABLE notes ADD COLUMN author text; ALTER TABLE customers RENAME COLUMN id TO customer_key;")
	var dec Decoder
	first, err := dec.Unmarshal(wireBytes(t, v1))
	if err != nil {
		t.Fatal(err)
	}
	held := dec.Held()
	if _, err := dec.Unmarshal([]byte(`{"database":"shop","tables":[null]}`)); err == nil || dec.Held() != held {
		t.Fatalf("a null table: %v, and %d bytes held of %d", err, dec.Held(), held)
	}
	second, err := dec.Unmarshal(wireBytes(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wireBytes(t, second), wireBytes(t, v2); !bytes.Equal(got, want) {
		t.Fatalf("decoded\n%s\nwant\n%s", got, want)
	}
	var again []string
	for q, tb := range second.tables {
		if first.tables[q] != tb {
			again = append(again, q.Name)
		}
	}
	slices.Sort(again)
	// orders and events (and its partition) reference customers' key by
	// the renamed column; the rest did not change.
	if want := []string{"customers", "events", "events_2026", "notes", "orders"}; !slices.Equal(again, want) {
		t.Fatalf("decoded again %v, want %v", again, want)
	}
}

// TestSplitTables: the tables are found as encoding/json reads the
// object, or not at all.
func TestSplitTables(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		elems    []string // nil: not split
		rest     string
	}{
		{"as MarshalJSON writes", `{"database":"d","tables":[{"name":"a"},{"name":"b"}],"views":[]}`, []string{`{"name":"a"}`, `{"name":"b"}`}, `{"database":"d","tables":[],"views":[]}`},
		{"with space", " {\n \"tables\" : [ {\"name\":\"a\"} ,\t{} ] }\n", []string{`{"name":"a"}`, `{}`}, " {\n \"tables\" : [] }\n"},
		{"brackets and quotes in strings", `{"tables":[{"comment":"a ] } \" [ {"},{"x":"\\"}]}`, []string{`{"comment":"a ] } \" [ {"}`, `{"x":"\\"}`}, `{"tables":[]}`},
		{"tables within a table", `{"tables":[{"tables":[1,2]}]}`, []string{`{"tables":[1,2]}`}, `{"tables":[]}`},
		{"empty", `{"tables":[]}`, []string{}, `{"tables":[]}`},
		{"null elements", `{"tables":[null,1]}`, []string{`null`, `1`}, `{"tables":[]}`},
		{"no tables", `{"database":"d"}`, nil, ""},
		{"another case", `{"Tables":[{}]}`, nil, ""},
		{"two keys", `{"tables":[],"tables":[{}]}`, nil, ""},
		{"an escaped key", `{"t\u0061bles":[{}],"tables":[]}`, nil, ""},
		{"not an array", `{"tables":{}}`, nil, ""},
		{"no comma", `{"tables":[{} {}]}`, nil, ""},
		{"unterminated", `{"tables":[{"a":"]}`, nil, ""},
		{"after the object", `{"tables":[]} {}`, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elems, rest, ok := splitTables([]byte(tc.in))
			if ok != (tc.elems != nil) {
				t.Fatalf("split %v, want %v", ok, tc.elems != nil)
			}
			if !ok {
				return
			}
			got := []string{}
			for _, e := range elems {
				got = append(got, string(e))
			}
			if !slices.Equal(got, tc.elems) || string(rest) != tc.rest {
				t.Fatalf("got %q and %q, want %q and %q", got, rest, tc.elems, tc.rest)
			}
		})
	}
}
