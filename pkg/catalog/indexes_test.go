package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// indexesOf lists a table's keys and indexes as "p name: cols",
// "u name: cols" and "i name: cols".
func indexesOf(tb *Table) []string {
	var got []string
	if pk := tb.PrimaryKey; pk != nil {
		got = append(got, "p "+pk.Name+": "+strings.Join(pk.Columns, ","))
	}
	for _, k := range tb.Unique {
		got = append(got, "u "+k.Name+": "+strings.Join(k.Columns, ","))
	}
	for _, ix := range tb.Indexes {
		var cols []string
		for _, k := range ix.Keys {
			cols = append(cols, k.Column+k.Expr)
		}
		got = append(got, "i "+ix.Name+": "+strings.Join(cols, ","))
	}
	slices.Sort(got)
	return got
}

// PostgreSQL's ways with indexes that the catalog follows; the
// differential harness (TestPostgresStatements, indexes.sql) holds the
// same against a server.
func TestIndexes(t *testing.T) {
	const base = "CREATE TABLE a1 (id int, email text, org int);\n"
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"a primary key takes over a unique index",
			"CREATE UNIQUE INDEX a1_id ON a1 (id);\nALTER TABLE a1 ADD PRIMARY KEY USING INDEX a1_id;",
			[]string{"p a1_id: id"}},
		{"a named constraint renames the index it takes",
			"CREATE UNIQUE INDEX ON a1 (email);\nALTER TABLE a1 ADD CONSTRAINT a1_email_uq UNIQUE USING INDEX a1_email_idx;",
			[]string{"u a1_email_uq: email"}},
		{"an index the catalog never saw gives no columns",
			"ALTER TABLE a1 ADD CONSTRAINT a1_pk PRIMARY KEY USING INDEX made_elsewhere;",
			[]string{"p a1_pk: "}},
		{"default names count up past each other",
			"CREATE INDEX ON a1 (email);\nCREATE INDEX ON a1 (email);\nCREATE INDEX ON a1 ((lower(email)), (org + id), (email::varchar));",
			[]string{"i a1_email_idx1: email", "i a1_email_idx: email", "i a1_lower_expr_email_idx: lower(email),org + id,email::varchar"}},
		{"a key's default name steps around an index",
			"CREATE UNIQUE INDEX a1_org_key ON a1 (org);\nALTER TABLE a1 ADD UNIQUE (org);",
			[]string{"i a1_org_key: org", "u a1_org_key1: org"}},
		{"an index's default name steps around a key",
			"ALTER TABLE a1 ADD CONSTRAINT a1_org_idx UNIQUE (org);\nCREATE INDEX ON a1 (org);",
			[]string{"i a1_org_idx1: org", "u a1_org_idx: org"}},
		{"DROP COLUMN takes the indexes that read it",
			"CREATE INDEX keep ON a1 (email);\nCREATE INDEX by_org ON a1 (org);\nCREATE INDEX by_expr ON a1 ((org + 1));\nCREATE INDEX by_pred ON a1 (email) WHERE org > 0;\nCREATE INDEX by_incl ON a1 (email) INCLUDE (org);\nALTER TABLE a1 DROP COLUMN org;",
			[]string{"i keep: email"}},
		{"a column's rename follows, ALTER INDEX renames, DROP INDEX drops",
			"CREATE INDEX x ON a1 (email);\nCREATE INDEX y ON a1 (org);\nALTER TABLE a1 RENAME COLUMN email TO mail;\nALTER INDEX x RENAME TO by_mail;\nDROP INDEX y;",
			[]string{"i by_mail: mail"}},
		{"IF NOT EXISTS leaves the first",
			"CREATE INDEX x ON a1 (email);\nCREATE INDEX IF NOT EXISTS x ON a1 (org);",
			[]string{"i x: email"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New("db").Apply("0001.sql", base+tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			if got := indexesOf(c.Table(QualName{"public", "a1"})); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// What PostgreSQL refuses about indexes, the catalog refuses with its
// reason.
func TestIndexRefusals(t *testing.T) {
	const base = "CREATE TABLE a1 (id int PRIMARY KEY, email text, org int);\n"
	cases := []struct {
		name, sql string
		kind      error
		msg       string
	}{
		{"not unique", "CREATE INDEX x ON a1 (email);\nALTER TABLE a1 ADD UNIQUE USING INDEX x;", ErrInvalid, "x is not a unique index"},
		{"partial", "CREATE UNIQUE INDEX x ON a1 (email) WHERE org > 0;\nALTER TABLE a1 ADD UNIQUE USING INDEX x;", ErrInvalid, "x is a partial index"},
		{"expressions", "CREATE UNIQUE INDEX x ON a1 (lower(email));\nALTER TABLE a1 ADD UNIQUE USING INDEX x;", ErrInvalid, "index x contains expressions"},
		{"descending", "CREATE UNIQUE INDEX x ON a1 (org, email DESC);\nALTER TABLE a1 ADD UNIQUE USING INDEX x;", ErrInvalid, "column number 2 does not have default sorting behavior"},
		{"a key's own", "ALTER TABLE a1 ADD UNIQUE USING INDEX a1_pkey;", ErrInvalid, "index a1_pkey is already associated with a constraint"},
		{"a taken name", "CREATE INDEX x ON a1 (email);\nCREATE INDEX x ON a1 (org);", ErrDuplicate, "relation x already exists"},
		{"a table's name", "CREATE INDEX a1 ON a1 (email);", ErrDuplicate, "relation a1 already exists"},
		{"a key named like an index", "CREATE INDEX x ON a1 (email);\nALTER TABLE a1 ADD CONSTRAINT x UNIQUE (org);", ErrDuplicate, "relation x already exists"},
		{"a rename onto a key", "CREATE INDEX x ON a1 (email);\nALTER INDEX x RENAME TO a1_pkey;", ErrDuplicate, "relation a1_pkey already exists"},
		{"a missing column", "CREATE INDEX x ON a1 (nope);", ErrUndefined, "column nope does not exist"},
		{"an exclusion constraint named like an index", "CREATE INDEX x ON a1 (email);\nALTER TABLE a1 ADD CONSTRAINT x EXCLUDE (org WITH =);", ErrDuplicate, "relation x already exists"},
		{"a partitioned table's", "CREATE TABLE p (a int) PARTITION BY LIST (a);\nCREATE UNIQUE INDEX pa ON p (a);\nALTER TABLE p ADD UNIQUE USING INDEX pa;", ErrInvalid, "not supported on partitioned tables"},
		{"a key's index", "DROP INDEX a1_pkey;", ErrDependent, "cannot drop index a1_pkey because constraint a1_pkey"},
		{"a partition's copy", "CREATE TABLE p (a int) PARTITION BY LIST (a);\nCREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);\nCREATE INDEX ON p (a);\nDROP INDEX p1_a_idx;", ErrDependent, "cannot drop index p1_a_idx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("db").Apply("0001.sql", base+tc.sql)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want %v with %q", err, tc.kind, tc.msg)
			}
		})
	}
}

// An index made in an exception block that fails is gone with the
// block, and the catalog the script started from never sees it.
func TestIndexUndoneWithItsBlock(t *testing.T) {
	c := mustApply(t, New("db"), "CREATE TABLE a1 (id int, email text);\nCREATE INDEX kept ON a1 (id);")
	next := mustApply(t, c, `DO $$
BEGIN
  CREATE INDEX outer_one ON a1 (email);
  BEGIN
    CREATE INDEX undone ON a1 (email);
    DROP INDEX kept;
    RAISE EXCEPTION 'no';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;`)
	if got, want := indexesOf(next.Table(QualName{"public", "a1"})), []string{"i kept: id", "i outer_one: email"}; !slices.Equal(got, want) {
		t.Errorf("after the block: %q, want %q", got, want)
	}
	if got, want := indexesOf(c.Table(QualName{"public", "a1"})), []string{"i kept: id"}; !slices.Equal(got, want) {
		t.Errorf("the catalog applied to changed: %q, want %q", got, want)
	}
}

// Partitions hold copies of their parent's indexes, and a table attached
// with an index of its own that matches keeps that one.
func TestPartitionIndexes(t *testing.T) {
	c := mustApply(t, New("db"), `CREATE TABLE p (a int, b int) PARTITION BY LIST (a);
CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
CREATE INDEX ON p (b);
CREATE TABLE p2 (a int, b int);
CREATE INDEX p2_own ON p2 (b);
ALTER TABLE p ATTACH PARTITION p2 FOR VALUES IN (2);
CREATE TABLE p3 PARTITION OF p FOR VALUES IN (3);
ALTER TABLE p DETACH PARTITION p3;
DROP INDEX p_b_idx;
CREATE UNIQUE INDEX p_ab ON p (a, b);`)
	for name, want := range map[string][]string{
		"p":  {"i p_ab: a,b"},
		"p1": {"i p1_a_b_idx: a,b"},
		"p2": {"i p2_a_b_idx: a,b", "i p2_own: b"},
		"p3": {"i p3_b_idx: b"}, // detached before the drop: its own now
	} {
		if got := indexesOf(c.Table(QualName{"public", name})); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// The catalog's DDL makes its indexes again, and applied to an empty
// catalog rebuilds them.
func TestIndexDDL(t *testing.T) {
	c := mustApply(t, New("db"), `CREATE TABLE a1 (id int, email text, org int, tags text[]);
CREATE UNIQUE INDEX a1_email ON a1 (lower(email) COLLATE "C" text_pattern_ops DESC NULLS LAST, org) INCLUDE (id) WHERE org > 0;
CREATE INDEX a1_tags ON a1 USING gin (tags);
CREATE TABLE p (a int) PARTITION BY LIST (a);
CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
CREATE INDEX ON p (a);`)
	ddl := c.DDL()
	for _, want := range []string{
		`CREATE UNIQUE INDEX a1_email ON public.a1 ((lower(email)) COLLATE "C" text_pattern_ops DESC NULLS LAST, org) INCLUDE (id) WHERE org > 0;`,
		"CREATE INDEX a1_tags ON public.a1 USING gin (tags);",
		"CREATE INDEX p_a_idx ON public.p (a);",
	} {
		if !strings.Contains(ddl, want) {
			t.Errorf("DDL lacks %s:\n%s", want, ddl)
		}
	}
	// A partition's copy is made under its own name before ATTACH
	// PARTITION, which takes it for the parent's.
	copyAt, attachAt := strings.Index(ddl, "CREATE INDEX p1_a_idx ON public.p1 (a);"), strings.Index(ddl, "ATTACH PARTITION public.p1")
	if copyAt < 0 || attachAt < copyAt {
		t.Errorf("DDL does not make the partition's copy before attaching it:\n%s", ddl)
	}
	// A table's own DDL, which prompts show, has its unique indexes only.
	if tb := c.Table(QualName{"public", "a1"}).DDL(); !strings.Contains(tb, "CREATE UNIQUE INDEX a1_email ") || strings.Contains(tb, "a1_tags") {
		t.Errorf("the table's DDL shows its unique indexes only:\n%s", tb)
	}
	roundTrip(t, c)
}

// A tolerant apply skips, as drift, a CREATE INDEX under a name one of
// the table's indexes holds: the drop PostgreSQL ran may have been in a
// routine the catalog did not run. A table's name stays a contradiction.
func TestTolerantIndexNameTaken(t *testing.T) {
	base := mustApply(t, New("db"), "CREATE TABLE a1 (id int, email text);\nCREATE INDEX x ON a1 (email);")
	c, err := base.Apply("0002.sql", "CREATE INDEX x ON a1 (id);\nCREATE INDEX y ON a1 (id);", Tolerant())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := indexesOf(c.Table(QualName{"public", "a1"})), []string{"i x: email", "i y: id"}; !slices.Equal(got, want) {
		t.Errorf("indexes %q, want %q", got, want)
	}
	if d := c.Drift(); len(d) != 1 || d[0].Statement != 1 || !strings.Contains(d[0].String(), "skipped: duplicate object: relation x already exists") {
		t.Errorf("drift %v, want statement 1 skipped", d)
	}
	if _, err := base.Apply("0002.sql", "CREATE INDEX a1 ON a1 (id);", Tolerant()); !errors.Is(err, ErrDuplicate) {
		t.Errorf("an index named like a table: %v, want a duplicate", err)
	}
}
