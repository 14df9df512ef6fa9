package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/schemaq/schemaq/events"
	"github.com/schemaq/schemaq/pkg/catalog"
	"github.com/schemaq/schemaq/pkg/chunk"
	"github.com/schemaq/schemaq/pkg/migrate"
	"github.com/schemaq/schemaq/pkg/namewords"
)

// runCatalog replays DDL files locally, exactly as a worker applies
// migration events, and prints the result. It needs no server, so a
// producer's CI can run it before publishing.
func runCatalog(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "catalog", "[flags] FILE|DIR... (- reads one script from stdin)")
	db := fs.String("db", "db", "database name the catalog is for")
	format := fs.String("format", "summary", "output: summary, tables, ddl, json or chunks")
	strict := fs.Bool("strict", false, "refuse a migration with a statement naming an object the catalog does not know, instead of skipping it as drift (exit 1)")
	maxWords := fs.Int("max-words-per-database", namewords.DefaultMaxPerDatabase, "fail (exit 1) when the catalog's names hold more distinct words than this, as workers with the same setting refuse it; 0: no check")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := oneOf("format", *format, "summary", "tables", "ddl", "json", "chunks"); err != nil {
		return err
	}
	if err := events.ValidateDatabase(*db); err != nil {
		return usagef("--db: %v", err)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("catalog: give at least one migration file, directory or schema dump")
	}
	steps, err := catalogSteps(e, fs.Args())
	if err != nil {
		return err
	}
	// The same catalog, history included, that publishing these files to
	// an empty database gives.
	var opts []catalog.ApplyOption
	if !*strict {
		opts = append(opts, catalog.Tolerant())
	}
	replay := catalog.NewReplay(catalog.New(*db), opts...)
	for i, s := range steps {
		source := filepath.ToSlash(s.Name)
		a := catalog.Applied{Seq: int64(i + 1), ID: s.ID(), Source: source, Checksum: s.Checksum}
		if err := replay.Apply(ctx, source, s.SQL, a); err != nil {
			var ce *catalog.Error
			if errors.As(err, &ce) {
				return fmt.Errorf("migration %d of %d does not apply: %w", i+1, len(steps), err)
			}
			return err
		}
	}
	c := replay.Catalog()
	var counter namewords.Counter
	words := counter.Count(c).Words
	if *maxWords > 0 && words > *maxWords {
		return fmt.Errorf("catalog %s would hold %d distinct words in the names of its tables, views and columns, past the bound of %d per database (--max-words-per-database); workers with that bound refuse the migration that crosses it", c.Database, words, *maxWords)
	}
	// Drift goes to stderr so that the output formats stay what they
	// are; the exit status stays 0, since the history did run somewhere.
	if d := c.Drift(); len(d) > 0 {
		fmt.Fprintf(e.stderr, "schemaq: %d statement(s) name objects this replay cannot see (created by functions, or outside the history); the catalog may differ from the database there (--strict refuses them):\n", len(d))
		for _, x := range d {
			fmt.Fprintf(e.stderr, "  drift: %s\n", x)
		}
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	case "ddl":
		_, err := fmt.Fprint(e.stdout, c.DDL())
		return err
	case "chunks":
		enc := json.NewEncoder(e.stdout)
		for _, ch := range chunk.Catalog(c, chunk.Options{}) {
			if err := enc.Encode(ch); err != nil {
				return err
			}
		}
		return nil
	case "tables":
		for _, t := range c.Tables() {
			fmt.Fprintf(e.stdout, "%s\t%d columns\n", t.QualName(), len(t.Columns))
		}
		for _, v := range c.Views() {
			fmt.Fprintf(e.stdout, "%s\tview\n", v.QualName())
		}
		return nil
	}
	fmt.Fprintf(e.stdout, "database %s at version %d: %d migration(s) applied; %d tables, %d views, %d enums in %d schemas; %d distinct words in names\n",
		c.Database, c.Version, len(steps), len(c.Tables()), len(c.Views()), len(c.Enums()), len(c.Schemas()), words)
	return nil
}

// catalogSteps reads the migrations named, or, for "-", one script from
// stdin (a schema dump piped from pg_dump, say), named "stdin" in errors.
func catalogSteps(e *env, args []string) ([]migrate.Step, error) {
	if len(args) == 1 && args[0] == "-" {
		if e.stdin == nil {
			return nil, usagef("catalog: - reads SQL from stdin, and there is none")
		}
		b, err := io.ReadAll(io.LimitReader(e.stdin, events.MaxSQLBytes+1))
		if err != nil {
			return nil, fmt.Errorf("catalog: read stdin: %w", err)
		}
		if len(b) > events.MaxSQLBytes {
			return nil, usagef("catalog: the SQL on stdin is over %d bytes", events.MaxSQLBytes)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("stdin: not UTF-8 text (invalid byte at offset %d)", events.InvalidUTF8Offset(b))
		}
		return []migrate.Step{{File: migrate.File{Path: "-", Name: "stdin"}, SQL: string(b), Checksum: events.Checksum(string(b))}}, nil
	}
	if slices.Contains(args, "-") {
		return nil, usagef("catalog: - (stdin) cannot be mixed with files")
	}
	found, err := migrate.DiscoverAll(args...)
	if err != nil {
		return nil, err
	}
	for _, s := range found.Skipped {
		fmt.Fprintln(e.stderr, "skipped:", s)
	}
	return migrate.Read(found.Files)
}
