package ask

import (
	"errors"
	"testing"
)

func TestParseOutput(t *testing.T) {
	tests := []struct {
		name, raw, sql, expl string
		err                  error
	}{
		{"strict JSON", `{"sql": "SELECT COUNT(*) FROM users", "explanation": "counts users"}`, "SELECT COUNT(*) FROM users", "counts users", nil},
		{"trailing semicolons stripped", `{"sql": "SELECT 1;; ", "explanation": "x"}`, "SELECT 1", "x", nil},
		{"markdown fence with tag", "```json\n{\"sql\": \"SELECT 1\", \"explanation\": \"one\"}\n```", "SELECT 1", "one", nil},
		{"bare fence", "```\n{\"sql\": \"SELECT 2\"}\n```", "SELECT 2", "", nil},
		{"leading prose", `Sure! Here is the query: {"sql": "SELECT 1", "explanation": "e"} Hope it helps.`, "SELECT 1", "e", nil},
		{"braces and quotes inside strings", `Answer: {"sql": "SELECT '{' || name || '\"}' FROM t", "explanation": "odd {braces}"}`, `SELECT '{' || name || '"}' FROM t`, "odd {braces}", nil},
		{"a non-JSON brace before the object", `Use {this} then {"sql": "SELECT 3"}`, "SELECT 3", "", nil},
		{"missing explanation is fine", `{"sql": "SELECT 1"}`, "SELECT 1", "", nil},
		{"empty sql means unanswerable", `{"sql": "", "explanation": "no such data"}`, "", "no such data", nil},
		{"bare SQL", "SELECT 1 FROM users;\n", "SELECT 1 FROM users", "", nil},
		{"bare SQL in parentheses", "(SELECT 1) UNION (SELECT 2)", "(SELECT 1) UNION (SELECT 2)", "", nil},
		{"a bare write reaches the guard", "DELETE FROM orders", "DELETE FROM orders", "", nil},
		{"fenced SQL with prose", "Here is the query:\n```sql\nSELECT name FROM customers;\n```\nIt lists every customer.", "SELECT name FROM customers", "Here is the query: It lists every customer.", nil},
		{"fenced SQL alone", "```\nWITH t AS (SELECT 1) SELECT * FROM t\n```", "WITH t AS (SELECT 1) SELECT * FROM t", "", nil},
		{"JSON whose sql is fenced", `{"sql": "` + "```sql\\nSELECT 4;\\n```" + `", "explanation": "four"}`, "SELECT 4", "four", nil},
		{"prose only", "I cannot answer that from this schema.", "", "", ErrNoJSON},
		{"a fence of prose", "```\nno idea\n```", "", "", ErrNoJSON},
		{"missing sql field", `{"query": "SELECT 1"}`, "", "", ErrMissingSQL},
		{"sql not a string", `{"sql": 42}`, "", "", ErrMissingSQL},
		{"unterminated object", `{"sql": "SELECT 1"`, "", "", ErrNoJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sql, expl, err := ParseOutput(tc.raw)
			if tc.err != nil {
				var oe *OutputError
				if !errors.Is(err, tc.err) || !errors.As(err, &oe) || oe.Raw != tc.raw {
					t.Fatalf("got %v, want %v carrying the raw output", err, tc.err)
				}
				return
			}
			if err != nil || sql != tc.sql || expl != tc.expl {
				t.Errorf("got %q, %q, %v; want %q, %q", sql, expl, err, tc.sql, tc.expl)
			}
		})
	}
}
