package catalog

import (
	"bytes"
	"testing"
)

// wireBytes is the catalog's JSON as MarshalJSON writes it, in one
// json.Marshal: what Encoder must write byte for byte, since the worker
// compares and hashes catalogs by their bytes.
func wireBytes(t testing.TB, c *Catalog) []byte {
	t.Helper()
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncoderWritesWhatOneMarshalWrites(t *testing.T) {
	tests := []struct{ name, sql string }{
		{"empty", ""},
		{"tables, a view, an enum, a function", `
CREATE SCHEMA shop;
COMMENT ON SCHEMA shop IS 'the <shop> & its "orders"';
CREATE TYPE shop.status AS ENUM ('new', 'paid');
CREATE TABLE shop.customers (id bigint PRIMARY KEY, name text NOT NULL);
COMMENT ON TABLE shop.customers IS 'who buys: <b>&amp;</b>';
CREATE TABLE shop.orders (id bigint PRIMARY KEY, customer_id bigint REFERENCES shop.customers (id), status shop.status DEFAULT 'new');
CREATE VIEW shop.open_orders AS SELECT id FROM shop.orders WHERE status = 'new';
CREATE FUNCTION shop.total(o bigint) RETURNS numeric LANGUAGE sql AS 'SELECT 1';`},
		{"partitions", `
CREATE TABLE events (id bigint, at date) PARTITION BY RANGE (at);
CREATE TABLE events_2026 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New("shop")
			if tc.sql != "" {
				c = mustApply(t, c, tc.sql)
			}
			var e Encoder
			got, err := e.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if want := wireBytes(t, c); !bytes.Equal(got, want) {
				t.Errorf("encoder wrote\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestEncoderEncodesOnlyWhatChanged: after a migration, the tables the
// new catalog shares with the one before keep the JSON written then, and
// the bytes are still one Marshal's.
func TestEncoderEncodesOnlyWhatChanged(t *testing.T) {
	c := mustApply(t, New("shop"), `
CREATE TABLE a (id int PRIMARY KEY);
CREATE TABLE b (id int PRIMARY KEY, a_id int REFERENCES a (id));
CREATE TABLE c (id int);`)
	var e Encoder
	if _, err := e.Marshal(c); err != nil {
		t.Fatal(err)
	}
	first := map[string]*byte{}
	for tb, b := range e.tables {
		first[tb.Name] = &b[0]
	}
	n := mustApply(t, c, `ALTER TABLE c ADD COLUMN note text; DROP TABLE b; CREATE TABLE d (id int);`)
	n.ShareWith(c)
	got, err := e.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if want := wireBytes(t, n); !bytes.Equal(got, want) {
		t.Fatalf("after the migration the encoder wrote\n%s\nwant\n%s", got, want)
	}
	for tb, b := range e.tables {
		if reused := first[tb.Name] == &b[0]; reused != (tb.Name == "a") {
			t.Errorf("table %s: JSON reused %v", tb.Name, reused)
		}
	}
	if len(e.tables) != 3 {
		t.Errorf("the encoder holds %d tables' JSON, want the 3 of the catalog", len(e.tables))
	}
}

// TestTheStoredFormIsUnchanged: catalogs stored by earlier releases are
// compared with new ones by their bytes, so MarshalJSON and Encoder
// write the form they did before the encoder (this literal is what
// MarshalJSON wrote then).
func TestTheStoredFormIsUnchanged(t *testing.T) {
	c := mustApply(t, New("shop"), `CREATE SCHEMA s; COMMENT ON SCHEMA s IS 'a <b> & "c"'; CREATE TYPE s.st AS ENUM ('x'); CREATE TABLE s.t (id int PRIMARY KEY, st s.st); CREATE VIEW s.v AS SELECT id FROM s.t;`)
	c.Version = 3
	const want = `{"database":"shop","version":3,"schemas":[{"name":"public"},{"name":"s","comment":"a \u003cb\u003e \u0026 \"c\""}],"tables":[{"schema":"s","name":"t","columns":[{"name":"id","type":"integer","not_null":true},{"name":"st","type":"s.st","enum":{"schema":"s","name":"st"}}],"primary_key":{"name":"t_pkey","columns":["id"]}}],"views":[{"schema":"s","name":"v","definition":"SELECT id FROM s.t","columns":[{"name":"id","type":"integer"}],"reads":[{"schema":"s","name":"t"}]}],"enums":[{"schema":"s","name":"st","labels":["x"]}]}`
	var e Encoder
	for name, marshal := range map[string]func(*Catalog) ([]byte, error){"MarshalJSON": (*Catalog).MarshalJSON, "Encoder": e.Marshal} {
		if got, err := marshal(c); err != nil || string(got) != want {
			t.Errorf("%s wrote\n%s\nwant\n%s (%v)", name, got, want, err)
		}
	}
}
