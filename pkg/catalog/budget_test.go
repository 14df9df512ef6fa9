package catalog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestBudgetsStopHostileRoutines runs the migrations that crashed or
// stalled the whole process before the interpreter had budgets: each of a
// few lines, each fatal to Go (stack overflow, out of memory) or
// quadratic. Each must end as drift naming what stopped it, with what the
// statement applied before the stop standing, and the process's heap far
// from the gigabyte these cost.
func TestBudgetsStopHostileRoutines(t *testing.T) {
	cases := []struct {
		name string
		sql  string
		// stop must be in the drift entry's error.
		stop string
		// tables is how many tables of the form x<n> may exist after
		// (at most), where a loop creates them.
		tables int
		// allocMiB, when set, bounds what Apply allocates in all: a
		// budget checked only after a value is built lets the build
		// itself take what the budget was for.
		allocMiB uint64
	}{
		{
			name: "EXECUTE of a DO block that calls its caller again",
			sql: `CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$
BEGIN EXECUTE 'DO $x$ BEGIN PERFORM f(); END $x$'; END $$;
SELECT f();`,
			stop: "nested more than 16 deep (the depth budget)",
		},
		{
			name: "a DO block that EXECUTEs itself",
			sql: `CREATE FUNCTION g() RETURNS void LANGUAGE plpgsql AS $$
BEGIN EXECUTE 'DO $x$ BEGIN EXECUTE ''SELECT g()''; END $x$'; END $$;
DO $$ BEGIN PERFORM g(); END $$;`,
			stop: "the depth budget",
		},
		{
			name: "LIKE on a string of 16M characters",
			sql: `DO $$ DECLARE s text := 'a'; BEGIN
  FOR i IN 1..24 LOOP s := s || s; END LOOP;
  IF s LIKE '%b%' THEN CREATE TABLE x1 (); END IF;
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "LIKE with a long pattern on a long string",
			sql: `DO $$ DECLARE s text := 'a'; p text := 'a'; BEGIN
  FOR i IN 1..18 LOOP s := s || s; END LOOP;
  FOR i IN 1..16 LOOP p := p || p; END LOOP;
  IF s LIKE '%a%a%a%a%a%a%a%a%a%a%' || p || 'b' THEN CREATE TABLE x1 (); END IF;
END $$;`,
			stop: "the step budget",
		},
		{
			name: "a string doubled 31 times",
			sql: `DO $$ DECLARE s text := 'abcdefgh'; BEGIN
  FOR i IN 1..31 LOOP s := s || s; END LOOP;
  EXECUTE 'CREATE TABLE x1 ()';
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "an array doubled in a loop",
			sql: `DO $$ DECLARE a text[] := ARRAY['x']; BEGIN
  FOR i IN 1..40 LOOP a := a || a; END LOOP;
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "an array nested in itself",
			sql: `DO $$ DECLARE a text[] := ARRAY['x']; BEGIN
  FOR i IN 1..40 LOOP a := ARRAY[a, a]; END LOOP;
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "comparing two 8 MiB strings on every turn of a loop",
			sql: `DO $$ DECLARE s text := 'a'; t text; n int := 0; BEGIN
  FOR i IN 1..23 LOOP s := s || s; END LOOP;
  t := s;
  FOR i IN 1..100000 LOOP IF s = t THEN n := n + 1; END IF; END LOOP;
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "string_to_array of millions of separators",
			sql: `DO $$ DECLARE s text := ','; a text[]; BEGIN
  FOR i IN 1..22 LOOP s := s || s; END LOOP;
  a := string_to_array(s, ',');
  a := string_to_array(s || s || s, ',');
END $$;`,
			stop: "the byte budget",
		},
		{
			name: "string_to_array of millions of characters, by a NULL delimiter",
			sql: `DO $$ DECLARE s text := 'x'; a text[]; BEGIN
  FOR i IN 1..22 LOOP s := s || s; END LOOP;
  a := string_to_array(s, NULL);
  a := string_to_array(s || s || s, NULL);
END $$;`,
			stop:     "the byte budget",
			allocMiB: 128,
		},
		{
			name: "array_to_string of a hundred thousand elements with a long delimiter",
			sql: `DO $$ DECLARE a text[] := ARRAY['x']; d text := 'd'; t text; BEGIN
  FOR i IN 1..17 LOOP a := a || a; END LOOP;
  FOR i IN 1..10 LOOP d := d || d; END LOOP;
  t := array_to_string(a, d);
  EXECUTE format('CREATE TABLE %I ()', left(t, 10));
END $$;`,
			stop:     "the byte budget",
			allocMiB: 128,
		},
		{
			name: "lpad to a billion characters",
			sql: `DO $$ BEGIN
  EXECUTE format('CREATE TABLE %I ()', lpad('x', 1000000000, 'ab'));
END $$;`,
			stop:     "the byte budget",
			allocMiB: 64,
		},
		{
			// Four bytes a character of 2^62 characters wraps round to
			// nothing reserved.
			name: "lpad to 2^62 characters",
			sql: `DO $$ BEGIN
  EXECUTE format('CREATE TABLE %I ()', lpad('x', 4611686018427387904, 'ab'));
END $$;`,
			stop:     "the byte budget",
			allocMiB: 64,
		},
		{
			name: "format() of a width of a billion",
			sql: `DO $$ BEGIN
  EXECUTE format('CREATE TABLE %I ()', format('%1000000000s', 'x'));
  EXECUTE format('CREATE TABLE %I ()', format('%*s', 1000000000, 'x'));
END $$;`,
			stop:     "more than",
			allocMiB: 64,
		},
		{
			name: "format() repeating a long argument",
			sql: `DO $$ DECLARE s text := 'abcdefgh'; f text := '%1$s'; BEGIN
  FOR i IN 1..20 LOOP s := s || s; END LOOP;
  FOR i IN 1..12 LOOP f := f || f; END LOOP;
  EXECUTE format(f, s);
END $$;`,
			stop: "more than",
		},
		{
			name:   "a hundred thousand tables from a loop",
			sql:    `DO $$ BEGIN FOR i IN 1..100000 LOOP EXECUTE 'CREATE TABLE x' || i || ' (id int)'; END LOOP; END $$;`,
			stop:   "the object budget",
			tables: 20_000,
		},
		{
			name: "DDL inside an exception block, on every turn of a loop",
			sql: `DO $$ BEGIN FOR i IN 1..30000 LOOP
  BEGIN EXECUTE 'CREATE TABLE x' || i || ' ()'; EXCEPTION WHEN others THEN NULL; END;
END LOOP; END $$;`,
			stop:   "budget",
			tables: 20_000,
		},
		{
			name: "a self-join over every column",
			sql: `DO $$ BEGIN FOR i IN 1..40 LOOP EXECUTE 'CREATE TABLE x' || i || ' (' || (SELECT string_agg('c' || j || ' int', ',') FROM generate_series(1, 100) j) || ')'; END LOOP; END $$;
CREATE FUNCTION big() RETURNS void LANGUAGE plpgsql AS $$
DECLARE n int; BEGIN
  FOR i IN 1..100 LOOP
    EXECUTE 'CREATE TABLE w' || i || ' (' || 'c1 int, c2 int, c3 int, c4 int, c5 int, c6 int, c7 int, c8 int, c9 int, c10 int, c11 int, c12 int, c13 int, c14 int, c15 int, c16 int, c17 int, c18 int, c19 int, c20 int, c21 int, c22 int, c23 int, c24 int, c25 int, c26 int, c27 int, c28 int, c29 int, c30 int, c31 int, c32 int, c33 int, c34 int, c35 int, c36 int, c37 int, c38 int, c39 int, c40 int' || ')';
  END LOOP;
  SELECT count(*) INTO n FROM pg_attribute a, pg_attribute b, pg_attribute c WHERE a.attname = 'c1';
  IF n > 0 THEN CREATE TABLE done (); END IF;
END $$;
SELECT big();`,
			stop:   "budget",
			tables: 140,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, allocated := heapInUse(), totalAlloc()
			c, err := New("db").Apply("0001.sql", tc.sql, Tolerant())
			if err != nil {
				t.Fatal(err)
			}
			if a := (totalAlloc() - allocated) >> 20; tc.allocMiB > 0 && a > tc.allocMiB {
				t.Errorf("Apply allocated %d MiB, want at most %d", a, tc.allocMiB)
			}
			if grew := heapInUse() - before; grew > 512<<20 {
				t.Errorf("the heap grew by %d MiB", grew>>20)
			}
			var stops []string
			for _, d := range c.Drift() {
				if d.Stopped {
					stops = append(stops, d.Error)
				}
			}
			if len(stops) == 0 || !strings.Contains(strings.Join(stops, "\n"), tc.stop) {
				t.Fatalf("drift %v: want a stop naming %q", c.Drift(), tc.stop)
			}
			if strings.Contains(strings.Join(stops, "\n"), "broke the interpreter") {
				t.Errorf("drift %v: a budget should have stopped it, not a caught panic", c.Drift())
			}
			t.Logf("stops: %q, %d tables", stops, len(c.Tables()))
			if n := len(c.Tables()); n > tc.tables {
				t.Errorf("%d tables: want at most %d", n, tc.tables)
			}
		})
	}
}

func totalAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestExceptionBlocksUndoOnlyWhatTheyChanged: a loop of exception blocks
// that change nothing costs nothing to undo (thirty thousand turns were
// minutes when each entry copied the catalog), and a block whose DDL
// fails undoes its own changes and nothing of its enclosing block's.
func TestExceptionBlocksUndoOnlyWhatTheyChanged(t *testing.T) {
	schema := strings.Builder{}
	for i := range 2000 {
		fmt.Fprintf(&schema, "CREATE TABLE t%d (id int PRIMARY KEY, note text);\n", i)
	}
	base, err := New("db").Apply("0001.sql", schema.String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := base.Apply("0002.sql", `DO $$ DECLARE n int := 0; BEGIN
  FOR i IN 1..30000 LOOP
    BEGIN n := n + 1; PERFORM 1; EXCEPTION WHEN others THEN NULL; END;
  END LOOP;
  IF n = 30000 THEN CREATE TABLE counted (); END IF;
END $$;
DO $$ BEGIN
  CREATE TABLE outer_kept ();
  BEGIN
    CREATE TABLE inner_undone ();
    BEGIN
      CREATE TABLE innermost_undone ();
      ALTER TABLE nowhere ADD COLUMN x int;
    EXCEPTION WHEN undefined_table THEN
      CREATE TABLE handler_kept ();
      RAISE EXCEPTION 'again';
    END;
  EXCEPTION WHEN others THEN
    CREATE TABLE second_handler_kept ();
  END;
END $$;`, Tolerant())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"counted": true, "outer_kept": true, "second_handler_kept": true,
		"inner_undone": false, "innermost_undone": false, "handler_kept": false,
	} {
		if got := c.Table(QualName{"public", name}) != nil; got != want {
			t.Errorf("table %s exists: %v, want %v", name, got, want)
		}
	}
	if len(c.Drift()) != 0 {
		t.Errorf("drift %v", c.Drift())
	}
}

// TestExceptionBlocksAtScale runs the idempotent migration teams write
// for every tenant table, a block per table, over ten thousand tables:
// each block saves the one table it alters, so the loop fits the step
// budget. When each block copied the catalog, the budget stopped it
// after two hundred tables. Run twice, every block fails and is undone.
func TestExceptionBlocksAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("ten thousand tables")
	}
	const n = 10_000
	var schema strings.Builder
	for i := range n {
		fmt.Fprintf(&schema, "CREATE TABLE t%d (id int PRIMARY KEY, note text);\n", i)
	}
	c, err := New("db").Apply("0001.sql", schema.String())
	if err != nil {
		t.Fatal(err)
	}
	loop := fmt.Sprintf(`DO $$ BEGIN
  FOR i IN 0..%d LOOP
    BEGIN
      EXECUTE format('ALTER TABLE t%%s ADD COLUMN tenant_id int NOT NULL DEFAULT 1', i);
    EXCEPTION WHEN duplicate_column THEN NULL;
    END;
  END LOOP;
END $$;`, n-1)
	for run := 1; run <= 2; run++ {
		c, err = c.Apply(fmt.Sprintf("%04d.sql", run+1), loop, Tolerant())
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Drift(); len(d) > 0 {
			t.Fatalf("run %d: %v", run, d[0])
		}
		for _, tb := range c.Tables() {
			if cols := len(tb.Columns); cols != 3 {
				t.Fatalf("run %d: %s has %d columns", run, tb.Name, cols)
			}
		}
	}
}

// TestApplyStopsWhenCancelled: a routine that would run for hours stops
// when the caller's context ends (a worker's --message-timeout, SIGTERM)
// and when the time budget is spent; neither waits for the step budget.
func TestApplyStopsWhenCancelled(t *testing.T) {
	forever := `DO $$ DECLARE n int := 0; BEGIN
  FOR i IN 1..100000 LOOP FOR j IN 1..100000 LOOP n := n + 1; END LOOP; END LOOP;
END $$;
CREATE TABLE after_the_block ();`
	huge := WithLimits(Limits{Steps: 1 << 40, Time: time.Hour})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		c, err := New("db").ApplyContext(ctx, "0001.sql", forever, huge, Tolerant())
		if err == nil {
			t.Fatalf("applied after cancel: drift %v", c.Drift())
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v: want it to say the apply was cancelled", err)
		}
	})
	t.Run("time budget", func(t *testing.T) {
		c, err := New("db").Apply("0001.sql", forever, WithLimits(Limits{Steps: 1 << 40, Time: 50 * time.Millisecond}), Tolerant())
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Drift(); len(d) != 1 || !strings.Contains(d[0].Error, "the time budget") {
			t.Fatalf("drift %v: want the time budget named", d)
		}
		if c.Table(QualName{"public", "after_the_block"}) == nil {
			t.Error("the statement after the stopped block was not applied")
		}
	})
}

// TestEveryStopIsDrift: a DO block that stops at what it cannot evaluate
// says so, whatever the construct.
func TestEveryStopIsDrift(t *testing.T) {
	for _, body := range []string{
		"EXECUTE 'CREATE TABLE ' || repeat('x', 3) || ' ()';",
		"EXECUTE 'CREATE TABLE t_' || sha256('x') || ' ()';",
		"PERFORM 1 / 0;",
		"EXECUTE 'CREATE TABLE t' || (SELECT max(id) FROM t) || ' ()';",
	} {
		c, err := New("db").Apply("0001.sql", "CREATE TABLE t (id int);\nDO $$ BEGIN "+body+" END $$;", Tolerant())
		if err != nil {
			t.Fatal(err)
		}
		if d := c.Drift(); len(d) != 1 || !d[0].Stopped {
			t.Errorf("%s: drift %v, want one stop", body, d)
		}
	}
}
