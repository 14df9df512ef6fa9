package catalog

import (
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
