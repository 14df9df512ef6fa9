package sqlguard

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/schemaq/schemaq/pkg/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// TestCheckInPostgres runs every statement of checkCases through a real
// PostgreSQL holding the same schema, to show what each would have done:
//
//   - every statement the guard allows runs, and runs inside a READ ONLY
//     transaction: the allowlist lets through nothing that writes, and
//     nothing PostgreSQL would refuse for another reason than the
//     guard's own leniencies;
//   - of the statements it refuses as unsafe, those a READ ONLY
//     transaction would not have stopped are listed: locks, sleeps,
//     server state, other objects dumped. Those are why a read-only
//     connection is not enough on its own (docs/ask.md).
//
// Each statement runs in a transaction that is rolled back, with a
// statement timeout.
func TestCheckInPostgres(t *testing.T) {
	p := testenv.StartPostgres(t)
	p.CreateDB(t, "guard")
	if _, err := p.Query("guard", shopDDL); err != nil {
		t.Fatal(err)
	}
	// As the reader role docs/ask.md recommends: no superuser, SELECT on
	// the schema's tables only.
	if _, err := p.Query("guard", `CREATE ROLE reader NOLOGIN;
GRANT USAGE ON SCHEMA public, billing TO reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public, billing TO reader;`); err != nil {
		t.Fatal(err)
	}
	// The guard finds a relation in any schema when only one has it
	// (invoices): the session looks there too.
	const prelude = "SET ROLE reader; SET search_path = public, billing; SET statement_timeout = '2s'; SET lock_timeout = '1s';\n"
	run := func(sql string, readOnly bool) error {
		begin := "BEGIN;\n"
		if readOnly {
			begin = "BEGIN READ ONLY;\n"
		}
		_, err := p.Query("guard", prelude+begin+strings.TrimSuffix(strings.TrimSpace(sql), ";")+";\nROLLBACK;\n")
		return err
	}
	var unstopped []string
	for _, tc := range checkCases {
		switch {
		case tc.want == nil:
			if err := run(tc.sql, true); err != nil {
				t.Errorf("allowed, but PostgreSQL refuses it in a read-only transaction: %s\n%v", tc.sql, err)
			}
		case errors.Is(tc.want, ErrUnsafe):
			if strings.Contains(tc.reason, "statements") || strings.HasPrefix(strings.ToUpper(tc.sql), "BEGIN") {
				continue // several statements, or transaction control: not one to run in a transaction
			}
			if up := strings.ToUpper(tc.sql); strings.Contains(up, "COPY") || strings.Contains(up, "LO_EXPORT") {
				continue // writes a file on the server, whatever the transaction says
			}
			if err := run(tc.sql, true); err == nil {
				unstopped = append(unstopped, tc.sql)
			}
		}
	}
	t.Logf("refused by the guard, and a READ ONLY transaction would have run them:\n  %s", strings.Join(unstopped, "\n  "))
	for _, want := range []string{"SELECT pg_try_advisory_xact_lock(42)", "SELECT database_to_xml(true, true, '')", "SELECT set_config('statement_timeout', '0', false)",
		// A reader sees every role and every relation through reg* casts,
		// and who it runs as.
		"SELECT 10::regrole::text", "SELECT 'pg_catalog.pg_authid'::regclass::oid",
		"SELECT g::regrole::text FROM generate_series(1, 20000) g WHERE g::regrole::text <> g::text",
		"SELECT current_user", "SELECT session_user"} {
		if !slices.Contains(unstopped, want) {
			t.Errorf("%s: a READ ONLY transaction refused it, so the case shows nothing", want)
		}
	}
}
