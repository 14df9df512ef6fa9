package catalog

import (
	"errors"
	"strings"
	"testing"
)

// TestRoutinesWithoutABody applies routines libpg_query's PL/pgSQL
// compiler cannot take: it asserted on them and aborted the process.
// PostgreSQL refuses them, and so does the catalog.
func TestRoutinesWithoutABody(t *testing.T) {
	tests := []struct {
		sql, want string
	}{
		{"CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql;", "no function body specified"},
		{"CREATE PROCEDURE p() LANGUAGE plpgsql;", "no function body specified"},
		{"CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql BEGIN ATOMIC SELECT 1; END;", "only valid for language SQL"},
		{"DO $$ BEGIN EXECUTE 'CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql'; END $$;", "no function body specified"},
		{"DO $$ BEGIN CREATE FUNCTION g() LANGUAGE plpgsql; END $$;", "no function body specified"},
		{"CREATE FUNCTION g() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			_, err := New("db").Apply("0001.sql", tt.sql, Tolerant())
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := plpgsqlJSON("CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql;"); err == nil {
		t.Fatal("the PL/pgSQL parser was handed a routine without a body")
	}
}
