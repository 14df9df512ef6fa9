package benchmark

import (
	"testing"

	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/sqlguard"
)

func TestPostgresDialect(t *testing.T) {
	cat, err := catalog.Snapshot("bird", "s.sql", `
CREATE SCHEMA movies;
CREATE TABLE movies."Episode" (episode_id text, episode int, "Title" text, "Date received" text);
CREATE TABLE movies."Order Details" ("OrderID" int, "Quantity" int);
CREATE TABLE movies.country ("Code" text, "Name" text);
CREATE TABLE movies.politics ("Country" text, "Government" text);
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		// Names reach their case, where they stand.
		{"SELECT Title FROM Episode WHERE episode = 24", `SELECT "Title" FROM "Episode" WHERE episode = 24`},
		{"SELECT T1.Country FROM politics AS T1 JOIN country AS T2 ON T1.Country = T2.Code",
			`SELECT T1."Country" FROM politics AS T1 JOIN country AS T2 ON T1."Country" = T2."Code"`},
		// Backticks are quotes; a double-quoted word that names nothing
		// is a string.
		{"SELECT `Date received` FROM Episode WHERE `Title` = \"Pilot\"", `SELECT "Date received" FROM "Episode" WHERE "Title" = 'Pilot'`},
		{`SELECT sum("Quantity") FROM "Order Details"`, `SELECT sum("Quantity") FROM "Order Details"`},
		// Strings, comments, keywords and functions stay as they are.
		{"SELECT 'Title' -- Episode\nFROM Episode GROUP BY Title", "SELECT 'Title' -- Episode\nFROM \"Episode\" GROUP BY \"Title\""},
		{"SELECT count(*) FROM Episode LIMIT 5, 10", `SELECT count(*) FROM "Episode" LIMIT 10 OFFSET 5`},
	} {
		got := postgresDialect(tc.in, "movies", cat)
		if got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, got, tc.want)
			continue
		}
		if _, err := sqlguard.CheckFeedback(got, "movies", cat); err != nil {
			t.Errorf("%s: the rewrite does not pass: %v", got, err)
		}
	}
}
